"""What a GPU node keeps from its pods: kubelet's reserve, the eviction threshold and the platform's daemonsets.

The plan divides the rest among a pool's units (PoolPlan.cpu_millis_per_unit, memory_mib_per_unit), so a
quota's CPU and memory always fit on the nodes it stands for.
"""

from __future__ import annotations

# Per-node resources that pods cannot have: kubelet's kube-reserved (the EKS AMI formula: 6% of the
# first core, 1% of the second, 0.5% of the next two, 0.25% of the rest; 255 MiB + 11 MiB per pod),
# the 100 MiB hard eviction threshold, and the platform's daemonsets (GPU Operator operands, DCGM
# exporter, CNI, EFA device plugin) which we budget at 1 vCPU and 2 GiB.
MAX_PODS_PER_NODE = 110
DAEMONSET_CPU_MILLIS = 1000
DAEMONSET_MEMORY_MIB = 2048
EVICTION_MEMORY_MIB = 100


def reserved_cpu_millis(vcpus: int) -> int:
    cores = [60, 10, 5, 5] + [2.5] * max(0, vcpus - 4)
    return int(sum(cores[:vcpus])) + DAEMONSET_CPU_MILLIS


def reserved_memory_mib() -> int:
    return 255 + 11 * MAX_PODS_PER_NODE + EVICTION_MEMORY_MIB + DAEMONSET_MEMORY_MIB
