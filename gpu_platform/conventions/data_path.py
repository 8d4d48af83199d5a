"""The data path: team bucket prefixes and tags, the claims and mounts of a team namespace, the CSI drivers
and EKS add-ons, the default storage class, and the AWS names of its roles and groups."""

from __future__ import annotations

from .labels import PREFIX


# ==== The data path: buckets, claims, mounts, CSI drivers, storage class ====================================
# Where each team's datasets, weights and checkpoints live (docs/data-path.md).
# The prefixes of a team bucket; scratch/ expires (data.lifecycle.scratchDays) and so do checkpoint objects
# tagged RUN_OUTCOME_TAG=RUN_OUTCOME_FAILED (data.lifecycle.failedCheckpointDays).
DATASETS_PREFIX = "datasets/"
MODELS_PREFIX = "models/"
CHECKPOINTS_PREFIX = "checkpoints/"
SCRATCH_PREFIX = "scratch/"
RUN_OUTCOME_TAG = f"{PREFIX}/run-outcome"
RUN_OUTCOME_FAILED = "failed"
# Per team namespace: the service account whose Pod Identity role reaches the team bucket, and the claims of
# the bucket read-only (data) and of its checkpoints/ prefix read-write, where the job template mounts them.
DATA_SERVICE_ACCOUNT = "team-data"
DATA_CLAIM = "team-data"
CHECKPOINTS_CLAIM = "team-checkpoints"
DATA_MOUNT_PATH = "/data"
CHECKPOINTS_MOUNT_PATH = "/checkpoints"
SCRATCH_MOUNT_PATH = "/scratch"
FSX_MOUNT_PATH = "/fsx"
# EKS add-ons and CSI driver names (EKS user guide, workloads-add-ons-available-eks.html; the drivers'
# CSIDriver objects: s3.csi.aws.com, fsx.csi.aws.com, ebs.csi.aws.com).
MOUNTPOINT_S3_ADDON = "aws-mountpoint-s3-csi-driver"
FSX_CSI_ADDON = "aws-fsx-csi-driver"
EBS_CSI_ADDON = "aws-ebs-csi-driver"
MOUNTPOINT_S3_CSI_DRIVER = "s3.csi.aws.com"
FSX_CSI_DRIVER = "fsx.csi.aws.com"
EBS_CSI_DRIVER = "ebs.csi.aws.com"
# The EBS CSI controller's service account, which its Pod Identity association names (kubernetes-sigs/
# aws-ebs-csi-driver docs/install.md).
EBS_CSI_CONTROLLER_SERVICE_ACCOUNT = "ebs-csi-controller-sa"
# The default StorageClass (gp3, encrypted) and the annotation that makes a class the default
# (kubernetes.io/docs/tasks/administer-cluster/change-default-storage-class).
DEFAULT_STORAGE_CLASS = "gp3"
DEFAULT_STORAGE_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"


# The local cluster's data path (localcluster/objectstore.py): an S3-compatible server on the real node's bridge,
# a bucket per team named like an EKS one with this prefix, and the team's S3 keys in this Secret of its
# namespace (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY: what the AWS SDKs read), where EKS uses Pod Identity.
LOCAL_DATA_BUCKET_PREFIX = "local-data"
LOCAL_DATA_SECRET = "team-data-s3"
S3_ACCESS_KEY_ENV = "AWS_ACCESS_KEY_ID"
S3_SECRET_KEY_ENV = "AWS_SECRET_ACCESS_KEY"


def team_bucket_name(prefix: str, team: str) -> str:
    return f"{prefix}-{team}"


def data_admin_role_name(cluster: str) -> str:
    return f"{cluster}-data-admin"


def ebs_csi_role_name(cluster: str) -> str:
    return f"{cluster}-ebs-csi"


def fsx_security_group_name(cluster: str, file_system: str) -> str:
    return f"{cluster}-fsx-{file_system}"


def data_volume_name(namespace: str, claim: str) -> str:
    """The PersistentVolume bound to a team namespace's claim (cluster-scoped, so it carries the namespace)."""
    return f"{namespace}-{claim}"
