"""The `gpu-platform.requeues` group: Kueue's evictions per team, reason and cause, and the alerts on jobs
requeued after losing a node and on jobs deactivated at the requeue limit."""

from __future__ import annotations

from gpu_platform import conventions as cv

from .record_names import CLUSTER_QUEUE_TEAM, TEAM_EVICTIONS
from .rules import Alert, Group, Record
from .sources import KUEUE_REPLICA


def requeue_rules() -> Group:
    """Jobs stopped and requeued because a node failed under them, per team and reason, and the ones Kueue gave
    up on. Kueue's reasons (apis/kueue/v1beta2/workload_types.go, v0.19.2): NodeFailures, a topology-aware
    job's node failed and no replacement was free (or a second one failed); PodsReadyTimeout with underlying
    cause WaitForRecovery, a running job lost a pod and was not whole again within the recovery timeout
    (WaitForStart: its pods never all started); Deactivated with RequeuingLimitExceeded, the requeue limit."""
    evictions = (f"sum by (team, reason, underlying_cause) (increase({cv.KUEUE_EVICTED_WORKLOADS}{{{KUEUE_REPLICA}}}[1h]) "
                 f"* on (cluster_queue) group_left (team) {CLUSTER_QUEUE_TEAM})")
    node_lost = (f'{TEAM_EVICTIONS}{{reason="NodeFailures"}} > 0 or '
                 f'{TEAM_EVICTIONS}{{reason="PodsReadyTimeout", underlying_cause="WaitForRecovery"}} > 0')
    return Group("gpu-platform.requeues", (
        Record(TEAM_EVICTIONS, evictions),
        Alert(
            alert="KueueJobsRequeuedAfterNodeFailure",
            expr=node_lost,
            severity="info",
            summary="Team {{ $labels.team }}: {{ $value }} jobs stopped and requeued in the last hour after losing a node ({{ $labels.reason }})",
            description="Jobs of this team lost a node (or a pod on one) while running and were evicted whole "
                        "and requeued with their priority (reason {{ $labels.reason }}, {{ $labels.underlying_cause }}). "
                        "They restart from their last checkpoint; their Workloads' Evicted condition names the node "
                        "for NodeFailures.",
            runbook="docs/runbook.md, \"A GPU node failed during a run\": kubectl get workloads -n <namespace> "
                    "-o custom-columns=NAME:.metadata.name,EVICTED:.status.conditions[?(@.type==\"Evicted\")].message; "
                    "check the node's conditions (kubectl describe node) and whether node repair replaced it.",
        ),
        Alert(
            alert="KueueWorkloadDeactivatedAtRequeueLimit",
            expr=f'{TEAM_EVICTIONS}{{reason="Deactivated", underlying_cause="RequeuingLimitExceeded"}} > 0',
            severity="warning",
            summary="Team {{ $labels.team }}: {{ $value }} jobs deactivated in the last hour after too many requeues",
            description="Kueue stopped requeueing these jobs: their pods failed to all become Ready (after "
                        "admission or after losing a pod) more times than addons.kueue.requeueLimit allows. "
                        "They stay suspended until someone reactivates them, and are deleted after "
                        "jobs.ttlSecondsAfterFinished.",
            runbook="docs/runbook.md, \"A GPU node failed during a run\": find them with kubectl get workloads -A "
                    "-o custom-columns=NS:.metadata.namespace,NAME:.metadata.name,ACTIVE:.spec.active; fix the "
                    "cause (failing nodes, an image that never pulls), then kubectl patch workload <name> "
                    "--type=merge -p '{\"spec\":{\"active\":true}}'.",
        ),
    ))
