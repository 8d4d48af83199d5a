"""The acceptance command's step runners: step 1 (the JobSet created as the team, Kueue's admission and the queue
wait), steps 2 to 5 from the workload's run (platform_cli/acceptance_run.py), step 6 from the stack's Prometheus
(platform_cli/acceptance_labels.py), step 7's pricing, and what a step says when there is nothing for it to judge
(skipped, saying why)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Callable, Protocol, Sequence

from gpu_platform import acceptance as acc, conventions as cv, useful_work as uw
from gpu_platform.plan import PoolPlan, TeamPlan

from .acceptance_cluster import ClusterClient, ClusterError
from .acceptance_data import credentials_secret
from .acceptance_labels import Reader, SeriesLabels
from .acceptance_request import Request
from .acceptance_run import Observed, WorkloadRun

POLL_S = 2.0
PROGRESS_EVERY_S = 10.0
KUBECTL_TIMEOUT_S = 60
WORKLOAD_RESOURCE = "workloads.kueue.x-k8s.io"
JOBSET_RESOURCE = "jobsets.jobset.x-k8s.io"

# Why step 7 is skipped when no step priced anything (StepResult.not_available adds "not available on this cluster: ").
WHY_WORK = "it prices the work step 4 reports and the pods' run times, which no step on this cluster produces yet"


@dataclass
class RunState:
    """What the steps share: the request, the cluster, and what earlier steps found for later ones."""

    request: Request
    client: ClusterClient
    progress: Callable[[str], None]
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    admission_timeout_s: float = acc.ADMISSION_TIMEOUT_S
    submitted: bool = False
    # When the JobSet was created (clock): step 6 reads the job's series since then.
    submitted_at: float | None = None
    workload: dict[str, Any] | None = None
    # The workload's run (steps 2 to 5, driven once by the first of them), and what step 7 prices.
    observed: Observed | None = None
    runs: list[acc.Run] | None = None
    work: acc.Work | None = None
    results: dict[int, acc.StepResult] = field(default_factory=dict)


class StepRunner(Protocol):
    number: int

    def run(self, state: RunState) -> acc.StepResult: ...


def _time(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value.replace("Z", "+00:00")) if value else None


def _condition(workload: dict[str, Any], kind: str) -> dict[str, Any]:
    return next((c for c in workload.get("status", {}).get("conditions") or [] if c.get("type") == kind), {})


def owned_workload(workloads: Sequence[dict[str, Any]], kind: str, name: str) -> dict[str, Any] | None:
    """The Kueue Workload of the object `kind`/`name`: the one it owns (Kueue's job reconciler makes it with an
    owner reference to the job)."""
    return next((w for w in workloads for o in w.get("metadata", {}).get("ownerReferences") or []
                 if o.get("kind") == kind and o.get("name") == name), None)


def queue_waits(workload: dict[str, Any]) -> tuple[int | None, int | None]:
    """Seconds from the Workload's creation to QuotaReserved and to Admitted (True), as Kueue's wait-time metrics
    count them for a first admission (kueue v0.19.2 pkg/workload/workload.go QueuedWaitTime: from creation, or from
    the Requeued condition after an eviction); the API's timestamps have whole seconds."""
    created = _time(workload.get("metadata", {}).get("creationTimestamp"))
    out: list[int | None] = []
    for kind in ("QuotaReserved", "Admitted"):
        c = _condition(workload, kind)
        at = _time(c.get("lastTransitionTime")) if c.get("status") == "True" else None
        out.append(int((at - created).total_seconds()) if at and created else None)
    return out[0], out[1]


def admission_problem(workload: dict[str, Any], team: TeamPlan, pool: PoolPlan) -> tuple[str, str] | None:
    """(expected, seen) when the Workload is not queued, or not given quota, where the platform puts the team's work
    on the pool: its LocalQueue, its ClusterQueue, the pool's flavor for the GPU resource; None when nothing is wrong
    so far (before QuotaReserved only the queue can be judged)."""
    queue = workload.get("spec", {}).get("queueName")
    if queue != cv.LOCAL_QUEUE_NAME:
        return f"queued in the team's LocalQueue {cv.LOCAL_QUEUE_NAME!r}", f"queueName {queue!r}"
    admission = workload.get("status", {}).get("admission") or {}
    if _condition(workload, "QuotaReserved").get("status") != "True":
        return None  # not yet reserved: nothing to judge
    cq = admission.get("clusterQueue")
    if cq != team.cluster_queue:
        return f"quota reserved in team {team.name!r}'s ClusterQueue {team.cluster_queue!r}", f"ClusterQueue {cq!r}"
    flavors = {a.get("flavors", {}).get(pool.resource_name) for a in admission.get("podSetAssignments") or []}
    flavors.discard(None)
    if flavors != {pool.flavor}:
        return (f"{pool.resource_name} on pool {pool.name!r}'s flavor {pool.flavor!r}",
                f"flavors {sorted(str(f) for f in flavors) or 'none'}")
    return None


class SubmitQueuedJob:
    """Step 1: create the JobSet as the team, wait for Kueue to admit it, and read the queue wait."""

    number = 1

    def run(self, state: RunState) -> acc.StepResult:
        r = state.request
        who = r.submitted_as
        who_text = f"{who[0]} in group {who[1][0]}" if who else "the kubeconfig's own user"
        submitted_as = acc.Figure("submitted_as", who_text)
        secret = credentials_secret(r.data, r.namespace, r.team.name) if r.runs_workload and r.data else None
        if secret is not None:
            try:
                if state.client.ensure(secret):  # type: ignore[attr-defined]
                    state.progress(f"step 1: made Secret {r.namespace}/{secret['metadata']['name']} with team "
                                   f"{r.team.name}'s keys to the local object store")
            except ClusterError as err:
                return acc.StepResult.failed(1, f"the team's data path keys in Secret {secret['metadata']['name']}",
                                             str(err).splitlines()[0] if str(err) else "refused", submitted_as)
        try:
            state.client.create(r.objects, who)
        except ClusterError as err:
            return acc.StepResult.failed(1, f"the JobSet accepted when created as team {r.team.name!r} ({who_text})",
                                         str(err).splitlines()[0] if str(err) else "refused", submitted_as)
        state.submitted, state.submitted_at = True, state.clock()
        state.progress(f"step 1: created JobSet {r.namespace}/{r.name} as {who_text}; waiting for Kueue to admit it")
        start = last = state.clock()
        while True:
            workload = owned_workload(state.client.get(WORKLOAD_RESOURCE, r.namespace), "JobSet", r.name)
            if workload is not None:
                state.workload = workload
                problem = admission_problem(workload, r.team, r.pool)
                if problem is not None:
                    return acc.StepResult.failed(1, problem[0], problem[1], submitted_as)
                if _condition(workload, "Admitted").get("status") == "True":
                    reserved, admitted = queue_waits(workload)
                    admission = workload.get("status", {}).get("admission") or {}
                    return acc.StepResult.passed(
                        1, acc.Figure("quota_reserved_wait", reserved, "s"), acc.Figure("admitted_wait", admitted, "s"),
                        acc.Figure("cluster_queue", admission.get("clusterQueue")), acc.Figure("flavor", r.pool.flavor),
                        submitted_as)
                if _condition(workload, "Finished").get("status") == "True":
                    finished = _condition(workload, "Finished")
                    return acc.StepResult.failed(1, "Admitted", f"Finished before admission: {finished.get('reason')}: "
                                                                f"{finished.get('message')}", submitted_as)
            now = state.clock()
            if now - start >= state.admission_timeout_s:
                return acc.StepResult.failed(1, f"Admitted within {state.admission_timeout_s:g} s",
                                             f"not admitted after {now - start:.0f} s: {waiting_for(workload)}",
                                             submitted_as)
            if now - last >= PROGRESS_EVERY_S:
                state.progress(f"step 1: {now - start:.0f}s, {waiting_for(workload)}")
                last = now
            state.sleep(POLL_S)


def waiting_for(workload: dict[str, Any] | None) -> str:
    """What a Workload not yet admitted waits for, in Kueue's words (its QuotaReserved condition)."""
    if workload is None:
        return "no Workload yet (Kueue has not seen the JobSet: is its jobset integration on?)"
    c = _condition(workload, "QuotaReserved")
    if not c:
        return "Workload created, not yet considered"
    return f"QuotaReserved {c.get('status')} ({c.get('reason')}): {c.get('message')}"


class WorkloadStep:
    """Steps 2 to 5 from the workload's run, which the first of them drives (acceptance_run.WorkloadRun) and the
    others read; step 7's runs and work are filled from it."""

    def __init__(self, number: int):
        self.number = number

    def run(self, state: RunState) -> acc.StepResult:
        r = state.request
        if state.observed is None:
            state.observed = WorkloadRun(state.client, r.namespace, r.name, r.nodes, r.window_s,  # type: ignore[arg-type]
                                         state.progress, state.clock, state.sleep).run()
            gpus = r.gpus * r.pool.gpus_per_node / r.pool.units_per_node
            state.runs, state.work = state.observed.runs(gpus), state.observed.work()
        seen = state.observed
        first, last = seen.first_gang(), seen.events(seen.last_attempt)
        if self.number == 2:
            if not first and seen.problem:
                return acc.StepResult.failed(2, f"a data event from each of {r.nodes} pods", seen.problem)
            return acc.evaluate_data_pull(first, r.nodes)
        if self.number == 3:
            result = acc.evaluate_allreduce_run(first, r.nodes, acc.busbw_expectation(r.pool))
            if result.status == acc.FAILED and not acc.of_kind(first, "allreduce") and seen.problem:
                return acc.StepResult.failed(3, result.expected or "", f"{result.seen}; {seen.problem}", *result.figures)
            return result
        if self.number == 4:
            if (stopped := acc.stopped_before(4, first)) is not None:
                return stopped
            result = acc.evaluate_training(last, r.nodes, r.window_s)
            if result.status == acc.FAILED and seen.problem:
                return acc.StepResult.failed(4, result.expected or "", f"{result.seen}; {seen.problem}", *result.figures)
            return result
        if (stopped := acc.stopped_before(5, first)) is not None:
            return stopped
        return acc.evaluate_recovery(seen.recovery(), r.nodes)


class WithoutWorkload:
    """Steps 2 to 6 when the pods run the stand-in image (no --image): nothing in them produces their figures (the
    stand-in sleeps on whichever node, a simulated one included, so its series prove nothing of the job's)."""

    def __init__(self, number: int):
        self.number = number

    def run(self, state: RunState) -> acc.StepResult:
        return acc.StepResult.skipped(self.number, "no --image: the stand-in image does not run the acceptance workload "
                                                   "(pass the production image: Python 3 with torch and boto3)")


class UsefulWork:
    """Step 7: the run's own figures priced against --baseline (gpu_platform/acceptance.evaluate_useful_work)."""

    number = 7

    def run(self, state: RunState) -> acc.StepResult:
        r = state.request
        if r.baseline is None or state.runs is None or state.work is None:
            if r.baseline is not None:
                return acc.StepResult.not_available(7, WHY_WORK)
            return acc.evaluate_useful_work(None, [], 0.0, acc.Work(0, 0))
        price = uw.usd_per_gpu_hour(r.pool.usd_per_node_hour, r.pool.gpus_per_node)
        return acc.evaluate_useful_work(r.baseline, state.runs, price, state.work)


def runners(request: Request, prometheus: Reader | None = None) -> list[StepRunner]:
    """One runner per step, in order; PROMETHEUS is where step 6 reads the job's series (None: none known)."""
    if not request.runs_workload:
        return [SubmitQueuedJob(), *[WithoutWorkload(n) for n in (2, 3, 4, 5, 6)], UsefulWork()]
    return [SubmitQueuedJob(), *[WorkloadStep(n) for n in (2, 3, 4, 5)], SeriesLabels(prometheus), UsefulWork()]
