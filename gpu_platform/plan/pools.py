"""A pool's plan: its units, nodes, labels, taints, capacity and cost, and what follows from them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from .. import conventions as cv
from ..karpenter import KarpenterPoolPlan

# Nodes an EKS managed node group replaces at once during a version update.
NODE_UPDATE_MAX_UNAVAILABLE = 1

# Where checkpoints and model artifacts must go instead of a node's disks (PoolPlan.scratch).
CHECKPOINT_DESTINATIONS = "checkpoints to object storage (S3), FSx for Lustre or an EBS-backed PersistentVolumeClaim"


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str = cv.TAINT_EFFECT

    def to_k8s(self) -> dict[str, str]:
        return {"key": self.key, "value": self.value, "effect": self.effect}

    def toleration(self) -> dict[str, str]:
        return {"key": self.key, "operator": "Equal", "value": self.value, "effect": self.effect}


@dataclass(frozen=True, slots=True)
class PoolPlan:
    name: str
    accelerator: str
    instance_type: str
    fabric: str
    workload: str
    sharing_mode: str
    mig_profile: str | None
    replicas: int | None
    gpus_per_node: int
    units_per_gpu: int
    units_per_node: int
    resource_name: str
    # capacity.min and capacity.max: the pool's bounds (max is also a reservation's size).
    min_nodes: int
    max_nodes: int
    # The managed node group's desiredSize at creation: capacity.desired (default min) for elastic pools, the
    # reservation for reserved ones (autoscaling.pool_capacity).
    desired_nodes: int
    capacity_units: int
    capacity_gpus: int
    cpu_millis_per_unit: int
    memory_mib_per_unit: int
    labels: Mapping[str, str]
    node_labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    flavor: str
    topology: str | None
    mig_config: str | None
    device_plugin_config: str | None
    capacity_type: str
    reservation_id: str | None
    availability_zone: str | None
    placement_group: bool
    # EFA interfaces the launch template attaches, one per network card; each one (EFA with ENA or
    # EFA-only) is one EFA device, so this is also the node's `vpc.amazonaws.com/efa` capacity once the
    # EFA device plugin runs. 0 on ethernet pools.
    efa_interfaces: int
    efa_only_interfaces: bool
    nvme_gb: int
    ami_type: str
    root_volume_gib: int
    usd_per_node_hour: float
    # Who makes the nodes (spec pools[].provisioner). Nothing above depends on it: the pool's labels,
    # taints, units, flavor and quota are the same for a managed node group and a Karpenter NodePool.
    provisioner: str = cv.PROVISIONER_MANAGED_NODE_GROUP
    karpenter: KarpenterPoolPlan | None = None
    # Capacity semantics (gpu_platform/plan/autoscaling.py): reserved or elastic, who sizes the nodes, the nodes
    # paid for whole (reserved), the managed node group's minSize, and the Auto Scaling group tags that hand
    # an elastic group to the Cluster Autoscaler (empty unless it scales the pool).
    capacity_semantics: str = cv.CAPACITY_ELASTIC
    scaler: str = cv.SCALER_EXTERNAL
    reserved_nodes: int = 0
    group_min: int = 0
    autoscaler_tags: Mapping[str, str] = field(default_factory=dict)
    # The labels a Cluster Autoscaler group adds to the pool's own on its nodes (autoscaling.autoscaler_node_labels).
    autoscaler_labels: Mapping[str, str] = field(default_factory=dict)

    @property
    def group_labels(self) -> dict[str, str]:
        """The labels a managed node group gives its nodes: the pool's own (node_labels) and, where the Cluster
        Autoscaler scales a whole-GPU group, its GPU label (autoscaling.autoscaler_node_labels). Derived from
        the scaler rather than kept in node_labels, which are the same whoever makes the pool's nodes."""
        return {**self.node_labels, **self.autoscaler_labels}

    @property
    def usd_per_hour_max(self) -> float:
        return round(self.max_nodes * self.usd_per_node_hour, 2)

    @property
    def floor_nodes(self) -> int:
        """The nodes paid for when nothing runs: a reservation whole, else what always runs (the group's
        minimum, or the desired size nothing changes when no autoscaler scales it; Karpenter keeps none)."""
        if self.reserved_nodes:
            return self.reserved_nodes
        if self.scaler == cv.SCALER_KARPENTER:
            return 0
        if self.scaler == cv.SCALER_NONE:
            return self.desired_nodes
        return self.group_min

    @property
    def usd_per_hour_min(self) -> float:
        return round(self.floor_nodes * self.usd_per_node_hour, 2)

    @property
    def desired_size_managed(self) -> bool:
        """The stack keeps the node group's desiredSize: only for an on-demand capacity reservation, pinned at
        its size. Elsewhere it is set at creation only, and then the autoscaler's, EKS's (a capacity block's
        scale-down before its end) or whoever scales the group by hand."""
        return self.scaler == cv.SCALER_RESERVATION and self.capacity_type == "capacity-reservation"

    @property
    def tolerations(self) -> list[dict[str, str]]:
        return [t.toleration() for t in self.taints]

    @property
    def flavor_node_taints(self) -> list[dict[str, str]]:
        """The taints the pool's Kueue flavor declares, which a pod set must tolerate to be given the flavor
        (kueue v0.19.2 apis/kueue/v1beta2/resourceflavor_types.go nodeTaints; flavorassigner.go
        checkFlavorForPodSets). A topology-aware flavor needs none: Kueue gives it only to pod sets that ask
        for a topology (tas_flavorassigner.go checkPodSetAndFlavorMatchForTAS), which work without GPUs may
        not (admission)."""
        return [] if self.topology else [t.to_k8s() for t in self.taints]

    @property
    def flavor_tolerations(self) -> list[dict[str, str]]:
        """What Kueue adds to the pods it admits on the pool's flavor (pkg/podset/podset.go). Every taint's
        toleration but the GPU taint's, which the pod template carries itself (conventions.GPU_TOLERATION): so
        Kueue never gives the flavor to a pod set without GPUs, which may not carry it. A topology-aware flavor
        keeps tolerating both: Kueue's CRD makes its tolerations immutable ("tolerations are immutable when
        topologyName is set", resourceflavor_types.go), so a change would fail every upgrade, and its
        topology check already keeps such pod sets off it."""
        if self.topology:
            return self.tolerations
        return [t.toleration() for t in self.taints if t.key != cv.GPU_TAINT_KEY]

    @property
    def reserved_capacity(self) -> bool:
        """Capacity held for us (capacity block or on-demand capacity reservation): no spare instances exist
        beyond the reservation, so nothing may rely on launching extra nodes (surge updates, other zones)."""
        return self.capacity_type in cv.RESERVED_CAPACITY_TYPES

    @property
    def node_update_strategy(self) -> str:
        """EKS managed node group update strategy. DEFAULT launches replacement nodes before terminating old
        ones, which a full reservation cannot serve; MINIMAL terminates first (EKS API reference,
        NodegroupUpdateConfig.updateStrategy: "useful when constrained to resources ... such as GPUs")."""
        return "MINIMAL" if self.reserved_capacity else "DEFAULT"

    @property
    def node_update_max_unavailable(self) -> int:
        """Nodes replaced at once during a node group version update: GPU nodes are few and expensive, so one."""
        return NODE_UPDATE_MAX_UNAVAILABLE

    @property
    def local_nvme(self) -> bool:
        """The instance type has local NVMe instance store, to be striped (RAID0) for container storage."""
        return self.nvme_gb > 0

    @property
    def scratch(self) -> str:
        """Where a pod's scratch data lives on this pool's nodes, and what survives the node: instance store
        is erased when the instance stops or terminates (EC2 user guide, "Data persistence for instance
        store volumes"), and a node group replaces instances on every update, repair or scale-in."""
        if self.local_nvme:
            return (f"{self.nvme_gb} GB local NVMe instance store (eks node groups: RAID0 for containerd, kubelet, "
                    f"emptyDir), wiped with the node: scratch only, {CHECKPOINT_DESTINATIONS}")
        return f"EBS root volume ({self.root_volume_gib} GiB), deleted with the node: scratch only, {CHECKPOINT_DESTINATIONS}"
