"""Replay a trace on a live local cluster: submit each job at its (compressed) time, watch what Kueue does.

Time runs `speed` times faster than the trace: a job submitted at trace second s is created at wall second
s / speed after the start, and its pods run duration / speed (KWOK's duration annotation). Every
observation is converted back to trace seconds, so the report speaks the trace's time. The replay stops at
the trace's horizon; what still runs or waits then is reported as such. On fixed pools without node failures
it stops as soon as every job has finished and left (Run.idle_from): the rest of the horizon is idle.

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
its job's submission is recorded as a scale-up (simulator/node_figures.py reads both). Kinds
(simulator/kinds.py): a trace job's objects are its kind's template; a RayJob or LeaderWorkerSet is deleted
when its run is up.

Here: the orchestration (calibrate, replay, drain). Submitting is simulator/submit.py, watching
simulator/watch.py (with node_watch.py, pod_ends.py, deadlines.py), tallying simulator/tally.py, the node
failures and spares simulator/fault_injection.py; what is recorded is simulator/records.py.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

from gpu_platform import conventions as cv
from gpu_platform.nodes import registered_nodes, scales_locally
from gpu_platform.plan import Plan
from localcluster.api import WORKLOADS, ApiError, Client, path_of

from . import kinds
from .failures import NodeFailure
from .fault_injection import Injector, add_spares, registered_node_names, wait_healthy
from .node_watch import NODES
from .progress import Printer, Progress, trace_done
from .progress import line as progress_line
from .records import Event, Run
from .submit import PROBE_PREFIX, create, job_name, lost_node_toleration_s, objects_for, wait_until_due
from .trace import TraceJob
from .watch import Watcher

SUBMITTERS = 4
# The GPU nodes up are sampled this often (wall seconds): node-hours, cost and idle follow the samples.
NODE_SAMPLE_S = 0.5
# Calibration: this many one-unit probe jobs, each running PROBE_RUN_S, before the replay's clock starts.
# Named apart from trace jobs (submit.PROBE_PREFIX), so nothing of theirs reaches the report's events.
PROBES = 3
PROBE_RUN_S = 1.0
PROBE_TIMEOUT_S = 120.0
# A replay whose nodes cannot change by themselves stops before the horizon once nothing is left to happen
# (nothing_left); it looks this often (wall seconds).
IDLE_POLL_S = 0.2


def can_stop_early(plan: Plan, failures: list[NodeFailure] | None, spares: dict[str, int] | None) -> bool:
    """Whether the rest of the horizon is known once every job has finished and left: no pool scales (its nodes
    would go on changing: the autoscaler removes the empty ones after its delay, which the report's node-hours
    follow), no node failure is scheduled and no spare node was added (a repair or removal may still come)."""
    return failures is None and not spares and not any(scales_locally(p) for p in plan.pools)


def nothing_left(run: Run, watcher: Watcher, due: set[int]) -> bool:
    """Every due job's Workload finished (succeeded or failed: it holds no quota) and no pod of the trace is
    Pending or Running: from here to the horizon the cluster stays idle, which is what the report counts."""
    if watcher.counts["finished"] < len(due):   # cheap first: no set of every event each poll on a long trace
        return False
    with watcher.lock:
        finished = {e.job for e in run.events if e.kind == "finished"}
        live = any(p.live for p in watcher.pods.values())
    return due <= finished and not live


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


def calibrate(client: Client, plan: Plan, watcher: Watcher) -> list[float]:
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


def replay(client: Client, plan: Plan, jobs: list[TraceJob], speed: float, horizon: float,
           progress: Callable[[str], None] | None = None, correct: bool = True,
           failures: list[NodeFailure] | None = None, failure_seed: int = 0, spares: dict[str, int] | None = None,
           failure_rate: float | None = None, scale_up_delay_s: float | None = None,
           scale_down_delay_s: float | None = None, stop_when_idle: bool = True) -> Run:
    """Submit every job due before the horizon at its time and watch until the horizon. With `correct`
    (the default) the simulator's own chain is measured first and every pod ends on the trace's time.
    `failures` (None: none, and nothing watched for them) fail nodes on the way, `spares` (nodes per pool)
    are added first (remove_spares takes them away). The GPU nodes up are sampled throughout (node-hours,
    cost and idle in the report follow them); the autoscaler's delays, in trace seconds, are recorded for
    the report when given (the cluster was started with them: cli.simulate_all). With `stop_when_idle` (the
    default) a replay that can_stop_early ends as soon as nothing_left (Run.idle_from), not at the horizon: the
    report counts the rest of the horizon idle, as it was; a caller that reads the cluster's own metrics over
    the whole horizon's wall window asks for the whole wait."""
    run = Run(jobs=jobs, speed=speed, horizon=horizon, corrected=correct, failure_schedule=failures,
              failure_seed=failure_seed, failure_rate=failure_rate, spares=dict(spares or {}),
              toleration_s=lost_node_toleration_s(speed) * speed, node_samples=[],
              scale_up_delay_s=scale_up_delay_s, scale_down_delay_s=scale_down_delay_s)
    if failures is not None:   # every node up (a previous replay's failures were repaired), then the spares
        wait_healthy(client, registered_node_names(plan))
    if spares:
        add_spares(client, plan, spares)
    watcher = Watcher(client, run, plan, correct)
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
    injector = Injector(client, plan, watcher, run, errors)
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
        early = stop_when_idle and can_stop_early(plan, failures, spares)
        due_jobs = {i for i, _ in due}
        while (remaining := end_wall - clock()) > 0:
            if early and nothing_left(run, watcher, due_jobs):
                run.idle_from = clock() * speed
                # The report holds the last node sample to the horizon with the allocation at its time: one taken
                # now, after the last finish, so the rest counts idle (the sampler's last may precede that finish).
                stop_progress.set()
                sampler.join(timeout=2)
                samples.append(watcher.sample_nodes())
                break
            time.sleep(min(remaining, IDLE_POLL_S) if early else remaining)
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
