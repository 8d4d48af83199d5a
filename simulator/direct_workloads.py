"""The what-if's fast mode (`simulate --mode workloads`): Kueue Workloads created directly, no Jobs and no pods.

Why: at seed scale (about 1,000 GPU nodes, tens of thousands of jobs a week) a replay with real pods spends
most of its wall time outside Kueue: the API server serving the Job controller, the scheduler, KWOK and the
replay's own pod watch and patches (docs/performance.md, "Seed scale: what-if"). Kueue's own scheduler
performance runner measures Kueue the same way: it creates Workload objects with a queue name, a priority
and pod sets, and a controller of its own sets each Workload's Finished condition once its run time has
passed since admission, and finishes an eviction by clearing the quota reservation, as a job integration
would (kubernetes-sigs/kueue v0.19.2 test/performance/scheduler/runner/generator/generator.go and
runner/controller/controller.go). Kueue still decides everything the report reads: admission order,
flavor, borrowing, fair sharing, preemption, topology placement on the registered nodes.

What this mode leaves out, and the full mode keeps: the tenant admission policies on Jobs and pods (a trace
is checked against the plan before either mode starts), the Job controller's and scheduler's time, pods
that cannot be placed after admission, node failures and the autoscaler (no pod asks for a node). Its
fidelity against the full mode on a shared trace is measured by bench/whatif_scale.py
(simulator/fidelity.py compare_runs).

A Workload here is what Kueue's batch/Job integration would create for the job's template
(kueue v0.19.2 pkg/controller/jobs/job/job_controller.go Job.PodSets: one pod set named "main" of
parallelism pods with the Job's pod template, a topology request from the template's podset annotations
with the completion index as pod index label, pkg/controller/jobframework/tas.go; its priority from the
kueue.x-k8s.io/priority-class label, else the template's priorityClassName, pkg/controller/jobframework/
reconciler.go ExtractPriority), in the Workload's storage version v1beta2
(../shared/crds/kueue-v0.19.2/kueue.x-k8s.io_workloads.yaml).
"""

from __future__ import annotations

import copy
import heapq
import queue
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from typing import Any, Callable

from gpu_platform import conventions as cv
from gpu_platform.errors import InputError
from gpu_platform.plan import Plan
from localcluster.api import WORKLOADS, ApiError, Client

from . import kinds
from .progress import Progress, trace_done
from .progress import line as progress_line
from .records import Event, Run
from .submit import index_of, job_name, objects_for, wait_until_due
from .tally import Tally, assignment
from .trace import TraceJob

MODES = ("pods", "workloads")
# The trace kinds the workloads mode builds a Workload for: a batch/v1 Job's pod set is the template's; the
# other kinds' pod sets (JobSet, TrainJob, RayJob, LeaderWorkerSet) are their controllers' to build.
KINDS = ("job",)
API_VERSION = "kueue.x-k8s.io/v1beta2"
# Kueue's default pod set name (kueue.DefaultPodSetName) and the Job's pod index label for TAS
# (batchv1.JobCompletionIndexAnnotation, k8s.io/api batch/v1 types.go).
POD_SET_NAME = "main"
POD_INDEX_LABEL = "batch.kubernetes.io/job-completion-index"
# The podset annotations Kueue reads into a topology request (kueue apis/kueue/v1beta2 constants).
REQUIRED_TOPOLOGY = "kueue.x-k8s.io/podset-required-topology"
PREFERRED_TOPOLOGY = "kueue.x-k8s.io/podset-preferred-topology"
# The field manager of the replay's status writes (a Finished condition, a cleared reservation).
FIELD_MANAGER = "gpu-platform-simulator"


def check_mode(mode: str) -> str:
    if mode not in MODES:
        raise InputError(f"--mode {mode!r} is not one of: {', '.join(MODES)}")
    return mode


def check_trace(jobs: list[TraceJob]) -> None:
    """The workloads mode replays Jobs only: an InputError naming the trace lines of other kinds."""
    other = [j for j in jobs if j.kind not in KINDS]
    if other:
        lines = ", ".join(str(j.line) for j in other[:5]) + (" ..." if len(other) > 5 else "")
        raise InputError(f"--mode workloads: kind {other[0].kind!r} (trace lines {lines}) is not one of: "
                         f"{', '.join(KINDS)}; replay it with --mode pods")


def topology_request(template_meta: dict[str, Any]) -> dict[str, Any]:
    """The pod set's topology request as Kueue builds it for a batch/Job (TAS enabled, Kueue's default
    since v0.14): required, else preferred, and the completion index as the pod index label."""
    ann = template_meta.get("annotations") or {}
    out: dict[str, Any] = {}
    if REQUIRED_TOPOLOGY in ann:
        out["required"] = ann[REQUIRED_TOPOLOGY]
    elif PREFERRED_TOPOLOGY in ann:
        out["preferred"] = ann[PREFERRED_TOPOLOGY]
    out["podIndexLabel"] = POD_INDEX_LABEL
    return out


def priority_of(plan: Plan, job_labels: dict[str, str], template_spec: dict[str, Any]) -> dict[str, Any]:
    """spec.priorityClassRef and spec.priority as Kueue resolves them for a job: its WorkloadPriorityClass
    label first, else its pods' PriorityClass; the value is the plan's (the stack creates both classes with
    the priority's value). Nothing when neither is set (Kueue's default)."""
    values = {cv.priority_class_name(p.name): p.value for p in plan.priorities}
    name = job_labels.get(cv.PRIORITY_CLASS_LABEL)
    if name:
        ref = {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": name}
    elif template_spec.get("priorityClassName"):
        name = template_spec["priorityClassName"]
        ref = {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": name}
    else:
        return {}
    if name not in values:
        raise InputError(f"priority class {name!r} is not one of the stack's priorities: {', '.join(sorted(values))}")
    return {"priorityClassRef": ref, "priority": values[name]}


def workload_for(plan: Plan, objs: list[dict[str, Any]]) -> dict[str, Any]:
    """The Workload Kueue's Job integration would create for the job's objects (submit.objects_for), named
    as the job, in its namespace, in its LocalQueue, with the job's labels."""
    job = kinds.managed(objs)
    if job["kind"] != "Job":
        raise InputError(f"--mode workloads: kind {job['kind']!r} is not one of: Job")
    meta, spec = job["metadata"], job["spec"]
    template = copy.deepcopy(spec["template"])
    labels = dict(meta.get("labels") or {})
    queue = labels.get(cv.QUEUE_NAME_LABEL)
    if not queue:
        raise InputError(f"{meta['name']}: label {cv.QUEUE_NAME_LABEL} is missing: the Workload has no queue")
    return {
        "apiVersion": API_VERSION,
        "kind": "Workload",
        "metadata": {"name": meta["name"], "namespace": meta["namespace"],
                     "labels": {**labels, kinds.JOB_LABEL: meta["name"]}},
        "spec": {
            "queueName": queue,
            **priority_of(plan, labels, template.get("spec", {})),
            "podSets": [{
                "name": POD_SET_NAME,
                "count": int(spec.get("parallelism", 1)),
                "template": template,
                "topologyRequest": topology_request(template.get("metadata") or {}),
            }],
        },
    }


def condition(kind: str, status: str, reason: str, message: str, now: datetime | None = None) -> dict[str, Any]:
    """A metav1.Condition as Kueue writes it (type, status, reason, message, lastTransitionTime)."""
    stamp = (now or datetime.now(timezone.utc)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"type": kind, "status": status, "reason": reason, "message": message, "lastTransitionTime": stamp}


def finished_patch(name: str, namespace: str, outcome: str, now: datetime | None = None) -> dict[str, Any]:
    """The server-side apply body that finishes a Workload (the runner's SetConditionAndUpdate of
    Finished=True): conditions are a list map keyed by type, so the apply adds this one condition and leaves
    Kueue's. The reason is the one a Job's finish gives (Succeeded or Failed): the report counts by it."""
    reason = "Failed" if outcome == "failed" else "Succeeded"
    return {"apiVersion": API_VERSION, "kind": "Workload", "metadata": {"name": name, "namespace": namespace},
            "status": {"conditions": [condition("Finished", "True", reason, "By the simulator: the trace's run "
                                                "time passed since admission", now)]}}


def evicted(obj: dict[str, Any]) -> bool:
    """Kueue evicted it (Evicted=True) and its quota is still reserved: a job integration stops the job and
    clears the reservation; here the replay does."""
    c = {x["type"]: x for x in obj.get("status", {}).get("conditions", [])}
    return (c.get("Evicted", {}).get("status") == "True" and c.get("QuotaReserved", {}).get("status") == "True")


def release_patch(obj: dict[str, Any], now: datetime | None = None) -> dict[str, Any]:
    """A JSON merge patch that finishes an eviction as the runner does (UnsetQuotaReservationWithCondition:
    QuotaReserved False with reason Pending, the admission cleared, Admitted False), guarded by the
    resourceVersion it was read at (a list is replaced whole by a merge patch)."""
    conditions = []
    for c in obj.get("status", {}).get("conditions", []):
        if c["type"] == "QuotaReserved":
            c = condition("QuotaReserved", "False", "Pending", "Evicted: released by the simulator", now)
        elif c["type"] == "Admitted" and c.get("status") == "True":
            c = condition("Admitted", "False", "NoReservation", "The workload has no reservation", now)
        conditions.append(c)
    return {"metadata": {"resourceVersion": obj["metadata"]["resourceVersion"]},
            "status": {"admission": None, "conditions": conditions}}


# ---- the replay ---------------------------------------------------------------------------------------

SUBMITTERS = 4
# The simulator's own time per run in this mode, with which the default --speed is chosen: from when a run
# should release its quota to Kueue's Finished seen (the replay's timer, its status apply, Kueue's webhook).
# bench.whatif_scale at 1,000 nodes measured 0.59 s p50 / 1.35 s p95 at load 13-17 (docs/performance.md,
# "Seed scale: what-if"); the full mode's chain is PRIOR_OVERHEAD_S in simulator/fidelity.py (2.3 s idle).
PRIOR_OVERHEAD_S = 0.6
# Status writes (finishes, released evictions) are made by this many threads, off the watch's thread.
WRITERS = 2


def workload_path(namespace: str, name: str = "") -> str:
    return f"/apis/{API_VERSION}/namespaces/{namespace}/workloads" + (f"/{name}" if name else "")


class _Replay(Tally):
    """One replay in workloads mode: submitters create the Workloads on the trace's (compressed) schedule,
    a watch records what Kueue does with them (the same events as the full mode, simulator/replay.py), a
    timer finishes each admitted run its compressed duration after its admission, and an eviction is
    finished by clearing the reservation."""

    def __init__(self, client: Client, plan: Plan, run: Run):
        self.client, self.plan, self.run = client, plan, run
        self.start = time.perf_counter()
        self.lock = threading.Lock()
        self.state: dict[int, str] = {}
        self.generation: dict[int, int] = {}
        self.assignment: dict[int, tuple[str, int]] = {}
        self.pending_since: dict[int, float] = {}
        self.last_free: dict[str, float] = {}
        self.counts = {"admitted": 0, "finished": 0, "evicted": 0}
        self.deadlines: list[tuple[float, int, int]] = []
        self.namespaces: dict[int, str] = {}   # job -> its Workload's namespace
        self.writes: queue.Queue[tuple[str, int, dict[str, Any]] | None] = queue.Queue()
        self.stop = threading.Event()
        self.errors: list[BaseException] = []
        self.threads = [threading.Thread(target=self._watch, args=(
            client.get(WORKLOADS, limit="1")["metadata"]["resourceVersion"],), daemon=True),
            threading.Thread(target=self._timer, daemon=True)]
        self.threads += [threading.Thread(target=self._writer, daemon=True) for _ in range(WRITERS)]
        for t in self.threads:
            t.start()

    def handle(self, obj: dict[str, Any]) -> None:
        index = index_of(obj["metadata"]["name"])
        if index is None or index < 0 or index >= len(self.run.jobs):
            return
        c = {x["type"]: x for x in obj.get("status", {}).get("conditions", [])}
        now = self.clock()
        before = self.state.get(index, "pending")
        admitted = c.get("Admitted", {}).get("status") == "True"
        finished = c.get("Finished", {}).get("status") == "True"
        if finished and before != "finished":
            self.state[index] = "finished"
            flavor, units = self.assignment.get(index, ("", 0))
            self._finished(index, flavor, units, c["Finished"].get("reason", ""), now)
        elif before == "admitted" and (evicted(obj) or not admitted):
            self.state[index] = "pending"
            with self.lock:
                self.generation[index] = self.generation.get(index, 0) + 1   # its finish is void
            reason = c.get("Evicted", {}).get("reason", "") or "Evicted"
            preempted = reason == "Preempted"
            if preempted:
                reason = c.get("Preempted", {}).get("reason", reason)
            flavor, units = self.assignment.get(index, ("", 0))
            self._evicted(index, flavor, units, reason, preempted, now)
            if evicted(obj):
                self.writes.put(("release", index, obj))
        elif before == "pending" and admitted and not evicted(obj):
            self.state[index] = "admitted"
            flavor, units = assignment(obj)
            self.assignment[index] = (flavor, units)
            self._admitted(index, flavor, units, now)
            with self.lock:
                generation = self.generation.get(index, 0) + 1
                self.generation[index] = generation
                heapq.heappush(self.deadlines, (now + self.run.jobs[index].duration / self.run.speed, index, generation))
        elif before == "pending" and evicted(obj):   # evicted before the admission was seen: release it
            self.writes.put(("release", index, obj))

    def _watch(self, rv: str) -> None:
        while not self.stop.is_set():
            try:
                for event in self.client.watch(WORKLOADS, rv, timeout_seconds=600):
                    obj = event.get("object", {})
                    rv = obj.get("metadata", {}).get("resourceVersion", rv)
                    if event.get("type") in ("ADDED", "MODIFIED"):
                        self.handle(obj)
                    if self.stop.is_set():
                        return
            except (ApiError, OSError):
                if self.stop.is_set():
                    return
                time.sleep(0.5)
                rv = self.client.get(WORKLOADS, limit="1")["metadata"]["resourceVersion"]

    def _timer(self) -> None:
        while not self.stop.wait(0.02):
            with self.lock:
                while self.deadlines and self.deadlines[0][0] <= self.clock():
                    _, index, generation = heapq.heappop(self.deadlines)
                    if self.generation.get(index) == generation:
                        self.writes.put(("finish", index, {}))

    def _writer(self) -> None:
        while True:
            item = self.writes.get()
            if item is None:
                return
            action, index, obj = item
            name, j = job_name(index), self.run.jobs[index]
            namespace = self.namespaces[index]
            path = workload_path(namespace, name) + "/status"
            try:
                if action == "finish":
                    self.client.request("PATCH", f"{path}?fieldManager={FIELD_MANAGER}&force=true",
                                        finished_patch(name, namespace, j.outcome),
                                        content_type="application/apply-patch+yaml")
                else:
                    self._release(path, obj)
            except ApiError as err:
                if err.status != 404:
                    with self.lock:
                        self.run.patch_failures += 1
            except OSError:
                with self.lock:
                    self.run.patch_failures += 1

    def _release(self, path: str, obj: dict[str, Any]) -> None:
        for _ in range(5):
            if not evicted(obj):
                return
            try:
                self.client.request("PATCH", path, release_patch(obj), content_type="application/merge-patch+json")
                return
            except ApiError as err:
                if err.status != 409:
                    raise
                obj = self.client.get(path.removesuffix("/status"))
        raise ApiError(409, "the Workload kept changing", f"release {path}")

    def close(self) -> None:
        self.stop.set()
        for _ in range(WRITERS):
            self.writes.put(None)


def replay(client: Client, plan: Plan, jobs: list[TraceJob], speed: float, horizon: float,
           progress: Callable[[str], None] | None = None) -> Run:
    """Create a Workload for every job due before the horizon at its time and watch until the horizon
    (replay.replay's contract: a Run of the same events, in trace seconds). Runs end exactly when the
    trace says (the replay sets Finished itself), so the run is not corrected and nothing is calibrated;
    node samples are not taken (no pod binds to a node: the report assumes the pools at capacity.max)."""
    check_trace(jobs)
    run = Run(jobs=jobs, speed=speed, horizon=horizon, corrected=False, node_samples=None)
    r = _Replay(client, plan, run)
    clock = r.clock
    due = [(i, j) for i, j in enumerate(jobs) if j.submit < horizon]
    submitted = 0
    done = threading.Event()

    def report() -> None:
        while not done.wait(0.5):
            if progress:
                wall = clock()
                progress(progress_line(Progress(trace_done(wall * speed, horizon, due, submitted), horizon, wall, submitted, len(due),
                                                r.counts["finished"], r.counts["admitted"], r.counts["evicted"]),
                                       "mode workloads"))

    def submit(i: int, j: TraceJob) -> None:
        nonlocal submitted
        try:
            wl = workload_for(plan, objects_for(plan, j, i, speed))
            r.namespaces[i] = wl["metadata"]["namespace"]
            client.create(workload_path(wl["metadata"]["namespace"]), wl)
        except BaseException as err:   # reported after the replay, with the job that failed
            r.errors.append(RuntimeError(f"submitting trace line {j.line} ({job_name(i)}): {err}"))
            return
        submitted += 1

    reporter = threading.Thread(target=report, daemon=True)
    reporter.start()
    pool = ThreadPoolExecutor(max_workers=SUBMITTERS)
    try:
        for i, j in due:
            wait_until_due(run, j, speed, clock)
            with r.lock:
                run.events.append(Event(clock() * speed, i, "submitted"))
                r.pending_since[i] = clock()
            pool.submit(submit, i, j)
            if r.errors:
                break
        pool.shutdown(wait=True)
        if r.errors:
            raise r.errors[0]
        remaining = horizon / speed - clock()
        if remaining > 0:
            time.sleep(remaining)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
        r.close()
        done.set()
        reporter.join(timeout=2)
        if progress:
            progress("")
    run.wall_seconds = clock()
    run.events.sort(key=lambda e: e.t)
    return run


def drain(client: Client, plan: Plan, timeout: float = 300) -> None:
    """Delete every Workload in the plan's team namespaces and wait until none is left."""
    namespaces = {ns for t in plan.teams for ns in t.namespaces}
    for ns in namespaces:
        client.delete(workload_path(ns))
    deadline = time.monotonic() + timeout
    while any(w["metadata"]["namespace"] in namespaces for w in client.get(WORKLOADS)["items"]):
        if time.monotonic() > deadline:
            raise TimeoutError(f"Workloads of {sorted(namespaces)} still present after {timeout:.0f}s")
        time.sleep(0.5)
