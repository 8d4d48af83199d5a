"""`data`: where each team's datasets, model weights and checkpoints live, and the storage add-ons.

One S3 bucket per team (datasets/, models/, checkpoints/, scratch/), reached only through the team's own
EKS Pod Identity role; optional FSx for Lustre file systems in a pool's zone; the EBS, FSx and Mountpoint for
Amazon S3 CSI drivers as EKS add-ons. The AWS facts the fields are checked against are cited where they are
used; the cross-field checks (pools, teams, names built from them) are `check_data` in data_checks.py.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from .. import conventions as cv
from ..errors import Problem
from .fields import Strict, dns_label


DataEncryption = Literal["SSE-S3", "SSE-KMS"]
LustreDeploymentType = Literal["SCRATCH_2", "PERSISTENT_2"]

# S3 general purpose bucket naming rules (S3 user guide, "General purpose bucket naming rules"): 3-63
# characters of lowercase letters, digits, dots and hyphens, beginning and ending with a letter or digit, not
# an IP address, and none of the reserved prefixes and suffixes below. Dots are refused here although S3 takes
# them: a dotted name fails TLS certificate checks on virtual-hosted-style requests (the same page: "buckets
# with periods can't use HTTPS ... virtual-host-style"), and the bucket policy refuses every non-TLS request.
BUCKET_NAME_MIN, BUCKET_NAME_MAX = 3, 63
BUCKET_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*[a-z0-9]$")
BUCKET_RESERVED_PREFIXES = ("xn--", "sthree-", "amzn-s3-demo-")
BUCKET_RESERVED_SUFFIXES = ("-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3")
# A KMS key ARN (KMS developer guide, "Key ARN": arn:<partition>:kms:<region>:<account>:key/<key id>).
KMS_KEY_ARN = re.compile(r"^arn:aws(?:-cn|-us-gov)?:kms:[a-z0-9-]+:\d{12}:key/[A-Za-z0-9-]+$")
# FSx for Lustre sizes (botocore fsx service model, CreateFileSystemRequest.StorageCapacity): for SCRATCH_2
# and PERSISTENT_2 with SSD storage "the valid values are 1200 GiB, 2400 GiB, and increments of 2400 GiB".
LUSTRE_SMALL_SIZES_GIB = (1200, 2400)
LUSTRE_SIZE_INCREMENT_GIB = 2400
# PerUnitStorageThroughput for PERSISTENT_2 SSD, MB/s per TiB (same model, CreateFileSystemLustreConfiguration).
LUSTRE_PERSISTENT_2_THROUGHPUTS = (125, 250, 500, 1000)
# An EKS add-on version (vMAJOR.MINOR.PATCH-eksbuild.N, as `aws eks describe-addon-versions` lists them).
EKS_ADDON_VERSION_FORM = "vMAJOR.MINOR.PATCH-eksbuild.N"


def bucket_name_problem(name: str) -> str | None:
    """Why S3 (or the platform's TLS-only bucket policy) would refuse `name`, or None."""
    if not BUCKET_NAME_MIN <= len(name) <= BUCKET_NAME_MAX:
        return f"bucket name {name!r} is {len(name)} characters; S3 allows {BUCKET_NAME_MIN} to {BUCKET_NAME_MAX}"
    if "." in name:
        return (f"bucket name {name!r} has a dot: S3 allows it, but virtual-hosted-style HTTPS fails on dotted names "
                "and the bucket refuses every non-TLS request; use hyphens")
    if not BUCKET_NAME.match(name):
        return (f"bucket name {name!r} is not an S3 bucket name: lowercase letters, digits and hyphens, beginning "
                "and ending with a letter or digit")
    try:
        ipaddress.ip_address(name)
        return f"bucket name {name!r} is formatted as an IP address, which S3 refuses"
    except ValueError:
        pass
    for prefix in BUCKET_RESERVED_PREFIXES:
        if name.startswith(prefix):
            return f"bucket name {name!r} starts with {prefix!r}, which S3 reserves"
    for suffix in BUCKET_RESERVED_SUFFIXES:
        if name.endswith(suffix):
            return f"bucket name {name!r} ends with {suffix!r}, which S3 reserves"
    return None


def lustre_sizes_hint() -> str:
    return (f"{LUSTRE_SMALL_SIZES_GIB[0]}, {LUSTRE_SMALL_SIZES_GIB[1]} or a multiple of {LUSTRE_SIZE_INCREMENT_GIB} "
            f"(4800, 7200, ...)")


def lustre_size_offered(gib: int) -> bool:
    return gib in LUSTRE_SMALL_SIZES_GIB or (gib > 0 and gib % LUSTRE_SIZE_INCREMENT_GIB == 0)


def _addon_version(v: str) -> str:
    if not cv.EKS_ADDON_VERSION.match(v):
        raise ValueError(f"{v!r} is not an EKS add-on version: write {EKS_ADDON_VERSION_FORM}, e.g. v1.64.0-eksbuild.1")
    return v


def _prefix(v: str) -> str:
    """An S3 key prefix inside a team's bucket: relative, ending at a folder boundary."""
    if not v or v.startswith("/") or not v.endswith("/") or "//" in v or ".." in v.split("/"):
        raise ValueError(f"{v!r} is not a bucket prefix: write it relative and ending in '/', e.g. datasets/")
    return v


class DataLifecycle(Strict):
    """S3 lifecycle rules of every team bucket (S3 user guide, "Managing the lifecycle of objects"). Days count
    from an object's creation (Expiration) or from when it stopped being the current version (Noncurrent...)."""

    scratchDays: int = Field(
        default=7,
        ge=1,
        description="objects under scratch/ expire this many days after they were written (at least 1)",
        examples=[7],
    )
    failedCheckpointDays: int = Field(
        default=14,
        ge=1,
        description=(
            "checkpoint objects of a failed run (tagged gpu-platform.io/run-outcome=failed) expire this many days "
            "after they were written (at least 1)"
        ),
        examples=[14],
    )
    noncurrentVersionDays: int = Field(
        default=30,
        ge=1,
        description="overwritten or deleted object versions are removed this many days later (versioned buckets)",
        examples=[30],
    )
    abortIncompleteUploadDays: int = Field(
        default=2,
        ge=1,
        description="multipart uploads not completed within this many days are aborted (their parts are billed)",
        examples=[2],
    )


class AddonVersion(Strict):
    manage: bool = Field(
        default=True,
        description=(
            "manage this EKS add-on (an add-on that already exists on an attached cluster must be imported "
            "first, like vpc-cni)"
        ),
        examples=[True],
    )
    version: str = Field(description=f"exact add-on version ({EKS_ADDON_VERSION_FORM})", examples=["v1.64.0-eksbuild.1"])

    _version = field_validator("version")(lambda v: _addon_version(v))


# Pinned add-on versions: the newest release tag of each driver in its repository (the add-on ships the
# driver's image of that tag): awslabs/mountpoint-s3-csi-driver v2.7.0 (charts/aws-mountpoint-s3-csi-driver/
# Chart.yaml; v2 is the first with pod-level credentials through EKS Pod Identity, docs/CONFIGURATION.md),
# kubernetes-sigs/aws-fsx-csi-driver v1.9.0 (docs/README.md, Container Images), kubernetes-sigs/aws-ebs-csi-driver
# v1.64.0 (CHANGELOG.md). `aws eks describe-addon-versions --addon-name <name>` lists what a region offers.
MOUNTPOINT_S3_VERSION = "v2.7.0-eksbuild.1"
FSX_CSI_VERSION = "v1.9.0-eksbuild.1"
EBS_CSI_VERSION = "v1.64.0-eksbuild.1"


def _mountpoint() -> AddonVersion:
    return AddonVersion(version=MOUNTPOINT_S3_VERSION)


def _fsx() -> AddonVersion:
    return AddonVersion(version=FSX_CSI_VERSION)


def _ebs() -> AddonVersion:
    return AddonVersion(version=EBS_CSI_VERSION)


class LustreDataRepository(Strict):
    """A data repository association (FSx API CreateDataRepositoryAssociation): a directory of the file
    system linked to a prefix of the owning team's bucket, files loaded lazily from S3 on first read."""

    prefix: str = Field(
        default=cv.DATASETS_PREFIX,
        description="the prefix of the team's bucket the directory mirrors (relative, ending in /)",
        examples=["datasets/"],
    )
    fileSystemPath: str = Field(
        default="/datasets",
        description="the directory on the file system (absolute, not /); one association per file system here",
        examples=["/datasets"],
    )
    autoImport: bool = Field(
        default=True,
        description="new, changed and deleted objects under the prefix appear on the file system (S3 event import)",
        examples=[True],
    )
    autoExport: bool = Field(
        default=False,
        description="new, changed and deleted files are written back to the prefix (export)",
        examples=[False],
    )

    _prefix = field_validator("prefix")(lambda v: _prefix(v))

    @field_validator("fileSystemPath")
    @classmethod
    def _path(cls, v: str) -> str:
        # CreateDataRepositoryAssociation.FileSystemPath: a leading "/" is required; "/" alone would link the
        # whole file system, which FSx allows but which leaves no room for a scratch directory beside it.
        if not v.startswith("/") or v == "/" or "//" in v or any(c in v for c in "\r\n\0"):
            raise ValueError(f"{v!r} is not a directory path such as /datasets (absolute, not /)")
        return v


class LustreFileSystem(Strict):
    """An FSx for Lustre file system a pool's jobs share, owned by one team and mounted in one of its
    namespaces through a static PersistentVolume bound to that namespace's claim."""

    name: str = Field(description="file system name, a DNS-1123 label unique among fileSystems", examples=["pretrain"])
    pool: str = Field(
        description="the pool whose availability zone the file system is made in (the pool needs an availabilityZone)",
        examples=["h100-train"],
    )
    team: str = Field(description="the team that owns it (needs quota on the pool)", examples=["llm-pretrain"])
    namespace: str | None = Field(
        default=None,
        description="the team namespace whose claim it is bound to (default: the team's first namespace)",
        examples=["llm-pretrain"],
    )
    deploymentType: LustreDeploymentType = Field(
        default="SCRATCH_2",
        description=(
            "SCRATCH_2 (no replication, cheapest, for data that also lives in S3) or PERSISTENT_2 (replicated "
            "within the zone, needs perUnitStorageThroughput)"
        ),
        examples=["PERSISTENT_2"],
    )
    storageCapacityGiB: int = Field(
        description=f"size in GiB: {lustre_sizes_hint()}",
        examples=[4800],
    )
    perUnitStorageThroughput: int | None = Field(
        default=None,
        description="PERSISTENT_2 only: MB/s per TiB, one of 125, 250, 500, 1000",
        examples=[250],
    )
    dataRepository: LustreDataRepository | None = Field(
        default=None,
        description="link a directory to a prefix of the team's bucket (data repository association)",
        examples=[{"prefix": "datasets/", "fileSystemPath": "/datasets"}],
    )

    _name = field_validator("name")(lambda v: dns_label(v))

    @field_validator("storageCapacityGiB")
    @classmethod
    def _size(cls, v: int) -> int:
        if not lustre_size_offered(v):
            raise ValueError(f"{v} GiB is not a size FSx for Lustre offers for SCRATCH_2 or PERSISTENT_2: "
                             f"{lustre_sizes_hint()}")
        return v

    @model_validator(mode="after")
    def _throughput(self) -> "LustreFileSystem":
        t = self.perUnitStorageThroughput
        if self.deploymentType == "PERSISTENT_2" and t not in LUSTRE_PERSISTENT_2_THROUGHPUTS:
            raise ValueError(
                f"perUnitStorageThroughput {t} is not offered for PERSISTENT_2: "
                f"{', '.join(str(x) for x in LUSTRE_PERSISTENT_2_THROUGHPUTS)} (MB/s per TiB)")
        if self.deploymentType == "SCRATCH_2" and t is not None:
            raise ValueError("perUnitStorageThroughput is set only with deploymentType PERSISTENT_2 (SCRATCH_2 "
                             "throughput comes with its size)")
        return self


class Data(Strict):
    """The data path: per-team object storage, shared file systems and block storage (docs/data-path.md)."""

    enabled: bool = Field(
        default=False,
        description=(
            "eks stacks: a bucket, a Pod Identity role and data/checkpoint volumes per team; the job template "
            "mounts them"
        ),
        examples=[True],
    )
    bucketPrefix: str | None = Field(
        default=None,
        description=(
            "team buckets are named <bucketPrefix>-<team> (S3 names are global: include your organisation and "
            "environment); required when enabled"
        ),
        examples=["acme-ml-prod"],
    )
    encryption: DataEncryption = Field(
        default="SSE-S3",
        description="default bucket encryption: SSE-S3 (S3-managed keys) or SSE-KMS (kmsKeyArn, or the aws/s3 key)",
        examples=["SSE-KMS"],
    )
    kmsKeyArn: str | None = Field(
        default=None,
        description="SSE-KMS only: a customer managed key (its key policy must let the team roles use it)",
        examples=["arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"],
    )
    versioning: bool = Field(
        default=True,
        description=(
            "S3 versioning on the team buckets, so an overwritten or deleted checkpoint can be restored until "
            "lifecycle.noncurrentVersionDays"
        ),
        examples=[True],
    )
    lifecycle: DataLifecycle = Field(
        default_factory=DataLifecycle,
        description="expiry of scratch objects, failed-run checkpoints, old versions and abandoned uploads",
        examples=[{"scratchDays": 7, "failedCheckpointDays": 14}],
    )
    s3Egress: bool = Field(
        default=True,
        description=(
            "team pods may reach S3 (the region's S3 address ranges, HTTPS) and the Pod Identity agent through "
            "the default deny; off, only the Mountpoint volumes reach S3"
        ),
        examples=[True],
    )
    jobScratchGiB: int = Field(
        default=100,
        ge=1,
        description=(
            "the job template's per-pod scratch volume (emptyDir on local NVMe, else a gp3 generic ephemeral "
            "volume), deleted with the pod"
        ),
        examples=[100],
    )
    fileSystems: list[LustreFileSystem] = Field(
        default_factory=list,
        description="FSx for Lustre file systems, each in one pool's zone and owned by one team",
        examples=[[{"name": "pretrain", "pool": "h100-train", "team": "llm-pretrain", "storageCapacityGiB": 4800}]],
    )
    mountpointS3: AddonVersion = Field(
        default_factory=_mountpoint,
        description="the aws-mountpoint-s3-csi-driver EKS add-on (made when enabled)",
        examples=[{"version": MOUNTPOINT_S3_VERSION}],
    )
    fsxCsi: AddonVersion = Field(
        default_factory=_fsx,
        description="the aws-fsx-csi-driver EKS add-on (made when fileSystems is not empty)",
        examples=[{"version": FSX_CSI_VERSION}],
    )
    ebsCsi: AddonVersion = Field(
        default_factory=_ebs,
        description=(
            "eks stacks: the aws-ebs-csi-driver EKS add-on with its Pod Identity role and the default gp3 "
            "StorageClass (encrypted), whether or not the data path is enabled"
        ),
        examples=[{"version": EBS_CSI_VERSION}],
    )

    @field_validator("bucketPrefix")
    @classmethod
    def _bucket_prefix(cls, v: str | None) -> str | None:
        # The prefix starts every team bucket's name, so it must start like a bucket name; the whole names are
        # checked with the teams (data_checks.check_data).
        if v is not None:
            problem = bucket_name_problem(f"{v}-a")
            if problem:
                raise ValueError(f"{v!r} cannot start a bucket name <bucketPrefix>-<team>: {problem}")
        return v

    @field_validator("kmsKeyArn")
    @classmethod
    def _kms(cls, v: str | None) -> str | None:
        if v is not None and not KMS_KEY_ARN.match(v):
            raise ValueError(f"{v!r} is not a KMS key ARN (arn:aws:kms:<region>:<account>:key/<key id>)")
        return v

    @model_validator(mode="after")
    def _combination(self) -> "Data":
        if self.enabled and not self.bucketPrefix:
            raise ValueError("bucketPrefix is required when the data path is enabled (buckets are <bucketPrefix>-<team>)")
        if self.kmsKeyArn is not None and self.encryption != "SSE-KMS":
            raise ValueError("kmsKeyArn is set only with encryption SSE-KMS")
        if self.fileSystems and not self.enabled:
            raise ValueError("fileSystems need the data path enabled (their repositories are the team buckets)")
        return self


# Kubernetes quantities the namespace quota adds up (binary suffixes; decimal ones as Kubernetes reads them).
_QUANTITY_FACTORS = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
                     "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}


def quantity_bytes(q: str) -> int:
    for suffix in sorted(_QUANTITY_FACTORS, key=len, reverse=True):
        if q.endswith(suffix) and q[: -len(suffix)].isdigit():
            return int(q[: -len(suffix)]) * _QUANTITY_FACTORS[suffix]
    if q.isdigit():
        return int(q)
    raise ValueError(f"{q!r} is not a whole storage quantity such as 2Ti or 500Gi")


def storage_quantity(n_bytes: int) -> str:
    """Canonical binary form, the largest suffix that keeps it whole (what the API server stores)."""
    for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
        factor = _QUANTITY_FACTORS[suffix]
        if n_bytes and n_bytes % factor == 0:
            return f"{n_bytes // factor}{suffix}"
    return str(n_bytes)


def team_data_role_name(cluster: str, team: str) -> str:
    return f"{cluster}-data-{team}"
