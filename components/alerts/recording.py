"""The `gpu-platform.recording` group: each node's pool, each pod's team and queue labels, GPU activity attributed
to teams, the devices pods hold, the nodes whose busy time is not measured, and allocation and utilization per
team and per pool (dashboards and alerts read these)."""

from __future__ import annotations

from gpu_platform import conventions as cv
from gpu_platform.plan import Plan

from .record_names import (
    ALLOCATED_GPU_ACTIVE, CLUSTER_QUEUE_TEAM, FLAVOR_POOL, GPU_ACTIVE, HELD_DEVICE, NAMESPACE_TEAM,
    NODE_BUSY_UNMEASURED, NODE_EXPECTED_UNITS, NODE_POOL, POD_ATTRIBUTION, POOL_ALLOCATABLE, POOL_ALLOCATED,
    POOL_ALLOCATION_RATIO, POOL_CAPACITY_UNITS, POOL_UNITS_PER_NODE, POOL_UTILIZATION, TEAM_POOL_ALLOCATED,
    TEAM_POOL_UTILIZATION, TEAM_UTILIZATION,
)
from .rules import Group, Record
from .sources import (
    ATTRIBUTION_LABELS, BUSY_FIELD, DCGM_JOB, HELD_FIELD, HOLD_KEY, KUEUE_REPLICA, POOL_NODE_LABEL, ksm_label,
    ksm_resource, regex_union,
)


def pod_attribution_expr() -> str:
    """Per pod, its team and queue labels under the names dcgm-exporter gives them, from kube-state-metrics:
    only pods carrying at least one of them (so an unlabelled pod falls through `with_attribution`)."""
    ksm = [ksm_label(k) for k in cv.GPU_METRIC_POD_LABELS]
    expr = " or ".join(f'{cv.KSM_POD_LABELS}{{{k}!=""}}' for k in ksm)
    for name, source in zip(ATTRIBUTION_LABELS, ksm):
        expr = f'label_replace({expr}, "{name}", "$1", "{source}", "(.+)")'
    return f"max by (namespace, pod, {', '.join(ATTRIBUTION_LABELS)}) ({expr})"


def with_attribution(expr: str) -> str:
    """`expr` (GPU series with the workload pod's namespace/pod) carrying the pod's team and queue labels
    whatever dcgm-exporter's mode: joined from POD_ATTRIBUTION where kube-state-metrics knows the pod's
    labels, the series as the exporter sent it (with the labels it copied itself, or none) where not.
    Under KUBERNETES_VIRTUAL_GPUS the exporter copies no pod label at all (gpu_operator.dcgm_exporter_env)."""
    labels = ", ".join(ATTRIBUTION_LABELS)
    return (f"(({expr}) * on (namespace, pod) group_left ({labels}) {POD_ATTRIBUTION}) "
            f"or (({expr}) unless on (namespace, pod) {POD_ATTRIBUTION})")


def held_device_expr() -> str:
    """One series (value 1) per GPU, MIG instance or replica and the pod the exporter attributes it to, from the
    framebuffer field or the busy field, whichever has a value: held GPUs do not depend on profiling."""
    return (f"max by ({HOLD_KEY}) (({HELD_FIELD} or {BUSY_FIELD}) * on (node) group_left (pool) {NODE_POOL}) "
            "* 0 + 1")


def node_busy_unmeasured_expr() -> str:
    """GPU nodes of a pool whose exporter is up and gives no busy series: dcgm-exporter reports every device,
    held or not (virtual GPUs too since PR #594), so a node without one has no profiling."""
    return (f'((max by (node) ({cv.SCRAPE_UP}{{job="{DCGM_JOB}"}}) == 1) * on (node) group_left (pool) {NODE_POOL}) '
            f"unless on (node) {BUSY_FIELD}")


def recording_rules(plan: Plan) -> Group:
    """GPU allocation and utilization per team and per pool (dashboards and alerts read these)."""
    kueue_gpu = regex_union(list(plan.gpu_resource_names))
    ksm_gpu = regex_union([ksm_resource(r) for r in plan.gpu_resource_names])
    return Group("gpu-platform.recording", (
        Record(NODE_POOL, f'max by (node, pool) (label_replace({cv.KSM_NODE_LABELS}{{{POOL_NODE_LABEL}!=""}}, '
                          f'"pool", "$1", "{POOL_NODE_LABEL}", "(.+)"))'),
        Record(NODE_EXPECTED_UNITS, f"{NODE_POOL} * on (pool) group_left (resource) {POOL_UNITS_PER_NODE}"),
        Record(POD_ATTRIBUTION, pod_attribution_expr()),
        Record(GPU_ACTIVE, with_attribution(f"{BUSY_FIELD} * on (node) group_left (pool) {NODE_POOL}")),
        # A GPU is allocated to a team when dcgm-exporter attributes it to a pod in one of the team's
        # namespaces; unallocated GPUs keep the exporter's own namespace and drop out of the join.
        Record(ALLOCATED_GPU_ACTIVE, f"{GPU_ACTIVE} * on (namespace) group_left (team) {NAMESPACE_TEAM}"),
        Record(HELD_DEVICE, held_device_expr()),
        Record(NODE_BUSY_UNMEASURED, node_busy_unmeasured_expr()),
        # Each GPU (or MIG instance) once: with virtual GPUs a time-sliced GPU has one series per pod.
        Record(POOL_UTILIZATION, f"avg by (pool) (max by (node, pool, UUID, GPU_I_ID) ({GPU_ACTIVE}))"),
        Record(TEAM_POOL_UTILIZATION, f"avg by (team, pool) ({ALLOCATED_GPU_ACTIVE})"),
        Record(TEAM_UTILIZATION, f"avg by (team) ({ALLOCATED_GPU_ACTIVE})"),
        # Allocation is what Kueue admitted: usage per ClusterQueue (team) and flavor (pool), in pool units.
        Record(TEAM_POOL_ALLOCATED, f'sum by (team, pool, resource) ({cv.KUEUE_RESOURCE_USAGE}{{resource=~"{kueue_gpu}", {KUEUE_REPLICA}}} '
                                    f"* on (cluster_queue) group_left (team) {CLUSTER_QUEUE_TEAM} "
                                    f"* on (flavor) group_left (pool) {FLAVOR_POOL})"),
        Record(POOL_ALLOCATED, f"sum by (pool, resource) ({TEAM_POOL_ALLOCATED})"),
        Record(POOL_ALLOCATION_RATIO, f"{POOL_ALLOCATED} / on (pool, resource) {POOL_CAPACITY_UNITS}"),
        Record(POOL_ALLOCATABLE, f'sum by (pool, resource) ({cv.KSM_NODE_ALLOCATABLE}{{resource=~"{ksm_gpu}"}} '
                                 f"* on (node) group_left (pool) {NODE_POOL})"),
    ))
