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
seconds of wall time, times the speed in trace time) is measured and taken out
(simulator/fidelity.py). A watch on pods stamps each pod Running and ended on the same clock, and gives
each new pod of a job an end time: its admission plus the compressed duration, less the end of the chain
as measured so far (KWOK's duration annotation also takes an RFC 3339 time and waits until then,
sigs.k8s.io/kwok v0.8.0 pkg/utils/lifecycle/value_duration_from.go; a changed pod is matched against its
Stages again and the pending delay replaced, pkg/kwok/controllers/pod_controller.go addStageJob). So the
start of the chain, however long it took, is inside the run, and the quota comes back when the trace says.
Before the replay a few probe jobs measure the whole chain on the idle cluster: what a real cluster adds.

Node failures (simulator/failures.py, docs/what-if.md "Node failures"): at each failure's time a node of
its pool is made NotReady (localcluster/node_faults.py) and the real controllers react: the node lifecycle
controller taints it, the taint eviction controller evicts its pods once the template's toleration of a
lost node runs out (compressed by the speed like every other time), and Kueue replaces the node in a
topology-aware job's placement or evicts and requeues the whole job; the Job controller recreates lost
pods. The node is repaired (Ready again) after its repair time. The replay records which trace jobs had
pods on the node, and restarts a job whose lost pod runs again while it stays admitted: a gang whose
member vanished starts over, so all its pods get a new end, its whole duration after the replacement runs
(event `restarted`). A job Kueue admitted whose pods the scheduler cannot place (a pool that scales adding
their nodes, the quota of a down node, or no node with room for a pod) waits, and its run starts when they
all run (event `started`). Spare nodes (`spares`: how many in which pools, beyond capacity.max and in no
quota) are registered before the replay.

Elastic pools (docs/what-if.md "Elastic pools"): the GPU nodes up are sampled every NODE_SAMPLE_S of wall
time (each with the units the trace's pods bound to it hold), and a pod that runs on a node first seen after
its job's submission is recorded as a scale-up (metrics.node_figures reads both). Kinds (simulator/kinds.py):
a trace job's objects are its kind's template; a RayJob or LeaderWorkerSet is deleted when its run is up.
"""

from __future__ import annotations

import heapq
import queue
import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable

from gpu_platform import conventions as cv
from gpu_platform.jobs import NODE_LOST_TOLERATION_SECONDS, JobRequest
from gpu_platform.nodes import node_name, registered_nodes, spare_nodes
from gpu_platform.plan import Plan
from gpu_platform.workload_templates import template
from localcluster import node_faults
from localcluster.api import WORKLOADS, ApiError, Client, path_of

from . import kinds
from .failures import Injected, NodeFailure, pick
from .fidelity import OverheadEstimate, end_time
from .progress import Printer, Progress, trace_done
from .progress import line as progress_line
from .trace import TraceJob

NAME_PREFIX = "j"
SUBMITTERS = 4
PODS = "/api/v1/pods"
NODES = "/api/v1/nodes"
# The GPU nodes up are sampled this often (wall seconds): node-hours, cost and idle follow the samples.
NODE_SAMPLE_S = 0.5
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
# Nodes (spares registered, failed ones repaired) must be Ready and untainted within this many seconds.
NODES_HEALTHY_TIMEOUT_S = 60.0


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
    kind: str           # submitted | admitted | evicted | finished | restarted | started | running
    flavor: str = ""
    units: int = 0
    reason: str = ""


@dataclass(frozen=True, slots=True)
class NodeSample:
    """The GPU nodes up at one moment of the replay (trace seconds): per pool, each node's name and the
    units the trace's pods bound to it hold (0: nothing of the trace on it). Registered nodes and the
    autoscaler's alike: every Node object labelled with a pool."""
    t: float
    pools: dict[str, tuple[tuple[str, int], ...]]


@dataclass(frozen=True, slots=True)
class ScaleUp:
    """A trace job's pod that ran on a node that did not exist when the job was submitted (trace seconds):
    the wait a scale-up adds, from the pod's creation to it Running."""
    job: int
    pool: str
    node: str
    created: float
    running: float

    @property
    def latency(self) -> float:
        return self.running - self.created


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
    started_epoch: float = 0.0           # the Unix time of trace time 0 (a live report's window starts there)
    submit_lag: list[float] = field(default_factory=list)      # wall seconds behind schedule, per job
    handoff: list[float] = field(default_factory=list)         # wall seconds: capacity freed -> next admitted
    admission: list[float] = field(default_factory=list)       # wall seconds: submitted -> admitted, capacity free
    corrected: bool = False              # pods end on time; runs counted for their trace duration
    calibration: list[float] = field(default_factory=list)     # probe overheads on the idle cluster, wall s
    timings: list[Timing] = field(default_factory=list)
    patch_failures: int = 0              # pods whose end time could not be set (they ran duration / speed),
                                         # or objects that could not be deleted at their run's end
    failure_schedule: list[NodeFailure] | None = None   # None: a replay without node failures
    failure_seed: int = 0
    failure_rate: float | None = None    # per node-hour, when the schedule was drawn from one
    failures: list[Injected] = field(default_factory=list)
    spares: dict[str, int] = field(default_factory=dict)   # spare nodes per pool
    toleration_s: float = 0.0            # the pods' toleration of a lost node, in trace seconds
    # The nodes that ran (None: not sampled; the report then assumes every pool at capacity.max throughout),
    # the pods that waited for a node to be added, and the autoscaler's delays (trace seconds, None: not set).
    node_samples: list[NodeSample] | None = None
    scale_ups: list[ScaleUp] = field(default_factory=list)
    scale_up_delay_s: float | None = None
    scale_down_delay_s: float | None = None

    @property
    def added_s(self) -> float:
        """What a real cluster adds to a run, in (trace) seconds: the chain measured on the idle cluster,
        where it is not multiplied by a compressed load; nothing when the replay is not corrected."""
        return statistics.median(self.calibration) if self.corrected and self.calibration else 0.0


def lost_node_toleration_s(speed: float) -> int:
    """The template's toleration of a lost node (jobs.NODE_LOST_TOLERATION_SECONDS), compressed like every
    other time of the replay: whole seconds (the API's unit), at least one."""
    return max(1, round(NODE_LOST_TOLERATION_SECONDS / speed))


def objects_for(plan: Plan, j: TraceJob, index: int, speed: float, name: str | None = None) -> list[dict[str, Any]]:
    """The job exactly as `python -m platform_cli job --kind <kind>` prints it, with the compressed run time
    and outcome (simulator/kinds.py: where each kind keeps its pods, and what ends it). (A corrected replay
    gives each pod an end time instead; the run time stays as the fallback, never sooner than that end.)
    The toleration of a lost node is compressed too. Finished objects are kept for the report until
    teardown: the longest TTL admission allows (tenant-job-cleanup refuses one without), far beyond any
    replay."""
    name = name or job_name(index)
    objs = template(plan, JobRequest(team=j.team, pool=j.pool, gpus=j.units, nodes=j.pods, priority=j.priority,
                                     duration=f"{max(1, round(j.duration))}s", name=name, kind=j.kind,
                                     gpu_busy=j.busy))
    return kinds.prepare(objs, j.kind, name, compressed_duration(j, speed), j.outcome, lost_node_toleration_s(speed),
                         plan.job_max_ttl_seconds)


def create(client: Client, objs: list[dict[str, Any]]) -> list[str]:
    """Create a template's objects, what they depend on first (the Service before its Job); their paths."""
    paths = []
    for obj in reversed(objs):
        collection = path_of(obj, kinds.PLURALS[obj["kind"]])
        client.create(collection, obj)
        paths.append(f"{collection}/{obj['metadata']['name']}")
    return paths


def compressed_duration(j: TraceJob, speed: float) -> str:
    """The job's compressed run as KWOK's duration annotation takes it: counted from when the pod runs."""
    return f"{max(1, round(1000 * j.duration / speed))}ms"


def kwok_time(epoch_s: float) -> str:
    """An instant as KWOK's duration annotation takes it (Go's time.RFC3339Nano, UTC)."""
    return datetime.fromtimestamp(epoch_s, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _conditions(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in obj.get("status", {}).get("conditions", [])}


def assignment(obj: dict[str, Any]) -> tuple[str, int]:
    """A Workload's admission: the flavor of its GPU resource and the units it holds (else the first flavor, 0)."""
    admission = obj.get("status", {}).get("admission") or {}
    for ps in admission.get("podSetAssignments", []):
        for resource, flavor in ps.get("flavors", {}).items():
            if cv.is_gpu_resource(resource):
                usage = ps.get("resourceUsage", {}).get(resource, "0")
                return flavor, int(float(str(usage)))
    for ps in admission.get("podSetAssignments", []):
        flavors = ps.get("flavors", {})
        if flavors:
            return next(iter(flavors.values())), 0
    return "", 0


@dataclass
class _Pod:
    """A trace job's pod as the watch last saw it."""
    job: int
    namespace: str
    name: str
    node: str
    phase: str
    deleting: bool
    units: int = 0          # GPU units it asks for (0: a CPU pod, a Ray head or submitter)
    unschedulable: bool = False

    @property
    def live(self) -> bool:
        return not self.deleting and self.phase in ("Pending", "Running")


@dataclass
class _Node:
    """A GPU node as the node watch last saw it: its pool, and when it came (clock; None: before the watch)."""
    pool: str
    first_seen: float | None


@dataclass
class _Hit:
    """A job whose node failed (wall clock), and the pods it had then: a pod of it not among them that runs
    while the job stays admitted is a replacement, and the job starts over."""
    at: float
    node: str
    pods: set[str]


def _unschedulable(obj: dict[str, Any]) -> bool:
    c = _conditions(obj).get("PodScheduled", {})
    return c.get("status") == "False" and c.get("reason") == "Unschedulable"


def wait_until_due(run: Run, j: TraceJob, speed: float, clock: Callable[[], float]) -> None:
    """Sleep until J is due on the compressed schedule (both modes' submitters); when it is late already (a
    burst of arrivals, a slow API server), the lag is kept: the run's submit_lag says how far the schedule slid."""
    wait = j.submit / speed - clock()
    if wait > 0:
        time.sleep(wait)
    run.submit_lag.append(max(0.0, -wait))


class Tally:
    """What both replay modes record of a Workload's admission and finish: the event (in trace seconds), the
    count the progress line shows, when its flavor's capacity was last freed, and whether an admission waited
    on freed capacity (handoff) or on Kueue alone (admission). A base of the pods mode's watcher here and the
    workloads mode's replay (simulator/direct_workloads.py), so the two modes' figures are measured alike."""

    run: Run
    start: float
    lock: threading.Lock
    counts: dict[str, int]
    last_free: dict[str, float]      # flavor -> wall time capacity was last freed
    pending_since: dict[int, float]

    def clock(self) -> float:
        return time.perf_counter() - self.start

    def _record(self, kind: str, index: int, **kw: Any) -> None:
        with self.lock:
            self.run.events.append(Event(self.clock() * self.run.speed, index, kind, **kw))

    def _finished(self, index: int, flavor: str, units: int, reason: str, now: float) -> None:
        self._record("finished", index, flavor=flavor, units=units, reason=reason)
        self.counts["finished"] += 1
        if flavor:
            self.last_free[flavor] = now

    def _evicted(self, index: int, flavor: str, units: int, reason: str, preempted: bool, now: float) -> None:
        """A preemption frees capacity only for the workload Kueue preempted for: its admission is Kueue's own
        time to admit a job (deciding the preemption included), not a reaction to capacity a run gave back."""
        self._record("evicted", index, flavor=flavor, units=units, reason=reason)
        self.pending_since[index] = now
        self.counts["evicted"] += 1
        if flavor and not preempted:
            self.last_free[flavor] = now

    def _admitted(self, index: int, flavor: str, units: int, now: float) -> None:
        self._record("admitted", index, flavor=flavor, units=units)
        self.counts["admitted"] += 1
        freed = self.last_free.get(flavor)
        since = self.pending_since.get(index, now)
        if freed is not None and freed >= since:
            self.run.handoff.append(now - freed)
        else:   # nothing was freed while it waited: Kueue's own time to admit it (a burst queues)
            self.run.admission.append(now - since)


class _Watcher(Tally):
    """Workloads (admissions, evictions, finishes), pods (Running, ended) and GPU nodes (added, removed) as
    they change, each on a watch of its own, stamped with the replay's wall clock; with `correct`, each new
    pod of a trace job is given its end time. A job whose pods wait for a node after its admission (a pool
    scaling up, a down node's quota, no node with room) starts its run when they all run.

    Kinds that end by deletion (simulator/kinds.py: rayjob, lws) get no end time: the replay deletes them
    when their run is up (`deadlines`), and their Workload's deletion is their finish."""

    def __init__(self, client: Client, run: Run, plan: Plan, correct: bool):
        self.client = client
        self.run = run
        self.plan = plan
        self.correct = correct
        self.nodes: dict[str, _Node] = {}        # GPU node name -> its pool, when it came
        self.workload_job: dict[str, int] = {}   # Workload uid -> its job
        self.submitted_wall: dict[int, float] = {}
        self.pod_created: dict[str, float] = {}  # pod uid -> first seen
        self.ran: set[int] = set()               # jobs whose GPU pods all ran, this admission
        self.object_paths: dict[int, list[str]] = {}   # job -> its objects' paths, the managed one first
        self.ending: set[int] = set()            # jobs the replay deleted, their Workload's deletion awaited
        self.generation: dict[int, int] = {}     # job -> admissions and restarts: a deadline of an older one is void
        self.deadlines: list[tuple[float, int, int]] = []   # heap of (clock, job, generation): delete then
        # pod uid -> the trace job's pod as last seen, live ones only (Pending or Running, not deleting): the
        # others are read by no one, and a week at seed scale leaves about a million behind. By job as well:
        # a pod event reads its job's pods, which a scan of every pod made quadratic in the trace.
        self.pods: dict[str, _Pod] = {}
        self.by_job: dict[int, set[str]] = {}
        self.hit: dict[int, _Hit] = {}           # job -> its node failed, not yet stopped or restarted
        self.restarted_at: dict[int, float] = {} # job -> wall time its run last started over (restart, late start)
        self.disrupted: set[int] = set()         # jobs whose current admission was restarted: not timed
        self.unschedulable: set[int] = set()     # jobs with a pod the scheduler could not place, this admission
        self.assignment: dict[int, tuple[str, int]] = {}
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
        # (namespace, pod, job, seen, annotation value: None for the pod's end on the trace's time), one queue
        # per patcher and each pod always on the same one, so a pod's patches land in the order they were made
        self.patches: list[queue.Queue[tuple[str, str, int, float, str | None] | None]] = [
            queue.Queue() for _ in range(PATCHERS)]
        self._stop = threading.Event()
        self.lock = threading.Lock()
        self.threads = []
        rv = self._list_nodes()
        thread = threading.Thread(target=self._node_loop, args=(rv,), daemon=True)
        thread.start()
        self.threads.append(thread)
        for path, handle in ((WORKLOADS, self.handle), (PODS, self.handle_pod)):
            rv = client.get(path, limit="1")["metadata"]["resourceVersion"]
            thread = threading.Thread(target=self._loop, args=(path, handle, rv), daemon=True)
            thread.start()
            self.threads.append(thread)
        thread = threading.Thread(target=self._deleter, daemon=True)
        thread.start()
        self.threads.append(thread)
        for k in range(PATCHERS if correct else 0):
            thread = threading.Thread(target=self._patcher, args=(self.patches[k],), daemon=True)
            thread.start()
            self.threads.append(thread)

    def reset_clock(self) -> None:
        """The replay's clock starts now: the nodes seen so far were there before any submission."""
        self.start = time.perf_counter()
        with self.lock:
            for node in self.nodes.values():
                node.first_seen = None

    def epoch(self, t: float) -> float:
        """The Unix time of a reading of clock()."""
        return self.start + t + self.epoch_offset

    def _assignment(self, obj: dict[str, Any]) -> tuple[str, int]:
        return assignment(obj)

    def _job_of(self, obj: dict[str, Any]) -> int | None:
        """The trace job (or probe) of a Workload: its owner, the object Kueue manages for the job's kind, as
        first seen. (Deleted, the owner leaves the ownerReferences of a Workload that has other owners: a
        LeaderWorkerSet's group Workload is owned by its pods too, and outlives the LeaderWorkerSet.)"""
        uid = obj["metadata"].get("uid", "")
        owner = next((o["name"] for o in obj["metadata"].get("ownerReferences", [])
                      if o.get("kind") in kinds.OWNER_KINDS and index_of(o.get("name", "")) is not None), None)
        index = index_of(owner or "")
        if index is None:
            return self.workload_job.get(uid)
        self.workload_job[uid] = index
        return index

    @staticmethod
    def _job_of_pod(obj: dict[str, Any]) -> int | None:
        """The trace job (or probe) of a pod: the label every pod template of it carries."""
        return index_of(obj["metadata"].get("labels", {}).get(kinds.JOB_LABEL, ""))

    def _ends_by_deletion(self, index: int) -> bool:
        return index >= 0 and self.run.jobs[index].kind in kinds.ENDS_BY_DELETION

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
        if index in self.ending and before == "admitted" and (
                finished or not admitted or obj["metadata"].get("deletionTimestamp")):
            # The replay deleted its object: whatever Kueue does to the Workload on the way (Finished with
            # reason OwnerNotFound, an eviction, the Workload deleted) is the end of its run.
            self.handle_deleted(obj)
        elif finished and before != "finished":
            flavor, units = self._assignment(obj)
            reason = c["Finished"].get("reason", "")
            self.state[index] = "finished"
            self.hit.pop(index, None)
            if index in self.admitted_at and index in self.compressed and index not in self.disrupted:
                timing = Timing(index, self.admitted_at[index], now, self.compressed[index])
                with self.lock:
                    (self.run.timings if trace_job else self.probe_timings).append(timing)
                    ended = self.last_ended.get(index)
                if ended is not None and ended >= timing.admitted:
                    self.end_chain.add(now - ended)
            if not trace_job:
                return
            self._finished(index, flavor, units, reason, now)
        elif admitted and before == "pending":
            self.state[index] = "admitted"
            self.admitted_at[index] = now
            if not trace_job:
                return
            flavor, units = self._assignment(obj)
            with self.lock:
                self.assignment[index] = (flavor, units)
                self.disrupted.discard(index)
                self.unschedulable.discard(index)
                self.ran.discard(index)
                waiting = any(p.unschedulable for p in self._job_pods(index))
            self._admitted(index, flavor, units, now)
            self._new_deadline(index, now)
            if waiting:   # a pod of it already waits for a node (the pod watch saw it first)
                self._wait_for_nodes(index, now)
        elif not admitted and not finished and before == "admitted":
            self.state[index] = "pending"
            self.evicted_at[index] = now
            if not trace_job:
                return
            with self.lock:
                self.hit.pop(index, None)
                self.unschedulable.discard(index)
                self.ran.discard(index)
                self.generation[index] = self.generation.get(index, 0) + 1   # its deadline is void
            evicted = c.get("Evicted", {})
            reason = evicted.get("reason", "")
            preempted = reason == "Preempted"
            if preempted:
                reason = c.get("Preempted", {}).get("reason", reason)
            flavor, units = self._assignment(obj)
            if not flavor:   # the admission is cleared already: what it held
                flavor, units = self.assignment.get(index, ("", 0))
            self._evicted(index, flavor, units, reason or "Evicted", preempted, now)

    def handle_deleted(self, obj: dict[str, Any]) -> None:
        """A Workload deleted: the finish of a job the replay deleted at its end (kinds ended by deletion)."""
        index = self._job_of(obj)
        if index is None or index < 0 or index not in self.ending or self.state.get(index) != "admitted":
            return
        now = self.clock()
        self.state[index] = "finished"
        flavor, units = self.assignment.get(index, ("", 0))
        self._finished(index, flavor, units, "Succeeded", now)

    def _new_deadline(self, index: int, start: float) -> None:
        """A job ended by deletion is deleted when its run, from `start` (clock), is up."""
        if not self._ends_by_deletion(index):
            return
        with self.lock:
            generation = self.generation.get(index, 0) + 1
            self.generation[index] = generation
            chain = self.end_chain.value() if self.correct else 0.0
            at = end_time(start, self.run.jobs[index].duration, self.run.speed, chain)
            heapq.heappush(self.deadlines, (at, index, generation))

    def _deleter(self) -> None:
        while not self._stop.wait(0.05):
            due: list[int] = []
            with self.lock:
                while self.deadlines and self.deadlines[0][0] <= self.clock():
                    _, index, generation = heapq.heappop(self.deadlines)
                    if self.generation.get(index) == generation and self.state.get(index) == "admitted":
                        self.ending.add(index)
                        due.append(index)
            for index in due:
                for path in self.object_paths.get(index, []):   # the object of the kind, then its Service, PDB
                    try:
                        self.client.delete(path, propagationPolicy="Background")
                    except (ApiError, OSError) as err:
                        if not (isinstance(err, ApiError) and err.status == 404):
                            with self.lock:
                                self.run.patch_failures += 1

    def _wait_for_nodes(self, index: int, now: float) -> None:
        """A pod of the admitted job waits for a node: its run starts when they all run, and until then none
        of its pods may end (each gets its whole run, counted from when it runs)."""
        with self.lock:
            if index in self.unschedulable:
                return
            self.unschedulable.add(index)
            relative = [(p.namespace, p.name) for p in self._job_pods(index)]
        if self.correct and not self._ends_by_deletion(index):
            for namespace, name in relative:
                self.patch(namespace, name, index, now, compressed_duration(self.run.jobs[index], self.run.speed))

    def handle_pod(self, obj: dict[str, Any], deleted: bool = False) -> None:
        index = self._job_of_pod(obj)
        if index is None:
            return
        meta = obj["metadata"]
        uid = meta.get("uid", meta.get("name", ""))
        if deleted:
            with self.lock:
                self._forget(uid)
            return
        phase = obj.get("status", {}).get("phase")
        deleting = bool(meta.get("deletionTimestamp"))
        node = obj.get("spec", {}).get("nodeName", "")
        now = self.clock()
        new = False
        restart: _Hit | None = None
        late = ran = waiting = False
        scale_up: ScaleUp | None = None
        with self.lock:
            if uid not in self.pods_seen:
                self.pods_seen.add(uid)
                self.pod_created[uid] = now
                new = not deleting and phase not in ("Succeeded", "Failed")
            if phase == "Running" and uid not in self.pod_running:
                self.pod_running[uid] = (index, now)
                came = self.nodes.get(node)
                if came is None and node and index >= 0 and kinds.units_of(obj):
                    # A GPU node the node watch has not reported yet (another stream): it is brand new.
                    came = self.nodes[node] = _Node(self.run.jobs[index].pool, now)
                submitted = self.submitted_wall.get(index)
                if (index >= 0 and came is not None and came.first_seen is not None and submitted is not None
                        and came.first_seen > submitted):
                    speed = self.run.speed
                    scale_up = ScaleUp(index, came.pool, node, self.pod_created[uid] * speed, now * speed)
            elif phase in ("Succeeded", "Failed") and uid not in self.pod_ended:
                self.pod_ended[uid] = (index, now)
                self.pod_running.setdefault(uid, (index, now))
                self.last_ended[index] = max(now, self.last_ended.get(index, now))
            if index >= 0:
                pod = _Pod(index, meta["namespace"], meta["name"], node, phase or "", deleting,
                           kinds.units_of(obj), phase == "Pending" and _unschedulable(obj))
                if pod.live:
                    self.pods[uid] = pod
                    self.by_job.setdefault(index, set()).add(uid)
                else:
                    self._forget(uid)
            if scale_up is not None:
                self.run.scale_ups.append(scale_up)
            if index >= 0 and not deleting and self.state.get(index) == "admitted":
                gpu = [p for p in self._job_pods(index) if p.units]
                all_run = (len(gpu) >= self.run.jobs[index].pods and all(p.phase == "Running" for p in gpu))
                if phase == "Pending" and _unschedulable(obj) and index not in self.unschedulable:
                    waiting = True
                elif phase == "Running":
                    hit = self.hit.get(index)
                    if hit is not None and uid not in hit.pods:
                        restart = hit
                    elif hit is None and index in self.unschedulable:
                        late = all_run
                if all_run and index not in self.ran:
                    self.ran.add(index)
                    ran = True
        if waiting:
            self._wait_for_nodes(index, now)
        if ran:
            flavor, units = self.assignment.get(index, ("", 0))
            self._record("running", index, flavor=flavor, units=units)
        if restart is not None:
            self._start_over(index, now, "restarted", restart.node)
        elif late:
            self._start_over(index, now, "started", "unschedulable")
        # A replacement for a pod lost to a failed node, or a pod of a job waiting for a node, keeps its whole
        # run (counted from when it runs) until the job starts; any other new pod ends on the trace's time.
        if (new and self.correct and index >= 0 and index not in self.hit and index not in self.unschedulable
                and not self._ends_by_deletion(index)):
            self.patch(meta["namespace"], meta["name"], index, now, None)

    def _start_over(self, index: int, now: float, kind: str, reason: str) -> None:
        """The job's run starts again now: every pod of it gets a new end, the whole run after now."""
        with self.lock:
            self.hit.pop(index, None)
            self.unschedulable.discard(index)
            self.restarted_at[index] = now
            self.disrupted.add(index)
            mine = [(p.namespace, p.name) for p in self._job_pods(index)]
            flavor, units = self.assignment.get(index, ("", 0))
        self._record(kind, index, flavor=flavor, units=units, reason=reason)
        if self._ends_by_deletion(index):
            self._new_deadline(index, now)
        elif self.correct:
            for namespace, name in mine:
                self.patch(namespace, name, index, now, None)

    def _job_pods(self, index: int) -> list[_Pod]:
        """The job's live pods (under the lock)."""
        return [self.pods[uid] for uid in self.by_job.get(index, ())]

    def _forget(self, uid: str) -> None:
        """A pod no longer live (ended, deleting, deleted): out of the live pods (under the lock)."""
        pod = self.pods.pop(uid, None)
        if pod is not None:
            mine = self.by_job.get(pod.job)
            if mine is not None:
                mine.discard(uid)
                if not mine:
                    del self.by_job[pod.job]

    def busy_nodes(self) -> set[str]:
        """Nodes running a trace job's pod."""
        with self.lock:
            return {p.node for p in self.pods.values() if p.node and p.phase == "Running" and not p.deleting}

    def pool_nodes(self, pool: str) -> list[str]:
        """The pool's nodes up now (registered, the autoscaler's, spares)."""
        with self.lock:
            return sorted(name for name, n in self.nodes.items() if n.pool == pool)

    def fail_node(self, node: str, now: float) -> list[tuple[int, int]]:
        """The trace jobs with pods on `node`, which failed at `now` (clock), and the units they held there.
        Each is marked hit; its pods keep running (a gang's others wait on the lost one) with their whole run
        counted from now, so none ends while the job is broken: it is stopped, or starts over."""
        with self.lock:
            on_node: dict[int, int] = {}
            for p in self.pods.values():
                if p.node == node and p.live:
                    on_node[p.job] = on_node.get(p.job, 0) + 1
            hits = []
            mine: list[tuple[str, str, int]] = []
            for index, count in sorted(on_node.items()):
                if self.state.get(index) != "admitted":
                    continue
                pods = set(self.by_job.get(index, ()))
                self.hit[index] = _Hit(now, node, pods)
                hits.append((index, count * self.run.jobs[index].units))
                mine += [(self.pods[uid].namespace, self.pods[uid].name, index) for uid in pods]
        if self.correct:
            for namespace, name, index in mine:
                if not self._ends_by_deletion(index):
                    self.patch(namespace, name, index, now, compressed_duration(self.run.jobs[index], self.run.speed))
        return hits

    # ---- GPU nodes -------------------------------------------------------------------------------------

    def _list_nodes(self) -> str:
        """Every GPU node now (kept: their first sighting stays); the list's resourceVersion."""
        listing = self.client.get(NODES)
        names = set()
        with self.lock:
            initial = not self.nodes
            for n in listing["items"]:
                pool = n["metadata"].get("labels", {}).get(cv.POOL)
                if pool is None:
                    continue
                names.add(n["metadata"]["name"])
                self.nodes.setdefault(n["metadata"]["name"], _Node(pool, None if initial else self.clock()))
            for name in set(self.nodes) - names:
                del self.nodes[name]
        return listing["metadata"]["resourceVersion"]

    def handle_node(self, kind: str, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        pool = meta.get("labels", {}).get(cv.POOL)
        if pool is None:
            return
        with self.lock:
            if kind == "DELETED":
                self.nodes.pop(meta["name"], None)
            elif meta["name"] not in self.nodes:
                self.nodes[meta["name"]] = _Node(pool, self.clock())

    def _node_loop(self, rv: str) -> None:
        while not self._stop.is_set():
            try:
                for event in self.client.watch(NODES, rv, timeout_seconds=600):
                    obj = event.get("object", {})
                    rv = obj.get("metadata", {}).get("resourceVersion", rv)
                    if event.get("type") in ("ADDED", "MODIFIED", "DELETED"):
                        self.handle_node(event["type"], obj)
                    if self._stop.is_set():
                        return
            except (ApiError, OSError):
                if self._stop.is_set():
                    return
                time.sleep(0.5)
                rv = self._list_nodes()   # events were missed: start again from what is there

    def sample_nodes(self) -> NodeSample:
        """The GPU nodes up now, each with the units the trace's pods bound to it hold."""
        with self.lock:
            held: dict[str, int] = {}
            for p in self.pods.values():
                if p.node and p.live:
                    held[p.node] = held.get(p.node, 0) + p.units
            pools: dict[str, list[tuple[str, int]]] = {}
            for name, n in sorted(self.nodes.items()):
                pools.setdefault(n.pool, []).append((name, held.get(name, 0)))
        return NodeSample(self.clock() * self.run.speed, {k: tuple(v) for k, v in pools.items()})

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
        # A run that started over (a restart after a lost node, a late start) counts from then.
        start = max(admitted, self.restarted_at.get(index, -1.0))
        return end_time(start, self.run.jobs[index].duration, self.run.speed, self.end_chain.value())

    def patch(self, namespace: str, name: str, index: int, seen: float, value: str | None) -> None:
        """Set a pod's duration annotation: `value`, or (None) its end on the trace's time (end_of)."""
        self.patches[hash((namespace, name)) % PATCHERS].put((namespace, name, index, seen, value))

    def _patcher(self, patches: queue.Queue) -> None:
        while True:
            item = patches.get()
            if item is None:
                return
            namespace, name, index, seen, value = item
            if value is None:
                value = kwok_time(self.epoch(self.end_of(index, seen)))
            body = {"metadata": {"annotations": {cv.SIM_DURATION_ANNOTATION: value}}}
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
                    elif event.get("type") == "DELETED" and path == PODS:
                        self.handle_pod(obj, deleted=True)
                    elif event.get("type") == "DELETED" and path == WORKLOADS:
                        self.handle_deleted(obj)
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
        for patches in self.patches:
            patches.put(None)


def _probe_target(plan: Plan) -> tuple[str, str, int] | None:
    """(team, pool, units) for the probes: the quota with the most nominal units, so they all fit at once,
    on a pool with nodes up from the start where there is one (on an empty pool that scales, the probes
    would measure a scale-up, not the chain)."""
    quotas = [(q.nominal, t.name, q.pool) for t in plan.teams for q in t.quotas]
    up = [q for q in quotas if registered_nodes(plan.pools_by_name[q[2]]) > 0]
    best = max(up or quotas, default=None)
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
        created += create(client, objects_for(plan, probe, index, 1.0, name=f"{PROBE_PREFIX}{k}"))
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


class _Injector:
    """The node failures of a replay, on its clock: each node fails at its time (a node of its pool chosen
    by failures.pick from the nodes then up and busy) and is repaired its repair time later; what each did
    goes into run.failures. A thread of its own, stopped at the horizon; nodes still down then are repaired
    by `repair_all` (their repair is not recorded: they were down to the end of the replay)."""

    def __init__(self, client: Client, plan: Plan, watcher: _Watcher, run: Run, errors: list[BaseException]):
        self.client, self.plan, self.watcher, self.run, self.errors = client, plan, watcher, run, errors
        self.down: dict[str, Injected] = {}
        self._stop = threading.Event()
        self.heap: list[tuple[float, int, str, Any]] = [
            (f.at / run.speed, k, "fail", (k, f)) for k, f in enumerate(run.failure_schedule or ()) if f.at < run.horizon]
        heapq.heapify(self.heap)
        self.seq = len(self.heap)
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def start(self) -> None:
        self.thread.start()

    def _loop(self) -> None:
        while self.heap:
            wall, _, action, payload = self.heap[0]
            if self._stop.wait(max(0.0, wall - self.watcher.clock())):
                return
            heapq.heappop(self.heap)
            try:
                if action == "fail":
                    self._fail(*payload)
                else:
                    self._repair(payload)
            except (ApiError, OSError) as err:
                self.errors.append(RuntimeError(f"node failure ({action} {payload}): {err}"))
                return

    def _fail(self, k: int, failure: NodeFailure) -> None:
        pool = self.plan.pools_by_name[failure.pool]
        # The pool's nodes up now: registered, the autoscaler's and spares (an elastic pool may have none).
        up = [n for n in self.watcher.pool_nodes(pool.name) if n not in self.down]
        node = pick(failure, k, self.run.failure_seed, up, self.watcher.busy_nodes())
        now = self.watcher.clock()
        record = Injected(failure, now * self.run.speed, node)
        self.run.failures.append(record)
        if node is None:
            return
        node_faults.fail(self.client, node)
        record.hits = self.watcher.fail_node(node, now)
        self.down[node] = record
        self.seq += 1
        heapq.heappush(self.heap, (now + failure.repair_s / self.run.speed, self.seq, "repair", node))

    def _repair(self, node: str) -> None:
        node_faults.repair(self.client, node)
        now = self.watcher.clock()
        record = self.down.pop(node)
        record.repaired = now * self.run.speed
        # Capacity is back: an admission now is Kueue's reaction to it, not its time to admit a job that
        # found room (the hand-over figures, metrics' simulator section).
        self.watcher.last_free[self.plan.pools_by_name[record.failure.pool].flavor] = now

    def stop(self) -> None:
        self._stop.set()
        if self.thread.is_alive():
            self.thread.join(timeout=10)

    def repair_all(self) -> None:
        for node in list(self.down):
            try:
                node_faults.repair(self.client, node)
            except (ApiError, OSError):
                pass   # the next replay waits for every node healthy, and names the ones that are not
            del self.down[node]


def wait_healthy(client: Client, names: list[str], timeout: float = NODES_HEALTHY_TIMEOUT_S) -> None:
    """Until every named node is Ready and untainted (node_faults.healthy); TimeoutError otherwise."""
    deadline = time.monotonic() + timeout
    while True:
        sick = [n for n in names if not node_faults.healthy(client, n)]
        if not sick:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"nodes not healthy after {timeout:.0f}s: {', '.join(sick)}")
        time.sleep(0.5)


def add_spares(client: Client, plan: Plan, per_pool: dict[str, int]) -> list[str]:
    """Register spare nodes in pools (gpu_platform.nodes.spare_nodes) and wait until they are Ready; their
    names."""
    nodes = spare_nodes(plan, per_pool)
    for node in nodes:
        node_faults.register_node(client, node)
    names = [n["metadata"]["name"] for n in nodes]
    wait_healthy(client, names)
    return names


def remove_spares(client: Client, plan: Plan, per_pool: dict[str, int]) -> None:
    """Delete the spare nodes add_spares registered (after a drain: no pod is left on them)."""
    for node in spare_nodes(plan, per_pool):
        try:
            node_faults.delete(client, node["metadata"]["name"])
        except ApiError as err:
            if err.status != 404:
                raise


def registered_node_names(plan: Plan) -> list[str]:
    """The GPU nodes the live cluster registers itself (gpu_platform.nodes.registered_nodes): those of a pool
    that scales beyond its minimum come and go with the autoscaler."""
    return [node_name(p, i) for p in plan.pools for i in range(registered_nodes(p))]


def replay(client: Client, plan: Plan, jobs: list[TraceJob], speed: float, horizon: float,
           progress: Callable[[str], None] | None = None, correct: bool = True,
           failures: list[NodeFailure] | None = None, failure_seed: int = 0, spares: dict[str, int] | None = None,
           failure_rate: float | None = None, scale_up_delay_s: float | None = None,
           scale_down_delay_s: float | None = None) -> Run:
    """Submit every job due before the horizon at its time and watch until the horizon. With `correct`
    (the default) the simulator's own chain is measured first and every pod ends on the trace's time.
    `failures` (None: none, and nothing watched for them) fail nodes on the way, `spares` (nodes per pool)
    are added first (remove_spares takes them away). The GPU nodes up are sampled throughout (node-hours,
    cost and idle in the report follow them); the autoscaler's delays, in trace seconds, are recorded for
    the report when given (the cluster was started with them: cli.simulate_all)."""
    run = Run(jobs=jobs, speed=speed, horizon=horizon, corrected=correct, failure_schedule=failures,
              failure_seed=failure_seed, failure_rate=failure_rate, spares=dict(spares or {}),
              toleration_s=lost_node_toleration_s(speed) * speed, node_samples=[],
              scale_up_delay_s=scale_up_delay_s, scale_down_delay_s=scale_down_delay_s)
    if failures is not None:   # every node up (a previous replay's failures were repaired), then the spares
        wait_healthy(client, registered_node_names(plan))
    if spares:
        add_spares(client, plan, spares)
    watcher = _Watcher(client, run, plan, correct)
    if correct:   # the probes' ends are the end-of-chain estimate's first measurements
        run.calibration = calibrate(client, plan, watcher)
    watcher.reset_clock()
    run.started_epoch = watcher.epoch(0.0)
    clock = watcher.clock
    samples = run.node_samples

    def sample() -> None:
        while True:
            samples.append(watcher.sample_nodes())
            if stop_progress.wait(NODE_SAMPLE_S):
                return
    due = [(i, j) for i, j in enumerate(jobs) if j.submit < horizon]
    end_wall = horizon / speed
    submitted = 0
    stop_progress = threading.Event()

    def report() -> None:
        while not stop_progress.wait(0.5):
            if progress:
                wall = clock()
                progress(progress_line(Progress(
                    trace_done(wall * speed, horizon, due, submitted), horizon, wall, submitted, len(due), watcher.counts["finished"],
                    watcher.counts["admitted"], watcher.counts["evicted"]),
                    f"nodes failed {len(run.failures)}" if failures is not None else ""))

    reporter = threading.Thread(target=report, daemon=True)
    reporter.start()
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    errors: list[BaseException] = []
    injector = _Injector(client, plan, watcher, run, errors)
    injector.start()

    def submit(i: int, j: TraceJob) -> None:
        nonlocal submitted
        try:
            objs = objects_for(plan, j, i, speed)
            with watcher.lock:
                watcher.object_paths[i] = [f"{path_of(o, kinds.PLURALS[o['kind']])}/{o['metadata']['name']}" for o in objs]
            create(client, objs)
        except BaseException as err:  # reported after the replay, with the job that failed
            errors.append(RuntimeError(f"submitting trace line {j.line} ({job_name(i)}): {err}"))
            return
        submitted += 1

    # A few submitters, so a burst of arrivals (or a slow API server) does not push the schedule back.
    pool = ThreadPoolExecutor(max_workers=SUBMITTERS)
    try:
        for i, j in due:
            wait_until_due(run, j, speed, clock)
            # Submitted when sent (before Kueue can have seen it), so a wait is never negative.
            with watcher.lock:
                run.events.append(Event(clock() * speed, i, "submitted"))
                watcher.pending_since[i] = watcher.submitted_wall[i] = clock()
                watcher.compressed[i] = j.duration / speed
            pool.submit(submit, i, j)
        pool.shutdown(wait=True)
        if errors:
            raise errors[0]
        remaining = end_wall - clock()
        if remaining > 0:
            time.sleep(remaining)
        injector.stop()
        if errors:
            raise errors[0]
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
        injector.stop()
        injector.repair_all()
        watcher.stop()
        stop_progress.set()
        reporter.join(timeout=2)
        sampler.join(timeout=2)
        if progress:
            progress("")
    run.wall_seconds = clock()
    run.events.sort(key=lambda e: e.t)
    watcher.attach_pods(run.timings)
    return run


def drain(client: Client, plan: Plan, timeout: float = 180) -> None:
    """Delete every job of the plan's teams (of every kind) and wait until no workload, pod or quota usage is
    left, and the pools that scale are back at their minimum (the next replay starts as this one did)."""
    namespaces = {ns for t in plan.teams for ns in t.namespaces}
    for ns in namespaces:
        for api_version, plural in kinds.COLLECTIONS:
            prefix = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
            try:
                client.delete(f"{prefix}/namespaces/{ns}/{plural}", propagationPolicy="Background")
            except ApiError as err:
                if err.status != 404:   # 404: a kind whose controller this cluster does not run
                    raise
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        busy = any(w["metadata"]["namespace"] in namespaces for w in client.get(WORKLOADS)["items"])
        busy = busy or any(p["metadata"]["namespace"] in namespaces for p in client.get("/api/v1/pods")["items"])
        if not busy:
            break
        time.sleep(0.5)
    else:
        raise TimeoutError(f"jobs of {sorted(namespaces)} still present after {timeout:.0f}s")
    wait_at_min(client, plan, max(10.0, deadline - time.monotonic()))


def added_nodes(client: Client) -> list[str]:
    """The nodes the autoscaler added (Karpenter labels each with its NodePool)."""
    return sorted(n["metadata"]["name"] for n in client.get(NODES)["items"]
                  if cv.KARPENTER_NODEPOOL_LABEL in n["metadata"].get("labels", {}))


def wait_at_min(client: Client, plan: Plan, timeout: float) -> None:
    """Until the pools that scale are at their minimum again: the autoscaler has removed the nodes it added
    (after its scale-down delay, once they are empty)."""
    deadline = time.monotonic() + timeout
    while added := added_nodes(client):
        if time.monotonic() > deadline:
            raise TimeoutError(f"nodes the autoscaler added still up after {timeout:.0f}s: {', '.join(added)}")
        time.sleep(0.5)


# One line, rewritten in place on a terminal; elsewhere (CI logs) a plain line every 15 seconds.
terminal_progress = Printer()
