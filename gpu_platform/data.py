"""The data path's part of the plan: every bucket, role, policy document, lifecycle rule, claim and file
system the components make, decided once from the spec (`data`), so the render, `plan`, the IAM linter and
the policy evaluator in the tests all read the same documents.

Each team has a bucket of its own, so its storage cost is attributable and its isolation is a resource ARN
(`arn:aws:s3:::<bucket>/*`) rather than prefix conditions (see docs/architecture.md, "The data path: a bucket
per team, reached only through the team's Pod Identity role").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from . import conventions as cv
from .karpenter import partition
from .spec import Platform, Team
from .spec.data import DataLifecycle, quantity_bytes, storage_quantity, team_data_role_name

POLICY_VERSION = "2012-10-17"
# What a team's pods may do in their own bucket: Mountpoint's recommended permissions (awslabs/mountpoint-s3
# doc/CONFIGURATION.md, "IAM permissions": ListBucket, GetObject, PutObject, AbortMultipartUpload,
# DeleteObject), the reads of old versions (restoring an overwritten checkpoint) and the object tags that
# mark a failed run's checkpoints for the lifecycle rule. Deleting a *version* is not granted: an overwritten
# or deleted checkpoint stays restorable until the lifecycle removes it.
TEAM_BUCKET_ACTIONS = ("s3:GetBucketLocation", "s3:ListBucket", "s3:ListBucketMultipartUploads", "s3:ListBucketVersions")
TEAM_OBJECT_ACTIONS = (
    "s3:AbortMultipartUpload", "s3:DeleteObject", "s3:GetObject", "s3:GetObjectTagging", "s3:GetObjectVersion",
    "s3:ListMultipartUploadParts", "s3:PutObject", "s3:PutObjectTagging",
)
# The platform admins' data role may also purge versions (a team's data after it leaves, a leaked secret).
ADMIN_OBJECT_ACTIONS = (*TEAM_OBJECT_ACTIONS, "s3:DeleteObjectVersion")
# A customer managed KMS key: what S3 needs on the caller's behalf to write (GenerateDataKey) and read
# (Decrypt) SSE-KMS objects (S3 user guide, "Using server-side encryption with AWS KMS keys", permissions).
KMS_ACTIONS = ("kms:Decrypt", "kms:GenerateDataKey")
# EKS Pod Identity assumes a role with these two (EKS user guide, pod-id-role.html) and passes session tags
# the trust policy conditions on (pod-id-abac.html: eks-cluster-name, kubernetes-namespace,
# kubernetes-service-account), so even an association made by hand in another namespace cannot use the role.
POD_IDENTITY_PRINCIPAL = "pods.eks.amazonaws.com"
POD_IDENTITY_ACTIONS = ("sts:AssumeRole", "sts:TagSession")
# S3 server-side encryption algorithms (PutBucketEncryption SSEAlgorithm).
SSE_ALGORITHM = {"SSE-S3": "AES256", "SSE-KMS": "aws:kms"}
# A platform claim's request: Mountpoint ignores it ("Value is ignored but required by Kubernetes", awslabs/
# mountpoint-s3-csi-driver docs/CONFIGURATION.md) and an FSx claim binds to a larger PV (a claim binds to a
# volume at least its size). The namespace quota adds these on top of the team's own storage allowance.
PLATFORM_CLAIM_GIB = 1


@dataclass(frozen=True, slots=True)
class TeamData:
    team: str
    cost_center: str
    bucket: str
    bucket_arn: str
    role_name: str
    namespaces: tuple[str, ...]

    @property
    def objects_arn(self) -> str:
        return f"{self.bucket_arn}/*"


@dataclass(frozen=True, slots=True)
class DataRepositoryPlan:
    bucket: str
    prefix: str
    file_system_path: str
    auto_import: bool
    auto_export: bool

    @property
    def data_repository_path(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}"


@dataclass(frozen=True, slots=True)
class FileSystemPlan:
    name: str
    pool: str
    team: str
    namespace: str
    availability_zone: str
    deployment_type: str
    storage_capacity_gib: int
    per_unit_storage_throughput: int | None
    security_group_name: str
    data_repository: DataRepositoryPlan | None

    @property
    def claim(self) -> str:
        return f"fsx-{self.name}"

    @property
    def volume(self) -> str:
        return cv.data_volume_name(self.namespace, self.claim)


@dataclass(frozen=True, slots=True)
class DataPlan:
    """`enabled` false: only block storage (the EBS CSI add-on and the gp3 class, on eks stacks)."""

    enabled: bool
    region: str | None
    partition: str
    cluster: str
    sse_algorithm: str
    kms_key_arn: str | None
    versioning: bool
    lifecycle: DataLifecycle
    s3_egress: bool
    job_scratch_gib: int
    teams: tuple[TeamData, ...]
    admin_role_name: str
    admin_principals: tuple[str, ...]
    file_systems: tuple[FileSystemPlan, ...]
    # Managed EKS add-ons (None: not made): name -> version.
    addons: Mapping[str, str]
    ebs_role_name: str | None
    # The eks-pod-identity-agent add-on is made here when something needs Pod Identity and no Karpenter pool
    # exists (the Karpenter component makes it then, addons.karpenter.managePodIdentityAgent).
    pod_identity_agent: bool = False

    def team(self, name: str) -> TeamData | None:
        return next((t for t in self.teams if t.team == name), None)

    def claims(self, team: str, namespace: str) -> tuple[str, ...]:
        """The claims the platform makes in one namespace of the team, which its ResourceQuota must add on top
        of the team's own allowance (namespace_quota_with_claims): the data and checkpoints claims are in every
        namespace of the team, a file system's claim only in the namespace that holds it (the storage
        component makes it in FileSystemPlan.namespace alone), so only that namespace's quota counts it."""
        data = self.team(team)
        if data is None:
            return ()
        if namespace not in data.namespaces:
            raise ValueError(f"namespace {namespace!r} is not one of team {team!r}'s; its namespaces: "
                             f"{', '.join(data.namespaces)}")
        return (cv.DATA_CLAIM, cv.CHECKPOINTS_CLAIM,
                *(f.claim for f in self.file_systems if f.team == team and f.namespace == namespace))


def s3_arn(partition_: str, bucket: str) -> str:
    return f"arn:{partition_}:s3:::{bucket}"


def team_policy(data: DataPlan, team: TeamData) -> dict[str, Any]:
    """The team role's permissions: its own bucket and nothing else."""
    statements: list[dict[str, Any]] = [
        {"Sid": "TeamBucket", "Effect": "Allow", "Action": list(TEAM_BUCKET_ACTIONS), "Resource": [team.bucket_arn]},
        {"Sid": "TeamObjects", "Effect": "Allow", "Action": list(TEAM_OBJECT_ACTIONS), "Resource": [team.objects_arn]},
    ]
    statements += _kms_statements(data)
    return {"Version": POLICY_VERSION, "Statement": statements}


def admin_policy(data: DataPlan) -> dict[str, Any]:
    """The platform admins' data role: every team bucket."""
    statements: list[dict[str, Any]] = [
        {"Sid": "TeamBuckets", "Effect": "Allow", "Action": list(TEAM_BUCKET_ACTIONS),
         "Resource": [t.bucket_arn for t in data.teams]},
        {"Sid": "TeamObjects", "Effect": "Allow", "Action": list(ADMIN_OBJECT_ACTIONS),
         "Resource": [t.objects_arn for t in data.teams]},
    ]
    statements += _kms_statements(data)
    return {"Version": POLICY_VERSION, "Statement": statements}


def _kms_statements(data: DataPlan) -> list[dict[str, Any]]:
    # The AWS managed aws/s3 key needs no grant of ours (its key policy lets the account's principals use it
    # through S3); a customer managed key does, and only through S3 in the stack's region (kms:ViaService).
    if data.kms_key_arn is None:
        return []
    return [{"Sid": "BucketKey", "Effect": "Allow", "Action": list(KMS_ACTIONS), "Resource": [data.kms_key_arn],
             "Condition": {"StringEquals": {"kms:ViaService": f"s3.{data.region}.amazonaws.com"}}}]


def pod_identity_trust_policy(cluster: str, namespaces: list[str], service_account: str) -> dict[str, Any]:
    """Only EKS Pod Identity, only for this cluster, only these namespaces and service account."""
    return {"Version": POLICY_VERSION, "Statement": [{
        "Sid": "PodIdentity",
        "Effect": "Allow",
        "Principal": {"Service": POD_IDENTITY_PRINCIPAL},
        "Action": list(POD_IDENTITY_ACTIONS),
        "Condition": {"StringEquals": {
            "aws:RequestTag/eks-cluster-name": cluster,
            "aws:RequestTag/kubernetes-namespace": namespaces,
            "aws:RequestTag/kubernetes-service-account": service_account,
        }},
    }]}


def team_trust_policy(data: DataPlan, team: TeamData) -> dict[str, Any]:
    return pod_identity_trust_policy(data.cluster, list(team.namespaces), cv.DATA_SERVICE_ACCOUNT)


def ebs_csi_trust_policy(data: DataPlan) -> dict[str, Any]:
    return pod_identity_trust_policy(data.cluster, [cv.KUBE_SYSTEM_NAMESPACE], cv.EBS_CSI_CONTROLLER_SERVICE_ACCOUNT)


def admin_trust_policy(data: DataPlan) -> dict[str, Any]:
    return {"Version": POLICY_VERSION, "Statement": [{
        "Sid": "PlatformAdmins", "Effect": "Allow", "Principal": {"AWS": list(data.admin_principals)},
        "Action": ["sts:AssumeRole", "sts:TagSession"],
    }]}


def bucket_policy(team: TeamData) -> dict[str, Any]:
    """Every request without TLS is refused, whoever makes it (S3 user guide, "Enforce encryption in transit":
    a Deny on aws:SecureTransport false)."""
    return {"Version": POLICY_VERSION, "Statement": [{
        "Sid": "DenyWithoutTLS", "Effect": "Deny", "Principal": "*", "Action": "s3:*",
        "Resource": [team.bucket_arn, team.objects_arn],
        "Condition": {"Bool": {"aws:SecureTransport": "false"}},
    }]}


def lifecycle_rules(data: DataPlan) -> list[dict[str, Any]]:
    """The bucket lifecycle rules as PutBucketLifecycleConfiguration takes them (botocore s3 model,
    LifecycleRule): scratch/ and failed runs' checkpoints expire, old versions go, abandoned uploads are
    aborted."""
    lc = data.lifecycle
    rules: list[dict[str, Any]] = [
        {"ID": "expire-scratch", "Status": "Enabled", "Filter": {"Prefix": cv.SCRATCH_PREFIX},
         "Expiration": {"Days": lc.scratchDays}},
        {"ID": "expire-failed-run-checkpoints", "Status": "Enabled",
         "Filter": {"And": {"Prefix": cv.CHECKPOINTS_PREFIX,
                            "Tags": [{"Key": cv.RUN_OUTCOME_TAG, "Value": cv.RUN_OUTCOME_FAILED}]}},
         "Expiration": {"Days": lc.failedCheckpointDays}},
        {"ID": "abort-incomplete-uploads", "Status": "Enabled", "Filter": {"Prefix": ""},
         "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": lc.abortIncompleteUploadDays}},
    ]
    if data.versioning:
        rules.append({"ID": "expire-noncurrent-versions", "Status": "Enabled", "Filter": {"Prefix": ""},
                      "NoncurrentVersionExpiration": {"NoncurrentDays": lc.noncurrentVersionDays}})
    return rules


def bucket_tags(team: TeamData) -> dict[str, str]:
    """S3 cost allocation tags are per bucket: the team and cost center split the storage bill by team."""
    return {cv.TEAM: team.team, cv.COST_CENTER: team.cost_center}


def _team_data(spec: Platform, team: Team, part: str) -> TeamData:
    bucket = cv.team_bucket_name(str(spec.data.bucketPrefix), team.name)
    return TeamData(
        team=team.name,
        cost_center=team.costCenter,
        bucket=bucket,
        bucket_arn=s3_arn(part, bucket),
        role_name=team_data_role_name(spec.cluster.name, team.name),
        namespaces=tuple(team.namespace_names),
    )


def plan_data(spec: Platform, region: str | None) -> DataPlan:
    d = spec.data
    eks = spec.cluster.provider == "eks"
    enabled = d.enabled and eks
    part = partition(region)
    teams = tuple(_team_data(spec, t, part) for t in spec.teams) if enabled else ()
    buckets = {t.team: t.bucket for t in teams}
    pools = {p.name: p for p in spec.pools}
    first_namespace = {t.name: t.namespace_names[0] for t in spec.teams}
    file_systems = tuple(
        FileSystemPlan(
            name=fs.name,
            pool=fs.pool,
            team=fs.team,
            namespace=fs.namespace or first_namespace[fs.team],
            availability_zone=str(pools[fs.pool].availabilityZone),
            deployment_type=fs.deploymentType,
            storage_capacity_gib=fs.storageCapacityGiB,
            per_unit_storage_throughput=fs.perUnitStorageThroughput,
            security_group_name=cv.fsx_security_group_name(spec.cluster.name, fs.name),
            data_repository=None if fs.dataRepository is None else DataRepositoryPlan(
                bucket=buckets[fs.team], prefix=fs.dataRepository.prefix,
                file_system_path=fs.dataRepository.fileSystemPath, auto_import=fs.dataRepository.autoImport,
                auto_export=fs.dataRepository.autoExport),
        )
        for fs in d.fileSystems
    ) if enabled else ()
    addons: dict[str, str] = {}
    if eks and d.ebsCsi.manage:
        addons[cv.EBS_CSI_ADDON] = d.ebsCsi.version
    if enabled and d.mountpointS3.manage:
        addons[cv.MOUNTPOINT_S3_ADDON] = d.mountpointS3.version
    if file_systems and d.fsxCsi.manage:
        addons[cv.FSX_CSI_ADDON] = d.fsxCsi.version
    identity = spec.cluster.identity
    return DataPlan(
        enabled=enabled,
        region=region,
        partition=part,
        cluster=spec.cluster.name,
        sse_algorithm=SSE_ALGORITHM[d.encryption],
        kms_key_arn=d.kmsKeyArn,
        versioning=d.versioning,
        lifecycle=d.lifecycle,
        s3_egress=d.s3Egress,
        job_scratch_gib=d.jobScratchGiB,
        teams=teams,
        admin_role_name=cv.data_admin_role_name(spec.cluster.name),
        admin_principals=tuple(identity.platformAdminRoles) if identity is not None and enabled else (),
        file_systems=file_systems,
        addons=addons,
        ebs_role_name=cv.ebs_csi_role_name(spec.cluster.name) if cv.EBS_CSI_ADDON in addons else None,
        pod_identity_agent=bool(addons or enabled) and not any(
            p.provisioner == cv.PROVISIONER_KARPENTER for p in spec.pools),
    )


def namespace_quota_with_claims(hard: Mapping[str, str], claims: int) -> dict[str, str]:
    """The team's own PVC count and storage allowance, plus the platform's claims in the namespace: a team's
    allowance stays wholly its own, and the platform's claims can never be refused by it."""
    if not claims:
        return dict(hard)
    out = dict(hard)
    out["persistentvolumeclaims"] = str(int(hard["persistentvolumeclaims"]) + claims)
    out["requests.storage"] = storage_quantity(quantity_bytes(hard["requests.storage"]) + claims * PLATFORM_CLAIM_GIB * 2**30)
    return out


@dataclass(frozen=True, slots=True)
class JobDataMounts:
    """What the job template adds to a team's pod when the data path is on."""

    volumes: tuple[dict[str, Any], ...]
    mounts: tuple[dict[str, Any], ...]
    service_account: str
    fs_group: int
    # Ownership is changed only when the volume's root does not match already: a Lustre or S3 volume of
    # millions of files is never walked (kubernetes.io/docs/tasks/configure-pod-container/security-context,
    # "Configure volume permission and ownership change policy for Pods").
    fs_group_change_policy: str = "OnRootMismatch"


SCRATCH_VOLUME = "scratch"


def scratch_volume(gib: int, local_nvme: bool, team: str) -> dict[str, Any]:
    """Scratch that goes with the pod: on a pool with local NVMe an emptyDir (on the node's RAID0, capped at
    `gib`), elsewhere a gp3 generic ephemeral volume, a claim owned by the pod and deleted with it
    (kubernetes.io/docs/concepts/storage/ephemeral-volumes, "Generic ephemeral volumes": "the PVC ... will be
    deleted when the Pod is deleted"). Either way the Job's TTL, which deletes the pods, deletes the scratch."""
    size = f"{gib}Gi"
    if local_nvme:
        return {"name": SCRATCH_VOLUME, "emptyDir": {"sizeLimit": size}}
    return {"name": SCRATCH_VOLUME, "ephemeral": {"volumeClaimTemplate": {
        "metadata": {"labels": {cv.TEAM: team}},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": cv.DEFAULT_STORAGE_CLASS,
                 "resources": {"requests": {"storage": size}}},
    }}}


def job_mounts(data: DataPlan, team: str, namespace: str, pool: str, local_nvme: bool,
               run_as: int) -> JobDataMounts | None:
    """The team's bucket read-only at /data, its checkpoints/ read-write at /checkpoints, scratch at /scratch,
    and the team's file system of this pool at /fsx; None when the data path is off."""
    if data.team(team) is None:
        return None
    volumes: list[dict[str, Any]] = [
        {"name": "data", "persistentVolumeClaim": {"claimName": cv.DATA_CLAIM, "readOnly": True}},
        {"name": "checkpoints", "persistentVolumeClaim": {"claimName": cv.CHECKPOINTS_CLAIM}},
        scratch_volume(data.job_scratch_gib, local_nvme, team),
    ]
    mounts: list[dict[str, Any]] = [
        {"name": "data", "mountPath": cv.DATA_MOUNT_PATH, "readOnly": True},
        {"name": "checkpoints", "mountPath": cv.CHECKPOINTS_MOUNT_PATH},
        {"name": SCRATCH_VOLUME, "mountPath": cv.SCRATCH_MOUNT_PATH},
    ]
    for fs in data.file_systems:
        if fs.team == team and fs.namespace == namespace and fs.pool == pool:
            volumes.append({"name": fs.claim, "persistentVolumeClaim": {"claimName": fs.claim}})
            mounts.append({"name": fs.claim, "mountPath": f"{cv.FSX_MOUNT_PATH}/{fs.name}"})
    # fsGroup: the Mountpoint CSI driver v2 gives the mount to the pod's fsGroup (docs/UPGRADING_TO_V2.md,
    # VOLUME_MOUNT_GROUP), so the template's non-root user can read and write it.
    return JobDataMounts(tuple(volumes), tuple(mounts), cv.DATA_SERVICE_ACCOUNT, run_as)


def scratch_problem(data: DataPlan, team: str, own_storage: str, own_claims: int, pods: int,
                    local_nvme: bool) -> str | None:
    """A job whose pods' scratch claims cannot all fit the namespace's own storage allowance would have pods
    refused by the ResourceQuota after Kueue admitted it; None when it fits (or scratch is on local NVMe)."""
    if local_nvme or data.team(team) is None:
        return None
    need = pods * data.job_scratch_gib * 2**30
    if need > quantity_bytes(own_storage) or pods > own_claims:
        return (f"{pods} pods x {data.job_scratch_gib}Gi scratch (gp3, one claim per pod) = "
                f"{storage_quantity(need)} in {pods} claims, beyond team {team!r}'s own storage quota "
                f"(teams[].limits.storage {own_storage}, persistentVolumeClaims {own_claims}): the quota would "
                "refuse the pods; lower data.jobScratchGiB or raise the team's limits")
    return None
