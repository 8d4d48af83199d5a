"""The `gpu-platform.queues` group: a ClusterQueue whose workloads wait while it admits nothing, and a team using
its whole quota in a pool with workloads waiting."""

from __future__ import annotations

from gpu_platform import conventions as cv
from gpu_platform.plan import Plan

from .record_names import CLUSTER_QUEUE_TEAM, FLAVOR_POOL
from .rules import Alert, Group
from .sources import KUEUE_REPLICA, regex_union
from .thresholds import AT_QUOTA_FOR, PENDING_FOR


def queue_alerts(plan: Plan) -> Group:
    gpu = regex_union(list(plan.gpu_resource_names))
    pending = f"sum by (cluster_queue) ({cv.KUEUE_PENDING_WORKLOADS}{{{KUEUE_REPLICA}}})"
    return Group("gpu-platform.queues", (
        Alert(
            alert="KueueWorkloadsPendingTooLong",
            expr=(f"({pending} > 0 unless on (cluster_queue) "
                  f"sum by (cluster_queue) (increase({cv.KUEUE_ADMITTED_WORKLOADS}{{{KUEUE_REPLICA}}}[15m])) > 0) "
                  f"* on (cluster_queue) group_left (team) {CLUSTER_QUEUE_TEAM}"),
            for_=PENDING_FOR,
            severity="warning",
            summary="ClusterQueue {{ $labels.cluster_queue }} (team {{ $labels.team }}): {{ $value }} workloads pending, none admitted for " + PENDING_FOR,
            description="Workloads have been pending in this ClusterQueue for " + PENDING_FOR + " while it admitted "
                        "nothing: its quota is used up and nothing can be borrowed, or the pending workloads "
                        "ask for something no flavor offers.",
            runbook="kubectl get workloads -n <a namespace of team {{ $labels.team }}> lists the pending ones; "
                    "kubectl describe workload on one: its QuotaReserved condition message says what is missing. "
                    "Compare usage with nominal quota on the queues dashboard; raise the team's quota, add a "
                    "borrowing limit, or add nodes to the pool.",
        ),
        Alert(
            alert="KueueClusterQueueAtQuota",
            expr=(f"((sum by (cluster_queue, flavor, resource) ({cv.KUEUE_RESOURCE_USAGE}{{resource=~\"{gpu}\", {KUEUE_REPLICA}}}) "
                  f">= on (cluster_queue, flavor, resource) "
                  f"sum by (cluster_queue, flavor, resource) ({cv.KUEUE_NOMINAL_QUOTA}{{resource=~\"{gpu}\", {KUEUE_REPLICA}}}) > 0) "
                  f"and on (cluster_queue) ({pending} > 0)) "
                  f"* on (cluster_queue) group_left (team) {CLUSTER_QUEUE_TEAM} "
                  f"* on (flavor) group_left (pool) {FLAVOR_POOL}"),
            for_=AT_QUOTA_FOR,
            severity="info",
            summary="Team {{ $labels.team }} uses its whole {{ $labels.resource }} quota in pool {{ $labels.pool }} with workloads waiting",
            description="ClusterQueue {{ $labels.cluster_queue }} has used at least its nominal quota of "
                        "{{ $labels.resource }} in flavor {{ $labels.flavor }} for " + AT_QUOTA_FOR + " while "
                        "workloads wait: new work runs only by borrowing from the cohort.",
            runbook="Nothing is broken. If it persists, the team needs more quota in this pool: raise "
                    "teams[].quotas.<pool>.units (or the borrowing limit) in the stack config, within the pool's "
                    "capacity, or grow the pool.",
        ),
    ))
