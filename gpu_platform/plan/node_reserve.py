"""What a pod can have on a node: the node's allocatable as EKS computes it, less the platform's daemonsets.

The plan divides what is left among a pool's units (PoolPlan.cpu_millis_per_unit, memory_mib_per_unit), so a
job the plan sizes fits on a real node, and the quota's CPU and memory fit on the nodes it stands for. Sizing
from the nominal EC2 memory does not: a g6.4xlarge (64 GiB) offers 58,981 Mi to pods (pytorch/ci-infra#1082,
measured), less than the 61,923 Mi a 1-GPU job was once given, so that job could never be scheduled.

allocatable (what the kubelet reports, and what Karpenter simulates before it launches a node):
  cpu    = vCPUs x 1000 - kube-reserved CPU
  memory = usable memory - kube-reserved memory - the hard eviction threshold
where
  usable memory        = nominal MiB - ceil(nominal MiB x 7.5%): the kernel and firmware keep part of the
                         nominal memory (a node's capacity is MemTotal, below nominal). 7.5% is Karpenter's
                         VM_MEMORY_OVERHEAD_PERCENT default (aws/karpenter-provider-aws v1.14.1,
                         pkg/operator/options/options.go; applied in pkg/providers/instancetype/types.go
                         memory(): Mi - ceil(Mi x 0.075)), what Karpenter assumes of an instance type it has not
                         yet seen run. It is above what nodes keep in practice (g6.4xlarge: 3,626 Mi of
                         65,536, 5.5%, from the #1082 measurement and the reserve below; m5.large: 5.7%, from the
                         kubelet-reported allocatable in karpenter-provider-aws pkg/providers/instancetype/
                         suite_test.go), so a pod sized from it fits both the real node and Karpenter's
                         simulation, which would not launch a node for a pod that does not fit its estimate.
  kube-reserved CPU    = 6% of the first core, 1% of the second, 0.5% of the next two, 0.25% of the rest, each
                         range in integer millicores (awslabs/amazon-eks-ami v20260724,
                         nodeadm/internal/kubelet/config.go getCPUMillicoresToReserve; Karpenter
                         kubeReservedResources, pkg/providers/instancetype/types.go, the same ranges).
  kube-reserved memory = 11 MiB x max pods + 255 MiB, max pods = ENIs x (IPv4 per ENI - 1) + 2 (the same
                         config.go getMemoryMebibytesToReserve, fed by nodeadm/internal/kubelet/eni_max_pods.go
                         calculateStandardMaxPods over the instance-info.jsonl table, catalog.ENI_LIMITS). nodeadm
                         puts no cap on that figure; the 110 (< 30 vCPUs) / 250 cap EKS managed node groups
                         enforce (EKS user guide, "How maxPods is determined", awsdocs/amazon-eks-user-guide
                         latest/ug/nodes/choosing-instance-type.adoc) is
                         written into the kubelet's drop-in config and changes maxPods only, not the reserve
                         nodeadm computed (nodeadm/test/e2e/cases/custom-max-pods-expression, scenario
                         kubelet-config-max-pods: maxPods 1 in the drop-in, kubeReserved memory 915Mi = 11 x 60 +
                         255 in the main config). Karpenter passes the ENI figure (less any EFA-only interface on
                         card 0) as maxPods and simulates the reserve from it, never more than this.
  system-reserved      = none: nodeadm sets the /system cgroup but reserves nothing for it (config.go
                         withDefaultReservedResources).
  eviction threshold   = memory.available<100Mi (config.go defaultKubeletSubConfig evictionHard; Karpenter
                         evictionThreshold, the same 100Mi).
The AL2023 NVIDIA AMI is the pools' default (spec/pools.py amiType). Bottlerocket computes the same reserve
from the max pods it runs with, which is never more than the ENI figure, so these figures are no higher than
Bottlerocket's allocatable either (not re-read at a pinned Bottlerocket version).

Then the platform's daemonsets (GPU Operator operands, DCGM exporter, CNI, EFA device plugin) take a budget of
1 vCPU and 2 GiB of each node's allocatable; the rest is the pool's to divide.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import catalog

# The platform's daemonsets, budgeted per node.
DAEMONSET_CPU_MILLIS = 1000
DAEMONSET_MEMORY_MIB = 2048
# kubelet evictionHard memory.available (awslabs/amazon-eks-ami v20260724, nodeadm/internal/kubelet/config.go).
EVICTION_MEMORY_MIB = 100
# Karpenter's VM_MEMORY_OVERHEAD_PERCENT default, 0.075, in thousandths so the arithmetic is exact
# (aws/karpenter-provider-aws v1.14.1, pkg/operator/options/options.go; the 1.15.2 chart the platform installs
# keeps it, settings.vmMemoryOverheadPercent: 0.075 in tests/fixtures/charts/karpenter-1.15.2-values.yaml, and
# components/karpenter.py does not set it).
VM_MEMORY_OVERHEAD_PER_MILLE = 75
# kubelet's default maxPods (awslabs/amazon-eks-ami v20260724, nodeadm/internal/kubelet/eni_max_pods.go
# defaultMaxPods), and the cap EKS managed node groups put on maxPods below 30 vCPUs (250 above: EKS user guide,
# "How maxPods is determined"). It limits the pods a node runs, not the memory
# nodeadm reserves, which follows eni_max_pods (module docstring).
MAX_PODS_PER_NODE = 110


@dataclass(frozen=True, slots=True)
class Allocatable:
    """A node's resources as the kubelet reports them: capacity (nominal vCPUs and memory) and allocatable."""

    capacity_cpu_millis: int
    capacity_memory_mib: int
    cpu_millis: int
    memory_mib: int
    eni_max_pods: int  # what nodeadm reserves memory for: ENIs x (IPv4 per ENI - 1) + 2


def eni_max_pods(enis: int, ipv4_per_eni: int) -> int:
    """Pods the VPC CNI can give an address to from the default network card's ENIs (one address per ENI is
    the ENI's own; +2 for host-network pods): nodeadm eni_max_pods.go calculateStandardMaxPods."""
    return enis * (ipv4_per_eni - 1) + 2


def kube_reserved_cpu_millis(vcpus: int) -> int:
    """nodeadm getCPUMillicoresToReserve: per range of millicores, (cores in range x percentage) in integer
    millicores, so 12 cores at 0.25% are 30m and 1 core at 0.25% is 2m."""
    total = vcpus * 1000
    reserved = 0
    for start, end, per_10000 in ((0, 1000, 600), (1000, 2000, 100), (2000, 4000, 50), (4000, total, 25)):
        if total > start:
            reserved += (min(total, end) - start) * per_10000 // 10000
    return reserved


def kube_reserved_memory_mib(max_pods: int) -> int:
    """nodeadm getMemoryMebibytesToReserve."""
    return 11 * max_pods + 255


def usable_memory_mib(nominal_mib: int) -> int:
    """The nominal memory less Karpenter's VM overhead estimate, rounded as Karpenter rounds it (the overhead
    up to a whole MiB)."""
    return nominal_mib - -(-nominal_mib * VM_MEMORY_OVERHEAD_PER_MILLE // 1000)


def node_allocatable(vcpus: int, memory_mib: int, enis: int, ipv4_per_eni: int) -> Allocatable:
    """Capacity and allocatable of an EKS AL2023 node with this shape and these ENI limits."""
    pods = eni_max_pods(enis, ipv4_per_eni)
    return Allocatable(
        capacity_cpu_millis=vcpus * 1000,
        capacity_memory_mib=memory_mib,
        cpu_millis=vcpus * 1000 - kube_reserved_cpu_millis(vcpus),
        memory_mib=usable_memory_mib(memory_mib) - kube_reserved_memory_mib(pods) - EVICTION_MEMORY_MIB,
        eni_max_pods=pods,
    )


def instance_allocatable(instance_type: str) -> Allocatable:
    """node_allocatable of a catalog GPU instance type."""
    it = catalog.INSTANCE_TYPES[instance_type]
    return node_allocatable(it.vcpus, it.memory_gib * 1024, it.enis, it.ipv4_per_eni)


def pod_cpu_millis(alloc: Allocatable) -> int:
    """What the node's pods other than the platform's daemonsets can have: allocatable less their budget."""
    return alloc.cpu_millis - DAEMONSET_CPU_MILLIS


def pod_memory_mib(alloc: Allocatable) -> int:
    return alloc.memory_mib - DAEMONSET_MEMORY_MIB


def reserved_cpu_millis(vcpus: int) -> int:
    """CPU a node keeps from workload pods: kube-reserved and the daemonset budget."""
    return kube_reserved_cpu_millis(vcpus) + DAEMONSET_CPU_MILLIS


def reserved_memory_mib(instance_type: str) -> int:
    """Memory a catalog instance type keeps from workload pods: nominal less what pod_memory_mib leaves."""
    return catalog.INSTANCE_TYPES[instance_type].memory_gib * 1024 - pod_memory_mib(instance_allocatable(instance_type))

