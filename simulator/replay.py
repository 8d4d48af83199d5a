"""Replay a trace on a live local cluster: submit each job at its (compressed) time, watch what Kueue does.

Time runs `speed` times faster than the trace: a job submitted at trace second s is created at wall second
s / speed after the start, and its pods run duration / speed (KWOK's duration annotation, in
milliseconds). Every observation is converted back to trace seconds, so the report speaks the trace's
time. The replay stops at the trace's horizon; what still runs or waits then is reported as such.

What is recorded, per job, from a watch on Workloads (client clock): submission, each admission (flavor,
units), each eviction (preemption with Kueue's reason, or a pods-ready timeout), the finish (succeeded or
failed). Kueue's reaction time (a workload admitted after the capacity it needed was freed) is kept as
the simulator's own resolution.
"""

from __future__ import annotations

import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable

from gpu_platform import conventions as cv
from gpu_platform.jobs import JobRequest, job
from gpu_platform.plan import Plan
from localcluster.api import WORKLOADS, ApiError, Client, path_of

from .trace import TraceJob

NAME_PREFIX = "j"
SUBMITTERS = 4


def job_name(index: int) -> str:
    return f"{NAME_PREFIX}{index:05d}"


def index_of(name: str) -> int | None:
    if name.startswith(NAME_PREFIX) and name[len(NAME_PREFIX):].isdigit():
        return int(name[len(NAME_PREFIX):])
    return None


@dataclass(frozen=True, slots=True)
class Event:
    t: float            # trace seconds after the start
    job: int            # index into the trace's jobs
    kind: str           # submitted | admitted | evicted | finished
    flavor: str = ""
    units: int = 0
    reason: str = ""


@dataclass
class Run:
    jobs: list[TraceJob]
    speed: float
    horizon: float                       # trace seconds replayed
    events: list[Event] = field(default_factory=list)
    wall_seconds: float = 0.0
    submit_lag: list[float] = field(default_factory=list)      # wall seconds behind schedule, per job
    handoff: list[float] = field(default_factory=list)         # wall seconds: capacity freed -> next admitted


def objects_for(plan: Plan, j: TraceJob, index: int, speed: float) -> list[dict[str, Any]]:
    """The job exactly as `python -m platform_cli job` prints it, with the compressed run time and outcome."""
    objs = job(plan, JobRequest(team=j.team, pool=j.pool, gpus=j.units, nodes=j.pods, priority=j.priority,
                                duration=f"{max(1, round(j.duration))}s", name=job_name(index)))
    spec = objs[0]["spec"]
    meta = spec["template"]["metadata"]
    meta["annotations"][cv.SIM_DURATION_ANNOTATION] = f"{max(1, round(1000 * j.duration / speed))}ms"
    if j.outcome == "failed":
        meta["annotations"][cv.SIM_OUTCOME_ANNOTATION] = cv.SIM_OUTCOME_FAILED
        spec["backoffLimit"] = 0   # one failed run is the trace's failure; Kubernetes would retry it
    # Keep finished jobs for the report until teardown: the longest TTL admission allows (tenant-job-cleanup
    # refuses a Job without one), far beyond any replay.
    spec["ttlSecondsAfterFinished"] = plan.job_max_ttl_seconds
    return objs


def _conditions(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in obj.get("status", {}).get("conditions", [])}


class _Watcher:
    def __init__(self, client: Client, run: Run, clock: Callable[[], float], plan: Plan):
        self.client = client
        self.run = run
        self.clock = clock
        self.plan = plan
        self.state: dict[int, str] = {}          # job -> pending | admitted | finished
        self.counts = {"admitted": 0, "finished": 0, "evicted": 0}
        self.last_free: dict[str, float] = {}    # flavor -> wall time capacity was last freed
        self.pending_since: dict[int, float] = {}
        self._stop = threading.Event()
        self.lock = threading.Lock()
        rv = client.get(WORKLOADS, limit="1")["metadata"]["resourceVersion"]
        self.thread = threading.Thread(target=self._loop, args=(rv,), daemon=True)
        self.thread.start()

    def _record(self, kind: str, index: int, **kw: Any) -> None:
        with self.lock:
            self.run.events.append(Event(self.clock() * self.run.speed, index, kind, **kw))

    def _assignment(self, obj: dict[str, Any]) -> tuple[str, int]:
        for ps in obj.get("status", {}).get("admission", {}).get("podSetAssignments", []):
            for resource, flavor in ps.get("flavors", {}).items():
                if cv.is_gpu_resource(resource):
                    usage = ps.get("resourceUsage", {}).get(resource, "0")
                    return flavor, int(float(str(usage)))
            flavors = ps.get("flavors", {})
            if flavors:
                return next(iter(flavors.values())), 0
        return "", 0

    def handle(self, obj: dict[str, Any]) -> None:
        owner = next((o["name"] for o in obj["metadata"].get("ownerReferences", []) if o.get("kind") == "Job"), None)
        index = index_of(owner or "")
        if index is None:
            return
        c = _conditions(obj)
        now = self.clock()
        before = self.state.get(index, "pending")
        admitted = c.get("Admitted", {}).get("status") == "True"
        finished = c.get("Finished", {}).get("status") == "True"
        if finished and before != "finished":
            flavor, units = self._assignment(obj)
            self._record("finished", index, flavor=flavor, units=units, reason=c["Finished"].get("reason", ""))
            self.state[index] = "finished"
            self.counts["finished"] += 1
            if flavor:
                self.last_free[flavor] = now
        elif admitted and before == "pending":
            flavor, units = self._assignment(obj)
            self._record("admitted", index, flavor=flavor, units=units)
            self.state[index] = "admitted"
            self.counts["admitted"] += 1
            freed = self.last_free.get(flavor)
            since = self.pending_since.get(index, now)
            if freed is not None and freed >= since:
                self.run.handoff.append(now - freed)
        elif not admitted and not finished and before == "admitted":
            evicted = c.get("Evicted", {})
            reason = evicted.get("reason", "")
            if reason == "Preempted":
                reason = c.get("Preempted", {}).get("reason", reason)
            flavor, units = self._assignment(obj)
            self._record("evicted", index, flavor=flavor, units=units, reason=reason or "Evicted")
            self.state[index] = "pending"
            self.pending_since[index] = now
            self.counts["evicted"] += 1
            if flavor:
                self.last_free[flavor] = now

    def _loop(self, rv: str) -> None:
        while not self._stop.is_set():
            try:
                for event in self.client.watch(WORKLOADS, rv, timeout_seconds=600):
                    obj = event.get("object", {})
                    rv = obj.get("metadata", {}).get("resourceVersion", rv)
                    if event.get("type") in ("ADDED", "MODIFIED"):
                        self.handle(obj)
                    if self._stop.is_set():
                        return
            except (ApiError, OSError):
                if self._stop.is_set():
                    return
                time.sleep(0.5)
                rv = self.client.get(WORKLOADS, limit="1")["metadata"]["resourceVersion"]

    def stop(self) -> None:
        self._stop.set()


def replay(client: Client, plan: Plan, jobs: list[TraceJob], speed: float, horizon: float,
           progress: Callable[[str], None] | None = None) -> Run:
    """Submit every job due before the horizon at its time and watch until the horizon."""
    run = Run(jobs=jobs, speed=speed, horizon=horizon)
    start = time.perf_counter()
    clock = lambda: time.perf_counter() - start  # noqa: E731
    watcher = _Watcher(client, run, clock, plan)
    due = [(i, j) for i, j in enumerate(jobs) if j.submit < horizon]
    end_wall = horizon / speed
    submitted = 0
    stop_progress = threading.Event()

    def report() -> None:
        while not stop_progress.wait(0.5):
            if progress:
                t = clock() * speed
                progress(f"simulated {t / 3600:5.2f}/{horizon / 3600:.2f} h  submitted {submitted}/{len(due)}  "
                         f"admitted {watcher.counts['admitted']}  finished {watcher.counts['finished']}  "
                         f"preempted/evicted {watcher.counts['evicted']}")

    reporter = threading.Thread(target=report, daemon=True)
    reporter.start()
    errors: list[BaseException] = []

    def submit(i: int, j: TraceJob) -> None:
        nonlocal submitted
        try:
            for obj in reversed(objects_for(plan, j, i, speed)):   # the Service before its Job
                plural = "services" if obj["kind"] == "Service" else "jobs"
                client.create(path_of(obj, plural), obj)
        except BaseException as err:  # reported after the replay, with the job that failed
            errors.append(RuntimeError(f"submitting trace line {j.line} ({job_name(i)}): {err}"))
            return
        submitted += 1

    # A few submitters, so a burst of arrivals (or a slow API server) does not push the schedule back.
    pool = ThreadPoolExecutor(max_workers=SUBMITTERS)
    try:
        for i, j in due:
            wait = j.submit / speed - clock()
            if wait > 0:
                time.sleep(wait)
            run.submit_lag.append(max(0.0, -wait))
            # Submitted when sent (before Kueue can have seen it), so a wait is never negative.
            with watcher.lock:
                run.events.append(Event(clock() * speed, i, "submitted"))
                watcher.pending_since[i] = clock()
            pool.submit(submit, i, j)
        pool.shutdown(wait=True)
        if errors:
            raise errors[0]
        remaining = end_wall - clock()
        if remaining > 0:
            time.sleep(remaining)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
        watcher.stop()
        stop_progress.set()
        reporter.join(timeout=2)
        if progress:
            progress("")
    run.wall_seconds = clock()
    run.events.sort(key=lambda e: e.t)
    return run


_last_plain = [0.0]


def drain(client: Client, plan: Plan, timeout: float = 180) -> None:
    """Delete every job of the plan's teams and wait until no workload, pod or quota usage is left."""
    namespaces = {ns for t in plan.teams for ns in t.namespaces}
    for ns in namespaces:
        for coll in (f"/apis/batch/v1/namespaces/{ns}/jobs", f"/api/v1/namespaces/{ns}/services"):
            try:
                client.delete(coll, propagationPolicy="Background")
            except ApiError as err:
                if err.status != 404:
                    raise
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        busy = any(w["metadata"]["namespace"] in namespaces for w in client.get(WORKLOADS)["items"])
        busy = busy or any(p["metadata"]["namespace"] in namespaces for p in client.get("/api/v1/pods")["items"])
        if not busy:
            return
        time.sleep(0.5)
    raise TimeoutError(f"jobs of {sorted(namespaces)} still present after {timeout:.0f}s")


def terminal_progress(line: str) -> None:
    """One line, rewritten in place on a terminal; elsewhere (CI logs) a plain line every 15 seconds."""
    if sys.stderr.isatty():
        sys.stderr.write("\r" + line.ljust(110) + ("\n" if not line else ""))
    elif line and time.monotonic() - _last_plain[0] >= 15:
        _last_plain[0] = time.monotonic()
        sys.stderr.write(line + "\n")
    sys.stderr.flush()
