"""What useful work means, defined once: the figures the live report (`platform_cli report`, read from a
Prometheus) and the what-if replay (`simulate`, simulator/metrics.py, read from its recorded events) both
compute, with the same functions, so the two reports cannot drift apart on a definition.

The seeds' three views meet here: allocated GPU time against busy GPU time (allocated-but-idle), the GPU
time of runs that did not finish (failed, preempted), and what the capacity cost per finished job:

    cost per finished job = (compute + idle + failed runs) / jobs that finished successfully

where compute is the GPU time of runs that finished or still run, failed runs the GPU time of runs that
failed or were stopped by the platform (preempted, evicted), and idle the capacity no run held; together
they are the whole capacity's cost, at the plan's prices (catalog on-demand node prices per unit).

Time series come in two shapes: a replay knows exact intervals (a step function of (time, value from then
on)); a Prometheus gives samples on a grid of `step` seconds, each standing for the step before it (the sum
`sum_over_time(x[W:step]) * step` makes, so a recording rule and the report agree to the last digit).
"""

from __future__ import annotations

import math
from typing import Any, Callable, Iterable, Mapping, Sequence

from gpu_platform import conventions as cv

SECONDS_PER_HOUR = 3600.0

# How a run ended, and which part of the cost its GPU time is: a run that finished did useful work; a run
# still going is neither (yet); a run that failed, or that the platform stopped (preempted, evicted, its node
# lost), spent its GPU time on nothing. `evicted` is the replay's word for the platform stopping a run.
RUN_FINISHED, RUN_RUNNING, RUN_FAILED, RUN_PREEMPTED = "finished", "running", "failed", "preempted"
RUN_OUTCOMES: tuple[str, ...] = (RUN_FINISHED, RUN_RUNNING, RUN_FAILED, RUN_PREEMPTED)
# spare_usd: the what-if's spare nodes (simulate --spare-nodes), beyond the plan's capacity; 0 in the live report.
COST_KEYS: tuple[str, ...] = ("useful_usd", "lost_usd", "running_usd", "idle_usd", "spare_usd")


# What a finished job is, the denominator of the cost: one workload Kueue admitted, of a kind that runs to an
# end, whose Kueue Workload turned Finished with reason Succeeded. Kueue's job reconciler sets the Workload's
# Finished condition, reason Succeeded or Failed, from the managed object's own end for every kind it runs
# (kubernetes-sigs/kueue pkg/controller/jobframework/reconciler.go: WorkloadFinishedReasonSucceeded /
# WorkloadFinishedReasonFailed from GenericJob.Finished()), so one rule counts a Job, a JobSet (not its child
# Jobs), a TrainJob (not the JobSet and Jobs Trainer makes) and a RayJob (not its submitter Job) once each.
# A LeaderWorkerSet serves: it has no end that delivers a result (Kueue never marks it Finished while it
# serves), so it is no job, finished or failed, in either report.
FINISHED_SUCCEEDED, FINISHED_FAILED = "Succeeded", "Failed"
JOB_KINDS: tuple[str, ...] = ("Job", "JobSet", "TrainJob", "RayJob")
SERVING_KINDS: tuple[str, ...] = ("LeaderWorkerSet",)
JOB_FINISHED, JOB_FAILED = "finished", "failed"


def job_end(kind: str, finished_reason: str) -> str | None:
    """How a workload of `kind` (the Kind of the object Kueue manages: its Workload's owner) counts once its
    Workload is Finished with `finished_reason`: a finished job, a failed job, or nothing (a serving kind, a
    kind the platform does not run, or a reason that is neither Succeeded nor Failed)."""
    if kind not in JOB_KINDS:
        return None
    return {FINISHED_SUCCEEDED: JOB_FINISHED, FINISHED_FAILED: JOB_FAILED}.get(finished_reason)


# Where a Prometheus finds Workloads' conditions: kube-state-metrics' custom resource state metrics (its
# --custom-resource-state-config; kubernetes/kube-state-metrics docs/metrics/extend/customresourcestate-metrics.md:
# a gauge per element of status.conditions, valueFrom the condition's status, "True" read as 1). KSM_WORKLOAD_CONDITIONS
# is that configuration, named from the conventions (the series is metricNamePrefix + "_" + the metric's name,
# cv.KSM_WORKLOAD_CONDITION); docs/report.md says where it goes. The live local cluster's telemetry serves the same
# series (localcluster/telemetry.py).
WORKLOAD_CONDITION_METRIC = cv.KSM_WORKLOAD_CONDITION
KUEUE_WORKLOAD_GVK = {"group": "kueue.x-k8s.io", "version": "v1beta2", "kind": "Workload"}
KSM_WORKLOAD_CONDITIONS: dict[str, Any] = {
    "kind": "CustomResourceStateMetrics",
    "spec": {"resources": [{
        "groupVersionKind": KUEUE_WORKLOAD_GVK,
        "metricNamePrefix": cv.KSM_WORKLOAD_METRIC_PREFIX,
        "labelsFromPath": {"namespace": ["metadata", "namespace"], "workload": ["metadata", "name"],
                           "owner_kind": ["metadata", "ownerReferences", "0", "kind"],
                           "owner_name": ["metadata", "ownerReferences", "0", "name"]},
        "metrics": [{"name": cv.KSM_WORKLOAD_CONDITION_NAME, "help": "The Workload's status conditions (1: True).",
                     "each": {"type": "Gauge", "gauge": {"path": ["status", "conditions"],
                                                         "labelsFromPath": {"type": ["type"], "reason": ["reason"]},
                                                         "valueFrom": ["status"]}}}],
    }]},
}


def busy_gpus(gpus: float, busy_fraction: float | None) -> float:
    """GPUs kept busy by a run holding `gpus` GPUs at its declared busy fraction (the trace's `busy` column, the
    job template's --gpu-busy; none declared: busy all the time, as the simulated nodes' telemetry reads it)."""
    fraction = cv.SIM_GPU_BUSY_DEFAULT if busy_fraction is None else min(1.0, max(0.0, busy_fraction))
    return gpus * fraction


# A run's GPU time, charged to how it ended (finished, failed, preempted, running): its pods' hold on their GPUs,
# from when they run on their node to when they end, as the GPUs' telemetry attributes a device to a pod (the
# live report's per-pod DCGM series, read from a field that needs no GPU profiling, components/alerts.HELD_DEVICE,
# so a run keeps its GPU time where busy cannot be measured) and the replay sees its pods run and end. Not the
# quota it held: that also counts admission to the pods running and their end to Kueue's release, which is the
# platform's overhead (allocated-but-idle), not the run's; and per run the live report has no quota series to
# read it from.

# How the replay records a run's end (simulator/allocations.Interval.ended) in these terms: a run evicted (preempted,
# a PodsReady timeout, a lost node's requeue) or started over in place (a lost pod replaced) was stopped by the
# platform, as a pod deleted while it ran is in the live report.
REPLAY_OUTCOME: dict[str, str] = {"finished": RUN_FINISHED, "running": RUN_RUNNING, "failed": RUN_FAILED,
                                  "evicted": RUN_PREEMPTED, "interrupted": RUN_PREEMPTED}


def cost_key(ended: str) -> str:
    """The cost bucket of a run's GPU time, by how it ended (anything but finished or running is lost)."""
    ended = REPLAY_OUTCOME.get(ended, ended)
    return {RUN_FINISHED: "useful_usd", RUN_RUNNING: "running_usd"}.get(ended, "lost_usd")


def run_outcome(*, holds_at_end: bool, succeeded: bool, failed: bool, deleted: bool) -> str:
    """How a run (a pod's hold on its GPUs) ended, from what the cluster showed: still holding its GPUs at the
    end of the window, running; its pod Succeeded, finished; its pod Failed by itself (not deleted first),
    failed; otherwise the platform stopped it: deleted while running (Kueue suspending its Job to preempt or
    evict it, a lost node's pods evicted), which on a real kubelet ends Failed too, after the deletion."""
    if holds_at_end:
        return RUN_RUNNING
    if succeeded:
        return RUN_FINISHED
    if failed and not deleted:
        return RUN_FAILED
    return RUN_PREEMPTED


# ---------------------------------------------------------------------------------------------------
# Step functions (exact intervals)


def steps(deltas: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    """A step function (time, level from then on) from changes (time, delta), summed in time order."""
    out: list[tuple[float, float]] = []
    level = 0.0
    for t, d in sorted(deltas):
        level += d
        if out and out[-1][0] == t:
            out[-1] = (t, level)
        else:
            out.append((t, level))
    return out


def step_integral(points: Sequence[tuple[float, float]], a: float, b: float) -> float:
    """Integral over [a, b] of a step function given as (time, value from then on), sorted by time."""
    total, value, t_prev = 0.0, 0.0, a
    for t, v in points:
        if t > b:
            break
        if t > a:
            total += value * (t - t_prev)
            t_prev = t
        value = v
    return total + value * max(0.0, b - t_prev)


def integrate(points: Sequence[tuple[float, float]], horizon: float,
              f: Callable[[float], float] = lambda v: v) -> float:
    """Integral over [0, horizon] of f(step function)."""
    total, value, t_prev = 0.0, 0.0, 0.0
    for t, v in points:
        t = min(max(t, 0.0), horizon)
        total += f(value) * (t - t_prev)
        t_prev, value = t, v
    return total + f(value) * max(0.0, horizon - t_prev)


def at(points: Sequence[tuple[float, float]], t: float) -> float:
    """The step function's value at t (0 before its first point)."""
    value = 0.0
    for tp, v in points:
        if tp > t:
            break
        value = v
    return value


# ---------------------------------------------------------------------------------------------------
# Sampled series (a Prometheus range query)


def sampled_hours(samples: Iterable[float], step_s: float) -> float:
    """GPU-hours of a series of GPU counts sampled every `step_s` seconds: each sample stands for the step
    before it (PromQL `sum_over_time(x[W:step]) * step / 3600`, what the recording rules compute)."""
    return sum(samples) * step_s / SECONDS_PER_HOUR


def allocated_but_idle(allocated: float, busy: float) -> float:
    """GPUs allocated and not busy: never negative (a pod's GPU series can outlive its quota by a scrape)."""
    return max(0.0, allocated - busy)


def idle_series(allocated: Sequence[float], busy: Sequence[float]) -> list[float]:
    return [allocated_but_idle(a, b) for a, b in zip(allocated, busy)]


# ---------------------------------------------------------------------------------------------------
# Distributions


def percentile(values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile (the smallest value with at least q of the values at or below it)."""
    if not values:
        return None
    s = sorted(values)
    return s[min(len(s) - 1, max(0, math.ceil(q * len(s)) - 1))]


def histogram_quantile(q: float, buckets: Sequence[tuple[float, float]]) -> float | None:
    """The q-quantile of a cumulative histogram [(upper bound, count at or below)], as Prometheus'
    histogram_quantile computes it (promql/quantile.go: linear interpolation inside the bucket the rank falls
    in, from 0 for the first bucket; the highest finite bound when the rank falls in +Inf). None when empty.
    Kueue's wait histograms are exponential (1 s, then 2.5 s doubling: pkg/metrics/metrics.go
    generateExponentialBuckets, v0.19.2), so a quantile is only as fine as its bucket."""
    b = sorted(buckets)
    if len(b) < 2 or b[-1][0] != math.inf:
        return None
    total = b[-1][1]
    if total <= 0:
        return None
    rank = q * total
    prev_le, prev_count = 0.0, 0.0
    for i, (le, count) in enumerate(b):
        if count >= rank:
            if le == math.inf:
                return b[-2][0]
            if i == 0 and le <= 0:
                return le
            if count == prev_count:
                return le
            return prev_le + (le - prev_le) * (rank - prev_count) / (count - prev_count)
        prev_le, prev_count = le, count
    return b[-2][0]


def jain(xs: Sequence[float | None]) -> float | None:
    """Jain's fairness index of xs (1 when all equal), None when there is nothing to compare."""
    ys = [x for x in xs if x is not None]
    if not ys or not any(ys):
        return None
    return sum(ys) ** 2 / (len(ys) * sum(y * y for y in ys))


# ---------------------------------------------------------------------------------------------------
# Money


def usd_per_gpu_hour(usd_per_node_hour: float, gpus_per_node: int) -> float:
    """A pool's price of one GPU for one hour (on-demand node price over its GPUs)."""
    return usd_per_node_hour / gpus_per_node


def cost_summary(usd: Mapping[str, float], finished_jobs: int) -> dict[str, float | None]:
    """The cost table both reports print: each bucket of COST_KEYS, their total (the capacity's cost), and
    the seeds' cost per finished job, (compute + idle + failed runs) / jobs that finished successfully."""
    unknown = set(usd) - set(COST_KEYS)
    if unknown:
        raise ValueError(f"unknown cost buckets {sorted(unknown)}; buckets: {', '.join(COST_KEYS)}")
    total = sum(usd.get(k, 0.0) for k in COST_KEYS)
    out: dict[str, float | None] = {k: round(usd.get(k, 0.0), 2) for k in COST_KEYS}
    out["total_usd"] = round(total, 2)
    out["usd_per_finished_job"] = round(total / finished_jobs, 2) if finished_jobs else None
    return out
