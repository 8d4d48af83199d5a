"""The `gpu-platform.waste` group: a pod holding GPUs that have been idle for IDLE_FOR."""

from __future__ import annotations

from .record_names import ALLOCATED_GPU_ACTIVE
from .rules import Alert, Group
from .thresholds import IDLE_ENGINE_ACTIVE, IDLE_FOR


def waste_alerts() -> Group:
    return Group("gpu-platform.waste", (
        Alert(
            alert="GpuAllocatedIdle",
            expr=f"max by (team, pool, namespace, pod) ({ALLOCATED_GPU_ACTIVE}) < {IDLE_ENGINE_ACTIVE}",
            for_=IDLE_FOR,
            severity="warning",
            summary="Team {{ $labels.team }}: {{ $labels.namespace }}/{{ $labels.pod }} holds idle GPUs in pool {{ $labels.pool }}",
            description="Every GPU allocated to this pod has been under " + f"{IDLE_ENGINE_ACTIVE:.0%}" +
                        " graphics-engine activity for " + IDLE_FOR + ": the team's quota is spent on nothing "
                        "and other teams' jobs may be waiting for these GPUs.",
            runbook="Ask the team to stop or fix the pod (a finished notebook, a job stuck before its first "
                    "kernel, a data loader starving the GPU). kubectl -n {{ $labels.namespace }} describe pod "
                    "{{ $labels.pod }}; the fleet dashboard shows the team's utilization over time.",
        ),
    ))
