"""Watching a replay in the pods mode: Workloads, pods and GPU nodes, each on a watch of its own, stamped with
the replay's wall clock. What Kueue does is tallied (simulator/tally.py); each new pod of a trace job is given
its end (simulator/pod_ends.py); kinds that end by deletion are deleted when their run is up
(simulator/deadlines.py); the GPU nodes are followed (simulator/node_watch.py); a failed node's jobs are marked
hit, so that a replacement pod starts them over."""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

from gpu_platform.plan import Plan
from localcluster.api import WORKLOADS, ApiError, Client

from . import kinds
from .deadlines import Deadlines
from .fidelity import OverheadEstimate
from .node_watch import NodeSeen, NodeWatch
from .pod_ends import PATCHERS, PodEnds
from .records import NodeSample, Run, ScaleUp, Timing
from .submit import compressed_duration, index_of
from .tally import Tally, assignment

PODS = "/api/v1/pods"


def _conditions(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in obj.get("status", {}).get("conditions", [])}


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
class _Hit:
    """A job whose node failed (wall clock), and the pods it had then: a pod of it not among them that runs
    while the job stays admitted is a replacement, and the job starts over."""
    at: float
    node: str
    pods: set[str]


def _unschedulable(obj: dict[str, Any]) -> bool:
    c = _conditions(obj).get("PodScheduled", {})
    return c.get("status") == "False" and c.get("reason") == "Unschedulable"


class Watcher(Tally, NodeWatch, PodEnds, Deadlines):
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
        self.nodes: dict[str, NodeSeen] = {}     # GPU node name -> its pool, when it came
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
                    came = self.nodes[node] = NodeSeen(self.run.jobs[index].pool, now)
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
