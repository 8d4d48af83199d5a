"""`pools[]`: GPU node pools, their sharing, capacity and (optionally) Karpenter settings."""

from __future__ import annotations

from pydantic import Field, field_validator, model_validator

from .. import catalog
from .fields import (
    AmiType, CapacityType, Fabric, KarpenterCapacityType, Provisioner, SharingMode, Strict, Workload,
    dns_label,
)
from .limits import KARPENTER_BUDGET_NODES, KARPENTER_DURATION


class Sharing(Strict):
    mode: SharingMode = Field(
        default="full",
        description="full: whole GPUs; mig: MIG slices of one profile; time-slicing: shared replicas",
        examples=["mig"],
    )
    profile: str | None = Field(
        default=None,
        description="mig: a MIG profile the accelerator has",
        examples=["1g.10gb"],
    )
    replicas: int | None = Field(default=None, description="time-slicing: replicas per GPU, at least 2", examples=[4])

    @model_validator(mode="after")
    def _shape(self) -> "Sharing":
        if self.mode == "mig":
            if not self.profile:
                raise ValueError("mode 'mig' needs a profile, e.g. {mode: mig, profile: 1g.10gb}")
            if self.replicas is not None:
                raise ValueError("replicas is only valid with mode 'time-slicing'")
        elif self.mode == "time-slicing":
            if self.replicas is None or self.replicas < 2:
                raise ValueError(
                    f"time-slicing needs replicas >= 2 (got {self.replicas}); use {{mode: full}} for whole GPUs"
                )
            if self.profile is not None:
                raise ValueError("profile is only valid with mode 'mig'")
        elif self.profile is not None or self.replicas is not None:
            raise ValueError("mode 'full' takes neither profile nor replicas")
        return self


class Capacity(Strict):
    type: CapacityType = Field(default="on-demand", description="purchase option", examples=["capacity-block"])
    reservationId: str | None = Field(
        default=None,
        description=(
            "cr- and 17 hex digits; required for capacity-reservation and capacity-block, rejected "
            "otherwise"
        ),
        examples=["cr-0123456789abcdef0"],
    )
    min: int = Field(
        default=0,
        ge=0,
        description=(
            "on-demand and spot: the nodes that always run (the autoscaler scales between min and max). "
            "Reserved capacity runs whole: a capacity block or reservation's pool runs max nodes while it "
            "is active, and plan warns when min asks for fewer"
        ),
        examples=[0],
    )
    max: int = Field(
        ge=0,
        description=(
            "the most nodes the pool has; sets the pool's quota capacity. For capacity-block and "
            "capacity-reservation, the reservation's instance count"
        ),
        examples=[16],
    )
    desired: int | None = Field(
        default=None,
        ge=0,
        description=(
            "on-demand and spot: node group desiredSize at creation (default: min); the stack never changes it "
            "afterwards, the autoscaler (addons.clusterAutoscaler) does. Reserved pools start at max"
        ),
        examples=[2],
    )

    @field_validator("reservationId")
    @classmethod
    def _reservation(cls, v: str | None) -> str | None:
        if v is not None and not (v.startswith("cr-") and len(v) == 20 and all(c in "0123456789abcdef" for c in v[3:])):
            raise ValueError(f"{v!r} is not a capacity reservation id (cr- followed by 17 hex digits)")
        return v


class KarpenterPool(Strict):
    """What only Karpenter needs of a pool (`provisioner: karpenter`). Everything else, labels, taints,
    capacity, EFA, zone and reservation, comes from the pool itself as for a managed node group."""

    capacityTypes: list[KarpenterCapacityType] | None = Field(
        default=None,
        description=(
            "karpenter.sh/capacity-type values the NodePool allows (default from capacity.type: "
            "on-demand, spot, or reserved for capacity-reservation and capacity-block). Only fallbacks "
            "may be added: on-demand after spot or after a capacity reservation's reserved"
        ),
        examples=[["reserved", "on-demand"]],
    )
    amiVersion: str = Field(
        default="latest",
        description=(
            "the EKS optimized AMI release of the amiSelectorTerms alias (al2023@v20251120, "
            "bottlerocket@v1.51.0); 'latest' replaces nodes (drift) whenever AWS publishes one"
        ),
        examples=["v20251120"],
    )
    consolidateAfter: str = Field(
        default="10m",
        description=(
            "how long a node stays empty (or, on inference pools, underutilized) before Karpenter removes"
            " it"
        ),
        examples=["10m"],
    )
    disruptionBudget: str | None = Field(
        default=None,
        description=(
            "inference pools: nodes (count or percentage) Karpenter may disrupt at once (default 1); "
            "other workloads never disrupt running work and take no budget"
        ),
        examples=["10%"],
    )

    @field_validator("consolidateAfter")
    @classmethod
    def _duration(cls, v: str) -> str:
        if not KARPENTER_DURATION.match(v):
            raise ValueError(f"{v!r} is not a duration such as 30s, 10m or 1h (or Never)")
        return v

    @field_validator("disruptionBudget")
    @classmethod
    def _budget(cls, v: str | None) -> str | None:
        if v is not None and not KARPENTER_BUDGET_NODES.match(v):
            raise ValueError(f"{v!r} is not a node count or percentage such as 1 or 10%")
        return v

    @field_validator("capacityTypes")
    @classmethod
    def _types(cls, v: list[str] | None) -> list[str] | None:
        if v is not None and (not v or len(set(v)) != len(v)):
            raise ValueError("capacityTypes must list each capacity type once, at least one")
        return v


class Pool(Strict):
    name: str = Field(
        description="pool name, a unique DNS-1123 label: node label, flavor name, quota key",
        examples=["h100-train"],
    )
    accelerator: str = Field(
        description=(
            "GPU model from the catalog (h100-80gb, h200-141gb, b200-180gb, a100-40gb, a100-80gb, "
            "l40s-48gb, l4-24gb, a10g-24gb); must match the instance type's GPU"
        ),
        examples=["h100-80gb"],
    )
    instanceType: str = Field(
        description="EC2 GPU instance type from the catalog; GPUs, vCPUs, memory, EFA cards and NVMe come from it",
        examples=["p5.48xlarge"],
    )
    fabric: Fabric = Field(
        default="ethernet",
        description=(
            "efa attaches one EFA interface per network card (an EFA instance type and one "
            "availabilityZone needed)"
        ),
        examples=["efa"],
    )
    workload: Workload = Field(
        description="the node label and workload taint that keep workload kinds apart",
        examples=["training"],
    )
    sharing: Sharing = Field(
        default_factory=Sharing,
        description="how GPUs are handed out: whole, MIG slices of one profile, or time-sliced replicas",
        examples=[{"mode": "mig", "profile": "1g.10gb"}],
    )
    capacity: Capacity = Field(
        description="purchase option and node count bounds; max sets the pool's quota capacity",
        examples=[{"type": "on-demand", "min": 0, "max": 4}],
    )
    availabilityZone: str | None = Field(
        default=None,
        description=(
            "the pool's single zone (in aws:region); required for EFA pools on EKS and for capacity "
            "blocks and reservations"
        ),
        examples=["us-east-1a"],
    )
    # EFA pools get a cluster placement group unless switched off (it conflicts with capacity blocks
    # and reservations not made inside it).
    placementGroup: bool | None = Field(
        default=None,
        description="a cluster placement group (default: on for EFA pools not in a reservation)",
        examples=[True],
    )
    amiType: AmiType = Field(
        default="AL2023_x86_64_NVIDIA",
        description="EKS AMI type of the pool's nodes",
        examples=["AL2023_x86_64_NVIDIA"],
    )
    rootVolumeGiB: int = Field(
        default=200,
        ge=20,
        le=16384,
        description="root (data) volume size in GiB, 20..16384",
        examples=[200],
    )
    provisioner: Provisioner = Field(
        default="managed-node-group",
        description=(
            "eks: what makes the pool's nodes: an EKS managed node group with its launch template, or a "
            "Karpenter NodePool and EC2NodeClass. Labels, taints, capacity, flavor and quota are the same"
        ),
        examples=["karpenter"],
    )
    karpenter: KarpenterPool | None = Field(
        default=None,
        description="provisioner karpenter: AMI version, disruption and capacity type fallbacks",
        examples=[{"amiVersion": "v20251120", "consolidateAfter": "10m"}],
    )

    _name = field_validator("name")(lambda v: dns_label(v))

    @field_validator("accelerator")
    @classmethod
    def _accelerator(cls, v: str) -> str:
        if v not in catalog.ACCELERATORS:
            raise ValueError(f"unknown accelerator {v!r}; valid: {', '.join(sorted(catalog.ACCELERATORS))}")
        return v

    @field_validator("instanceType")
    @classmethod
    def _instance_type(cls, v: str) -> str:
        if v not in catalog.INSTANCE_TYPES:
            raise ValueError(f"unknown instance type {v!r}; valid: {', '.join(sorted(catalog.INSTANCE_TYPES))}")
        return v
