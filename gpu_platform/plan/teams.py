"""A team's plan (quotas in pool units with their CPU and memory, namespaces, groups, preemption, egress) and
the cohorts and priorities the teams share."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from .. import conventions as cv
from ..quota_reach import Reach
from .quantities import cpu_quantity, memory_quantity

# LimitRange container defaults in tenant namespaces. The ResourceQuota caps requests.cpu and
# requests.memory, and Kubernetes rejects a pod without those requests in such a namespace, so sidecars
# and quick debug pods get a small request; the default limit bounds a container that sets none. A
# container that requests more than a default limit must set its own limit (LimitRange applies the
# default limit first, then request > limit is invalid: kubernetes.io/docs/concepts/policy/limit-range).
CONTAINER_DEFAULT_REQUEST: dict[str, str] = {"cpu": "250m", "memory": "512Mi"}
CONTAINER_DEFAULT_LIMIT: dict[str, str] = {"cpu": "2", "memory": "4Gi"}


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
    # The team's quota with the platform's claims of the namespace that has the most of them (the data path's
    # claims: docs/data-path.md): every field but persistentvolumeclaims and requests.storage is the same in each
    # namespace. A namespace's own ResourceQuota is quota_of(namespace), since a file system's claim counts only
    # in the namespace holding it.
    namespace_quota: Mapping[str, str]
    usd_per_hour_nominal: float
    # Platform priority names (config names) the team may use; admission enforces them.
    allowed_priorities: tuple[str, ...] = ()
    # The team's quota on the CPU-only flavor (conventions.CPU_FLAVOR): what its namespaces may run
    # without GPUs, the same allowance its ResourceQuota adds on top of the GPU-derived CPU and memory.
    cpu_only_cpu_millis: int = 0
    cpu_only_memory_mib: int = 0
    # teams[].limits.storage and persistentVolumeClaims: the namespace's own storage allowance, before the
    # platform's claims are added to its quota (data.namespace_quota_with_claims); the job template's scratch fits it.
    own_storage: str = "0"
    own_claims: int = 0
    # GPU resource names the team gets only from topology-aware pools (no non-TAS pool of the team has them).
    topology_resources: tuple[str, ...] = ()
    # Registries the team's pods may pull from: images.allowedRegistries, then teams[].allowedRegistries.
    allowed_registries: tuple[str, ...] = ()
    # eks: (IAM role ARN, the team groups its sessions are in), one EKS access entry each.
    access_entries: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # namespace -> its ResourceQuota `hard`: the team's own allowance plus the platform's claims in that namespace
    # (data.namespace_quota_with_claims); read it through quota_of. Empty: every namespace has namespace_quota.
    namespace_quotas: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    def quota_of(self, namespace: str) -> Mapping[str, str]:
        """The ResourceQuota `hard` of one of the team's namespaces. The namespaces differ only in the platform's
        claims: a file system's claim is made in one namespace, and another namespace's quota that counted it
        would give that namespace a claim and its storage beyond the team's allowance."""
        if namespace not in self.namespaces:
            raise ValueError(f"namespace {namespace!r} is not one of team {self.name!r}'s; its namespaces: "
                             f"{', '.join(self.namespaces)}")
        return self.namespace_quotas.get(namespace, self.namespace_quota)

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
