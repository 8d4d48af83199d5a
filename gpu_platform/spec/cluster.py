"""`cluster`: the Kubernetes cluster the platform runs on (created or attached) and its system pool."""

from __future__ import annotations

from pydantic import Field, field_validator, model_validator

from .. import audit, catalog
from .fields import Provider, Strict, SystemAmiType, dns_label
from .ci import Ci
from .network import Vpc
from .security import Identity


class SystemPool(Strict):
    """CPU nodes without a taint, for everything that is not a GPU workload: CoreDNS, Kueue, the GPU
    Operator's controller and NFD master, the monitoring stack. Every GPU node group is tainted, so a
    cluster whose only nodes are GPU pools runs none of them."""

    instanceType: str = Field(
        default="m7i.xlarge",
        description="x86 general purpose EC2 type (catalog.SYSTEM_INSTANCE_TYPES)",
        examples=["m7i.xlarge"],
    )
    min: int = Field(
        default=2,
        ge=0,
        description="at least 1 on a cluster created here; 2 keeps CoreDNS and Kueue up through a node replacement",
        examples=[2],
    )
    max: int = Field(default=4, ge=1, description="node group maxSize", examples=[4])
    desired: int | None = Field(
        default=None,
        ge=0,
        description=(
            "node group desiredSize at creation (default: min); never changed by the stack afterwards, and the "
            "Cluster Autoscaler scales only GPU pools"
        ),
        examples=[2],
    )
    amiType: SystemAmiType = Field(
        default="AL2023_x86_64_STANDARD",
        description="EKS AMI type of the system nodes",
        examples=["AL2023_x86_64_STANDARD"],
    )
    diskGiB: int = Field(default=50, ge=20, le=16384, description="root volume size", examples=[50])

    @field_validator("instanceType")
    @classmethod
    def _instance_type(cls, v: str) -> str:
        if v not in catalog.SYSTEM_INSTANCE_TYPES:
            raise ValueError(f"unknown system instance type {v!r}; valid: {', '.join(sorted(catalog.SYSTEM_INSTANCE_TYPES))}")
        return v


class Cluster(Strict):
    name: str = Field(
        description="EKS cluster name (eks) or a label for the cluster (existing); a DNS-1123 label",
        examples=["ml-prod"],
    )
    provider: Provider = Field(
        description=(
            "eks: node pools are EKS managed node groups (or Karpenter NodePools) made here; existing: "
            "nodes come from elsewhere and only the Kubernetes layer is managed"
        ),
        examples=["eks"],
    )
    kubernetesVersion: str = Field(
        default="1.33",
        description="control plane version (eks) and the pinned Pod Security version of tenant namespaces",
        examples=["1.33"],
    )
    subnetIds: list[str] = Field(
        default_factory=list,
        description="eks: existing subnets for node groups (required there unless cluster.vpc makes them)",
        examples=[["subnet-0a1", "subnet-0b2"]],
    )
    vpc: Vpc | None = Field(
        default=None,
        description=(
            "eks, create: true: make the VPC here (private and public subnets per zone, internet gateway, NAT) "
            "and put the control plane and node groups in it: a fresh AWS account needs nothing else; "
            "instead of subnetIds"
        ),
        examples=[{"cidr": "10.0.0.0/16", "availabilityZones": ["us-east-1a", "us-east-1b"]}],
    )
    # eks: create the control plane here (true) or attach node groups to an existing cluster (false).
    create: bool = Field(
        default=False,
        description=(
            "eks: create the control plane here (with its IAM role and the system node group) instead of "
            "attaching to an existing cluster by name"
        ),
        examples=[True],
    )
    ci: Ci | None = Field(
        default=None,
        description=(
            "eks: the IAM roles GitHub Actions previews (pull requests) and deploys (the deploy branch or "
            "environments) with, trusting GitHub's OIDC issuer, and their EKS access entries"
        ),
        examples=[{"github": {"repository": "my-org/gpu-platform", "deployPolicyArns": [
            "arn:aws:iam::111122223333:policy/gpu-sandbox-deployer"]}}],
    )
    # eks: an existing node IAM role instead of one made here.
    nodeRoleArn: str | None = Field(
        default=None,
        description="eks: use this node IAM role instead of creating one",
        examples=["arn:aws:iam::123456789012:role/gpu-nodes"],
    )
    # Groups (Kubernetes RBAC subjects) that administer queues, flavors and cohorts.
    platformAdmins: list[str] = Field(
        default_factory=lambda: ["platform-admins"],
        description="Kubernetes groups that manage queues, flavors and cohorts",
        examples=[["platform-admins"]],
    )
    systemPool: SystemPool | None = Field(
        default=None,
        description=(
            "eks: an untainted CPU node group for the platform's add-ons. A cluster created here always "
            "gets one (these defaults when omitted); an attached cluster only when set."
        ),
        examples=[{"instanceType": "m7i.xlarge", "min": 2, "max": 4}],
    )
    identity: "Identity | None" = Field(
        default=None,
        description=(
            "eks: who people are on the cluster: an OIDC identity provider and the IAM roles of the "
            "platform admins (EKS access entries into cluster.platformAdmins); teams map their own roles "
            "with teams[].accessEntries"
        ),
        examples=[{"platformAdminRoles": ["arn:aws:iam::123456789012:role/platform-admin"]}],
    )
    controlPlaneLogs: list[audit.EksLogType] = Field(
        default_factory=lambda: list(audit.DEFAULT_EKS_LOG_TYPES),
        description=(
            "eks, created cluster: control-plane log types sent to CloudWatch Logs; audit and "
            "authenticator are always on (who did what, and which IAM identity that was)"
        ),
        examples=[["api", "audit", "authenticator"]],
    )

    @model_validator(mode="after")
    def _default_system_pool(self) -> "Cluster":
        # Defaulted in rather than required: a created cluster without it cannot run CoreDNS, and there is
        # no reason to make every config spell out the same two m7i.xlarge nodes.
        if self.create and self.provider == "eks" and self.systemPool is None:
            return self.model_copy(update={"systemPool": SystemPool()})
        return self

    _name = field_validator("name")(lambda v: dns_label(v))

    @field_validator("kubernetesVersion")
    @classmethod
    def _k8s_version(cls, v: str) -> str:
        parts = v.split(".")
        if len(parts) != 2 or not all(p.isdigit() for p in parts):
            raise ValueError(f"{v!r} is not a Kubernetes minor version such as \"1.33\"")
        return v
