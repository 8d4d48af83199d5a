"""Simulated Node objects that look like a pool's real nodes: labels, taints and allocatable.

The live local cluster registers these and KWOK plays their kubelet, so quotas, Kueue flavors, topology-
aware admission and the scheduler's placement act on nodes that carry exactly what a real pool's nodes
would: each pool at the nodes it starts with (scales_locally), allocatable in the pool's units (whole GPUs, MIG slices, time-sliced
replicas), EFA devices on EFA pools, capacity at the instance type's nominal vCPUs and memory, and allocatable
CPU and memory as EKS computes them (plan/node_reserve.py: the kernel's share, kube-reserved from the ENI max
pods, the eviction threshold) less the platform's daemonset budget, since no daemonset runs on these nodes: a
workload pod has the same room here as beside the daemonsets on EKS.
Untainted CPU nodes stand in for the rest of a cluster (CoreDNS, controllers, CPU-only work): the system
pool at its max where the stack creates one (cluster.systemPool), else two general-purpose nodes.
"""

from __future__ import annotations

from typing import Any, Mapping

from . import catalog
from . import conventions as cv
from .plan import Plan, PoolPlan
from .plan.node_reserve import Allocatable, instance_allocatable, node_allocatable, pod_cpu_millis, pod_memory_mib

# The simulated CPU nodes: where work without GPUs runs (the CPU-only flavor selects no pool, and every
# GPU node is tainted). Sized like a general-purpose m7i.8xlarge; two, so a test can drain one.
CPU_NODE_COUNT = 2
CPU_NODE_VCPUS = 32
CPU_NODE_MEMORY_GIB = 128
CPU_NODE_INSTANCE_TYPE = "m7i.8xlarge"
# kubelet's default maxPods. Real nodes run with another (an EKS managed node group: the ENI max pods capped at
# 110 below 30 vCPUs, 250 above; Karpenter: the ENI max pods), but the simulated nodes keep one figure for both
# provisioners, so switching a pool's provisioner changes no simulated node (tests/unit/components/test_karpenter.py).
MAX_PODS = "110"
# Karpenter's KWOK provider reserves 100m CPU and 10Mi memory of the resources an instance type offers
# (kubernetes-sigs/karpenter kwok/cloudprovider/helpers.go, Overhead.KubeReserved; v1.14.1 and main of 2026-08
# alike) and makes the node's allocatable the rest.
KWOK_PROVIDER_RESERVED_CPU_MILLIS = 100
KWOK_PROVIDER_RESERVED_MEMORY_MIB = 10


def node_name(pool: PoolPlan, index: int) -> str:
    return f"{pool.name}-{index}"


def cpu_node_name(index: int) -> str:
    return f"cpu-{index}"


def _base(name: str, zone: str, instance_type: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "node.kubernetes.io/instance-type": instance_type,
                "topology.kubernetes.io/zone": zone,
            },
            "annotations": {cv.KWOK_NODE_ANNOTATION: cv.KWOK_NODE_ANNOTATION_VALUE},
        },
        "spec": {"taints": []},
    }


def _resources(vcpus: int, memory_gib: int, alloc: Allocatable) -> tuple[dict[str, str], dict[str, str]]:
    """Capacity (nominal) and allocatable (EKS's, less the daemonset budget) of a simulated node."""
    capacity = {"cpu": str(vcpus), "memory": f"{memory_gib}Gi", "pods": MAX_PODS}
    allocatable = {"cpu": f"{pod_cpu_millis(alloc)}m", "memory": f"{pod_memory_mib(alloc)}Mi", "pods": MAX_PODS}
    return capacity, allocatable


def kwok_instance_type_resources(pool: PoolPlan) -> dict[str, str]:
    """CPU, memory and pods for the pool's instance type in Karpenter's KWOK provider (localcluster/autoscaler.py),
    so that after the provider's own reserve the nodes it adds have the allocatable of the nodes registered
    here."""
    alloc = instance_allocatable(pool.instance_type)
    return {"cpu": f"{pod_cpu_millis(alloc) + KWOK_PROVIDER_RESERVED_CPU_MILLIS}m",
            "memory": f"{pod_memory_mib(alloc) + KWOK_PROVIDER_RESERVED_MEMORY_MIB}Mi",
            "pods": MAX_PODS}


def _status(capacity: dict[str, str], allocatable: dict[str, str]) -> dict[str, Any]:
    return {
        "capacity": capacity,
        "allocatable": allocatable,
        "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                        "message": "simulated node (KWOK)"}],
    }


def scales_locally(pool: PoolPlan) -> bool:
    """An autoscaler (Karpenter's KWOK provider, localcluster/autoscaler.py) adds and removes this pool's
    nodes on the live cluster: on-demand and spot pools with room between min and max. Reserved capacity
    is there whole, as paid for. A topology-aware pool is there whole too: Kueue's TAS counts Ready nodes
    only, so from fewer nodes it needs a ProvisioningRequest, which only the Cluster Autoscaler serves, and
    that autoscaler cannot be built here (docs/local-cluster.md)."""
    return (pool.capacity_type in ("on-demand", "spot") and pool.topology is None
            and pool.min_nodes < pool.max_nodes)


def registered_nodes(pool: PoolPlan) -> int:
    """Nodes the live cluster registers for a pool at start: its minimum when it scales, else all."""
    return pool.min_nodes if scales_locally(pool) else pool.max_nodes


def node_zone(plan: Plan, pool: PoolPlan | None = None) -> str:
    return (pool.availability_zone if pool else None) or f"{plan.region or 'local'}-a"


def _node(plan: Plan, pool: PoolPlan, index: int) -> dict[str, Any]:
    it = catalog.INSTANCE_TYPES[pool.instance_type]
    name = node_name(pool, index)
    node = _base(name, node_zone(plan, pool), pool.instance_type)
    node["metadata"]["labels"].update(pool.node_labels)
    if pool.topology:
        # EC2 instance topology (docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-instance-topology.html):
        # the layers Kueue's Topology uses; four nodes share a layer-3 network node here.
        node["metadata"]["labels"].update({
            cv.TOPOLOGY_LEVELS[0]: "nn-layer1-0",
            cv.TOPOLOGY_LEVELS[1]: "nn-layer2-0",
            cv.TOPOLOGY_LEVELS[2]: f"nn-layer3-{index // 4}",
        })
    node["spec"]["taints"] = [t.to_k8s() for t in pool.taints]
    capacity, allocatable = _resources(it.vcpus, it.memory_gib, instance_allocatable(pool.instance_type))
    devices = {pool.resource_name: str(pool.units_per_node)}
    if pool.efa_interfaces:
        # What the EFA device plugin advertises: one device per EFA interface of the node.
        devices[cv.EFA_RESOURCE] = str(pool.efa_interfaces)
    node["status"] = _status({**capacity, **devices}, {**allocatable, **devices})
    return node


def _cpu_node(plan: Plan, index: int) -> dict[str, Any]:
    node = _base(cpu_node_name(index), node_zone(plan), CPU_NODE_INSTANCE_TYPE)
    node["status"] = _status(*_general_purpose(CPU_NODE_INSTANCE_TYPE, CPU_NODE_VCPUS, CPU_NODE_MEMORY_GIB))
    return node


# vCPUs per general-purpose size (EC2 "General purpose" instance specifications); the m families carry
# 4 GiB of memory per vCPU.
GENERAL_PURPOSE_VCPUS = {"large": 2, "xlarge": 4, "2xlarge": 8, "4xlarge": 16}


def _general_purpose(instance_type: str, vcpus: int, memory_gib: int) -> tuple[dict[str, str], dict[str, str]]:
    """A general-purpose node of a managed node group: the same allocatable arithmetic as a GPU node's."""
    enis, ipv4 = catalog.GENERAL_PURPOSE_ENI_LIMITS[instance_type.split(".", 1)[1]]
    alloc = node_allocatable(vcpus, memory_gib * 1024, enis, ipv4)
    return _resources(vcpus, memory_gib, alloc)


def _system_node(plan: Plan, index: int) -> dict[str, Any]:
    sp = plan.cluster.system_pool
    assert sp is not None
    vcpus = GENERAL_PURPOSE_VCPUS.get(sp.instance_type.split(".", 1)[1], 4)
    node = _base(f"system-{index}", node_zone(plan), sp.instance_type)
    node["metadata"]["labels"].update(sp.labels)
    node["status"] = _status(*_general_purpose(sp.instance_type, vcpus, vcpus * 4))
    return node


def spare_nodes(plan: Plan, per_pool: Mapping[str, int]) -> list[dict[str, Any]]:
    """More nodes in the pools named (how many each), named and labelled as each pool's next ones (a
    what-if's spare capacity: nodes beyond capacity.max that no quota counts, simulator/failures.py)."""
    return [_node(plan, p, p.max_nodes + i) for p in plan.pools for i in range(per_pool.get(p.name, 0))]


def fake_nodes(plan: Plan, *, autoscaled: bool = True) -> dict[str, Any]:
    """The simulated nodes; `autoscaled`: the pools that scale at their minimum (an autoscaler adds the rest,
    as on the live cluster), else every pool at capacity.max (a cluster with nothing to add them)."""
    items = [_node(plan, p, i) for p in plan.pools
             for i in range(registered_nodes(p) if autoscaled else p.max_nodes)]
    if plan.cluster.system_pool is not None:
        items += [_system_node(plan, i) for i in range(plan.cluster.system_pool.max_nodes)]
    else:
        items += [_cpu_node(plan, i) for i in range(CPU_NODE_COUNT)]
    return {"apiVersion": "v1", "kind": "List", "items": items}
