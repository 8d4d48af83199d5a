"""`cohorts[]`, `teams[]`, `priorities[]`: the tenants, their quotas, preemption, egress and limits."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import AliasChoices, Field, PrivateAttr, field_validator, model_validator

from .fields import PodSecurity, Strict, dns_label, label_value, registries
from .security import AccessEntry


class Cohort(Strict):
    name: str = Field(description="Kueue Cohort name, a unique DNS-1123 label", examples=["research"])
    parent: str | None = Field(default=None, description="parent cohort (no cycles)", examples=["org"])
    # Kueue fair-sharing weight of this cohort among its siblings.
    fairSharingWeight: float | None = Field(
        default=None,
        ge=0,
        description="fair-sharing weight among sibling cohorts (default: Kueue's)",
        examples=[2.0],
    )

    _name = field_validator("name")(lambda v: dns_label(v))


class Groups(Strict):
    admin: list[str] = Field(
        default_factory=list,
        description="groups with namespace admin rights (edit plus read-only RBAC) and batch use",
        examples=[["vision-leads"]],
    )
    member: list[str] = Field(
        default_factory=list,
        description="groups that edit and submit work",
        examples=[["vision-engineers"]],
    )
    viewer: list[str] = Field(
        default_factory=list,
        description="groups with read access",
        examples=[["vision-readers"]],
    )


# The keys a quota's nominal units are accepted under: `units`, and `gpus`, its former name (stacks written with
# it keep working). Exactly one of them.
QUOTA_UNITS_KEYS = ("units", "gpus")


def _quota_schema(schema: dict[str, Any]) -> None:
    """Editors accept what the model accepts: `units` or its former name `gpus`, exactly one of them."""
    props = schema["properties"]
    props["gpus"] = {**props["units"], "title": "Gpus", "deprecated": True,
                     "description": "the former name of units, still accepted (plan warns); give one of them, not both"}
    schema["required"] = [r for r in schema.get("required", []) if r not in QUOTA_UNITS_KEYS]
    if not schema["required"]:
        del schema["required"]
    schema["oneOf"] = [{"required": [key]} for key in QUOTA_UNITS_KEYS]


class Quota(Strict):
    """Per pool, in the pool's schedulable units: whole GPUs, MIG slices or time-sliced replicas."""

    model_config = Strict.model_config | {"json_schema_extra": _quota_schema}

    units: int = Field(
        ge=0,
        validation_alias=AliasChoices(*QUOTA_UNITS_KEYS),
        description=(
            "nominal quota in the pool's units (GPUs, MIG slices or replicas); a pool's nominal quotas "
            "must fit its capacity"
        ),
        examples=[8],
    )
    borrowingLimit: int | None = Field(
        default=None,
        ge=0,
        description="how much more the team may borrow from its cohort (default: unlimited within the cohort)",
        examples=[8],
    )
    lendingLimit: int | None = Field(
        default=None,
        ge=0,
        description="how much of its nominal quota the team lends, at most units (default: all unused quota)",
        examples=[4],
    )
    _units_key: str = PrivateAttr(default=QUOTA_UNITS_KEYS[0])

    @model_validator(mode="wrap")
    @classmethod
    def _one_units_key(cls, data: Any, handler: Any) -> Quota:
        given = [key for key in QUOTA_UNITS_KEYS if isinstance(data, dict) and key in data]
        if len(given) > 1:
            raise ValueError("the nominal quota is given twice, as units and as gpus (its former name): keep units")
        quota = handler(data)
        if given:
            quota._units_key = given[0]
        return quota

    @property
    def units_key(self) -> str:
        """The key the stack wrote the nominal quota under (units or gpus), so a problem's path is what it wrote."""
        return self._units_key

    def __eq__(self, other: object) -> bool:
        """The same quota whichever key spelled it: the spelling is not part of the value."""
        return isinstance(other, Quota) and self.__dict__ == other.__dict__


class Preemption(Strict):
    """Kueue ClusterQueue preemption (kueue.x-k8s.io/v1beta2 ClusterQueue spec.preemption enums).

    borrowWithinCohort defaults to Never: Kueue documents it for classical preemption only, and the
    platform runs Kueue with fair sharing."""

    reclaimWithinCohort: Literal["Never", "LowerPriority", "Any"] = Field(
        default="Any",
        description="Kueue ClusterQueue preemption.reclaimWithinCohort",
        examples=["Any"],
    )
    borrowWithinCohort: Literal["Never", "LowerPriority"] = Field(
        default="Never",
        description="Kueue preemption.borrowWithinCohort.policy; must be Never when reclaimWithinCohort is Never",
        examples=["LowerPriority"],
    )
    withinClusterQueue: Literal["Never", "LowerPriority", "LowerOrNewerEqualPriority"] = Field(
        default="LowerPriority",
        description="Kueue preemption.withinClusterQueue",
        examples=["LowerPriority"],
    )

    @model_validator(mode="after")
    def _combination(self) -> "Preemption":
        # The ClusterQueue CRD's CEL rule: reclaimWithinCohort=Never and borrowWithinCohort.policy!=Never.
        if self.reclaimWithinCohort == "Never" and self.borrowWithinCohort != "Never":
            raise ValueError("borrowWithinCohort must be 'Never' when reclaimWithinCohort is 'Never' (Kueue rejects it)")
        return self


class Egress(Strict):
    """An allowed egress destination beyond DNS and the namespace itself (object storage, registries)."""

    cidr: str = Field(description="destination CIDR", examples=["10.20.0.0/16"])
    ports: list[int] = Field(default_factory=lambda: [443], description="destination ports", examples=[[443]])
    protocol: Literal["TCP", "UDP"] = Field(default="TCP", description="transport protocol", examples=["TCP"])

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


# The default CPU-only allowance: Ray's "good starting hardware specification for the head node is 8 CPUs
# and 32 GB memory" (docs.ray.io, cluster/vms/user-guides/large-cluster-best-practices, "Configuring the
# head node"), which also holds a notebook server. Work without GPUs runs only inside it (the pools' Kueue
# flavors are never given to it), so a default that could not hold a Ray head would refuse every GPU-less
# RayCluster head at creation.
CPU_ONLY_CPU_DEFAULT = 8
CPU_ONLY_MEMORY_GIB_DEFAULT = 32


class NamespaceLimits(Strict):
    """Namespace caps beyond what the GPU quotas imply, and the team's CPU-only allowance: what its pods
    without GPUs (Ray heads, notebooks, data preparation, the CPU-only pod sets of GPU jobs) may hold at once."""

    cpu: int = Field(
        default=CPU_ONLY_CPU_DEFAULT,
        ge=0,
        description=(
            "the team's CPU-only allowance in CPU cores: its quota on the Kueue `cpu-only` flavor, the only "
            "flavor work without GPUs is admitted on (a pod without GPUs that asks for more is refused at "
            "creation; more of them wait for it), and what each namespace's ResourceQuota adds beyond the "
            "GPU-derived CPU. The default fits a Ray head (8 CPUs, Ray's starting size) or a notebook"
        ),
        examples=[8],
    )
    memoryGiB: int = Field(
        default=CPU_ONLY_MEMORY_GIB_DEFAULT,
        ge=0,
        description=(
            "the team's CPU-only allowance in GiB of memory, the same way as `cpu` (the default fits a Ray "
            "head: 32 GB, Ray's starting size)"
        ),
        examples=[32],
    )
    pods: int = Field(default=200, ge=1, description="pods per namespace", examples=[200])
    persistentVolumeClaims: int = Field(
        default=50,
        ge=0,
        description="PersistentVolumeClaims per namespace",
        examples=[50],
    )
    storage: str = Field(
        default="2Ti",
        description="requested storage per namespace (a Kubernetes quantity)",
        examples=["2Ti"],
    )


class Team(Strict):
    name: str = Field(
        description="team name, a unique DNS-1123 label: ClusterQueue name and default namespace",
        examples=["vision"],
    )
    costCenter: str = Field(description="namespace label and cost attribution (a label value)", examples=["cc-1042"])
    cohort: str | None = Field(
        default=None,
        description="the ClusterQueue's cohort; needed for borrowing and lending",
        examples=["research"],
    )
    groups: Groups = Field(
        default_factory=Groups,
        description="Kubernetes groups bound in the team's namespaces: admin, member, viewer",
        examples=[{"admin": ["vision-leads"], "member": ["vision-engineers"]}],
    )
    quotas: dict[str, Quota] = Field(
        default_factory=dict,
        description="nominal quota per pool, in the pool's units",
        examples=[{"h100-train": {"units": 8, "borrowingLimit": 8}}],
    )
    podSecurity: PodSecurity = Field(
        default="baseline",
        description="Pod Security enforce level of the team's namespaces (warn and audit are always restricted)",
        examples=["restricted"],
    )
    # Namespaces the team owns; its name when omitted.
    namespaces: list[str] | None = Field(
        default=None,
        description="the team's namespaces (default: [<name>]); unique across teams, none of the reserved ones",
        examples=[["vision", "vision-dev"]],
    )
    preemption: Preemption | None = Field(
        default=None,
        description="the team's ClusterQueue preemption (default: defaultPreemption)",
        examples=[{"reclaimWithinCohort": "LowerPriority"}],
    )
    fairSharingWeight: float = Field(
        default=1.0,
        ge=0,
        description="Kueue fair-sharing weight of the team's ClusterQueue",
        examples=[1.0],
    )
    egress: list[Egress] = Field(
        default_factory=list,
        description="egress allowed beyond DNS and the namespace (object storage, registries)",
        examples=[[{"cidr": "10.20.0.0/16", "ports": [443]}]],
    )
    limits: NamespaceLimits = Field(
        default_factory=NamespaceLimits,
        description=(
            "namespace caps beyond the GPU-derived CPU and memory; cpu and memoryGiB are also the team's "
            "CPU-only allowance (its quota for work without GPUs)"
        ),
        examples=[{"cpu": 16, "memoryGiB": 64}],
    )
    priorities: list[str] | None = Field(
        default=None,
        description=(
            "Platform priorities (names from `priorities`) the team may give its workloads, in the Kueue "
            "priority-class label or a pod's priorityClassName; enforced at admission. Omitted: every "
            "priority with grantedByDefault (by default all but system-critical and "
            "production-inference)."
        ),
        examples=[["production-inference", "training"]],
    )
    allowedRegistries: list[str] = Field(
        default_factory=list,
        description=(
            "registries this team may pull from in addition to images.allowedRegistries (e.g. its own ECR"
            " repository prefix)"
        ),
        examples=[["123456789012.dkr.ecr.us-east-1.amazonaws.com/vision"]],
    )
    accessEntries: list[AccessEntry] = Field(
        default_factory=list,
        description=(
            "eks: IAM roles whose sessions are in the team's groups (EKS access entries); never a "
            "platform admin or system: group"
        ),
        examples=[[{"principalArn": "arn:aws:iam::123456789012:role/vision-ci", "groups": ["vision-engineers"]}]],
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
    name: str = Field(
        description=(
            "priority name (PriorityClasses are named gpu-platform-<name> unless the name is already "
            "system-*)"
        ),
        examples=["training"],
    )
    value: int = Field(description="priority value: higher preempts lower", examples=[1000])
    description: str = Field(
        default="",
        description="what the priority is for (on both priority classes)",
        examples=["batch training"],
    )
    grantedByDefault: bool = Field(
        default=True,
        description=(
            "Teams without their own `priorities` list may use this priority. The system and production "
            "tiers are off by default: a tenant that may label work system-critical preempts everyone."
        ),
        examples=[False],
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
