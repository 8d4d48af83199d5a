"""Storage: the data path of the plan (gpu_platform/data.py) as AWS and Kubernetes resources.

Per team: an S3 bucket (default encryption, versioning, lifecycle, all public access blocked, TLS-only
policy, cost tags), an IAM role that reaches only that bucket, handed to the team's `team-data` service
account in each of its namespaces by EKS Pod Identity, and in each namespace the static PersistentVolumes
and claims of the bucket (read-only) and of its checkpoints/ prefix (read-write) on the Mountpoint for
Amazon S3 CSI driver, with pod-level credentials, so a mount uses the team's role and never the driver's.
Per file system: FSx for Lustre in its pool's zone with its security group, an optional data repository
association, and a static volume bound to the owning namespace. Cluster wide: the EBS, Mountpoint and FSx
CSI add-ons, the EBS driver's Pod Identity role, the default gp3 StorageClass, and the platform admins'
data role over every team bucket.

Every name, document and rule comes from the plan; this module only knows how AWS and Kubernetes spell them.
"""

from __future__ import annotations

import json
from functools import partial
from typing import Any, Mapping, Sequence

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from gpu_platform import conventions as cv
from gpu_platform.data import (
    DataPlan, FileSystemPlan, PLATFORM_CLAIM_GIB, TeamData, admin_policy, admin_trust_policy, bucket_policy,
    bucket_tags, ebs_csi_trust_policy, lifecycle_rules, team_policy, team_trust_policy,
)
from gpu_platform.plan import Plan

from .kube_object import object_labels
from .node_pools.aws_names import ADDON_RESOLVE_CONFLICTS
from .node_pools.cluster import ClusterAccess

COMPONENT_VALUE = "storage"
# A Lustre file system's client version and the mount option the FSx CSI driver's examples use
# (kubernetes-sigs/aws-fsx-csi-driver examples/kubernetes/static_provisioning/specs/pv.yaml: flock).
LUSTRE_VERSION = "2.15"
LUSTRE_MOUNT_OPTIONS = ("flock",)
# Mountpoint options (awslabs/mountpoint-s3 doc/CONFIGURATION.md, "File modifications and deletions"; doc/
# SEMANTICS.md, "Writes": an overwrite opens the file with O_TRUNC): the data volume read-only; the checkpoint
# volume may delete and overwrite files (a framework rewriting its `latest` marker).
DATA_MOUNT_OPTIONS = ("read-only",)
CHECKPOINT_MOUNT_OPTIONS = ("allow-delete", "allow-overwrite")
# Data repository association events, imported and exported alike (FSx API, S3DataRepositoryConfiguration
# AutoImportPolicy/AutoExportPolicy Events: NEW, CHANGED, DELETED).
DRA_EVENTS = ("NEW", "CHANGED", "DELETED")
# The S3 gateway endpoint's AWS-managed prefix list, by name (VPC user guide, "AWS-managed prefix lists":
# com.amazonaws.<region>.s3): the addresses S3 answers on in the region.
def s3_prefix_list_name(region: str) -> str:
    return f"com.amazonaws.{region}.s3"


labels = partial(object_labels, component=COMPONENT_VALUE)


def lifecycle_rule_args(rule: Mapping[str, Any]) -> dict[str, Any]:
    """One S3 API lifecycle rule (data.lifecycle_rules) as pulumi-aws 7 BucketLifecycleConfiguration takes it."""
    out: dict[str, Any] = {"id": rule["ID"], "status": rule["Status"]}
    f = rule["Filter"]
    if "And" in f:
        out["filter"] = {"and_": {"prefix": f["And"]["Prefix"], "tags": {t["Key"]: t["Value"] for t in f["And"]["Tags"]}}}
    else:
        out["filter"] = {"prefix": f["Prefix"]}
    if "Expiration" in rule:
        out["expiration"] = {"days": rule["Expiration"]["Days"]}
    if "NoncurrentVersionExpiration" in rule:
        out["noncurrent_version_expiration"] = {"noncurrent_days": rule["NoncurrentVersionExpiration"]["NoncurrentDays"]}
    if "AbortIncompleteMultipartUpload" in rule:
        out["abort_incomplete_multipart_upload"] = {
            "days_after_initiation": rule["AbortIncompleteMultipartUpload"]["DaysAfterInitiation"]}
    return out


def default_storage_class() -> dict[str, Any]:
    """gp3, encrypted, bound where the pod lands (an EBS volume lives in one zone, so it is made in the zone
    the scheduler picked: WaitForFirstConsumer), expandable, deleted with its claim. Parameters from the EBS
    CSI driver (kubernetes-sigs/aws-ebs-csi-driver docs/parameters.md: type, encrypted, csi.storage.k8s.io/fstype)."""
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": cv.DEFAULT_STORAGE_CLASS, "labels": labels(),
                     "annotations": {cv.DEFAULT_STORAGE_CLASS_ANNOTATION: "true"}},
        "provisioner": cv.EBS_CSI_DRIVER,
        "parameters": {"type": "gp3", "encrypted": "true", "csi.storage.k8s.io/fstype": "ext4"},
        "volumeBindingMode": "WaitForFirstConsumer",
        "allowVolumeExpansion": True,
        "reclaimPolicy": "Delete",
    }


def s3_volume(data: DataPlan, team: TeamData, namespace: str, claim: str) -> dict[str, Any]:
    """A static PersistentVolume of the team's bucket, bound to one claim of one namespace (claimRef), with
    pod-level credentials (authenticationSource: pod): the Mountpoint pod uses the workload pod's service
    account's Pod Identity role (awslabs/mountpoint-s3-csi-driver docs/CONFIGURATION.md, "Pod-Level
    Credentials"), so no PV can reach a bucket the pod's own role cannot."""
    checkpoints = claim == cv.CHECKPOINTS_CLAIM
    options = [f"region {data.region}"]
    options += [f"prefix {cv.CHECKPOINTS_PREFIX}", *CHECKPOINT_MOUNT_OPTIONS] if checkpoints else list(DATA_MOUNT_OPTIONS)
    name = cv.data_volume_name(namespace, claim)
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "labels": labels({cv.TEAM: team.team})},
        "spec": {
            "capacity": {"storage": f"{PLATFORM_CLAIM_GIB}Gi"},
            "accessModes": ["ReadWriteMany" if checkpoints else "ReadOnlyMany"],
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": "",
            "claimRef": {"namespace": namespace, "name": claim},
            "mountOptions": options,
            "csi": {
                "driver": cv.MOUNTPOINT_S3_CSI_DRIVER,
                # volumeHandle is unique per PV: Kubernetes handles one volume per handle (docs/CONFIGURATION.md).
                "volumeHandle": name,
                "volumeAttributes": {"bucketName": team.bucket, "authenticationSource": "pod"},
            },
        },
    }


def claim(namespace: str, name: str, team: str, access: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": namespace, "labels": labels({cv.TEAM: team})},
        "spec": {"accessModes": [access], "storageClassName": "", "volumeName": cv.data_volume_name(namespace, name),
                 "resources": {"requests": {"storage": f"{PLATFORM_CLAIM_GIB}Gi"}}},
    }


def lustre_volume(fs: FileSystemPlan, file_system_id: Any, dns_name: Any, mount_name: Any) -> dict[str, Any]:
    """The file system as a static PV of the FSx CSI driver (examples/kubernetes/static_provisioning/specs/pv.yaml:
    volumeHandle the file system id, volumeAttributes dnsname and mountname), bound to the owner's claim."""
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": fs.volume, "labels": labels({cv.TEAM: fs.team, cv.POOL: fs.pool})},
        "spec": {
            "capacity": {"storage": f"{fs.storage_capacity_gib}Gi"},
            "volumeMode": "Filesystem",
            "accessModes": ["ReadWriteMany"],
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": "",
            "claimRef": {"namespace": fs.namespace, "name": fs.claim},
            "mountOptions": list(LUSTRE_MOUNT_OPTIONS),
            "csi": {"driver": cv.FSX_CSI_DRIVER, "volumeHandle": file_system_id,
                    "volumeAttributes": {"dnsname": dns_name, "mountname": mount_name}},
        },
    }


def data_path_policy(cidrs: Sequence[str]) -> dict[str, Any]:
    """The team pods' way to their data through the default deny: the EKS Pod Identity agent on the node
    (credentials, TCP 80) and S3's addresses in the region (HTTPS), nothing else. A NetworkPolicy cannot name
    a prefix list, so the S3 gateway endpoint's prefix list is read at deploy time and written out as ipBlocks."""
    egress: list[dict[str, Any]] = [{
        "to": [{"ipBlock": {"cidr": c}} for c in cv.POD_IDENTITY_AGENT_CIDRS],
        "ports": [{"protocol": "TCP", "port": cv.POD_IDENTITY_AGENT_PORT}],
    }]
    if cidrs:
        egress.append({"to": [{"ipBlock": {"cidr": c}} for c in sorted(cidrs)],
                       "ports": [{"protocol": "TCP", "port": cv.HTTPS_PORT}]})
    return {"podSelector": {}, "policyTypes": ["Egress"], "egress": egress}


def _json(doc: Mapping[str, Any]) -> str:
    return json.dumps(doc, sort_keys=True)


class Storage(pulumi.ComponentResource):
    """The data path. AWS resources use the default AWS provider; Kubernetes objects the provider given."""

    def __init__(self, name: str, plan: Plan, data: DataPlan, cluster: ClusterAccess,
                 cluster_ready: Sequence[pulumi.Resource], namespaces: Mapping[str, pulumi.Resource],
                 opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:storage:Storage", name, None, opts)
        self.plan, self.data = plan, data
        self.tags = plan.platform_tags
        after_cluster = pulumi.ResourceOptions(parent=self, depends_on=list(cluster_ready))
        self.addons: dict[str, aws.eks.Addon] = {}
        self.agent: aws.eks.Addon | None = None
        if data.pod_identity_agent:
            self.agent = aws.eks.Addon(
                "storage-pod-identity-agent", cluster_name=cluster.name, addon_name=cv.POD_IDENTITY_AGENT_ADDON,
                resolve_conflicts_on_create=ADDON_RESOLVE_CONFLICTS, resolve_conflicts_on_update=ADDON_RESOLVE_CONFLICTS,
                tags=self.tags, opts=after_cluster)
        self._block_storage(cluster, cluster_ready)
        self.buckets: dict[str, aws.s3.Bucket] = {}
        self.roles: dict[str, aws.iam.Role] = {}
        self.file_systems: dict[str, aws.fsx.LustreFileSystem] = {}
        if data.enabled:
            self._addon(cv.MOUNTPOINT_S3_ADDON, cluster, cluster_ready)
            if cv.FSX_CSI_ADDON in data.addons:
                self._addon(cv.FSX_CSI_ADDON, cluster, cluster_ready)
            for team in data.teams:
                self._team(team, cluster, cluster_ready, namespaces)
            self._admin_role()
            for fs in data.file_systems:
                self._file_system(fs, cluster, namespaces)
        self.register_outputs({})

    # -- block storage -----------------------------------------------------------------------------------

    def _addon(self, addon: str, cluster: ClusterAccess, cluster_ready: Sequence[pulumi.Resource],
               pod_identity: list[dict[str, Any]] | None = None, depends: Sequence[pulumi.Resource] = ()) -> None:
        if addon not in self.data.addons:
            return
        deps = [*cluster_ready, *depends, *([self.agent] if self.agent is not None else [])]
        self.addons[addon] = aws.eks.Addon(
            f"storage-{addon}", cluster_name=cluster.name, addon_name=addon, addon_version=self.data.addons[addon],
            pod_identity_associations=pod_identity, resolve_conflicts_on_create=ADDON_RESOLVE_CONFLICTS,
            resolve_conflicts_on_update=ADDON_RESOLVE_CONFLICTS, tags=self.tags,
            opts=pulumi.ResourceOptions(parent=self, depends_on=deps))

    def _block_storage(self, cluster: ClusterAccess, cluster_ready: Sequence[pulumi.Resource]) -> None:
        """The EBS CSI driver with its controller's Pod Identity role on the AWS managed policy, and the default
        gp3 class (EKS user guide, ebs-csi.html: AmazonEBSCSIDriverPolicy on the ebs-csi-controller-sa role)."""
        d = self.data
        child = pulumi.ResourceOptions(parent=self)
        if d.ebs_role_name is not None:
            role = aws.iam.Role("storage-ebs-csi", name=d.ebs_role_name, assume_role_policy=_json(ebs_csi_trust_policy(d)),
                                description=f"EBS CSI controller of {d.cluster} (EKS Pod Identity)", tags=self.tags,
                                opts=child)
            attached = aws.iam.RolePolicyAttachment(
                "storage-ebs-csi", role=role.name,
                policy_arn=f"arn:{d.partition}:iam::aws:policy/service-role/AmazonEBSCSIDriverPolicy", opts=child)
            self._addon(cv.EBS_CSI_ADDON, cluster, cluster_ready,
                        [{"role_arn": role.arn, "service_account": cv.EBS_CSI_CONTROLLER_SERVICE_ACCOUNT}], [attached])
        typed_resource("storage-default-storage-class", default_storage_class(),
                   opts=pulumi.ResourceOptions(parent=self, depends_on=list(self.addons.values())))

    # -- per team ----------------------------------------------------------------------------------------

    def _team(self, team: TeamData, cluster: ClusterAccess, cluster_ready: Sequence[pulumi.Resource],
              namespaces: Mapping[str, pulumi.Resource]) -> None:
        d = self.data
        child = pulumi.ResourceOptions(parent=self)
        prefix = f"storage-{team.team}"
        # prod keeps a team's data when it is removed from the config (or its name is mistyped), as it keeps
        # the namespace: deleting a bucket of checkpoints is an admin's decision, never a diff's. What guards the
        # data stays with it (public access block, encryption, versioning, lifecycle, policy): a kept bucket
        # stripped of them would be an open, unversioned one. Access (the role, Pod Identity, the claims) goes.
        keep = pulumi.ResourceOptions(parent=self, retain_on_delete=self.plan.environment == "prod")
        bucket = aws.s3.Bucket(prefix, bucket=team.bucket, tags={**self.tags, **bucket_tags(team)}, opts=keep)
        self.buckets[team.team] = bucket
        aws.s3.BucketPublicAccessBlock(prefix, bucket=bucket.id, block_public_acls=True, block_public_policy=True,
                                       ignore_public_acls=True, restrict_public_buckets=True, opts=keep)
        encryption: dict[str, Any] = {"sse_algorithm": d.sse_algorithm}
        if d.kms_key_arn is not None:
            encryption["kms_master_key_id"] = d.kms_key_arn
        aws.s3.BucketServerSideEncryptionConfiguration(
            prefix, bucket=bucket.id,
            rules=[{"apply_server_side_encryption_by_default": encryption,
                    # S3 Bucket Keys cut KMS requests (and their cost) for SSE-KMS; no effect on SSE-S3.
                    "bucket_key_enabled": d.kms_key_arn is not None or d.sse_algorithm == "aws:kms"}],
            opts=keep)
        versioning = None
        if d.versioning:
            versioning = aws.s3.BucketVersioning(prefix, bucket=bucket.id,
                                                 versioning_configuration={"status": "Enabled"}, opts=keep)
        aws.s3.BucketLifecycleConfiguration(
            prefix, bucket=bucket.id, rules=[lifecycle_rule_args(r) for r in lifecycle_rules(d)],
            opts=pulumi.ResourceOptions.merge(keep, pulumi.ResourceOptions(depends_on=[versioning] if versioning else None)))
        aws.s3.BucketPolicy(prefix, bucket=bucket.id, policy=_json(bucket_policy(team)), opts=keep)

        role = aws.iam.Role(prefix, name=team.role_name, assume_role_policy=_json(team_trust_policy(d, team)),
                            description=f"Team {team.team}'s data in {team.bucket} (EKS Pod Identity)",
                            tags={**self.tags, cv.TEAM: team.team}, opts=child)
        self.roles[team.team] = role
        aws.iam.RolePolicy(prefix, role=role.name, policy=_json(team_policy(d, team)), opts=child)
        mountpoint = [self.addons[a] for a in (cv.MOUNTPOINT_S3_ADDON,) if a in self.addons]
        for ns in team.namespaces:
            inside = pulumi.ResourceOptions(parent=self, depends_on=[namespaces[ns]] if ns in namespaces else None)
            typed_resource(f"storage-{ns}-service-account", {
                "apiVersion": "v1", "kind": "ServiceAccount",
                "metadata": {"name": cv.DATA_SERVICE_ACCOUNT, "namespace": ns, "labels": labels({cv.TEAM: team.team})},
            }, opts=inside)
            aws.eks.PodIdentityAssociation(
                f"storage-{ns}-pod-identity", cluster_name=cluster.name, namespace=ns,
                service_account=cv.DATA_SERVICE_ACCOUNT, role_arn=role.arn, tags={**self.tags, cv.TEAM: team.team},
                opts=pulumi.ResourceOptions(parent=self, depends_on=[*cluster_ready, *([self.agent] if self.agent else [])]))
            for name, access in ((cv.DATA_CLAIM, "ReadOnlyMany"), (cv.CHECKPOINTS_CLAIM, "ReadWriteMany")):
                volume = typed_resource(f"storage-{ns}-{name}-volume", s3_volume(d, team, ns, name),
                                    opts=pulumi.ResourceOptions(parent=self, depends_on=[bucket, *mountpoint]))
                typed_resource(f"storage-{ns}-{name}", claim(ns, name, team.team, access),
                           opts=pulumi.ResourceOptions(parent=self, depends_on=[volume, *([namespaces[ns]] if ns in namespaces else [])]))
            if d.s3_egress:
                self._data_path_policy(ns, team, inside)

    def _data_path_policy(self, ns: str, team: TeamData, opts: pulumi.ResourceOptions) -> None:
        if not hasattr(self, "_s3_cidrs"):
            found = aws.ec2.get_managed_prefix_list_output(name=s3_prefix_list_name(str(self.data.region)),
                                                           opts=pulumi.InvokeOutputOptions(parent=self))
            self._s3_cidrs = found.entries.apply(lambda es: sorted(e.cidr for e in es or []))
        typed_resource(f"tenant-{ns}-{cv.NETWORK_POLICY_ALLOW_DATA_PATH}", {
            "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": cv.NETWORK_POLICY_ALLOW_DATA_PATH, "namespace": ns, "labels": labels({cv.TEAM: team.team})},
            "spec": self._s3_cidrs.apply(lambda cidrs: data_path_policy(cidrs)),
        }, opts=opts)

    def _admin_role(self) -> None:
        """The platform admins' role over every team bucket, for the admin roles of cluster.identity."""
        d = self.data
        if not d.admin_principals or not d.teams:
            return
        child = pulumi.ResourceOptions(parent=self)
        role = aws.iam.Role("storage-data-admin", name=d.admin_role_name, assume_role_policy=_json(admin_trust_policy(d)),
                            description=f"Platform admins: every team bucket of {d.cluster}", tags=self.tags, opts=child)
        self.roles["platform-admins"] = role
        aws.iam.RolePolicy("storage-data-admin", role=role.name, policy=_json(admin_policy(d)),
                           opts=child)

    # -- shared file systems -----------------------------------------------------------------------------

    def _subnet_in_zone(self, fs: FileSystemPlan) -> pulumi.Output[str]:
        """One of cluster.subnetIds in the file system's zone (a Lustre file system has one subnet: pulumi-aws 7's
        subnet_ids is a single string)."""
        subnets = aws.ec2.get_subnets_output(filters=[
            aws.ec2.GetSubnetsFilterArgs(name="subnet-id", values=list(self.plan.cluster.subnet_ids)),
            aws.ec2.GetSubnetsFilterArgs(name="availability-zone", values=[fs.availability_zone]),
        ], opts=pulumi.InvokeOutputOptions(parent=self))

        def one_subnet(ids: Sequence[str] | None) -> str:
            if not ids:
                raise ValueError(f"data.fileSystems {fs.name!r}: none of cluster.subnetIds is in {fs.availability_zone!r} "
                                 f"(pool {fs.pool!r}'s zone); add a subnet in that zone to cluster.subnetIds")
            return sorted(ids)[0]  # a Lustre file system has one subnet (CreateFileSystem.SubnetIds, Lustre: one)

        return subnets.ids.apply(one_subnet)

    def _file_system(self, fs: FileSystemPlan, cluster: ClusterAccess, namespaces: Mapping[str, pulumi.Resource]) -> None:
        # prod keeps the file system as it keeps the team's bucket, and with it what it needs to be reached: its
        # security group (EC2 refuses to delete a group a kept file system's interfaces use, which would fail the
        # up), the Lustre rules and its link to the bucket.
        keep = pulumi.ResourceOptions(parent=self, retain_on_delete=self.plan.environment == "prod")
        prefix = f"storage-fsx-{fs.name}"
        tags = {**self.tags, cv.TEAM: fs.team, cv.POOL: fs.pool}
        group = aws.ec2.SecurityGroup(prefix, name=fs.security_group_name, vpc_id=cluster.vpc_id, tags=tags,
                                      description=f"FSx for Lustre {fs.name}: LNET (TCP 988, 1018-1023) with the cluster's nodes",
                                      opts=keep)
        # Lustre traffic both ways between the file system's interfaces and the nodes (FSx for Lustre user guide,
        # limit-access-security-groups.html: inbound and outbound 988 and 1018-1023 with the file system's own
        # group and the clients'; the clients' group admits the file system on the same ports).
        for low, high in cv.LUSTRE_PORT_RANGES:
            ports = f"{low}" if low == high else f"{low}-{high}"
            for peer_name, peer in (("self", group.id), ("nodes", cluster.security_group_id)):
                aws.vpc.SecurityGroupIngressRule(
                    f"{prefix}-in-{peer_name}-{ports}", security_group_id=group.id, referenced_security_group_id=peer,
                    ip_protocol="tcp", from_port=low, to_port=high, tags=tags,
                    description=f"Lustre TCP {ports} from {peer_name}", opts=keep)
                aws.vpc.SecurityGroupEgressRule(
                    f"{prefix}-out-{peer_name}-{ports}", security_group_id=group.id, referenced_security_group_id=peer,
                    ip_protocol="tcp", from_port=low, to_port=high, tags=tags,
                    description=f"Lustre TCP {ports} to {peer_name}", opts=keep)
            aws.vpc.SecurityGroupIngressRule(
                f"{prefix}-nodes-in-{ports}", security_group_id=cluster.security_group_id,
                referenced_security_group_id=group.id, ip_protocol="tcp", from_port=low, to_port=high, tags=tags,
                description=f"Lustre TCP {ports} from FSx {fs.name}", opts=keep)
        # A VPC made here knows its zone's subnet (components/foundation); given subnets are looked up by zone.
        subnet: pulumi.Input[str]
        if cluster.zone_subnets is not None:
            subnet = cluster.zone_subnets[fs.availability_zone]
        else:
            subnet = self._subnet_in_zone(fs)

        lustre = aws.fsx.LustreFileSystem(
            prefix, subnet_ids=subnet, security_group_ids=[group.id],
            deployment_type=fs.deployment_type, storage_capacity=fs.storage_capacity_gib,
            per_unit_storage_throughput=fs.per_unit_storage_throughput, file_system_type_version=LUSTRE_VERSION,
            tags=tags, opts=keep)
        self.file_systems[fs.name] = lustre
        if fs.data_repository is not None:
            r = fs.data_repository
            s3: dict[str, Any] = {}
            if r.auto_import:
                s3["auto_import_policy"] = {"events": list(DRA_EVENTS)}
            if r.auto_export:
                s3["auto_export_policy"] = {"events": list(DRA_EVENTS)}
            aws.fsx.DataRepositoryAssociation(
                prefix, file_system_id=lustre.id, file_system_path=r.file_system_path,
                data_repository_path=r.data_repository_path, batch_import_meta_data_on_create=r.auto_import,
                s3=s3 or None, tags=tags,
                opts=pulumi.ResourceOptions.merge(keep, pulumi.ResourceOptions(depends_on=[self.buckets[fs.team]])))
        deps = [*self.addons.values()]
        volume = typed_resource(f"{prefix}-volume", lustre_volume(fs, lustre.id, lustre.dns_name, lustre.mount_name),
                            opts=pulumi.ResourceOptions(parent=self, depends_on=[lustre, *deps]))
        ns_dep = [namespaces[fs.namespace]] if fs.namespace in namespaces else []
        typed_resource(prefix, claim(fs.namespace, fs.claim, fs.team, "ReadWriteMany"),
                   opts=pulumi.ResourceOptions(parent=self, depends_on=[volume, *ns_dep]))

    def exports(self) -> dict[str, Any]:
        d = self.data
        return {"dataPath": {
            "enabled": d.enabled,
            "addons": dict(d.addons),
            "storageClass": cv.DEFAULT_STORAGE_CLASS,
            "buckets": {t.team: t.bucket for t in d.teams},
            "roles": {t.team: t.role_name for t in d.teams},
            "fileSystems": {f.name: {"pool": f.pool, "team": f.team, "zone": f.availability_zone,
                                     "capacityGiB": f.storage_capacity_gib} for f in d.file_systems},
        }}


def typed_resource(resource_name: str, obj: Mapping[str, Any], opts: pulumi.ResourceOptions | None = None) -> pulumi.CustomResource:
    """A manifest as the provider's typed resource (so the policy pack and render see its kind's type token)."""
    kind, meta = obj["kind"], obj["metadata"]
    if kind == "PersistentVolume":
        return k8s.core.v1.PersistentVolume(resource_name, metadata=meta, spec=obj["spec"], opts=opts)
    if kind == "PersistentVolumeClaim":
        return k8s.core.v1.PersistentVolumeClaim(resource_name, metadata=meta, spec=obj["spec"], opts=opts)
    if kind == "ServiceAccount":
        return k8s.core.v1.ServiceAccount(resource_name, metadata=meta, opts=opts)
    if kind == "NetworkPolicy":
        return k8s.networking.v1.NetworkPolicy(resource_name, metadata=meta, spec=obj["spec"], opts=opts)
    if kind == "StorageClass":
        return k8s.storage.v1.StorageClass(
            resource_name, metadata=meta, provisioner=obj["provisioner"], parameters=obj["parameters"],
            volume_binding_mode=obj["volumeBindingMode"], allow_volume_expansion=obj["allowVolumeExpansion"],
            reclaim_policy=obj["reclaimPolicy"], opts=opts)
    raise TypeError(f"{kind} is not a kind the storage component makes")
