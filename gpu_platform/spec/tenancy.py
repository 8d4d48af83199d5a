"""`cohorts[]`, `teams[]`, `priorities[]`: the tenants, their quotas, preemption, egress and limits."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from .fields import PodSecurity, Strict, dns_label, label_value, registries
from .security import AccessEntry


class Cohort(Strict):
    name: str
    parent: str | None = None
    # Kueue fair-sharing weight of this cohort among its siblings.
    fairSharingWeight: float | None = Field(default=None, ge=0)

    _name = field_validator("name")(lambda v: dns_label(v))


class Groups(Strict):
    admin: list[str] = Field(default_factory=list)
    member: list[str] = Field(default_factory=list)
    viewer: list[str] = Field(default_factory=list)


class Quota(Strict):
    """Per pool; `gpus` counts the pool's schedulable units: whole GPUs, MIG slices or replicas."""

    gpus: int = Field(ge=0)
    borrowingLimit: int | None = Field(default=None, ge=0)
    lendingLimit: int | None = Field(default=None, ge=0)


class Preemption(Strict):
    """Kueue ClusterQueue preemption (kueue.x-k8s.io/v1beta2 ClusterQueue spec.preemption enums).

    borrowWithinCohort defaults to Never: Kueue documents it for classical preemption only, and the
    platform runs Kueue with fair sharing."""

    reclaimWithinCohort: Literal["Never", "LowerPriority", "Any"] = "Any"
    borrowWithinCohort: Literal["Never", "LowerPriority"] = "Never"
    withinClusterQueue: Literal["Never", "LowerPriority", "LowerOrNewerEqualPriority"] = "LowerPriority"

    @model_validator(mode="after")
    def _combination(self) -> "Preemption":
        # The ClusterQueue CRD's CEL rule: reclaimWithinCohort=Never and borrowWithinCohort.policy!=Never.
        if self.reclaimWithinCohort == "Never" and self.borrowWithinCohort != "Never":
            raise ValueError("borrowWithinCohort must be 'Never' when reclaimWithinCohort is 'Never' (Kueue rejects it)")
        return self


class Egress(Strict):
    """An allowed egress destination beyond DNS and the namespace itself (object storage, registries)."""

    cidr: str
    ports: list[int] = Field(default_factory=lambda: [443])
    protocol: Literal["TCP", "UDP"] = "TCP"

    @field_validator("cidr")
    @classmethod
    def _cidr(cls, v: str) -> str:
        import ipaddress

        try:
            ipaddress.ip_network(v, strict=False)
        except ValueError:
            raise ValueError(f"{v!r} is not a CIDR such as 10.0.0.0/16") from None
        return v

    @field_validator("ports")
    @classmethod
    def _ports(cls, v: list[int]) -> list[int]:
        bad = [p for p in v if not 1 <= p <= 65535]
        if bad:
            raise ValueError(f"ports {bad} are outside 1-65535")
        return v


class NamespaceLimits(Strict):
    """Namespace caps beyond what the GPU quotas imply (CPU and memory for pods without GPUs)."""

    cpu: int = Field(default=4, ge=0)
    memoryGiB: int = Field(default=16, ge=0)
    pods: int = Field(default=200, ge=1)
    persistentVolumeClaims: int = Field(default=50, ge=0)
    storage: str = "2Ti"


class Team(Strict):
    name: str
    costCenter: str
    cohort: str | None = None
    groups: Groups = Field(default_factory=Groups)
    quotas: dict[str, Quota] = Field(default_factory=dict)
    podSecurity: PodSecurity = "baseline"
    # Namespaces the team owns; its name when omitted.
    namespaces: list[str] | None = None
    preemption: Preemption | None = None
    fairSharingWeight: float = Field(default=1.0, ge=0)
    egress: list[Egress] = Field(default_factory=list)
    limits: NamespaceLimits = Field(default_factory=NamespaceLimits)
    priorities: list[str] | None = Field(
        default=None,
        description=(
            "Platform priorities (names from `priorities`) the team may give its workloads, in the Kueue "
            "priority-class label or a pod's priorityClassName; enforced at admission. Omitted: every "
            "priority with grantedByDefault (by default all but system-critical and production-inference)."
        ),
        examples=[["production-inference", "training"]],
    )
    allowedRegistries: list[str] = Field(
        default_factory=list,
        description="registries this team may pull from in addition to images.allowedRegistries (e.g. its own "
                    "ECR repository prefix)",
    )
    accessEntries: list[AccessEntry] = Field(
        default_factory=list,
        description="eks: IAM roles whose sessions are in the team's groups (EKS access entries); never a "
                    "platform admin or system: group",
    )

    _registries = field_validator("allowedRegistries")(lambda v: registries(v))

    _name = field_validator("name")(lambda v: dns_label(v))
    _cc = field_validator("costCenter")(lambda v: label_value(v))

    @field_validator("namespaces")
    @classmethod
    def _namespaces(cls, v: list[str] | None) -> list[str] | None:
        if v is not None:
            if not v:
                raise ValueError("namespaces must not be empty; omit it to use the team name")
            for ns in v:
                dns_label(ns)
        return v

    @property
    def namespace_names(self) -> list[str]:
        return list(self.namespaces) if self.namespaces else [self.name]


class Priority(Strict):
    name: str
    value: int
    description: str = ""
    grantedByDefault: bool = Field(
        default=True,
        description=(
            "Teams without their own `priorities` list may use this priority. The system and production "
            "tiers are off by default: a tenant that may label work system-critical preempts everyone."
        ),
    )

    _name = field_validator("name")(lambda v: dns_label(v))


def default_priorities() -> list[Priority]:
    return [
        Priority(name="system-critical", value=1000000, description="Platform components.", grantedByDefault=False),
        Priority(name="production-inference", value=10000, description="Serving production traffic.",
                 grantedByDefault=False),
        Priority(name="training", value=1000, description="Scheduled training runs."),
        Priority(name="research", value=500, description="Experiments that may be preempted."),
        Priority(name="development", value=100, description="Interactive and development work."),
    ]
