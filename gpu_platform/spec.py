"""The config contract (`gpu-platform:platform` in Pulumi.<stack>.yaml) as strict pydantic models.

Validation is all-or-nothing and happens before any resource is registered: `load_platform` either
returns a fully checked `Platform` or raises `SpecError` listing every problem with its config path
(`teams[2].quotas.h100-train.gpus`), the offending value and what would be valid.
"""

from __future__ import annotations

import re
from typing import Any, Literal, Mapping

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from . import audit, catalog, conventions as cv, images
from .errors import Problem, SpecError

CONFIG_KEY = "gpu-platform:platform"

Environment = Literal["local", "dev", "staging", "prod"]
Provider = Literal["eks", "existing"]
Fabric = Literal["efa", "ethernet"]
Workload = Literal["training", "inference", "batch", "interactive"]
SharingMode = Literal["full", "mig", "time-slicing"]
CapacityType = Literal["on-demand", "spot", "capacity-reservation", "capacity-block"]
PodSecurity = Literal["baseline", "restricted"]
AmiType = Literal["AL2023_x86_64_NVIDIA", "BOTTLEROCKET_x86_64_NVIDIA"]
SystemAmiType = Literal["AL2023_x86_64_STANDARD", "BOTTLEROCKET_x86_64"]
Provisioner = Literal["managed-node-group", "karpenter"]
KarpenterCapacityType = Literal["on-demand", "spot", "reserved"]
# The VPC CNI enforces NetworkPolicy from v1.14 on (EKS user guide, cni-network-policy.html: "Version 1.14
# or later of the Amazon VPC CNI plugin for Kubernetes").
VPC_CNI_MIN_NETWORK_POLICY = (1, 14, 0)
# Karpenter: the minor release the NodePools and EC2NodeClasses are written for, and the NodePool CRD's own
# patterns for durations and budget node counts (github.com/aws/karpenter-provider-aws v1.15.2,
# charts/karpenter-crd/templates/karpenter.sh_nodepools.yaml: disruption.consolidateAfter, budgets[].nodes).
KARPENTER_MINOR = ("1", "15")
KARPENTER_DURATION = re.compile(r"^(([0-9]+(s|m|h))+|Never)$")
KARPENTER_BUDGET_NODES = re.compile(r"^((100|[0-9]{1,2})%|[0-9]+)$")
# AMI alias versions per AMI family: "al2023@v20240625" or "bottlerocket@v1.10.0", or latest
# (pkg/apis/v1/ec2nodeclass.go, AMISelectorTerm.Alias).
KARPENTER_AMI_VERSION: dict[str, re.Pattern[str]] = {
    "AL2023_x86_64_NVIDIA": re.compile(r"^v\d{8}$"),
    "BOTTLEROCKET_x86_64_NVIDIA": re.compile(r"^v\d+\.\d+\.\d+$"),
}
KARPENTER_AMI_VERSION_FORM = {"AL2023_x86_64_NVIDIA": "v20240807", "BOTTLEROCKET_x86_64_NVIDIA": "v1.46.0"}
# What each capacity type becomes in karpenter.sh/capacity-type, and the fallbacks a pool may add.
KARPENTER_CAPACITY_TYPES: dict[str, tuple[str, ...]] = {
    "on-demand": ("on-demand",),
    "spot": ("spot",),
    "capacity-reservation": ("reserved",),
    "capacity-block": ("reserved",),
}
KARPENTER_CAPACITY_FALLBACKS: dict[str, tuple[str, ...]] = {
    "on-demand": (),
    "spot": ("on-demand",),
    "capacity-reservation": ("on-demand",),
    # A capacity block is paid for up front and its instances exist only inside it: an on-demand p5 launched
    # beside it would be a second bill for the same job.
    "capacity-block": (),
}
# IAM role names are at most 64 characters (IAM API reference, CreateRole.RoleName).
IAM_ROLE_NAME_MAX = 64


def _dns_label(value: str) -> str:
    if len(value) > cv.MAX_LABEL_LENGTH or not cv.DNS1123_LABEL.match(value):
        raise ValueError(
            f"{value!r} is not a DNS-1123 label: use lowercase letters, digits and '-', "
            f"start and end with a letter or digit, at most {cv.MAX_LABEL_LENGTH} characters"
        )
    return value


def _label_value(value: str) -> str:
    if len(value) > cv.MAX_LABEL_LENGTH or not cv.LABEL_VALUE.match(value):
        raise ValueError(
            f"{value!r} is not a valid label value: at most {cv.MAX_LABEL_LENGTH} characters of "
            "letters, digits, '-', '_' and '.', starting and ending with a letter or digit"
        )
    return value


def _exact_version(value: str) -> str:
    """A chart version that names one release: `latest` or a range would deploy whatever the repository
    serves on the day of the next `pulumi up`, so two deploys of one commit could differ."""
    if not cv.EXACT_VERSION.match(value):
        raise ValueError(
            f"{value!r} is not an exact chart version: write {cv.EXACT_VERSION_FORM}; "
            "'latest', ranges and wildcards are rejected"
        )
    return value


class Strict(BaseModel):
    """Unknown fields are errors (a typo must not silently become a default); fields are camelCase."""

    model_config = ConfigDict(extra="forbid", populate_by_name=False, frozen=True, strict=False)


class AddonGpuOperator(Strict):
    install: bool = True
    version: str = "v26.7.0"

    _version = field_validator("version")(lambda v: _exact_version(v))
    # On EKS NVIDIA AMIs the driver and container toolkit ship in the image; elsewhere they may not.
    driver: bool = False
    toolkit: bool = False


class AddonKueue(Strict):
    install: bool = True
    version: str = "0.19.2"
    integrations: list[str] = Field(
        default_factory=lambda: [
            "batch/job", "jobset.x-k8s.io/jobset", "kubeflow.org/pytorchjob",
            "ray.io/rayjob", "ray.io/raycluster", "pod", "deployment",
        ]
    )

    _version = field_validator("version")(lambda v: _exact_version(v))


class AddonMonitoring(Strict):
    install: bool = True
    # Prometheus Operator's serviceMonitorSelector label value, so our monitors are picked up.
    prometheusRelease: str = "kube-prometheus-stack"


class AddonVpcCni(Strict):
    """The EKS `vpc-cni` add-on, managed so that its network policy agent is on: the VPC CNI enforces no
    NetworkPolicy until `enableNetworkPolicy` is set, and the tenants' default-deny would do nothing."""

    manage: bool = Field(
        default=True,
        description="eks stacks: manage the cluster's vpc-cni EKS add-on with enableNetworkPolicy on. An add-on "
                    "that already exists on an attached cluster must be imported into the stack first (README).",
    )
    version: str | None = Field(
        default=None,
        description="exact add-on version (v1.20.1-eksbuild.3 style, at least v1.14.0); none keeps the version "
                    "EKS installed or picks for the cluster's Kubernetes version",
    )

    @field_validator("version")
    @classmethod
    def _version(cls, v: str | None) -> str | None:
        if v is None:
            return v
        m = cv.EKS_ADDON_VERSION.match(v)
        if not m:
            raise ValueError(f"{v!r} is not an EKS add-on version: write vMAJOR.MINOR.PATCH-eksbuild.N, e.g. v1.20.1-eksbuild.3")
        if tuple(int(x) for x in m.groups()) < VPC_CNI_MIN_NETWORK_POLICY:
            raise ValueError(f"{v!r} cannot enforce NetworkPolicy: the VPC CNI does from v1.14.0 on")
        return v


class AddonEfaDevicePlugin(Strict):
    """The AWS EFA Kubernetes device plugin: the EKS NVIDIA AMIs carry the EFA driver but do not run the
    plugin, so without it no node advertises `vpc.amazonaws.com/efa` and NCCL falls back to TCP."""

    install: bool = Field(default=True, description="Helm release on clusters with an EFA pool")
    version: str = Field(default="v0.5.30", description="exact aws-efa-k8s-device-plugin chart version")

    _version = field_validator("version")(lambda v: _exact_version(v))


class AddonKarpenter(Strict):
    """Karpenter's controller, made when a pool has `provisioner: karpenter`: its Helm releases (CRDs and
    controller), its IAM through EKS Pod Identity, the nodes' IAM role and access entry, and the SQS
    interruption queue with its EventBridge rules."""

    version: str = Field(
        default="1.15.2",
        description="exact karpenter and karpenter-crd chart version (1.15.x: the NodePool and EC2NodeClass "
                    "fields rendered here are Karpenter 1.15's)",
    )
    interruptionQueue: bool = Field(
        default=True,
        description="an SQS queue and EventBridge rules so Karpenter drains nodes before spot interruptions, "
                    "scheduled maintenance and capacity reservation interruptions",
    )
    managePodIdentityAgent: bool = Field(
        default=True,
        description="manage the eks-pod-identity-agent EKS add-on the controller's credentials come through "
                    "(an existing add-on on an attached cluster must be imported first, like vpc-cni)",
    )

    _version = field_validator("version")(lambda v: _exact_version(v))

    @field_validator("version")
    @classmethod
    def _minor(cls, v: str) -> str:
        if v.lstrip("v").split(".")[:2] != list(KARPENTER_MINOR):
            raise ValueError(f"{v!r} is not a Karpenter {'.'.join(KARPENTER_MINOR)}.x release: the NodePools and "
                             "EC2NodeClasses are rendered for that API (networkInterfaces, capacityReservationSelectorTerms)")
        return v


class Addons(Strict):
    gpuOperator: AddonGpuOperator = Field(default_factory=AddonGpuOperator)
    kueue: AddonKueue = Field(default_factory=AddonKueue)
    monitoring: AddonMonitoring = Field(default_factory=AddonMonitoring)
    efaDevicePlugin: AddonEfaDevicePlugin = Field(default_factory=AddonEfaDevicePlugin)
    vpcCni: AddonVpcCni = Field(default_factory=AddonVpcCni)
    karpenter: AddonKarpenter = Field(default_factory=AddonKarpenter)


class SystemPool(Strict):
    """CPU nodes without a taint, for everything that is not a GPU workload: CoreDNS, Kueue, the GPU
    Operator's controller and NFD master, the monitoring stack. Every GPU node group is tainted, so a
    cluster whose only nodes are GPU pools runs none of them."""

    instanceType: str = Field(default="m7i.xlarge", description="x86 general purpose EC2 type (catalog.SYSTEM_INSTANCE_TYPES)")
    min: int = Field(default=2, ge=0, description="at least 1 on a cluster created here; 2 keeps CoreDNS and Kueue up through a node replacement")
    max: int = Field(default=4, ge=1, description="node group maxSize")
    desired: int | None = Field(default=None, ge=0, description="initial size (default: min); the autoscaler owns it afterwards")
    amiType: SystemAmiType = Field(default="AL2023_x86_64_STANDARD", description="EKS AMI type of the system nodes")
    diskGiB: int = Field(default=50, ge=20, le=16384, description="root volume size")

    @field_validator("instanceType")
    @classmethod
    def _instance_type(cls, v: str) -> str:
        if v not in catalog.SYSTEM_INSTANCE_TYPES:
            raise ValueError(f"unknown system instance type {v!r}; valid: {', '.join(sorted(catalog.SYSTEM_INSTANCE_TYPES))}")
        return v


class Cluster(Strict):
    name: str
    provider: Provider
    kubernetesVersion: str = "1.33"
    subnetIds: list[str] = Field(default_factory=list)
    # eks: create the control plane here (true) or attach node groups to an existing cluster (false).
    create: bool = False
    # eks: an existing node IAM role instead of one made here.
    nodeRoleArn: str | None = None
    # Groups (Kubernetes RBAC subjects) that administer queues, flavors and cohorts.
    platformAdmins: list[str] = Field(default_factory=lambda: ["platform-admins"])
    systemPool: SystemPool | None = Field(
        default=None,
        description="eks: an untainted CPU node group for the platform's add-ons. A cluster created here "
                    "always gets one (these defaults when omitted); an attached cluster only when set.",
    )
    identity: "Identity | None" = Field(
        default=None,
        description="eks: who people are on the cluster: an OIDC identity provider and the IAM roles of the "
                    "platform admins (EKS access entries into cluster.platformAdmins); teams map their own roles "
                    "with teams[].accessEntries",
    )
    controlPlaneLogs: list[audit.EksLogType] = Field(
        default_factory=lambda: list(audit.DEFAULT_EKS_LOG_TYPES),
        description="eks, created cluster: control-plane log types sent to CloudWatch Logs; audit and "
                    "authenticator are always on (who did what, and which IAM identity that was)",
    )

    @model_validator(mode="after")
    def _default_system_pool(self) -> "Cluster":
        # Defaulted in rather than required: a created cluster without it cannot run CoreDNS, and there is
        # no reason to make every config spell out the same two m7i.xlarge nodes.
        if self.create and self.provider == "eks" and self.systemPool is None:
            return self.model_copy(update={"systemPool": SystemPool()})
        return self

    _name = field_validator("name")(lambda v: _dns_label(v))

    @field_validator("kubernetesVersion")
    @classmethod
    def _k8s_version(cls, v: str) -> str:
        parts = v.split(".")
        if len(parts) != 2 or not all(p.isdigit() for p in parts):
            raise ValueError(f"{v!r} is not a Kubernetes minor version such as \"1.33\"")
        return v


class Sharing(Strict):
    mode: SharingMode = "full"
    profile: str | None = None
    replicas: int | None = None

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
    type: CapacityType = "on-demand"
    reservationId: str | None = None
    min: int = Field(default=0, ge=0)
    max: int = Field(ge=0)
    desired: int | None = Field(default=None, ge=0)

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
        description="karpenter.sh/capacity-type values the NodePool allows (default from capacity.type: "
                    "on-demand, spot, or reserved for capacity-reservation and capacity-block). Only fallbacks "
                    "may be added: on-demand after spot or after a capacity reservation's reserved",
        examples=[["reserved", "on-demand"]],
    )
    amiVersion: str = Field(
        default="latest",
        description="the EKS optimized AMI release of the amiSelectorTerms alias (al2023@v20251120, "
                    "bottlerocket@v1.51.0); 'latest' replaces nodes (drift) whenever AWS publishes one",
    )
    consolidateAfter: str = Field(
        default="10m",
        description="how long a node stays empty (or, on inference pools, underutilized) before Karpenter removes it",
    )
    disruptionBudget: str | None = Field(
        default=None,
        description="inference pools: nodes (count or percentage) Karpenter may disrupt at once (default 1); "
                    "other workloads never disrupt running work and take no budget",
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
    name: str
    accelerator: str
    instanceType: str
    fabric: Fabric = "ethernet"
    workload: Workload
    sharing: Sharing = Field(default_factory=Sharing)
    capacity: Capacity
    availabilityZone: str | None = None
    # EFA pools get a cluster placement group unless switched off (it conflicts with capacity blocks
    # and reservations not made inside it).
    placementGroup: bool | None = None
    amiType: AmiType = "AL2023_x86_64_NVIDIA"
    rootVolumeGiB: int = Field(default=200, ge=20, le=16384)
    provisioner: Provisioner = Field(
        default="managed-node-group",
        description="eks: what makes the pool's nodes: an EKS managed node group with its launch template, or a "
                    "Karpenter NodePool and EC2NodeClass. Labels, taints, capacity, flavor and quota are the same",
    )
    karpenter: KarpenterPool | None = Field(
        default=None, description="provisioner karpenter: AMI version, disruption and capacity type fallbacks",
    )

    _name = field_validator("name")(lambda v: _dns_label(v))

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


class OidcProvider(Strict):
    """An OIDC identity provider associated with the EKS cluster (EKS API AssociateIdentityProviderConfig):
    people sign in with the company's IdP and arrive with its groups claim as their Kubernetes groups."""

    name: str = Field(default="oidc", description="identityProviderConfigName (DNS-1123 label)")
    issuerUrl: str = Field(description="https:// issuer URL (the `iss` claim), no query string")
    clientId: str = Field(min_length=1, description="the client id (audience) of the tokens")
    usernameClaim: str | None = Field(default=None, description="JWT claim used as the user name (EKS default: sub)")
    usernamePrefix: str | None = Field(default=None, description="prefix of user names (must not contain system:)")
    groupsClaim: str = Field(default="groups", description="JWT claim holding the user's groups")
    groupsPrefix: str | None = Field(
        default=None,
        description="prefix EKS puts before every group from the IdP (e.g. oidc:); teams[].groups must then "
                    "carry it (must not contain system:)",
    )
    requiredClaims: dict[str, str] = Field(default_factory=dict, description="claims a token must carry, with their values")

    _name = field_validator("name")(lambda v: _dns_label(v))

    @field_validator("issuerUrl")
    @classmethod
    def _issuer(cls, v: str) -> str:
        # EKS API reference, OidcIdentityProviderConfigRequest.issuerUrl: "must begin with https://";
        # path components are allowed, query parameters are not.
        if not v.startswith("https://") or "?" in v or len(v) <= len("https://"):
            raise ValueError(f"{v!r} is not an OIDC issuer URL: https://host[/path], without a query string")
        return v

    @field_validator("usernamePrefix", "groupsPrefix")
    @classmethod
    def _prefix(cls, v: str | None) -> str | None:
        # EKS API reference, OidcIdentityProviderConfig.groupsPrefix: "The prefix can't contain system:".
        if v is not None and cv.SYSTEM_GROUP_PREFIX in v:
            raise ValueError(f"{v!r} contains {cv.SYSTEM_GROUP_PREFIX!r}: a prefix exists to keep IdP names "
                             "out of Kubernetes' reserved system: names")
        return v


def _role_arn(v: str) -> str:
    if not cv.IAM_ROLE_ARN.match(v):
        raise ValueError(
            f"{v!r} is not an IAM role ARN: write arn:aws:iam::<12-digit account>:role/<path/name> "
            "(arn:aws-cn / arn:aws-us-gov in those partitions); IAM users and STS session ARNs are not accepted"
        )
    return v


class Identity(Strict):
    oidc: OidcProvider | None = Field(default=None, description="an OIDC identity provider for the cluster")
    platformAdminRoles: list[str] = Field(
        default_factory=list,
        description="IAM role ARNs mapped into cluster.platformAdmins (one EKS access entry each)",
    )

    @field_validator("platformAdminRoles")
    @classmethod
    def _roles(cls, v: list[str]) -> list[str]:
        return [_role_arn(a) for a in v]


class AccessEntry(Strict):
    """An IAM role whose sessions are members of some of the team's groups (an EKS access entry with
    kubernetesGroups; authorization stays with the team's RoleBindings)."""

    principalArn: str = Field(description="IAM role ARN (arn:aws:iam::<account>:role/<name>)")
    groups: list[str] = Field(min_length=1, description="the team's groups (from teams[].groups) the role's sessions are in")

    _arn = field_validator("principalArn")(lambda v: _role_arn(v))


class Images(Strict):
    """Where tenant pods' images may come from (enforced at admission), and the platform's own (policy pack)."""

    allowedRegistries: list[str] = Field(
        default_factory=lambda: list(images.DEFAULT_ALLOWED_REGISTRIES),
        min_length=1,
        description="registry hosts or repository prefixes every team may pull from (Docker Hub is docker.io, "
                    "its official images docker.io/library); the platform's own images must come from them too",
    )
    requireDigests: bool = Field(
        default=False,
        description="tenant pods must name images by digest (image@sha256:...), not by a tag that can move",
    )

    @field_validator("allowedRegistries")
    @classmethod
    def _registries(cls, v: list[str]) -> list[str]:
        for entry in v:
            problem = images.registry_problem(entry)
            if problem:
                raise ValueError(problem)
        return v


# Finished and failed Jobs (and their pods) are deleted this long after they end: long enough to read their
# logs and status, short enough that namespaces do not fill up (kubernetes.io/docs/concepts/workloads/
# controllers/ttlafterfinished).
JOB_TTL_SECONDS_DEFAULT = 3600
JOB_MAX_TTL_SECONDS_DEFAULT = 86400


class Jobs(Strict):
    """How long finished tenant Jobs stay (their pods, logs and Workloads go with them)."""

    ttlSecondsAfterFinished: int = Field(
        default=JOB_TTL_SECONDS_DEFAULT, ge=0,
        description="the job template's ttlSecondsAfterFinished; also how long Kueue keeps a Job it deactivated",
    )
    maxTtlSecondsAfterFinished: int = Field(
        default=JOB_MAX_TTL_SECONDS_DEFAULT, ge=0,
        description="admission refuses tenant Jobs (and CronJob templates) without a ttlSecondsAfterFinished or above this",
    )

    @model_validator(mode="after")
    def _order(self) -> "Jobs":
        if self.ttlSecondsAfterFinished > self.maxTtlSecondsAfterFinished:
            raise ValueError(f"ttlSecondsAfterFinished {self.ttlSecondsAfterFinished} is above "
                             f"maxTtlSecondsAfterFinished {self.maxTtlSecondsAfterFinished}")
        return self


Cluster.model_rebuild()


class Cohort(Strict):
    name: str
    parent: str | None = None
    # Kueue fair-sharing weight of this cohort among its siblings.
    fairSharingWeight: float | None = Field(default=None, ge=0)

    _name = field_validator("name")(lambda v: _dns_label(v))


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

    @field_validator("allowedRegistries")
    @classmethod
    def _registries(cls, v: list[str]) -> list[str]:
        for entry in v:
            problem = images.registry_problem(entry)
            if problem:
                raise ValueError(problem)
        return v

    _name = field_validator("name")(lambda v: _dns_label(v))
    _cc = field_validator("costCenter")(lambda v: _label_value(v))

    @field_validator("namespaces")
    @classmethod
    def _namespaces(cls, v: list[str] | None) -> list[str] | None:
        if v is not None:
            if not v:
                raise ValueError("namespaces must not be empty; omit it to use the team name")
            for ns in v:
                _dns_label(ns)
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

    _name = field_validator("name")(lambda v: _dns_label(v))


def _default_priorities() -> list[Priority]:
    return [
        Priority(name="system-critical", value=1000000, description="Platform components.", grantedByDefault=False),
        Priority(name="production-inference", value=10000, description="Serving production traffic.",
                 grantedByDefault=False),
        Priority(name="training", value=1000, description="Scheduled training runs."),
        Priority(name="research", value=500, description="Experiments that may be preempted."),
        Priority(name="development", value=100, description="Interactive and development work."),
    ]


class MultiKueueWorker(Strict):
    name: str
    # Name of a Pulumi secret config key holding the worker's kubeconfig (never plaintext in the spec).
    kubeconfigSecret: str

    _name = field_validator("name")(lambda v: _dns_label(v))


class MultiKueue(Strict):
    workers: list[MultiKueueWorker] = Field(min_length=1)


class Platform(Strict):
    environment: Environment
    cluster: Cluster
    addons: Addons = Field(default_factory=Addons)
    pools: list[Pool] = Field(min_length=1)
    cohorts: list[Cohort] = Field(default_factory=list)
    teams: list[Team] = Field(default_factory=list)
    priorities: list[Priority] = Field(default_factory=_default_priorities)
    defaultPreemption: Preemption = Field(default_factory=Preemption)
    # Overrides of catalog.ON_DEMAND_USD_PER_HOUR, by instance type.
    pricing: dict[str, float] = Field(default_factory=dict)
    multiKueue: MultiKueue | None = None
    images: Images = Field(default_factory=Images, description="image registries tenant pods may use")
    jobs: Jobs = Field(default_factory=Jobs, description="cleanup of finished tenant Jobs")


# ---------------------------------------------------------------------------------------------------
# Errors


def _path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _fields_of(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str] | None:
    """The valid field names of the model found at `loc` (for 'unknown field' errors)."""
    current: Any = model
    for part in loc:
        if isinstance(part, int):
            continue
        if not (isinstance(current, type) and issubclass(current, BaseModel)):
            return None
        info = current.model_fields.get(part)
        if info is None:
            return None
        current = _model_in(info.annotation)
        if current is None:
            return None
    if isinstance(current, type) and issubclass(current, BaseModel):
        return list(current.model_fields)
    return None


def _model_in(annotation: Any) -> Any:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()) or ():
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def _problems_from(err: ValidationError) -> list[Problem]:
    problems = []
    for e in err.errors(include_url=False):
        loc = tuple(e["loc"])
        if e["type"] == "extra_forbidden":
            valid = _fields_of(Platform, loc[:-1])
            hint = f"; valid fields here: {', '.join(valid)}" if valid else ""
            problems.append(Problem(_path(loc), f"unknown field {loc[-1]!r}{hint}"))
            continue
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] not in ("value_error", "missing") and "input" in e and not isinstance(e["input"], (dict, list)):
            msg = f"{msg} (got {e['input']!r})"
        if e["type"] == "missing":
            msg = "required field is missing"
        problems.append(Problem(_path(loc), msg))
    return problems


# ---------------------------------------------------------------------------------------------------
# Cross-field checks: everything the models cannot see on their own.


def pool_units_per_gpu(pool: Pool) -> int:
    if pool.sharing.mode == "mig":
        return catalog.ACCELERATORS[pool.accelerator].mig_profiles[pool.sharing.profile].slices_per_gpu
    if pool.sharing.mode == "time-slicing":
        return int(pool.sharing.replicas)
    return 1


def pool_capacity_units(pool: Pool) -> int:
    return pool.capacity.max * catalog.INSTANCE_TYPES[pool.instanceType].gpus * pool_units_per_gpu(pool)


def _check_pools(p: Platform, region: str | None) -> list[Problem]:
    out: list[Problem] = []
    seen: dict[str, int] = {}
    for i, pool in enumerate(p.pools):
        at = f"pools[{i}]"
        if pool.name in seen:
            out.append(Problem(f"{at}.name", f"duplicate pool name {pool.name!r} (also pools[{seen[pool.name]}])"))
        seen.setdefault(pool.name, i)
        if pool.name == cv.CPU_FLAVOR:
            out.append(Problem(f"{at}.name", f"{pool.name!r} is reserved for the flavor of CPU-only work; choose another pool name"))
        acc = catalog.ACCELERATORS[pool.accelerator]
        it = catalog.INSTANCE_TYPES[pool.instanceType]
        if it.accelerator != pool.accelerator:
            out.append(Problem(
                f"{at}.instanceType",
                f"{pool.instanceType!r} has {it.accelerator} GPUs, not {pool.accelerator}; instance types with "
                f"{pool.accelerator}: {', '.join(catalog.instance_types_for(pool.accelerator))}",
            ))
        if pool.fabric == "efa" and not it.efa:
            efa_types = [n for n in catalog.instance_types_for(pool.accelerator) if catalog.INSTANCE_TYPES[n].efa]
            out.append(Problem(
                f"{at}.fabric",
                f"{pool.instanceType!r} does not support EFA; use fabric 'ethernet' or one of: "
                f"{', '.join(efa_types) or 'none for this accelerator'}",
            ))
        if pool.sharing.mode == "mig":
            if not acc.supports_mig:
                with_mig = sorted(n for n, a in catalog.ACCELERATORS.items() if a.supports_mig)
                out.append(Problem(
                    f"{at}.sharing.mode",
                    f"{pool.accelerator} does not support MIG; accelerators with MIG: {', '.join(with_mig)}",
                ))
            elif pool.sharing.profile not in acc.mig_profiles:
                out.append(Problem(
                    f"{at}.sharing.profile",
                    f"{pool.accelerator} has no MIG profile {pool.sharing.profile!r}; valid: "
                    f"{', '.join(acc.mig_profiles)}",
                ))
        cap = pool.capacity
        if cap.min > cap.max:
            out.append(Problem(f"{at}.capacity.min", f"min {cap.min} is greater than max {cap.max}"))
        if cap.desired is not None and not cap.min <= cap.desired <= cap.max:
            out.append(Problem(f"{at}.capacity.desired", f"desired {cap.desired} is outside min..max ({cap.min}..{cap.max})"))
        if cap.type in ("capacity-block", "capacity-reservation") and not cap.reservationId:
            out.append(Problem(f"{at}.capacity.reservationId", f"capacity type {cap.type!r} needs a reservationId (cr-...)"))
        if cap.type in ("on-demand", "spot") and cap.reservationId:
            out.append(Problem(
                f"{at}.capacity.reservationId",
                f"reservationId is only valid with capacity type 'capacity-reservation' or 'capacity-block', not {cap.type!r}",
            ))
        if cap.type == "capacity-block" and not pool.availabilityZone:
            out.append(Problem(f"{at}.availabilityZone", "a capacity block lives in a single availability zone: set availabilityZone"))
        if cap.type == "capacity-reservation" and not pool.availabilityZone and p.cluster.provider == "eks":
            out.append(Problem(
                f"{at}.availabilityZone",
                "a capacity reservation lives in a single availability zone: set availabilityZone to the reservation's zone",
            ))
        if pool.fabric == "efa" and not pool.availabilityZone and p.cluster.provider == "eks":
            out.append(Problem(f"{at}.availabilityZone", "EFA pools need a single availabilityZone (EFA traffic does not cross zones)"))
        if pool.placementGroup and pool.fabric != "efa":
            out.append(Problem(f"{at}.placementGroup", "a cluster placement group is only made for fabric 'efa'"))
        if region and pool.availabilityZone and not pool.availabilityZone.startswith(region):
            out.append(Problem(f"{at}.availabilityZone", f"{pool.availabilityZone!r} is not in region {region!r}"))
        for key, value in pool_labels(pool).items():
            if len(value) > cv.MAX_LABEL_LENGTH:
                out.append(Problem(f"{at}.name", f"label {key}={value!r} is over {cv.MAX_LABEL_LENGTH} characters"))
        if p.cluster.provider == "eks" and pool.provisioner == cv.PROVISIONER_MANAGED_NODE_GROUP:
            ng = cv.node_group_name(p.cluster.name, pool.name)
            if len(ng) > 63:
                out.append(Problem(f"{at}.name", f"node group name {ng!r} is over 63 characters (EKS limit)"))
    return out


def _check_mig_layouts(p: Platform) -> list[Problem]:
    """One mig-parted layout per profile name (`all-1g.10gb`): a profile name that means different slice
    counts on two accelerators (1g.10gb: 7 on A100 80GB, 4 on A100 40GB) cannot share that layout."""
    out: list[Problem] = []
    first: dict[str, tuple[int, str, int]] = {}
    for i, pool in enumerate(p.pools):
        if pool.sharing.mode != "mig":
            continue
        acc = catalog.ACCELERATORS.get(pool.accelerator)
        profile = acc.mig_profiles.get(pool.sharing.profile) if acc else None
        if profile is None:
            continue  # reported by _check_pools
        seen = first.setdefault(profile.name, (i, pool.accelerator, profile.slices_per_gpu))
        if seen[2] != profile.slices_per_gpu:
            out.append(Problem(
                f"pools[{i}].sharing.profile",
                f"MIG profile {profile.name!r} is {profile.slices_per_gpu} slices per GPU on {pool.accelerator} but "
                f"{seen[2]} on {seen[1]} (pools[{seen[0]}]); one cluster's MIG layouts are named by profile, so "
                "use a profile with the same geometry on both or put the pools in different clusters",
            ))
    return out


def pool_labels(pool: Pool) -> dict[str, str]:
    """The six pool labels every node, flavor and cost tag of the pool carries (validated for length here)."""
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


def _check_cohorts(p: Platform) -> list[Problem]:
    out: list[Problem] = []
    names: dict[str, int] = {}
    for i, c in enumerate(p.cohorts):
        if c.name in names:
            out.append(Problem(f"cohorts[{i}].name", f"duplicate cohort name {c.name!r} (also cohorts[{names[c.name]}])"))
        names.setdefault(c.name, i)
    for i, c in enumerate(p.cohorts):
        if c.parent is not None and c.parent not in names:
            out.append(Problem(
                f"cohorts[{i}].parent",
                f"unknown cohort {c.parent!r}; defined cohorts: {', '.join(names) or 'none'}",
            ))
    parent = {c.name: c.parent for c in p.cohorts}
    reported: set[str] = set()
    for i, c in enumerate(p.cohorts):
        seen = [c.name]
        cur = parent.get(c.name)
        while cur is not None and cur in parent:
            if cur in seen:
                cycle = seen[seen.index(cur):] + [cur]
                key = min(cycle)
                if key not in reported:
                    reported.add(key)
                    out.append(Problem(f"cohorts[{i}].parent", f"cohort parents form a cycle: {' -> '.join(cycle)}"))
                break
            seen.append(cur)
            cur = parent.get(cur)
    return out


def _check_teams(p: Platform) -> list[Problem]:
    out: list[Problem] = []
    pools = {pool.name: pool for pool in p.pools}
    cohorts = {c.name for c in p.cohorts}
    team_names: dict[str, int] = {}
    ns_owner: dict[str, str] = {}
    nominal_sum: dict[str, int] = {name: 0 for name in pools}
    contributors: dict[str, list[str]] = {name: [] for name in pools}
    for i, t in enumerate(p.teams):
        at = f"teams[{i}]"
        if t.name in team_names:
            out.append(Problem(f"{at}.name", f"duplicate team name {t.name!r} (also teams[{team_names[t.name]}])"))
        team_names.setdefault(t.name, i)
        for j, ns in enumerate(t.namespace_names):
            ns_at = f"{at}.namespaces[{j}]" if t.namespaces else f"{at}.name"
            if ns in cv.RESERVED_NAMESPACES:
                out.append(Problem(ns_at, f"namespace {ns!r} is reserved; reserved: {', '.join(cv.RESERVED_NAMESPACES)}"))
            elif ns in ns_owner and ns_owner[ns] != f"teams[{i}]":
                out.append(Problem(ns_at, f"duplicate namespace {ns!r} (also used by {ns_owner[ns]})"))
            elif ns in ns_owner:
                out.append(Problem(ns_at, f"namespace {ns!r} is listed twice"))
            ns_owner.setdefault(ns, f"teams[{i}]")
        if t.cohort is not None and t.cohort not in cohorts:
            out.append(Problem(f"{at}.cohort", f"unknown cohort {t.cohort!r}; defined cohorts: {', '.join(sorted(cohorts)) or 'none'}"))
        for pool_name, q in t.quotas.items():
            q_at = f"{at}.quotas.{pool_name}"
            if pool_name not in pools:
                out.append(Problem(q_at, f"unknown pool {pool_name!r}; pools: {', '.join(pools)}"))
                continue
            nominal_sum[pool_name] += q.gpus
            contributors[pool_name].append(f"{t.name}={q.gpus}")
            if t.cohort is None:
                for limit in ("borrowingLimit", "lendingLimit"):
                    if getattr(q, limit) is not None:
                        out.append(Problem(f"{q_at}.{limit}", f"{limit} needs the team to be in a cohort (set teams[{i}].cohort)"))
            if q.lendingLimit is not None and q.lendingLimit > q.gpus:
                out.append(Problem(f"{q_at}.lendingLimit", f"lendingLimit {q.lendingLimit} is above the nominal quota gpus={q.gpus}"))
    for i, pool in enumerate(p.pools):
        if pool.name not in nominal_sum:
            continue
        try:
            cap = pool_capacity_units(pool)
        except KeyError:
            continue  # the pool itself is invalid and already reported
        if nominal_sum[pool.name] > cap:
            it = catalog.INSTANCE_TYPES[pool.instanceType]
            per = pool_units_per_gpu(pool)
            how = f"{pool.capacity.max} nodes x {it.gpus} GPUs" + (f" x {per}" if per > 1 else "")
            first = next(j for j, t in enumerate(p.teams) if pool.name in t.quotas)
            out.append(Problem(
                f"teams[{first}].quotas.{pool.name}.gpus",
                f"nominal quotas on pool {pool.name!r} add up to {nominal_sum[pool.name]} "
                f"({', '.join(contributors[pool.name])}) but the pool has {cap} units ({how})",
            ))
    return out


def _check_system_pool(p: Platform) -> list[Problem]:
    c, sp = p.cluster, p.cluster.systemPool
    at = "cluster.systemPool"
    if sp is None:
        return []
    out: list[Problem] = []
    if c.provider != "eks":
        return [Problem(at, "a system pool is an EKS node group: only for provider 'eks' (existing clusters bring their own nodes)")]
    if c.create and sp.min < 1:
        out.append(Problem(
            f"{at}.min",
            f"a cluster created here needs at least one system node (got min {sp.min}): every GPU node is tainted, "
            "so CoreDNS, Kueue, the GPU Operator and the monitoring stack would stay Pending",
        ))
    if sp.min > sp.max:
        out.append(Problem(f"{at}.min", f"min {sp.min} is greater than max {sp.max}"))
    if sp.desired is not None and not sp.min <= sp.desired <= sp.max:
        out.append(Problem(f"{at}.desired", f"desired {sp.desired} is outside min..max ({sp.min}..{sp.max})"))
    for i, pool in enumerate(p.pools):
        if pool.name == cv.SYSTEM_POOL_NAME:
            out.append(Problem(
                f"pools[{i}].name",
                f"pool name {cv.SYSTEM_POOL_NAME!r} is taken by the system pool's node group "
                f"({cv.system_node_group_name(c.name)!r}); rename the GPU pool",
            ))
    if len(cv.system_node_group_name(c.name)) > 63:
        out.append(Problem("cluster.name", f"node group name {cv.system_node_group_name(c.name)!r} is over 63 characters (EKS limit)"))
    return out


def _check_platform(p: Platform, region: str | None) -> list[Problem]:
    out: list[Problem] = _check_system_pool(p)
    if p.cluster.provider == "eks" and not p.cluster.subnetIds:
        out.append(Problem("cluster.subnetIds", "provider 'eks' needs the subnets for node groups (subnetIds)"))
    for itype in p.pricing:
        if itype not in catalog.INSTANCE_TYPES:
            out.append(Problem(f"pricing.{itype}", f"unknown instance type; valid: {', '.join(sorted(catalog.INSTANCE_TYPES))}"))
    prio: dict[str, int] = {}
    for i, pr in enumerate(p.priorities):
        if pr.name in prio:
            out.append(Problem(f"priorities[{i}].name", f"duplicate priority {pr.name!r}"))
        prio.setdefault(pr.name, i)
        if not -2147483648 <= pr.value <= 1000000000:
            out.append(Problem(f"priorities[{i}].value", f"{pr.value} is outside the user range of PriorityClass values (up to 1000000000)"))
    for i, t in enumerate(p.teams):
        for j, name in enumerate(t.priorities or ()):
            if name not in prio:
                out.append(Problem(
                    f"teams[{i}].priorities[{j}]",
                    f"unknown priority {name!r}; priorities: {', '.join(prio) or 'none'}",
                ))
    if p.multiKueue:
        seen: set[str] = set()
        for i, w in enumerate(p.multiKueue.workers):
            if w.name in seen:
                out.append(Problem(f"multiKueue.workers[{i}].name", f"duplicate worker {w.name!r}"))
            seen.add(w.name)
    return out


def _check_security(p: Platform) -> list[Problem]:
    """Identity (issue 18): a team's groups and the IAM roles mapped into them never reach the platform's
    admin groups or Kubernetes' system: groups, and every principal has one access entry (EKS allows one per
    principal: API reference, CreateAccessEntry.principalArn). Control-plane logging keeps its audit trail."""
    out: list[Problem] = []
    c = p.cluster
    admins = set(c.platformAdmins)
    eks = c.provider == "eks"
    if c.identity is not None and not eks:
        out.append(Problem("cluster.identity", "EKS access entries and OIDC identity providers are EKS APIs: only "
                                               "for provider 'eks' (an existing cluster's owner maps its users)"))
    missing = [t for t in audit.REQUIRED_EKS_LOG_TYPES if t not in c.controlPlaneLogs]
    if missing:
        out.append(Problem("cluster.controlPlaneLogs", f"must include {', '.join(audit.REQUIRED_EKS_LOG_TYPES)} "
                                                       f"(missing: {', '.join(missing)}): the audit trail of who "
                                                       "submitted, read secrets, exec'd and administered"))
    seen: dict[str, str] = {}
    for j, arn in enumerate(c.identity.platformAdminRoles if c.identity else ()):
        at = f"cluster.identity.platformAdminRoles[{j}]"
        if arn in seen:
            out.append(Problem(at, f"{arn} already has an access entry ({seen[arn]}); EKS allows one per principal"))
        seen.setdefault(arn, at)
    for i, t in enumerate(p.teams):
        own: set[str] = set()
        for tier in ("admin", "member", "viewer"):
            for k, g in enumerate(getattr(t.groups, tier)):
                own.add(g)
                if g.startswith(cv.SYSTEM_GROUP_PREFIX):
                    out.append(Problem(
                        f"teams[{i}].groups.{tier}[{k}]",
                        f"{g!r} is a Kubernetes system group (assigned by the API server, e.g. system:authenticated is "
                        "every signed-in user): a team's groups are its own people",
                    ))
        if t.accessEntries and not eks:
            out.append(Problem(f"teams[{i}].accessEntries", "access entries are EKS's: only for provider 'eks'"))
        for j, e in enumerate(t.accessEntries):
            at = f"teams[{i}].accessEntries[{j}]"
            if e.principalArn in seen:
                out.append(Problem(f"{at}.principalArn", f"{e.principalArn} already has an access entry "
                                                         f"({seen[e.principalArn]}); EKS allows one per principal"))
            seen.setdefault(e.principalArn, at)
            for k, g in enumerate(e.groups):
                g_at = f"{at}.groups[{k}]"
                if g.startswith(cv.SYSTEM_GROUP_PREFIX):
                    out.append(Problem(g_at, f"a team's role may not be mapped into the Kubernetes system group {g!r}"))
                elif g in admins:
                    out.append(Problem(g_at, f"{g!r} is a platform admin group (cluster.platformAdmins): a team's role "
                                             "mapped into it would administer every queue; use cluster.identity."
                                             "platformAdminRoles for platform admins"))
                elif g not in own:
                    out.append(Problem(g_at, f"{g!r} is not one of team {t.name!r}'s groups; its groups: "
                                             f"{', '.join(sorted(own)) or 'none'}"))
    return out


def _check_karpenter(p: Platform) -> list[Problem]:
    """What only Karpenter pools need; every rule of _check_pools applies to them as well."""
    out: list[Problem] = []
    c = p.cluster
    karpenter_pools = [i for i, pool in enumerate(p.pools) if pool.provisioner == cv.PROVISIONER_KARPENTER]
    for i, pool in enumerate(p.pools):
        at = f"pools[{i}]"
        if pool.provisioner != cv.PROVISIONER_KARPENTER:
            if pool.karpenter is not None:
                out.append(Problem(f"{at}.karpenter", f"only for provisioner {cv.PROVISIONER_KARPENTER!r} (this pool is {pool.provisioner!r})"))
            continue
        if c.provider != "eks":
            out.append(Problem(f"{at}.provisioner", "Karpenter launches EC2 instances: only for cluster.provider 'eks' "
                               f"(existing clusters bring their own nodes); use {cv.PROVISIONER_MANAGED_NODE_GROUP!r}"))
            continue
        cap = pool.capacity
        if cap.min > 0 or (cap.desired or 0) > 0:
            field = "min" if cap.min > 0 else "desired"
            out.append(Problem(
                f"{at}.capacity.{field}",
                f"Karpenter keeps no idle nodes: it launches them for pending pods only, so {field} must be 0 "
                f"(got {getattr(cap, field)}); use provisioner {cv.PROVISIONER_MANAGED_NODE_GROUP!r} for a warm minimum",
            ))
        it = catalog.INSTANCE_TYPES[pool.instanceType]
        if pool.fabric == "efa" and it.efa and not it.efa_only_interfaces:
            out.append(Problem(
                f"{at}.fabric",
                f"{pool.instanceType!r} has no EFA-only interfaces, and an EC2NodeClass's networkInterfaces take only "
                f"'interface' and 'efa-only'; use provisioner {cv.PROVISIONER_MANAGED_NODE_GROUP!r} for it",
            ))
        k = pool.karpenter or KarpenterPool()
        if k.capacityTypes is not None:
            required = KARPENTER_CAPACITY_TYPES[cap.type]
            allowed = required + KARPENTER_CAPACITY_FALLBACKS[cap.type]
            missing = [t for t in required if t not in k.capacityTypes]
            extra = [t for t in k.capacityTypes if t not in allowed]
            if missing or extra:
                why = ("a capacity block is only reachable as 'reserved', and nothing else may launch beside it"
                       if cap.type == "capacity-block" else
                       "'reserved' needs a reservation (capacity.type capacity-reservation or capacity-block with a "
                       "reservationId)" if "reserved" in extra else
                       f"capacity type {cap.type!r} is {list(required)}, optionally falling back to "
                       f"{list(KARPENTER_CAPACITY_FALLBACKS[cap.type]) or 'nothing'}")
                out.append(Problem(f"{at}.karpenter.capacityTypes",
                                   f"{k.capacityTypes} does not fit capacity.type {cap.type!r}: {why}; valid: "
                                   f"{list(required)}" + (f" or {list(allowed)}" if allowed != required else "")))
        if k.amiVersion != "latest" and not KARPENTER_AMI_VERSION[pool.amiType].match(k.amiVersion):
            out.append(Problem(
                f"{at}.karpenter.amiVersion",
                f"{k.amiVersion!r} is not a {pool.amiType} AMI release: write 'latest' or a version such as "
                f"{KARPENTER_AMI_VERSION_FORM[pool.amiType]}",
            ))
        if k.disruptionBudget is not None and pool.workload != "inference":
            out.append(Problem(
                f"{at}.karpenter.disruptionBudget",
                f"{pool.workload} pools never disrupt running work (no consolidation of busy nodes, no drift "
                "replacement); a disruption budget is for inference pools",
            ))
    if karpenter_pools and c.provider == "eks":
        if c.systemPool is None:
            out.append(Problem(
                f"pools[{karpenter_pools[0]}].provisioner",
                "Karpenter's controller runs on the system pool, never on nodes it provisions: set cluster.systemPool",
            ))
        for name in (cv.karpenter_node_role_name(c.name), cv.karpenter_controller_role_name(c.name)):
            if len(name) > IAM_ROLE_NAME_MAX:
                out.append(Problem("cluster.name", f"Karpenter's IAM role name {name!r} is over {IAM_ROLE_NAME_MAX} characters"))
    return out


def validate(platform: Platform, region: str | None = None) -> list[Problem]:
    return (_check_pools(platform, region) + _check_mig_layouts(platform) + _check_cohorts(platform)
            + _check_teams(platform) + _check_platform(platform, region) + _check_security(platform)
            + _check_karpenter(platform))


def load_platform(raw: Any, region: str | None = None) -> Platform:
    """Parse and cross-check a `gpu-platform:platform` value; raise SpecError with every problem."""
    if not isinstance(raw, Mapping):
        raise SpecError([Problem(CONFIG_KEY, f"must be a mapping, got {type(raw).__name__}")])
    try:
        platform = Platform.model_validate(raw)
    except ValidationError as err:
        raise SpecError(_problems_from(err)) from None
    problems = validate(platform, region)
    if problems:
        raise SpecError(problems)
    return platform


def load_stack_config(doc: Any, source: str = "stack config") -> tuple[Platform, str | None]:
    """From a parsed Pulumi.<stack>.yaml document: the platform and the aws:region (if any)."""
    if not isinstance(doc, Mapping) or not isinstance(doc.get("config"), Mapping):
        raise SpecError([Problem("config", f"{source} has no 'config:' mapping")])
    config = doc["config"]
    if CONFIG_KEY not in config:
        raise SpecError([Problem(f"config.{CONFIG_KEY}", f"{source} has no {CONFIG_KEY!r} key")])
    region = config.get("aws:region")
    return load_platform(config[CONFIG_KEY], region if isinstance(region, str) else None), region


__all__ = [
    "CONFIG_KEY", "Platform", "Pool", "Team", "Cohort", "Quota", "SpecError", "Problem",
    "load_platform", "load_stack_config", "pool_capacity_units", "pool_units_per_gpu",
]
