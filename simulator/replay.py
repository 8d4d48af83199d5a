"""Replay a trace on a live local cluster: submit each job at its (compressed) time, watch what Kueue does.

Time runs `speed` times faster than the trace: a job submitted at trace second s is created at wall second
s / speed after the start, and its pods run duration / speed (KWOK's duration annotation). Every
observation is converted back to trace seconds, so the report speaks the trace's time. The replay stops at
the trace's horizon; what still runs or waits then is reported as such.

What is recorded, per job, from a watch on Workloads (client clock): submission, each admission (flavor,
units), each eviction (preemption with Kueue's reason, or a pods-ready timeout), the finish (succeeded or
failed). Kueue's reaction time (a workload admitted after the capacity it needed was freed) is kept as
the simulator's own resolution.

The simulator's own chain around every run (admission to pods Running, pods' end to quota released:
seconds of wall time, times the speed in trace time; issue 30) is measured and taken out
(simulator/fidelity.py). A watch on pods stamps each pod Running and ended on the same clock, and gives
each new pod of a job an end time: its admission plus the compressed duration, less the end of the chain
as measured so far (KWOK's duration annotation also takes an RFC 3339 time and waits until then,
sigs.k8s.io/kwok v0.8.0 pkg/utils/lifecycle/value_duration_from.go; a changed pod is matched against its
Stages again and the pending delay replaced, pkg/kwok/controllers/pod_controller.go addStageJob). So the
start of the chain, however long it took, is inside the run, and the quota comes back when the trace says.
Before the replay a few probe jobs measure the whole chain on the idle cluster: what a real cluster adds.
"""

from __future__ import annotations

import queue
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable

from gpu_platform import conventions as cv
from gpu_platform.jobs import JobRequest, job
from gpu_platform.plan import Plan
from localcluster.api import WORKLOADS, ApiError, Client, path_of

from .fidelity import OverheadEstimate, end_time
from .trace import TraceJob

NAME_PREFIX = "j"
SUBMITTERS = 4
PODS = "/api/v1/pods"
# Pods are given their end time by this many threads, off the watch's thread (a PATCH each).
PATCHERS = 2
# A pod seen before its workload's admission (two watches, no order between them) waits this long for it;
# then its own first sighting stands in for the admission (a little late, never early).
ADMISSION_WAIT_S = 2.0
# Calibration: this many one-unit probe jobs, each running PROBE_RUN_S, before the replay's clock starts.
# Named apart from trace jobs (PROBE_PREFIX), so nothing of theirs reaches the report's events.
PROBE_PREFIX = "sim-probe-"
PROBES = 3
PROBE_RUN_S = 1.0
PROBE_TIMEOUT_S = 120.0


def job_name(index: int) -> str:
    return f"{NAME_PREFIX}{index:05d}"


def index_of(name: str) -> int | None:
    """A trace job's index (>= 0), a probe's (-1, -2, ...), or None for anything else."""
    if name.startswith(NAME_PREFIX) and name[len(NAME_PREFIX):].isdigit():
        return int(name[len(NAME_PREFIX):])
    if name.startswith(PROBE_PREFIX) and name[len(PROBE_PREFIX):].isdigit():
        return -1 - int(name[len(PROBE_PREFIX):])
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
class Timing:
    """One run that ended by itself (succeeded or failed), in wall seconds of the replay's clock."""
    job: int
    admitted: float
    finished: float                # Kueue's Finished seen: the quota is back
    compressed_s: float            # what the run should take: the trace's duration / speed
    running: float | None = None   # the job's last pod seen Running
    ended: float | None = None     # the job's last pod seen Succeeded or Failed

    @property
    def overhead_s(self) -> float | None:
        """The simulator's chain around the run: admission to pods Running plus pods' end to release."""
        if self.running is None or self.ended is None:
            return None
        return (self.running - self.admitted) + (self.finished - self.ended)

    @property
    def residual_s(self) -> float:
        """What the replay got wrong: the quota came back this much later than the trace says (wall s)."""
        return self.finished - self.admitted - self.compressed_s


@dataclass
class Run:
    jobs: list[TraceJob]
    speed: float
    horizon: float                       # trace seconds replayed
    events: list[Event] = field(default_factory=list)
    wall_seconds: float = 0.0
    submit_lag: list[float] = field(default_factory=list)      # wall seconds behind schedule, per job
    handoff: list[float] = field(default_factory=list)         # wall seconds: capacity freed -> next admitted
    admission: list[float] = field(default_factory=list)       # wall seconds: submitted -> admitted, capacity free
    corrected: bool = False              # pods end on time; runs counted for their trace duration
    calibration: list[float] = field(default_factory=list)     # probe overheads on the idle cluster, wall s
    timings: list[Timing] = field(default_factory=list)
    patch_failures: int = 0              # pods whose end time could not be set (they ran duration / speed)

    @property
    def added_s(self) -> float:
        """What a real cluster adds to a run, in (trace) seconds: the chain measured on the idle cluster,
        where it is not multiplied by a compressed load; nothing when the replay is not corrected."""
        return statistics.median(self.calibration) if self.corrected and self.calibration else 0.0


def objects_for(plan: Plan, j: TraceJob, index: int, speed: float, name: str | None = None) -> list[dict[str, Any]]:
    """The job exactly as `python -m platform_cli job` prints it, with the compressed run time and outcome.
    (A corrected replay gives each pod an end time instead; the run time stays as the fallback, never
    sooner than that end.)"""
    objs = job(plan, JobRequest(team=j.team, pool=j.pool, gpus=j.units, nodes=j.pods, priority=j.priority,
                                duration=f"{max(1, round(j.duration))}s", name=name or job_name(index),
                                gpu_busy=j.busy))
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


def kwok_time(epoch_s: float) -> str:
    """An instant as KWOK's duration annotation takes it (Go's time.RFC3339Nano, UTC)."""
    return datetime.fromtimestamp(epoch_s, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _conditions(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in obj.get("status", {}).get("conditions", [])}


class _Watcher:
    """Workloads (admissions, evictions, finishes) and pods (Running, ended) as they change, each on a watch
    of its own, stamped with the replay's wall clock; with `correct`, each new pod of a trace job is given
    its end time."""

    def __init__(self, client: Client, run: Run, plan: Plan, correct: bool):
        self.client = client
        self.run = run
        self.plan = plan
        self.correct = correct
        self.end_chain = OverheadEstimate([])   # pods' end -> quota released, wall s
        self.start = time.perf_counter()
        self.epoch_offset = time.time() - time.perf_counter()
        self.state: dict[int, str] = {}          # job -> pending | admitted | finished
        self.counts = {"admitted": 0, "finished": 0, "evicted": 0}
        self.last_free: dict[str, float] = {}    # flavor -> wall time capacity was last freed
        self.pending_since: dict[int, float] = {}
        self.admitted_at: dict[int, float] = {}  # job -> wall time of its latest admission
        self.evicted_at: dict[int, float] = {}   # job -> wall time of its latest eviction
        self.compressed: dict[int, float] = {}   # job -> its run in wall seconds
        self.last_ended: dict[int, float] = {}   # job -> wall time a pod of it was last seen ended
        self.probe_timings: list[Timing] = []
        self.pod_running: dict[str, tuple[int, float]] = {}  # pod uid -> (job, first seen Running)
        self.pod_ended: dict[str, tuple[int, float]] = {}    # pod uid -> (job, first seen Succeeded/Failed)
        self.pods_seen: set[str] = set()
        self.patches: queue.Queue[tuple[str, str, int, float] | None] = queue.Queue()
        self._stop = threading.Event()
        self.lock = threading.Lock()
        self.threads = []
        for path, handle in ((WORKLOADS, self.handle), (PODS, self.handle_pod)):
            rv = client.get(path, limit="1")["metadata"]["resourceVersion"]
            thread = threading.Thread(target=self._loop, args=(path, handle, rv), daemon=True)
            thread.start()
            self.threads.append(thread)
        for _ in range(PATCHERS if correct else 0):
            thread = threading.Thread(target=self._patcher, daemon=True)
            thread.start()
            self.threads.append(thread)

    def clock(self) -> float:
        return time.perf_counter() - self.start

    def epoch(self, t: float) -> float:
        """The Unix time of a reading of clock()."""
        return self.start + t + self.epoch_offset

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

    @staticmethod
    def _job_of(obj: dict[str, Any]) -> int | None:
        owner = next((o["name"] for o in obj["metadata"].get("ownerReferences", []) if o.get("kind") == "Job"), None)
        return index_of(owner or "")

    def handle(self, obj: dict[str, Any]) -> None:
        index = self._job_of(obj)
        if index is None:
            return
        trace_job = index >= 0   # probes (negative) are timed, never reported
        c = _conditions(obj)
        now = self.clock()
        before = self.state.get(index, "pending")
        admitted = c.get("Admitted", {}).get("status") == "True"
        finished = c.get("Finished", {}).get("status") == "True"
        if finished and before != "finished":
            flavor, units = self._assignment(obj)
            reason = c["Finished"].get("reason", "")
            self.state[index] = "finished"
            if index in self.admitted_at and index in self.compressed:
                timing = Timing(index, self.admitted_at[index], now, self.compressed[index])
                with self.lock:
                    (self.run.timings if trace_job else self.probe_timings).append(timing)
                    ended = self.last_ended.get(index)
                if ended is not None and ended >= timing.admitted:
                    self.end_chain.add(now - ended)
            if not trace_job:
                return
            self._record("finished", index, flavor=flavor, units=units, reason=reason)
            self.counts["finished"] += 1
            if flavor:
                self.last_free[flavor] = now
        elif admitted and before == "pending":
            self.state[index] = "admitted"
            self.admitted_at[index] = now
            if not trace_job:
                return
            flavor, units = self._assignment(obj)
            self._record("admitted", index, flavor=flavor, units=units)
            self.counts["admitted"] += 1
            freed = self.last_free.get(flavor)
            since = self.pending_since.get(index, now)
            if freed is not None and freed >= since:
                self.run.handoff.append(now - freed)
            else:   # nothing was freed while it waited: Kueue's own time to admit it (a burst queues)
                self.run.admission.append(now - since)
        elif not admitted and not finished and before == "admitted":
            self.state[index] = "pending"
            self.evicted_at[index] = now
            if not trace_job:
                return
            evicted = c.get("Evicted", {})
            reason = evicted.get("reason", "")
            if reason == "Preempted":
                reason = c.get("Preempted", {}).get("reason", reason)
            flavor, units = self._assignment(obj)
            self._record("evicted", index, flavor=flavor, units=units, reason=reason or "Evicted")
            self.pending_since[index] = now
            self.counts["evicted"] += 1
            if flavor:
                self.last_free[flavor] = now

    def handle_pod(self, obj: dict[str, Any]) -> None:
        index = self._job_of(obj)
        if index is None:
            return
        meta = obj["metadata"]
        uid = meta.get("uid", meta.get("name", ""))
        phase = obj.get("status", {}).get("phase")
        now = self.clock()
        new = False
        with self.lock:
            if uid not in self.pods_seen:
                self.pods_seen.add(uid)
                new = not meta.get("deletionTimestamp") and phase not in ("Succeeded", "Failed")
            if phase == "Running" and uid not in self.pod_running:
                self.pod_running[uid] = (index, now)
            elif phase in ("Succeeded", "Failed") and uid not in self.pod_ended:
                self.pod_ended[uid] = (index, now)
                self.pod_running.setdefault(uid, (index, now))
                self.last_ended[index] = max(now, self.last_ended.get(index, now))
        if new and self.correct and index >= 0:
            self.patches.put((meta["namespace"], meta["name"], index, now))

    def end_of(self, index: int, seen: float) -> float:
        """When a pod of the job should end (clock): its admission plus the compressed run, less the end of
        the chain as measured so far. A pod can be seen before its workload's admission is: wait a little
        for it, then take the pod's sighting (later than the admission, so the run is never cut short)."""
        deadline = time.monotonic() + ADMISSION_WAIT_S
        while True:
            admitted = self.admitted_at.get(index)
            if (self.state.get(index) in ("admitted", "finished") and admitted is not None
                    and admitted > self.evicted_at.get(index, -1.0)):
                break
            if time.monotonic() > deadline or self._stop.is_set():
                admitted = seen
                break
            time.sleep(0.02)
        return end_time(admitted, self.run.jobs[index].duration, self.run.speed, self.end_chain.value())

    def _patcher(self) -> None:
        while True:
            item = self.patches.get()
            if item is None:
                return
            namespace, name, index, seen = item
            body = {"metadata": {"annotations": {cv.SIM_DURATION_ANNOTATION: kwok_time(self.epoch(self.end_of(index, seen)))}}}
            try:
                self.client.request("PATCH", f"/api/v1/namespaces/{namespace}/pods/{name}", body,
                                    content_type="application/merge-patch+json")
            except ApiError as err:
                if err.status != 404:   # a pod already gone needs no end
                    with self.lock:
                        self.run.patch_failures += 1
            except OSError:
                with self.lock:
                    self.run.patch_failures += 1

    def _loop(self, path: str, handle: Callable[[dict[str, Any]], None], rv: str) -> None:
        while not self._stop.is_set():
            try:
                for event in self.client.watch(path, rv, timeout_seconds=600):
                    obj = event.get("object", {})
                    rv = obj.get("metadata", {}).get("resourceVersion", rv)
                    if event.get("type") in ("ADDED", "MODIFIED"):
                        handle(obj)
                    if self._stop.is_set():
                        return
            except (ApiError, OSError):
                if self._stop.is_set():
                    return
                time.sleep(0.5)
                rv = self.client.get(path, limit="1")["metadata"]["resourceVersion"]

    def attach_pods(self, timings: list[Timing]) -> None:
        """Each timed run's last pod Running and last pod ended, from the pods watched since its admission."""
        running: dict[int, list[float]] = {}
        ended: dict[int, list[float]] = {}
        with self.lock:
            for seen, by_job in ((self.pod_running, running), (self.pod_ended, ended)):
                for job_index, t in seen.values():
                    by_job.setdefault(job_index, []).append(t)
        for timing in timings:
            r = [t for t in running.get(timing.job, []) if t >= timing.admitted]
            e = [t for t in ended.get(timing.job, []) if t >= timing.admitted]
            timing.running = max(r) if r else None
            timing.ended = max(e) if e else None

    def stop(self) -> None:
        self._stop.set()
        for _ in range(PATCHERS):
            self.patches.put(None)


def _probe_target(plan: Plan) -> tuple[str, str, int] | None:
    """(team, pool, units) for the probes: the quota with the most nominal units, so they all fit at once."""
    best = max(((q.nominal, t.name, q.pool) for t in plan.teams for q in t.quotas), default=None)
    if best is None or best[0] < 1:
        return None
    return best[1], best[2], min(PROBES, int(best[0]))


def calibrate(client: Client, plan: Plan, watcher: _Watcher) -> list[float]:
    """The simulator's whole chain per job on the idle cluster, wall seconds: a few one-unit probe jobs of
    PROBE_RUN_S each (given no end time), admission to release less their run. They are deleted afterwards
    (finished, they hold no quota); a cluster whose probes do not finish in PROBE_TIMEOUT_S yields none."""
    target = _probe_target(plan)
    if target is None:
        return []
    team, pool, count = target
    created = []
    for k in range(count):
        index = -1 - k
        probe = TraceJob(0, 0.0, team, pool, 1, 1, PROBE_RUN_S)
        watcher.compressed[index] = PROBE_RUN_S
        for obj in reversed(objects_for(plan, probe, index, 1.0, name=f"{PROBE_PREFIX}{k}")):
            plural = "services" if obj["kind"] == "Service" else "jobs"
            client.create(path_of(obj, plural), obj)
            created.append(f"{path_of(obj, plural)}/{obj['metadata']['name']}")
    deadline = time.monotonic() + PROBE_TIMEOUT_S
    while time.monotonic() < deadline and len(watcher.probe_timings) < count:
        time.sleep(0.1)
    for path in created:
        try:
            client.delete(path, propagationPolicy="Background")
        except ApiError as err:
            if err.status != 404:
                raise
    return [t.residual_s for t in watcher.probe_timings]


def replay(client: Client, plan: Plan, jobs: list[TraceJob], speed: float, horizon: float,
           progress: Callable[[str], None] | None = None, correct: bool = True) -> Run:
    """Submit every job due before the horizon at its time and watch until the horizon. With `correct`
    (the default) the simulator's own chain is measured first and every pod ends on the trace's time."""
    run = Run(jobs=jobs, speed=speed, horizon=horizon, corrected=correct)
    watcher = _Watcher(client, run, plan, correct)
    if correct:   # the probes' ends are the end-of-chain estimate's first measurements
        run.calibration = calibrate(client, plan, watcher)
    watcher.start = time.perf_counter()
    clock = watcher.clock
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
                watcher.compressed[i] = j.duration / speed
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
    watcher.attach_pods(run.timings)
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
