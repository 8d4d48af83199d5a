"""The derived plan: every number and name the components need, computed once from a validated spec.

Components translate a Plan into resources and never re-derive a quota, a label or a price, so the
CLI's `plan` output, the rendered resources and the policy pack always agree.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Mapping

from . import audit, catalog, conventions as cv, workload_controllers as wc
from .autoscaling import (
    ClusterAutoscalerPlan, ProvisioningPlan, autoscaler_tags, capacity_warnings, plan_cluster_autoscaler,
    plan_provisioning, pool_capacity,
)
from .data import DataPlan, namespace_quota_with_claims, plan_data
from .karpenter import KarpenterPlan, KarpenterPoolPlan, plan_controller, plan_pool
from .pool_derivations import (
    capacity_block_upgrade_warning, pool_labels, pool_operator_labels, pool_resource_name, pool_topology_aware,
    pool_units_per_gpu,
)
from .quota_reach import Reach, reaches_of_spec
from .spec import OidcProvider, Platform, Pool, Team

# Per-node resources that pods cannot have: kubelet's kube-reserved (the EKS AMI formula: 6% of the
# first core, 1% of the second, 0.5% of the next two, 0.25% of the rest; 255 MiB + 11 MiB per pod),
# the 100 MiB hard eviction threshold, and the platform's daemonsets (GPU Operator operands, DCGM
# exporter, CNI, EFA device plugin) which we budget at 1 vCPU and 2 GiB.
MAX_PODS_PER_NODE = 110
DAEMONSET_CPU_MILLIS = 1000
DAEMONSET_MEMORY_MIB = 2048
EVICTION_MEMORY_MIB = 100
# Nodes an EKS managed node group replaces at once during a version update.
NODE_UPDATE_MAX_UNAVAILABLE = 1
# LimitRange container defaults in tenant namespaces. The ResourceQuota caps requests.cpu and
# requests.memory, and Kubernetes rejects a pod without those requests in such a namespace, so sidecars
# and quick debug pods get a small request; the default limit bounds a container that sets none. A
# container that requests more than a default limit must set its own limit (LimitRange applies the
# default limit first, then request > limit is invalid: kubernetes.io/docs/concepts/policy/limit-range).
CONTAINER_DEFAULT_REQUEST: dict[str, str] = {"cpu": "250m", "memory": "512Mi"}
CONTAINER_DEFAULT_LIMIT: dict[str, str] = {"cpu": "2", "memory": "4Gi"}
# Where checkpoints and model artifacts must go instead of a node's disks (PoolPlan.scratch).
CHECKPOINT_DESTINATIONS = "checkpoints to object storage (S3), FSx for Lustre or an EBS-backed PersistentVolumeClaim"


def cpu_quantity(millis: int) -> str:
    """CPU in the canonical form the API server stores (4000m -> "4", 95224m stays), so what the stack sends
    is what it reads back: a non-canonical quantity in a ClusterQueue is a diff on every preview."""
    if millis % 1000:
        return f"{millis}m"
    cores = millis // 1000
    return f"{cores // 1000}k" if cores and cores % 1000 == 0 else str(cores)


def memory_quantity(mib: int) -> str:
    """Memory in canonical binary form (16384Mi -> "16Gi"): the largest power-of-1024 suffix that keeps it whole."""
    for suffix, factor in (("Ti", 1024 * 1024), ("Gi", 1024)):
        if mib and mib % factor == 0:
            return f"{mib // factor}{suffix}"
    return f"{mib}Mi"


def reserved_cpu_millis(vcpus: int) -> int:
    cores = [60, 10, 5, 5] + [2.5] * max(0, vcpus - 4)
    return int(sum(cores[:vcpus])) + DAEMONSET_CPU_MILLIS


def reserved_memory_mib() -> int:
    return 255 + 11 * MAX_PODS_PER_NODE + EVICTION_MEMORY_MIB + DAEMONSET_MEMORY_MIB


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
    # Capacity semantics (gpu_platform/autoscaling.py): reserved or elastic, who sizes the nodes, the nodes
    # paid for whole (reserved), the managed node group's minSize, and the Auto Scaling group tags that hand
    # an elastic group to the Cluster Autoscaler (empty unless it scales the pool).
    capacity_semantics: str = cv.CAPACITY_ELASTIC
    scaler: str = cv.SCALER_EXTERNAL
    reserved_nodes: int = 0
    group_min: int = 0
    autoscaler_tags: Mapping[str, str] = field(default_factory=dict)

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


@dataclass(frozen=True, slots=True)
class QuotaPlan:
    """A team's share of one pool, in the pool's units, with the CPU and memory that go with it."""

    pool: str
    flavor: str
    resource_name: str
    nominal: int
    borrowing: int | None
    lending: int | None
    cpu_millis_per_unit: int
    memory_mib_per_unit: int
    # The most the team can ever hold on the pool (quota_reach: Kueue's potential available, capped at the
    # pool's capacity): what the job template, the trace check, the namespace quota and `plan` promise.
    reach: Reach

    def cpu(self, units: int | None) -> str | None:
        return None if units is None else cpu_quantity(units * self.cpu_millis_per_unit)

    def memory(self, units: int | None) -> str | None:
        return None if units is None else memory_quantity(units * self.memory_mib_per_unit)


@dataclass(frozen=True, slots=True)
class EgressPlan:
    cidr: str
    ports: tuple[int, ...]
    protocol: str


@dataclass(frozen=True, slots=True)
class PreemptionPlan:
    reclaim_within_cohort: str
    borrow_within_cohort: str
    within_cluster_queue: str


@dataclass(frozen=True, slots=True)
class TeamPlan:
    name: str
    namespaces: tuple[str, ...]
    cost_center: str
    cohort: str | None
    admin_groups: tuple[str, ...]
    member_groups: tuple[str, ...]
    viewer_groups: tuple[str, ...]
    pod_security: str
    quotas: tuple[QuotaPlan, ...]
    preemption: PreemptionPlan
    fair_sharing_weight: float
    egress: tuple[EgressPlan, ...]
    cluster_queue: str
    namespace_labels: Mapping[str, str]
    namespace_quota: Mapping[str, str]
    usd_per_hour_nominal: float
    # Platform priority names (config names) the team may use; admission enforces them.
    allowed_priorities: tuple[str, ...] = ()
    # The team's quota on the CPU-only flavor (conventions.CPU_FLAVOR): what its namespaces may run
    # without GPUs, the same allowance its ResourceQuota adds on top of the GPU-derived CPU and memory.
    cpu_only_cpu_millis: int = 0
    cpu_only_memory_mib: int = 0
    # GPU resource names the team gets only from topology-aware pools (no non-TAS pool of the team has them).
    topology_resources: tuple[str, ...] = ()
    # Registries the team's pods may pull from: images.allowedRegistries, then teams[].allowedRegistries.
    allowed_registries: tuple[str, ...] = ()
    # eks: (IAM role ARN, the team groups its sessions are in), one EKS access entry each.
    access_entries: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @property
    def allowed_priority_classes(self) -> tuple[str, ...]:
        """The PriorityClass / WorkloadPriorityClass names of `allowed_priorities`."""
        return tuple(cv.priority_class_name(p) for p in self.allowed_priorities)

    @property
    def pool_names(self) -> tuple[str, ...]:
        """The pools the team has quota on: the only pools a pod template of the team may select."""
        return tuple(q.pool for q in self.quotas)

    @property
    def namespace_annotations(self) -> dict[str, str]:
        """What admission reads from a team namespace: the priority classes the team may use, the GPU resources
        that need a topology request, the registries its images may come from, its CPU-only allowance, its pools."""
        return {
            cv.ALLOWED_PRIORITIES_ANNOTATION: ",".join(self.allowed_priority_classes),
            cv.TEAM_POOLS_ANNOTATION: ",".join(self.pool_names),
            cv.TOPOLOGY_RESOURCES_ANNOTATION: ",".join(self.topology_resources),
            cv.ALLOWED_REGISTRIES_ANNOTATION: ",".join(self.allowed_registries),
            cv.CPU_ONLY_CPU_ANNOTATION: cpu_quantity(self.cpu_only_cpu_millis),
            cv.CPU_ONLY_MEMORY_ANNOTATION: memory_quantity(self.cpu_only_memory_mib),
        }


@dataclass(frozen=True, slots=True)
class CohortPlan:
    name: str
    parent: str | None
    fair_sharing_weight: float | None


@dataclass(frozen=True, slots=True)
class PriorityPlan:
    name: str
    value: int
    description: str

    @property
    def class_name(self) -> str:
        """The PriorityClass and WorkloadPriorityClass name: the config name, out of Kubernetes' reserved range."""
        return cv.priority_class_name(self.name)


@dataclass(frozen=True, slots=True)
class SystemPoolPlan:
    """The untainted CPU node group (cluster.systemPool) the platform's add-ons run on."""

    node_group_name: str
    instance_type: str
    min_nodes: int
    max_nodes: int
    desired_nodes: int
    ami_type: str
    disk_gib: int
    labels: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class ClusterPlan:
    name: str
    provider: str
    kubernetes_version: str
    subnet_ids: tuple[str, ...]
    create: bool
    node_role_arn: str | None
    platform_admins: tuple[str, ...]
    system_pool: SystemPoolPlan | None = None
    # eks: the vpc-cni EKS add-on is managed here with its network policy agent on (addons.vpcCni).
    manage_vpc_cni: bool = False
    vpc_cni_version: str | None = None
    # eks: the node monitoring agent add-on, whose node conditions node repair acts on (addons.nodeMonitoringAgent).
    manage_node_monitoring_agent: bool = False
    node_monitoring_agent_version: str | None = None
    # eks, created cluster: control-plane log types (audit.py decides the required ones).
    control_plane_logs: tuple[str, ...] = ()
    # eks: every access entry the stack makes: (IAM role ARN, Kubernetes groups, owner: a team or "platform").
    access_entries: tuple[tuple[str, tuple[str, ...], str], ...] = ()
    # eks: the OIDC identity provider (spec.OidcProvider), if any.
    oidc: OidcProvider | None = None


@dataclass(frozen=True, slots=True)
class Plan:
    environment: str
    region: str | None
    cluster: ClusterPlan
    pools: tuple[PoolPlan, ...]
    teams: tuple[TeamPlan, ...]
    cohorts: tuple[CohortPlan, ...]
    priorities: tuple[PriorityPlan, ...]
    mig_strategy: str
    spec: Platform = field(repr=False)
    warnings: tuple[str, ...] = ()
    # The stack's MultiKueue side (stack config gpu-platform:multiKueueRole): manager or worker.
    multikueue_role: str = "manager"

    @property
    def multikueue_manager(self) -> bool:
        """Dispatches to workers: the spec lists them and this stack is not deployed as a worker."""
        return self.multikueue_role == "manager" and self.spec.multiKueue is not None and bool(self.spec.multiKueue.workers)

    @property
    def multikueue_worker(self) -> bool:
        return self.multikueue_role == "worker"
    # images.allowedRegistries (the platform's own images come from these too) and requireDigests.
    image_registries: tuple[str, ...] = ()
    require_image_digests: bool = False
    # jobs.ttlSecondsAfterFinished (the job template, Kueue's deactivated-job retention) and the admission maximum.
    job_ttl_seconds: int = 0
    job_max_ttl_seconds: int = 0
    # addons.kueue.requeueLimit: Kueue requeues a job whose pods were not all Ready in time this many times over
    # its life, then deactivates it (waitForPodsReady.requeuingStrategy.backoffLimitCount).
    kueue_requeue_limit: int = 10
    # Karpenter's controller, when a pool of an eks cluster is a Karpenter pool.
    karpenter: KarpenterPlan | None = None
    # The data path (spec `data`, gpu_platform/data.py): team buckets and roles, file systems, storage add-ons.
    data: DataPlan | None = None
    # Kueue's integrations.frameworks as Kueue runs them (addons.kueue.integrations, with `pod` where Kueue
    # implies it: workload_controllers.effective_frameworks). Components read this, not the spec.
    kueue_integrations: tuple[str, ...] = ()
    # The installed workload controllers (issue 24), deployed from their charts on eks stacks.
    workload_controllers: tuple[wc.WorkloadControllerPlan, ...] = ()

    def workload_controller(self, key: str) -> wc.WorkloadControllerPlan | None:
        """The installed controller `key` (workload_controllers.KEYS), or None."""
        return next((c for c in self.workload_controllers if c.key == key), None)

    @property
    def uses_kuberay(self) -> bool:
        """A KubeRay kind is queued, so KubeRay's operator must reach Ray heads through the tenants' default deny."""
        return cv.uses_kuberay(self.kueue_integrations)
    # The Cluster Autoscaler (eks, addons.clusterAutoscaler) and Kueue's ProvisioningRequest check (autoscaling.py).
    cluster_autoscaler: ClusterAutoscalerPlan | None = None
    provisioning: ProvisioningPlan = ProvisioningPlan(enabled=False, reason="not planned")

    @property
    def managed_node_group_pools(self) -> tuple[PoolPlan, ...]:
        return tuple(p for p in self.pools if p.provisioner == cv.PROVISIONER_MANAGED_NODE_GROUP)

    @property
    def karpenter_pools(self) -> tuple[PoolPlan, ...]:
        return tuple(p for p in self.pools if p.karpenter is not None)

    @property
    def pools_by_name(self) -> dict[str, PoolPlan]:
        return {p.name: p for p in self.pools}

    @property
    def efa_pools(self) -> tuple[PoolPlan, ...]:
        return tuple(p for p in self.pools if p.efa_interfaces)

    @property
    def installs_efa_device_plugin(self) -> bool:
        """The EFA device plugin is installed when a pool has EFA interfaces: its nodes advertise
        `vpc.amazonaws.com/efa` only through the plugin (addons.efaDevicePlugin.install)."""
        return bool(self.efa_pools) and self.spec.addons.efaDevicePlugin.install

    @property
    def gpu_resource_names(self) -> tuple[str, ...]:
        """Every schedulable GPU resource name the pools advertise, in a stable order."""
        return tuple(sorted({p.resource_name for p in self.pools}))

    @property
    def psa_version(self) -> str:
        return f"v{self.cluster.kubernetes_version}"

    @property
    def usd_per_hour_min(self) -> float:
        return round(sum(p.usd_per_hour_min for p in self.pools), 2)

    @property
    def usd_per_hour_max(self) -> float:
        return round(sum(p.usd_per_hour_max for p in self.pools), 2)

    def allocated_units(self, pool: str) -> int:
        return sum(q.nominal for t in self.teams for q in t.quotas if q.pool == pool)

    @property
    def platform_tags(self) -> dict[str, str]:
        """AWS tags on everything the platform creates in the cloud: who manages it, which environment and cluster."""
        return {
            cv.TAG_PLATFORM: cv.MANAGED_BY_VALUE,
            cv.TAG_ENVIRONMENT: self.environment,
            cv.TAG_CLUSTER: self.cluster.name,
        }

    def pool_tags(self, pool: PoolPlan) -> dict[str, str]:
        """AWS tags of a pool's resources: the pool's node labels become cost-allocation tags under the same
        keys, so a bill splits by accelerator, workload and sharing exactly like the scheduler does."""
        return {**pool.labels, **self.platform_tags}


def _plan_pool(pool: Pool, spec: Platform) -> PoolPlan:
    pricing = spec.pricing
    it = catalog.INSTANCE_TYPES[pool.instanceType]
    units_per_gpu = pool_units_per_gpu(pool)
    units_per_node = it.gpus * units_per_gpu
    labels = pool_labels(pool)
    node_labels = {**labels, **pool_operator_labels(pool)}
    mig_config = dp_config = None
    if pool.sharing.mode == "mig":
        mig_config = cv.mig_config_name(pool.sharing.profile)
        node_labels[cv.MIG_CONFIG_LABEL] = mig_config
    elif pool.sharing.mode == "time-slicing":
        dp_config = cv.device_plugin_config_name(pool.name)
        node_labels[cv.DEVICE_PLUGIN_CONFIG_LABEL] = dp_config
    taints = (
        Taint(cv.GPU_TAINT_KEY, cv.GPU_TAINT_VALUE),
        Taint(cv.WORKLOAD_TAINT_KEY, cv.workload_taint_value(pool.workload)),
    )
    cap = pool.capacity
    sized = pool_capacity(pool, spec)
    efa = pool.fabric == "efa"
    in_reservation = cap.type in cv.RESERVED_CAPACITY_TYPES
    placement = pool.placementGroup if pool.placementGroup is not None else (efa and not in_reservation)
    return PoolPlan(
        name=pool.name,
        accelerator=pool.accelerator,
        instance_type=pool.instanceType,
        fabric=pool.fabric,
        workload=pool.workload,
        sharing_mode=pool.sharing.mode,
        mig_profile=pool.sharing.profile,
        replicas=pool.sharing.replicas,
        gpus_per_node=it.gpus,
        units_per_gpu=units_per_gpu,
        units_per_node=units_per_node,
        resource_name=pool_resource_name(pool),
        min_nodes=cap.min,
        max_nodes=cap.max,
        desired_nodes=sized.group_desired,
        capacity_units=cap.max * units_per_node,
        capacity_gpus=cap.max * it.gpus,
        cpu_millis_per_unit=(it.vcpus * 1000 - reserved_cpu_millis(it.vcpus)) // units_per_node,
        memory_mib_per_unit=(it.memory_gib * 1024 - reserved_memory_mib()) // units_per_node,
        labels=labels,
        node_labels=node_labels,
        taints=taints,
        flavor=cv.flavor_name(pool.name),
        topology=cv.TOPOLOGY_NAME if pool_topology_aware(pool) else None,
        mig_config=mig_config,
        device_plugin_config=dp_config,
        capacity_type=cap.type,
        reservation_id=cap.reservationId,
        availability_zone=pool.availabilityZone,
        placement_group=bool(placement and efa),
        efa_interfaces=it.efa_interfaces if efa else 0,
        efa_only_interfaces=it.efa_only_interfaces,
        nvme_gb=it.nvme_gb,
        ami_type=pool.amiType,
        root_volume_gib=pool.rootVolumeGiB,
        usd_per_node_hour=pricing.get(pool.instanceType, catalog.ON_DEMAND_USD_PER_HOUR[pool.instanceType]),
        provisioner=pool.provisioner,
        karpenter=plan_pool(pool),
        capacity_semantics=sized.semantics,
        scaler=sized.scaler,
        reserved_nodes=sized.reserved_nodes,
        group_min=sized.group_min,
    )


def _plan_team(team: Team, spec: Platform, pools: Mapping[str, PoolPlan], gpu_resources: frozenset[str],
               reaches: Mapping[tuple[str, str], Reach]) -> TeamPlan:
    quotas = []
    cost = 0.0
    # Namespace caps: the most the team can ever hold (its reach), so a pod Kueue admits is never refused here.
    caps: dict[str, int] = {}
    cpu_millis = 0
    memory_mib = 0
    for pool_name, q in sorted(team.quotas.items()):
        pp = pools[pool_name]
        quotas.append(QuotaPlan(
            pool=pool_name,
            flavor=pp.flavor,
            resource_name=pp.resource_name,
            nominal=q.gpus,
            borrowing=q.borrowingLimit,
            lending=q.lendingLimit,
            cpu_millis_per_unit=pp.cpu_millis_per_unit,
            memory_mib_per_unit=pp.memory_mib_per_unit,
            reach=reaches[(team.name, pool_name)],
        ))
        ceiling = reaches[(team.name, pool_name)].units
        caps[pp.resource_name] = caps.get(pp.resource_name, 0) + ceiling
        cpu_millis += ceiling * pp.cpu_millis_per_unit
        memory_mib += ceiling * pp.memory_mib_per_unit
        cost += q.gpus / pp.units_per_node * pp.usd_per_node_hour
    # A ResourceQuota only limits the resources it lists: every GPU resource a pool advertises is capped,
    # at 0 where the team has no quota, or the namespace could take any number of them.
    for name in gpu_resources:
        caps.setdefault(name, 0)
    lim = team.limits
    hard = {f"requests.{name}": str(units) for name, units in sorted(caps.items())}
    hard.update({
        "requests.cpu": f"{cpu_millis + lim.cpu * 1000}m",
        "requests.memory": f"{memory_mib + lim.memoryGiB * 1024}Mi",
        "pods": str(lim.pods),
        "persistentvolumeclaims": str(lim.persistentVolumeClaims),
        "requests.storage": lim.storage,
    })
    pre = team.preemption or spec.defaultPreemption
    if team.priorities is not None:
        allowed = tuple(team.priorities)
    else:
        allowed = tuple(p.name for p in spec.priorities if p.grantedByDefault)
    return TeamPlan(
        name=team.name,
        namespaces=tuple(team.namespace_names),
        cost_center=team.costCenter,
        cohort=team.cohort,
        admin_groups=tuple(team.groups.admin),
        member_groups=tuple(team.groups.member),
        viewer_groups=tuple(team.groups.viewer),
        pod_security=team.podSecurity,
        quotas=tuple(quotas),
        preemption=PreemptionPlan(pre.reclaimWithinCohort, pre.borrowWithinCohort, pre.withinClusterQueue),
        fair_sharing_weight=team.fairSharingWeight,
        egress=tuple(EgressPlan(e.cidr, tuple(e.ports), e.protocol) for e in team.egress),
        cluster_queue=cv.cluster_queue_name(team.name),
        namespace_labels={
            cv.TEAM: team.name,
            cv.COST_CENTER: team.costCenter,
            cv.ENVIRONMENT: spec.environment,
        },
        namespace_quota=hard,
        usd_per_hour_nominal=round(cost, 2),
        allowed_priorities=allowed,
        topology_resources=tuple(sorted(
            {pools[q].resource_name for q in team.quotas if pools[q].topology}
            - {pools[q].resource_name for q in team.quotas if not pools[q].topology})),
        cpu_only_cpu_millis=lim.cpu * 1000,
        cpu_only_memory_mib=lim.memoryGiB * 1024,
        allowed_registries=tuple(dict.fromkeys([*spec.images.allowedRegistries, *team.allowedRegistries])),
        access_entries=tuple((e.principalArn, tuple(e.groups)) for e in team.accessEntries),
    )


def _network_policy_warning(spec: Platform) -> str | None:
    """The tenants' isolation is NetworkPolicy; who makes sure the cluster enforces it."""
    if not spec.teams:
        return None
    if spec.cluster.provider == "existing":
        return ("cluster.provider 'existing': the tenant NetworkPolicies (default-deny included) only take effect "
                "if the cluster's CNI enforces NetworkPolicy; on EKS set the vpc-cni add-on's "
                f"{cv.VPC_CNI_NETWORK_POLICY_KEY}=\"true\" (docs/deploying.md, What a real EKS account needs)")
    if not spec.addons.vpcCni.manage:
        return ("addons.vpcCni.manage is false: the tenant NetworkPolicies only take effect once the cluster's "
                f"vpc-cni add-on has {cv.VPC_CNI_NETWORK_POLICY_KEY}=\"true\"")
    return None


def _security_warnings(teams: tuple[TeamPlan, ...], spec: Platform) -> list[str]:
    """What the stack cannot enforce itself: an attached EKS cluster's control-plane logging, and team
    groups that nothing maps people into (an RBAC subject nobody can be is no access control at all)."""
    out: list[str] = []
    c = spec.cluster
    if c.provider != "eks":
        return out
    if not c.create:
        out.append("cluster.create is false: the stack cannot turn on control-plane logging of an attached "
                   f"cluster; make sure its {', '.join(audit.REQUIRED_EKS_LOG_TYPES)} logs are on (aws eks "
                   "update-cluster-config --logging; `pulumi up` warns when they are not)")
    if c.identity is not None and c.identity.oidc is not None:
        prefix = c.identity.oidc.groupsPrefix
        if prefix:
            for t in teams:
                mapped = {g for _, gs in t.access_entries for g in gs}
                bare = [g for g in (*t.admin_groups, *t.member_groups, *t.viewer_groups)
                        if not g.startswith(prefix) and g not in mapped]
                if bare:
                    out.append(f"team {t.name!r}: groups {', '.join(bare)} lack the OIDC groupsPrefix {prefix!r} and "
                               "no access entry maps them: nobody can be in them")
        return out
    for t in teams:
        mapped = {g for _, gs in t.access_entries for g in gs}
        unmapped = [g for g in (*t.admin_groups, *t.member_groups, *t.viewer_groups) if g not in mapped]
        if unmapped:
            out.append(f"team {t.name!r}: no access entry (teams[].accessEntries) or OIDC provider "
                       f"(cluster.identity.oidc) maps anyone into {', '.join(unmapped)}")
    return out


def _warnings(pools: tuple[PoolPlan, ...], teams: tuple[TeamPlan, ...], spec: Platform,
              provisioning: ProvisioningPlan) -> tuple[str, ...]:
    out = []
    np_warning = _network_policy_warning(spec)
    if np_warning:
        out.append(np_warning)
    out += _security_warnings(teams, spec)
    used = {q.pool: 0 for t in teams for q in t.quotas}
    for t in teams:
        for q in t.quotas:
            used[q.pool] += q.nominal
        if not t.quotas:
            out.append(f"team {t.name!r} has no quota on any pool: its jobs can never be admitted")
    for p in pools:
        if p.name not in used:
            out.append(f"pool {p.name!r} has no team quota: nobody can schedule on it")
        elif p.capacity_units and used[p.name] < p.capacity_units // 2:
            out.append(
                f"pool {p.name!r} is under half allocated ({used[p.name]}/{p.capacity_units} {p.resource_name}): "
                "idle capacity or max set too high"
            )
        if p.floor_nodes and p.name not in used:
            out.append(f"pool {p.name!r} keeps {p.floor_nodes} nodes running with no quota on them")
        if p.karpenter is not None and not p.karpenter.pins_ami and spec.environment == "prod":
            out.append(f"pool {p.name!r}: Karpenter AMI alias {p.karpenter.ami_alias}: every AMI release drifts "
                       "the pool's nodes; pin pools[].karpenter.amiVersion in prod")
    out += [w for w in (capacity_block_upgrade_warning(p, spec.cluster) for p in spec.pools) if w]
    for name in spec.addons.kueue.integrations:
        if name not in cv.BUILTIN_FRAMEWORKS and name not in wc.FRAMEWORK_CONTROLLER:
            out.append(f"Kueue framework {name!r}: no platform add-on installs its controller; until its CRD is on the "
                       "cluster Kueue waits for it, and the tenant admission policies do not read its kind's pod "
                       "templates (tenants cannot create it either: no RBAC is granted for it)")
    out += capacity_warnings(spec, pools, provisioning)
    return tuple(out)


def _plan_system_pool(c) -> SystemPoolPlan | None:
    sp = c.systemPool
    if sp is None or c.provider != "eks":
        return None
    return SystemPoolPlan(
        node_group_name=cv.system_node_group_name(c.name),
        instance_type=sp.instanceType,
        min_nodes=sp.min,
        max_nodes=sp.max,
        desired_nodes=sp.desired if sp.desired is not None else sp.min,
        ami_type=sp.amiType,
        disk_gib=sp.diskGiB,
        labels={cv.NODE_ROLE: cv.SYSTEM_NODE_ROLE},
    )


def _access_entries(spec: Platform) -> tuple[tuple[str, tuple[str, ...], str], ...]:
    if spec.cluster.provider != "eks":
        return ()
    out = [(arn, tuple(spec.cluster.platformAdmins), "platform")
           for arn in (spec.cluster.identity.platformAdminRoles if spec.cluster.identity else ())]
    out += [(e.principalArn, tuple(e.groups), t.name) for t in spec.teams for e in t.accessEntries]
    return tuple(out)


def build_plan(spec: Platform, region: str | None = None, multikueue_role: str = "manager") -> Plan:
    if multikueue_role not in cv.MULTIKUEUE_ROLES:
        raise ValueError(f"multiKueueRole {multikueue_role!r}; valid: {', '.join(cv.MULTIKUEUE_ROLES)}")
    pools = tuple(_plan_pool(p, spec) for p in spec.pools)
    pools = tuple(replace(p, autoscaler_tags=autoscaler_tags(p, spec.cluster.name))
                  if p.scaler == cv.SCALER_CLUSTER_AUTOSCALER else p for p in pools)
    by_name = {p.name: p for p in pools}
    gpu_resources = frozenset(p.resource_name for p in pools)  # once, not once per team
    reaches = reaches_of_spec(spec)  # every team's reach on every pool, one cohort tree per pool
    teams = tuple(_plan_team(t, spec, by_name, gpu_resources, reaches) for t in spec.teams)
    data = plan_data(spec, region)
    # The platform's claims in each team namespace (data, checkpoints, file systems) come on top of the team's own.
    teams = tuple(replace(t, namespace_quota=namespace_quota_with_claims(t.namespace_quota, len(data.claims(t.name))))
                  for t in teams)
    c = spec.cluster
    karpenter = plan_controller(spec, region)
    manager = multikueue_role == "manager" and spec.multiKueue is not None and bool(spec.multiKueue.workers)
    provisioning = plan_provisioning(spec, pools, manager)
    autoscaler = plan_cluster_autoscaler(spec, region, pools, karpenter is not None or data.pod_identity_agent)
    return Plan(
        environment=spec.environment,
        region=region,
        cluster=ClusterPlan(
            name=c.name,
            provider=c.provider,
            kubernetes_version=c.kubernetesVersion,
            subnet_ids=tuple(c.subnetIds),
            create=c.create,
            node_role_arn=c.nodeRoleArn,
            platform_admins=tuple(c.platformAdmins),
            system_pool=_plan_system_pool(c),
            manage_vpc_cni=c.provider == "eks" and spec.addons.vpcCni.manage,
            vpc_cni_version=spec.addons.vpcCni.version,
            manage_node_monitoring_agent=c.provider == "eks" and spec.addons.nodeMonitoringAgent.manage,
            node_monitoring_agent_version=spec.addons.nodeMonitoringAgent.version,
            control_plane_logs=tuple(c.controlPlaneLogs) if c.provider == "eks" else (),
            access_entries=_access_entries(spec),
            oidc=c.identity.oidc if c.identity is not None and c.provider == "eks" else None,
        ),
        pools=pools,
        teams=teams,
        cohorts=tuple(CohortPlan(x.name, x.parent, x.fairSharingWeight) for x in spec.cohorts),
        priorities=tuple(PriorityPlan(p.name, p.value, p.description) for p in spec.priorities),
        # MIG slices keep their own resource names only under the mixed strategy; `single` would
        # advertise them as nvidia.com/gpu and break the Kueue flavors' resource names.
        mig_strategy="mixed" if any(p.sharing_mode == "mig" for p in pools) else "single",
        spec=spec,
        warnings=_warnings(pools, teams, spec, provisioning),
        multikueue_role=multikueue_role,
        image_registries=tuple(spec.images.allowedRegistries),
        require_image_digests=spec.images.requireDigests,
        job_ttl_seconds=spec.jobs.ttlSecondsAfterFinished,
        job_max_ttl_seconds=spec.jobs.maxTtlSecondsAfterFinished,
        kueue_requeue_limit=spec.addons.kueue.requeueLimit,
        karpenter=karpenter,
        data=data,
        kueue_integrations=wc.effective_frameworks(spec.addons.kueue.integrations),
        workload_controllers=wc.plan_controllers(
            {key: (getattr(spec.addons, key).install, getattr(spec.addons, key).version) for key in wc.KEYS},
            deploy=c.provider == "eks", on_system_pool=c.provider == "eks" and c.systemPool is not None),
        cluster_autoscaler=autoscaler,
        provisioning=provisioning,
    )
