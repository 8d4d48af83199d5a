"""What a spec pool implies that both the cross-field checks and the plan need: its units, its capacity in units
and GPUs, the nominal quotas on it, and its node labels.

Computed here once: `spec.checks` validates with them (label lengths, quotas against capacity), `quota_reach`
caps a team's reach with the capacity, Karpenter's limits are the capacity in GPUs, and `plan` builds every
PoolPlan from them, so a check can never judge a number the plan computes differently. The policy pack reads
the capacity's inputs from the declared resources instead (policies/gpu_policies/queues.py) but multiplies
them with `capacity_units` here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from . import catalog, conventions as cv

if TYPE_CHECKING:
    from .spec.cluster import Cluster
    from .spec.pools import Pool
    from .spec.tenancy import Team

# EKS AMI types whose nodes run Bottlerocket: its NVIDIA variants start their own NVIDIA device plugin
# (EKS user guide, "Manage NVIDIA GPU devices on Amazon EKS", device-management-nvidia.html; bottlerocket-os/
# bottlerocket#4309: a second plugin from a DaemonSet conflicted with it and left CUDA unusable).
BOTTLEROCKET_AMI_PREFIX = "BOTTLEROCKET"


def pool_units_per_gpu(pool: Pool) -> int:
    """Schedulable units one of the pool's GPUs gives: 1, its MIG profile's slices or its time-slicing replicas.

    KeyError for a MIG profile the accelerator lacks: the checks report that pool and skip it."""
    units = catalog.units_per_gpu(pool.accelerator, pool.sharing.mode, pool.sharing.profile, pool.sharing.replicas)
    if units is None:
        raise KeyError(pool.sharing.profile)
    return units


def capacity_units(max_nodes: int, gpus_per_node: int, units_per_gpu: int) -> int:
    """Units `max_nodes` nodes offer: the one formula of a pool's capacity, for a spec pool below and for a node
    group or NodePool the policy pack reads back."""
    return max_nodes * gpus_per_node * units_per_gpu


def pool_capacity_gpus(pool: Pool) -> int:
    """GPUs the pool has at capacity.max (its capacity in units of a whole GPU): Karpenter's GPU limit."""
    return capacity_units(pool.capacity.max, catalog.INSTANCE_TYPES[pool.instanceType].gpus, 1)


def pool_capacity_units(pool: Pool) -> int:
    """Units the pool offers at capacity.max: what Kueue's flavor is told the pool holds."""
    return capacity_units(pool.capacity.max, catalog.INSTANCE_TYPES[pool.instanceType].gpus, pool_units_per_gpu(pool))


def pool_nominal_units(teams: Iterable[Team]) -> dict[str, int]:
    """Pool name -> the teams' nominal quotas on it, summed; a pool no team has a quota on has no key (a quota
    of 0 has one). The checks hold it to the capacity, and the plan reports and warns with it."""
    out: dict[str, int] = {}
    for t in teams:
        for pool, q in t.quotas.items():
            out[pool] = out.get(pool, 0) + q.units
    return out


def pool_resource_name(pool: Pool) -> str:
    """The extended resource the pool's nodes advertise its units as."""
    return cv.sharing_resource_name(pool.sharing.mode, pool.sharing.profile)


def pool_topology_aware(pool: Pool) -> bool:
    """Topology-aware scheduling only where placement decides a job's speed: whole GPUs of nodes that talk
    over EFA or NVSwitch (multi-node training). A MIG slice or a time-sliced replica never spans nodes, and a
    TAS flavor admits only workloads that ask for a topology (Kueue pkg/scheduler/flavorassigner/
    tas_flavorassigner.go checkPodSetAndFlavorMatchForTAS). Such a pool admits a job only onto Ready nodes
    (kueue v0.19.2 pkg/cache/scheduler/tas_topology_tree.go counts no other), which is why the checks and
    the plan need to know it before any node exists."""
    it = catalog.INSTANCE_TYPES[pool.instanceType]
    return pool.sharing.mode == "full" and (pool.fabric == "efa" or it.interconnect == "nvswitch")


def pool_labels(pool: Pool) -> dict[str, str]:
    """The six pool labels every node, flavor and cost tag of the pool carries (validated for length in checks)."""
    it = catalog.INSTANCE_TYPES[pool.instanceType]
    acc = catalog.ACCELERATORS[pool.accelerator]
    return {
        cv.POOL: pool.name,
        cv.ACCELERATOR: pool.accelerator,
        cv.TOPOLOGY: cv.topology_value(it.gpus, acc.form_factor, it.interconnect),
        cv.FABRIC: pool.fabric,
        cv.WORKLOAD: pool.workload,
        cv.SHARING: cv.sharing_value(pool.sharing.mode, pool.sharing.profile, pool.sharing.replicas),
    }


def runs_bottlerocket(pool: Pool) -> bool:
    return pool.amiType.startswith(BOTTLEROCKET_AMI_PREFIX)


def pool_operator_labels(pool: Pool) -> dict[str, str]:
    """GPU Operator deploy labels the pool's nodes carry besides the pool labels. Bottlerocket nodes already run
    a device plugin, so the operator's device plugin and MIG manager stay off them (the operator keeps a
    deploy label it finds on a node: conventions.GPU_OPERATOR_DEPLOY_DEVICE_PLUGIN_LABEL); the rest of its
    operands (feature discovery, DCGM, the exporter) still run there."""
    if not runs_bottlerocket(pool):
        return {}
    return {
        cv.GPU_OPERATOR_DEPLOY_DEVICE_PLUGIN_LABEL: cv.GPU_OPERATOR_DEPLOY_OFF,
        cv.GPU_OPERATOR_DEPLOY_MIG_MANAGER_LABEL: cv.GPU_OPERATOR_DEPLOY_OFF,
    }


# The runbook section `plan` points at for a capacity-block node group's upgrade.
CAPACITY_BLOCK_RUNBOOK = "docs/runbook.md, \"Upgrading a capacity-block node group\""


def capacity_block_upgrade_warning(pool: Pool, cluster: Cluster) -> str | None:
    """EKS upgrades a capacity-block managed node group (Kubernetes version, AMI release, launch template)
    only at desired size 0 (EKS user guide, capacity-blocks-mng.html, Considerations: "When upgrading managed
    node groups with Capacity Blocks, make sure that the desired size of the node group is set to 0"), and
    the stack cannot: it leaves desiredSize alone once the group exists. So every such pool carries the step
    in `plan`, before a change to cluster.kubernetesVersion or the pool's template reaches it."""
    if cluster.provider != "eks" or pool.provisioner != cv.PROVISIONER_MANAGED_NODE_GROUP:
        return None
    if pool.capacity.type != "capacity-block":
        return None
    group = cv.node_group_name(cluster.name, pool.name)
    return (f"pool {pool.name!r} is a capacity-block node group: EKS upgrades it (cluster.kubernetesVersion, AMI "
            f"release, launch template) only at desired size 0; scale node group {group!r} to 0 before such a "
            f"change reaches it ({CAPACITY_BLOCK_RUNBOOK})")
