"""`identity`, `images`, `jobs`: who reaches the cluster, which registries tenants pull from, Job cleanup."""

from __future__ import annotations

from pydantic import Field, field_validator, model_validator

from .. import conventions as cv, images
from .fields import Strict, dns_label, registries, role_arn


class OidcProvider(Strict):
    """An OIDC identity provider associated with the EKS cluster (EKS API AssociateIdentityProviderConfig):
    people sign in with the company's IdP and arrive with its groups claim as their Kubernetes groups."""

    name: str = Field(
        default="oidc",
        description="identityProviderConfigName (DNS-1123 label)",
        examples=["corp-idp"],
    )
    issuerUrl: str = Field(
        description="https:// issuer URL (the `iss` claim), no query string",
        examples=["https://idp.example.com"],
    )
    clientId: str = Field(min_length=1, description="the client id (audience) of the tokens", examples=["kubernetes"])
    usernameClaim: str | None = Field(
        default=None,
        description="JWT claim used as the user name (EKS default: sub)",
        examples=["email"],
    )
    usernamePrefix: str | None = Field(
        default=None,
        description="prefix of user names (must not contain system:)",
        examples=["oidc:"],
    )
    groupsClaim: str = Field(default="groups", description="JWT claim holding the user's groups", examples=["groups"])
    groupsPrefix: str | None = Field(
        default=None,
        description=(
            "prefix EKS puts before every group from the IdP (e.g. oidc:); teams[].groups must then carry"
            " it (must not contain system:)"
        ),
        examples=["oidc:"],
    )
    requiredClaims: dict[str, str] = Field(
        default_factory=dict,
        description="claims a token must carry, with their values",
        examples=[{"hd": "example.com"}],
    )

    _name = field_validator("name")(lambda v: dns_label(v))

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


class Identity(Strict):
    oidc: OidcProvider | None = Field(
        default=None,
        description="an OIDC identity provider for the cluster",
        examples=[{"issuerUrl": "https://idp.example.com", "clientId": "kubernetes", "groupsPrefix": "oidc:"}],
    )
    platformAdminRoles: list[str] = Field(
        default_factory=list,
        description="IAM role ARNs mapped into cluster.platformAdmins (one EKS access entry each)",
        examples=[["arn:aws:iam::123456789012:role/platform-admin"]],
    )

    @field_validator("platformAdminRoles")
    @classmethod
    def _roles(cls, v: list[str]) -> list[str]:
        return [role_arn(a) for a in v]


class AccessEntry(Strict):
    """An IAM role whose sessions are members of some of the team's groups (an EKS access entry with
    kubernetesGroups; authorization stays with the team's RoleBindings)."""

    principalArn: str = Field(
        description="IAM role ARN (arn:aws:iam::<account>:role/<name>)",
        examples=["arn:aws:iam::123456789012:role/vision-ci"],
    )
    groups: list[str] = Field(
        min_length=1,
        description="the team's groups (from teams[].groups) the role's sessions are in",
        examples=[["vision-engineers"]],
    )

    _arn = field_validator("principalArn")(lambda v: role_arn(v))


class Images(Strict):
    """Where tenant pods' images may come from (enforced at admission), and the platform's own (policy pack)."""

    allowedRegistries: list[str] = Field(
        default_factory=lambda: list(images.DEFAULT_ALLOWED_REGISTRIES),
        min_length=1,
        description=(
            "registry hosts or repository prefixes every team may pull from (Docker Hub is docker.io, its"
            " official images docker.io/library); the platform's own images must come from them too"
        ),
        examples=[["public.ecr.aws", "nvcr.io", "docker.io/library"]],
    )
    requireDigests: bool = Field(
        default=False,
        description="tenant pods must name images by digest (image@sha256:...), not by a tag that can move",
        examples=[True],
    )

    _registries = field_validator("allowedRegistries")(lambda v: registries(v))


# Finished and failed Jobs (and their pods) are deleted this long after they end: long enough to read their
# logs and status, short enough that namespaces do not fill up (kubernetes.io/docs/concepts/workloads/
# controllers/ttlafterfinished).
JOB_TTL_SECONDS_DEFAULT = 3600
JOB_MAX_TTL_SECONDS_DEFAULT = 86400
# How long a job's container has between SIGTERM and SIGKILL when the platform stops it (Kueue preempting or
# evicting the Job, a drain). Two minutes: the notice EC2 gives before it reclaims a Spot instance ("Spot
# Instance interruption notices", docs.aws.amazon.com/AWSEC2/latest/UserGuide/spot-instance-termination-notices.html),
# so a job written to checkpoint on a Spot reclaim survives a preemption the same way; Kubernetes' own default
# is 30 s (core/v1 PodSpec terminationGracePeriodSeconds). The preemptor waits for it: Kueue keeps the
# preempted workload's quota until its pods are gone.
JOB_TERMINATION_GRACE_SECONDS_DEFAULT = 120
JOB_TERMINATION_GRACE_SECONDS_MAX = 3600


class Jobs(Strict):
    """How long finished tenant Jobs stay (their pods, logs and Workloads go with them), and how long a job's
    container has to stop when the platform stops it."""

    ttlSecondsAfterFinished: int = Field(
        default=JOB_TTL_SECONDS_DEFAULT,
        ge=0,
        description="the job template's ttlSecondsAfterFinished; also how long Kueue keeps a Job it deactivated",
        examples=[3600],
    )
    maxTtlSecondsAfterFinished: int = Field(
        default=JOB_MAX_TTL_SECONDS_DEFAULT,
        ge=0,
        description=(
            "admission refuses tenant Jobs (and CronJob templates) without a ttlSecondsAfterFinished or "
            "above this"
        ),
        examples=[86400],
    )

    terminationGracePeriodSeconds: int = Field(
        default=JOB_TERMINATION_GRACE_SECONDS_DEFAULT,
        ge=1,
        le=JOB_TERMINATION_GRACE_SECONDS_MAX,
        description=(
            "the job template's terminationGracePeriodSeconds: the seconds between SIGTERM and SIGKILL when Kueue "
            "preempts or evicts a job (time to write a checkpoint); a preempting job waits this long at most"
        ),
        examples=[120],
    )

    @model_validator(mode="after")
    def _order(self) -> "Jobs":
        if self.ttlSecondsAfterFinished > self.maxTtlSecondsAfterFinished:
            raise ValueError(f"ttlSecondsAfterFinished {self.ttlSecondsAfterFinished} is above "
                             f"maxTtlSecondsAfterFinished {self.maxTtlSecondsAfterFinished}")
        return self
