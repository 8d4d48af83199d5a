"""Karpenter's part of the plan: what each `provisioner: karpenter` pool's NodePool and EC2NodeClass say,
and what the controller needs. Pure (no pulumi import); components/karpenter.py only spells it.

A pool means the same thing whichever provisioner makes its nodes: the labels, taints, flavor, quota and
capacity are the pool's (plan.PoolPlan), and nothing here changes them. What Karpenter adds is how it
chooses instances (requirements), how far it may grow (limits, at `capacity.max` nodes) and when it may
take a node away (disruption). Facts about Karpenter's API cite github.com/aws/karpenter-provider-aws
v1.15.2 (the Go module; paths below are inside it) unless they say otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from . import catalog, conventions as cv
from .pool_derivations import pool_capacity_gpus
from .spec import KARPENTER_CAPACITY_TYPES, KarpenterPool, Platform, Pool

# Work that runs to completion (a training step, a batch job, a notebook session) loses everything since
# its last checkpoint when its node goes, so Karpenter only ever removes such a pool's nodes once they
# are empty. Inference replicas are restartable behind their Service: those pools consolidate, one node
# at a time by default.
CONSOLIDATING_WORKLOADS: tuple[str, ...] = ("inference",)
DEFAULT_INFERENCE_BUDGET = "1"
# consolidationPolicy values (NodePool CRD, spec.disruption.consolidationPolicy enum).
WHEN_EMPTY = "WhenEmpty"
WHEN_EMPTY_OR_UNDERUTILIZED = "WhenEmptyOrUnderutilized"
# Budget reasons (NodePool CRD, spec.disruption.budgets[].reasons enum). A budget with reasons applies to
# those only; disruption with no active budget for it is unbounded once any budget is set (maintainer
# answer in kubernetes-sigs/karpenter discussion #1079), so run-to-completion pools also bound Empty.
DRIFTED, UNDERUTILIZED, EMPTY = "Drifted", "Underutilized", "Empty"
# Expiration is forceful: it drains a node whatever its budgets say (website/content/en/v1.14/concepts/
# disruption.md, "Expiration"), so run-to-completion pools never expire; inference pools keep the CRD's
# default lifetime (spec.template.spec.expireAfter default 720h).
NEVER = "Never"
DEFAULT_EXPIRE_AFTER = "720h"
# The Empty budget of run-to-completion pools: the CRD's default budget (budgets[].nodes default 10%).
EMPTY_BUDGET = "10%"
# Karpenter's AMI families (EC2NodeClass spec.amiFamily enum) and alias families (AMISelectorTerm.Alias).
# The al2023 and bottlerocket aliases resolve the NVIDIA variant for GPU instance types
# (pkg/providers/amifamily/al2023.go and bottlerocket.go, DescribeImageQuery).
AMI_FAMILY: Mapping[str, str] = {"AL2023_x86_64_NVIDIA": "AL2023", "BOTTLEROCKET_x86_64_NVIDIA": "Bottlerocket"}
AMI_ALIAS_FAMILY: Mapping[str, str] = {"AL2023_x86_64_NVIDIA": "al2023", "BOTTLEROCKET_x86_64_NVIDIA": "bottlerocket"}
# Bottlerocket boots from /dev/xvda and keeps containers and kubelet on /dev/xvdb; Karpenter's default OS
# volume is 6Gi, "at least as large as the AMI's root snapshot" (pkg/providers/amifamily/bottlerocket.go,
# DefaultBlockDeviceMappings). Setting blockDeviceMappings replaces the defaults, so both are written.
BOTTLEROCKET_OS_VOLUME_GIB = 6
# karpenter.k8s.aws/capacity-reservation-type values (designs/capacity-block-support.md).
RESERVATION_TYPE: Mapping[str, str] = {"capacity-reservation": "default", "capacity-block": "capacity-block"}
# Controller replicas: the chart's default is 2 with a required anti-affinity on the hostname
# (charts/karpenter/values.yaml replicas, affinity.podAntiAffinity), so a second replica needs a second node.
CONTROLLER_REPLICAS = 2


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    operator: str
    values: tuple[str, ...]

    def to_k8s(self) -> dict[str, object]:
        return {"key": self.key, "operator": self.operator, "values": list(self.values)}


@dataclass(frozen=True, slots=True)
class Budget:
    nodes: str
    reasons: tuple[str, ...] = ()

    def to_k8s(self) -> dict[str, object]:
        return {"nodes": self.nodes, **({"reasons": list(self.reasons)} if self.reasons else {})}


@dataclass(frozen=True, slots=True)
class Volume:
    device: str
    size_gib: int
    # The volume kubelet and containerd live on (EC2NodeClass blockDeviceMappings[].rootVolume).
    root: bool


@dataclass(frozen=True, slots=True)
class KarpenterPoolPlan:
    nodepool: str
    nodeclass: str
    capacity_types: tuple[str, ...]
    requirements: tuple[Requirement, ...]
    reservation_type: str | None
    ami_family: str
    ami_alias: str
    # At most capacity.max nodes, and their GPUs: what Kueue is told the pool holds (PoolPlan.capacity_units)
    # is never more than Karpenter may launch.
    limit_nodes: int
    limit_gpus: int
    consolidation_policy: str
    consolidate_after: str
    expire_after: str
    budgets: tuple[Budget, ...]
    volumes: tuple[Volume, ...]
    instance_store_policy: str | None

    @property
    def limits(self) -> dict[str, str]:
        """NodePool spec.limits as strings: the API server coerces quantities to strings, and the docs advise
        against integers to avoid GitOps skew (website/content/en/v1.14/concepts/nodepools.md, spec.limits)."""
        return {"nodes": str(self.limit_nodes), cv.GPU_RESOURCE: str(self.limit_gpus)}

    @property
    def pins_ami(self) -> bool:
        return not self.ami_alias.endswith("@latest")


@dataclass(frozen=True, slots=True)
class KarpenterPlan:
    """The controller: made once per cluster when any pool is a Karpenter pool."""

    version: str
    namespace: str
    release: str
    crd_release: str
    service_account: str
    controller_role: str
    node_role: str
    queue: str | None
    replicas: int
    manage_pod_identity_agent: bool
    partition: str


def _capacity_types(pool: Pool, k: KarpenterPool) -> tuple[str, ...]:
    return tuple(k.capacityTypes) if k.capacityTypes is not None else KARPENTER_CAPACITY_TYPES[pool.capacity.type]


def plan_pool(pool: Pool) -> KarpenterPoolPlan | None:
    """None for a managed node group pool."""
    if pool.provisioner != cv.PROVISIONER_KARPENTER:
        return None
    k = pool.karpenter or KarpenterPool()
    it = catalog.INSTANCE_TYPES[pool.instanceType]
    types = _capacity_types(pool, k)
    reserved_only = types == ("reserved",)
    requirements = [Requirement(cv.INSTANCE_TYPE_LABEL, "In", (pool.instanceType,))]
    if pool.availabilityZone:
        requirements.append(Requirement(cv.ZONE_LABEL, "In", (pool.availabilityZone,)))
    requirements.append(Requirement(cv.KARPENTER_CAPACITY_TYPE_LABEL, "In", types))
    reservation_type = RESERVATION_TYPE.get(pool.capacity.type)
    if reservation_type and reserved_only:
        # The reservation targeted by id here and in the EC2NodeClass's capacityReservationSelectorTerms;
        # with an on-demand fallback these would exclude the fallback's instances (they carry neither label).
        requirements.append(Requirement(cv.KARPENTER_CAPACITY_RESERVATION_ID_LABEL, "In", (str(pool.capacity.reservationId),)))
        requirements.append(Requirement(cv.KARPENTER_CAPACITY_RESERVATION_TYPE_LABEL, "In", (reservation_type,)))
    if pool.workload in CONSOLIDATING_WORKLOADS:
        policy, expire = WHEN_EMPTY_OR_UNDERUTILIZED, DEFAULT_EXPIRE_AFTER
        budgets: tuple[Budget, ...] = (Budget(k.disruptionBudget or DEFAULT_INFERENCE_BUDGET),)
    else:
        policy, expire = WHEN_EMPTY, NEVER
        budgets = (Budget("0", (DRIFTED, UNDERUTILIZED)), Budget(EMPTY_BUDGET, (EMPTY,)))
    if pool.amiType.startswith("BOTTLEROCKET"):
        volumes: tuple[Volume, ...] = (Volume("/dev/xvda", BOTTLEROCKET_OS_VOLUME_GIB, False),
                                       Volume("/dev/xvdb", pool.rootVolumeGiB, True))
    else:
        volumes = (Volume("/dev/xvda", pool.rootVolumeGiB, True),)
    return KarpenterPoolPlan(
        nodepool=cv.karpenter_nodepool_name(pool.name),
        nodeclass=cv.karpenter_nodeclass_name(pool.name),
        capacity_types=types,
        requirements=tuple(requirements),
        reservation_type=reservation_type,
        ami_family=AMI_FAMILY[pool.amiType],
        ami_alias=f"{AMI_ALIAS_FAMILY[pool.amiType]}@{k.amiVersion}",
        limit_nodes=pool.capacity.max,
        limit_gpus=pool_capacity_gpus(pool),
        consolidation_policy=policy,
        consolidate_after=k.consolidateAfter,
        expire_after=expire,
        budgets=budgets,
        volumes=volumes,
        # EC2NodeClass instanceStorePolicy RAID0: the NVMe instance store striped for containerd and kubelet
        # (pkg/apis/v1/ec2nodeclass.go, InstanceStorePolicyRAID0), as the launch templates do by user data.
        instance_store_policy="RAID0" if it.nvme_gb > 0 else None,
    )


def partition(region: str | None) -> str:
    """The AWS partition of a region, for the ARNs in the controller's policies (arn:${AWS::Partition})."""
    if region and region.startswith("cn-"):
        return "aws-cn"
    if region and region.startswith("us-gov-"):
        return "aws-us-gov"
    return "aws"


def plan_controller(spec: Platform, region: str | None) -> KarpenterPlan | None:
    """None unless an eks cluster has a Karpenter pool."""
    c = spec.cluster
    if c.provider != "eks" or not any(p.provisioner == cv.PROVISIONER_KARPENTER for p in spec.pools):
        return None
    addon = spec.addons.karpenter
    system_min = c.systemPool.min if c.systemPool is not None else 0
    return KarpenterPlan(
        version=addon.version,
        namespace=cv.KARPENTER_NAMESPACE,
        release=cv.KARPENTER_RELEASE_NAME,
        crd_release=cv.KARPENTER_CRD_RELEASE_NAME,
        service_account=cv.KARPENTER_SERVICE_ACCOUNT,
        controller_role=cv.karpenter_controller_role_name(c.name),
        node_role=cv.karpenter_node_role_name(c.name),
        queue=cv.karpenter_queue_name(c.name) if addon.interruptionQueue else None,
        replicas=min(CONTROLLER_REPLICAS, max(1, system_min)),
        manage_pod_identity_agent=addon.managePodIdentityAgent,
        partition=partition(region),
    )
