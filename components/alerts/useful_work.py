"""The `gpu-platform.useful-work` group: allocated, busy and idle GPUs (and GPU-hours) per team and pool and per
pod, with the definitions of gpu_platform/useful_work.py, and the alert on a team's idle allocation."""

from __future__ import annotations

from gpu_platform import conventions as cv
from gpu_platform.plan import Plan

from .record_names import (
    ALLOCATED_GPU_ACTIVE, CLUSTER_QUEUE_TEAM, FLAVOR_POOL, GPU_HOURS_STEP_SECONDS, GPU_HOURS_WINDOW, HELD_DEVICE,
    NAMESPACE_TEAM, NODE_BUSY_UNMEASURED, NODE_POOL, POD_ALLOCATED_GPUS, POD_BUSY_GPUS, POOL_GPUS_PER_UNIT,
    TEAM_POOL_ALLOCATED_GPU_HOURS, TEAM_POOL_ALLOCATED_GPUS, TEAM_POOL_BUSY_GPU_HOURS, TEAM_POOL_BUSY_GPUS,
    TEAM_POOL_IDLE_GPU_HOURS, TEAM_POOL_IDLE_GPUS,
)
from .rules import Alert, Group, Record
from .sources import KUEUE_REPLICA, regex_union
from .thresholds import TEAM_IDLE_FOR, TEAM_IDLE_MIN_GPU_HOURS, TEAM_IDLE_SHARE


def _hours(record: str) -> str:
    """GPU-hours of a GPUs series over the last GPU_HOURS_WINDOW: its samples on a GPU_HOURS_STEP grid, each
    standing for one step (gpu_platform.useful_work.sampled_hours)."""
    return f"sum_over_time({record}[{GPU_HOURS_WINDOW}:{GPU_HOURS_STEP_SECONDS}s]) * {GPU_HOURS_STEP_SECONDS} / 3600"


def useful_work_rules(plan: Plan) -> Group:
    """Allocated, busy and idle GPUs (and GPU-hours) per team and pool, and per pod; the team alert on idle
    allocation. The seeds' "useful work" view: what the report (platform_cli report) reads."""
    kueue_gpu = regex_union(list(plan.gpu_resource_names))
    weighted = f"{ALLOCATED_GPU_ACTIVE} * on (pool) group_left () {POOL_GPUS_PER_UNIT}"
    held = (f"{HELD_DEVICE} * on (namespace) group_left (team) {NAMESPACE_TEAM} "
            f"* on (pool) group_left () {POOL_GPUS_PER_UNIT}")
    return Group("gpu-platform.useful-work", (
        Record(POD_ALLOCATED_GPUS, f"sum by (team, pool, namespace, pod) ({held})"),
        Record(POD_BUSY_GPUS, f"sum by (team, pool, namespace, pod) ({weighted})"),
        Record(TEAM_POOL_ALLOCATED_GPUS,
               f'sum by (team, pool) ({cv.KUEUE_RESOURCE_USAGE}{{resource=~"{kueue_gpu}", {KUEUE_REPLICA}}} '
               f"* on (cluster_queue) group_left (team) {CLUSTER_QUEUE_TEAM} "
               f"* on (flavor) group_left (pool) {FLAVOR_POOL} "
               f"* on (pool) group_left () {POOL_GPUS_PER_UNIT})"),
        Record(TEAM_POOL_BUSY_GPUS, f"sum by (team, pool) ({POD_BUSY_GPUS})"),
        Record(TEAM_POOL_IDLE_GPUS, f"clamp_min({TEAM_POOL_ALLOCATED_GPUS} - on (team, pool) "
                                    f"({TEAM_POOL_BUSY_GPUS} or {TEAM_POOL_ALLOCATED_GPUS} * 0), 0)"),
        Record(TEAM_POOL_ALLOCATED_GPU_HOURS, _hours(TEAM_POOL_ALLOCATED_GPUS)),
        Record(TEAM_POOL_BUSY_GPU_HOURS, _hours(TEAM_POOL_BUSY_GPUS)),
        Record(TEAM_POOL_IDLE_GPU_HOURS, _hours(TEAM_POOL_IDLE_GPUS)),
        Alert(
            alert="GpuTeamAllocatedIdle",
            # Not where busy is not measured: without the pool label (no node's pool is known) or without the
            # profiling field on a node of the pool, busy reads 0 and idle all that was allocated
            # (GpuNodePoolLabelMissing and GpuProfilingMetricsMissing say so instead).
            expr=(f"(({TEAM_POOL_IDLE_GPU_HOURS} / on (team, pool) {TEAM_POOL_ALLOCATED_GPU_HOURS} > {TEAM_IDLE_SHARE:g}) "
                  f"and on (team, pool) ({TEAM_POOL_IDLE_GPU_HOURS} >= {TEAM_IDLE_MIN_GPU_HOURS:g})) "
                  f"unless on (pool) {NODE_BUSY_UNMEASURED} unless on () absent({NODE_POOL})"),
            for_=TEAM_IDLE_FOR,
            severity="warning",
            summary="Team {{ $labels.team }} left {{ $value | humanizePercentage }} of its allocated GPU time "
                    "in pool {{ $labels.pool }} idle over the last hour",
            description=f"Of the GPU-hours Kueue admitted for team {{{{ $labels.team }}}} in pool "
                        f"{{{{ $labels.pool }}}} over the last hour, more than {TEAM_IDLE_SHARE:.0%} (and at least "
                        f"{TEAM_IDLE_MIN_GPU_HOURS:g} GPU-hour) had no graphics-engine activity: quota held, "
                        "capacity paid for, nothing computed.",
            runbook="python -m platform_cli report --stack <stack> --since 1h shows the team's allocated, busy and "
                    "idle GPU-hours per pool and its runs; the GpuAllocatedIdle alert and the fleet dashboard's "
                    "\"Idle allocated GPUs by team\" panel name the pods. Ask the team to stop or fix them (finished "
                    "notebooks, jobs stuck before their first kernel, data loaders starving the GPUs).",
        ),
    ))
