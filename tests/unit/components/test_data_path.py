"""The data path (docs/data-path.md): per-team buckets and roles, volumes, file systems, add-ons, quotas, egress
and the job template's mounts, read from the prod render (the program under mocks) and its plan. AWS request
shapes are checked with botocore's own parameter validator against the service models (the SDKs' schemas);
IAM documents are linted by parliament; isolation is evaluated by moto in test_data_isolation.py."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from botocore.loaders import Loader
from botocore.model import ServiceModel
from botocore.validate import ParamValidator

from components.storage import data_path_policy, lifecycle_rule_args
from gpu_platform import conventions as cv
from gpu_platform.data import lifecycle_rules, scratch_problem, scratch_volume
from gpu_platform.jobs import JobRequest, job
from gpu_platform.spec import SpecError, load_platform
from tests.conftest import plan_of, platform_raw, rendered
from tests.unit.components.iam_lint import parliament_findings

TEAMS = ("llm-pretrain", "llm-finetune", "vision", "search-serving", "recsys", "data-science")
BUCKET = "aws:s3/bucket:Bucket"
ROLE = "aws:iam/role:Role"
ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"
ADDON = "aws:eks/addon:Addon"
PV = "kubernetes:core/v1:PersistentVolume"
PVC = "kubernetes:core/v1:PersistentVolumeClaim"
_LOADER = Loader()


def model(service: str) -> ServiceModel:
    return ServiceModel(_LOADER.load_service_model(service, "service-2"), service)


def valid_request(service: str, operation: str, params: dict[str, Any]) -> None:
    """botocore's client-side validation of a request against the service model (types, required members,
    enums, min/max): what the AWS SDK would refuse before sending it."""
    report = ParamValidator().validate(params, model(service).operation_model(operation).input_shape)
    assert not report.has_errors(), report.generate_report()


def inputs(type_: str, name: str) -> dict[str, Any]:
    return rendered("prod").one(type_, name).inputs


def doc(type_: str, name: str, key: str) -> dict[str, Any]:
    return json.loads(inputs(type_, name)[key])


# -- buckets ------------------------------------------------------------------------------------------------


def test_every_team_has_its_own_bucket_tagged_with_its_team_and_cost_center() -> None:
    buckets = {r.inputs["bucket"]: r.inputs["tags"] for r in rendered("prod").by_type(BUCKET)}
    assert set(buckets) == {f"acme-ml-prod-{t}" for t in TEAMS}
    assert buckets["acme-ml-prod-llm-pretrain"][cv.TEAM] == "llm-pretrain"
    assert buckets["acme-ml-prod-llm-pretrain"][cv.COST_CENTER] == "cc-1042"


def test_buckets_block_public_access_encrypt_version_and_refuse_plain_http() -> None:
    for team in TEAMS:
        name = f"storage-{team}"
        block = inputs("aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock", name)
        assert [block[k] for k in ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets")] \
            == [True, True, True, True]
        (rule,) = inputs("aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration", name)["rules"]
        assert rule["applyServerSideEncryptionByDefault"] == {"sseAlgorithm": "AES256"}
        assert inputs("aws:s3/bucketVersioning:BucketVersioning", name)["versioningConfiguration"] == {"status": "Enabled"}
        (deny,) = doc("aws:s3/bucketPolicy:BucketPolicy", name, "policy")["Statement"]
        assert deny["Effect"] == "Deny" and deny["Principal"] == "*" and deny["Action"] == "s3:*"
        assert deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
        assert deny["Resource"] == [f"arn:aws:s3:::acme-ml-prod-{team}", f"arn:aws:s3:::acme-ml-prod-{team}/*"]


def test_lifecycle_rules_are_as_configured_and_valid_for_s3() -> None:
    rules = inputs("aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration", "storage-vision")["rules"]
    assert rules == [
        {"id": "expire-scratch", "status": "Enabled", "filter": {"prefix": "scratch/"}, "expiration": {"days": 7}},
        {"id": "expire-failed-run-checkpoints", "status": "Enabled",
         "filter": {"and": {"prefix": "checkpoints/", "tags": {"gpu-platform.io/run-outcome": "failed"}}},
         "expiration": {"days": 14}},
        {"id": "abort-incomplete-uploads", "status": "Enabled", "filter": {"prefix": ""},
         "abortIncompleteMultipartUpload": {"daysAfterInitiation": 2}},
        {"id": "expire-noncurrent-versions", "status": "Enabled", "filter": {"prefix": ""},
         "noncurrentVersionExpiration": {"noncurrentDays": 30}},
    ]
    api_rules = lifecycle_rules(plan_of("prod").data)
    assert [lifecycle_rule_args(r)["id"] for r in api_rules] == [r["id"] for r in rules]
    valid_request("s3", "PutBucketLifecycleConfiguration",
                  {"Bucket": "acme-ml-prod-vision", "LifecycleConfiguration": {"Rules": api_rules}})


# -- roles --------------------------------------------------------------------------------------------------


def test_each_teams_role_allows_exactly_its_own_bucket() -> None:
    policy = doc(ROLE_POLICY, "storage-llm-pretrain", "policy")
    assert policy == {"Version": "2012-10-17", "Statement": [
        {"Sid": "TeamBucket", "Effect": "Allow",
         "Action": ["s3:GetBucketLocation", "s3:ListBucket", "s3:ListBucketMultipartUploads", "s3:ListBucketVersions"],
         "Resource": ["arn:aws:s3:::acme-ml-prod-llm-pretrain"]},
        {"Sid": "TeamObjects", "Effect": "Allow",
         "Action": ["s3:AbortMultipartUpload", "s3:DeleteObject", "s3:GetObject", "s3:GetObjectTagging",
                    "s3:GetObjectVersion", "s3:ListMultipartUploadParts", "s3:PutObject", "s3:PutObjectTagging"],
         "Resource": ["arn:aws:s3:::acme-ml-prod-llm-pretrain/*"]},
    ]}
    for team in TEAMS:
        resources = {r for s in doc(ROLE_POLICY, f"storage-{team}", "policy")["Statement"] for r in s["Resource"]}
        assert resources == {f"arn:aws:s3:::acme-ml-prod-{team}", f"arn:aws:s3:::acme-ml-prod-{team}/*"}, team
    admin = doc(ROLE_POLICY, "storage-data-admin", "policy")
    assert {r for s in admin["Statement"] for r in s["Resource"]} == \
        {f"arn:aws:s3:::acme-ml-prod-{t}{tail}" for t in TEAMS for tail in ("", "/*")}
    assert "s3:DeleteObjectVersion" in admin["Statement"][1]["Action"]
    assert not any("s3:DeleteObjectVersion" in s["Action"] for s in policy["Statement"]), "versions protect checkpoints"


def test_only_pod_identity_in_the_teams_own_namespaces_can_assume_its_role() -> None:
    role = inputs(ROLE, "storage-data-science")
    assert role["name"] == "ml-prod-data-data-science"
    (trust,) = json.loads(role["assumeRolePolicy"])["Statement"]
    assert trust["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert trust["Action"] == ["sts:AssumeRole", "sts:TagSession"]
    assert trust["Condition"] == {"StringEquals": {
        "aws:RequestTag/eks-cluster-name": "ml-prod",
        "aws:RequestTag/kubernetes-namespace": ["data-science", "ds-notebooks"],
        "aws:RequestTag/kubernetes-service-account": "team-data",
    }}
    admin = json.loads(inputs(ROLE, "storage-data-admin")["assumeRolePolicy"])["Statement"][0]
    assert admin["Principal"] == {"AWS": ["arn:aws:iam::123456789012:role/platform-admins"]}
    associations = {(r.inputs["namespace"], r.inputs["serviceAccount"])
                    for r in rendered("prod").by_type("aws:eks/podIdentityAssociation:PodIdentityAssociation")
                    if r.parent == "storage"}
    assert associations == {(ns, "team-data") for t in plan_of("prod").teams for ns in t.namespaces}


# -- add-ons and classes --------------------------------------------------------------------------------------


def test_storage_addons_are_pinned_and_valid_eks_requests() -> None:
    addons = {r.inputs["addonName"]: r.inputs for r in rendered("prod").by_type(ADDON) if r.parent == "storage"}
    assert {n: a.get("addonVersion") for n, a in addons.items()} == {
        "eks-pod-identity-agent": None,  # whatever EKS picks for the cluster's version, as Karpenter's
        "aws-ebs-csi-driver": "v1.64.0-eksbuild.1",
        "aws-mountpoint-s3-csi-driver": "v2.7.0-eksbuild.1",
        "aws-fsx-csi-driver": "v1.9.0-eksbuild.1",
    }
    assert addons["aws-ebs-csi-driver"]["podIdentityAssociations"] == [{"serviceAccount": "ebs-csi-controller-sa"}]
    for name, a in addons.items():
        request = {"clusterName": a["clusterName"], "addonName": name,
                   **({"addonVersion": a["addonVersion"]} if "addonVersion" in a else {}),
                   "resolveConflicts": a["resolveConflictsOnCreate"]}
        if "podIdentityAssociations" in a:
            request["podIdentityAssociations"] = [
                {"serviceAccount": p["serviceAccount"], "roleArn": "arn:aws:iam::123456789012:role/ml-prod-ebs-csi"}
                for p in a["podIdentityAssociations"]]
        valid_request("eks", "CreateAddon", request)
    (attachment,) = [r for r in rendered("prod").by_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
                     if r.name == "storage-ebs-csi"]
    assert attachment.inputs["policyArn"] == "arn:aws:iam::aws:policy/service-role/AmazonEBSCSIDriverPolicy"


def test_the_default_storage_class_is_encrypted_gp3_on_eks_stacks() -> None:
    for stack in ("prod", "staging"):
        (sc,) = rendered(stack).by_type("kubernetes:storage.k8s.io/v1:StorageClass")
        assert sc.inputs["metadata"]["name"] == "gp3"
        assert sc.inputs["metadata"]["annotations"]["storageclass.kubernetes.io/is-default-class"] == "true"
        assert sc.inputs["provisioner"] == "ebs.csi.aws.com"
        assert sc.inputs["parameters"] == {"type": "gp3", "encrypted": "true", "csi.storage.k8s.io/fstype": "ext4"}
        assert sc.inputs["volumeBindingMode"] == "WaitForFirstConsumer"
    assert rendered("local").by_type("kubernetes:storage.k8s.io/v1:StorageClass") == []
    assert not any(r.type.startswith("aws:") for r in rendered("local").custom)


# -- volumes and claims ---------------------------------------------------------------------------------------


def test_each_namespace_gets_its_bucket_read_only_and_its_checkpoints_read_write_with_pod_credentials() -> None:
    data = inputs(PV, "storage-llm-pretrain-team-data-volume")["spec"]
    assert data["accessModes"] == ["ReadOnlyMany"]
    assert data["mountOptions"] == ["region us-east-1", "read-only"]
    assert data["claimRef"] == {"namespace": "llm-pretrain", "name": "team-data"}
    assert data["csi"] == {"driver": "s3.csi.aws.com", "volumeHandle": "llm-pretrain-team-data",
                           "volumeAttributes": {"bucketName": "acme-ml-prod-llm-pretrain", "authenticationSource": "pod"}}
    ckpt = inputs(PV, "storage-llm-pretrain-team-checkpoints-volume")["spec"]
    assert ckpt["accessModes"] == ["ReadWriteMany"]
    assert ckpt["mountOptions"] == ["region us-east-1", "prefix checkpoints/", "allow-delete", "allow-overwrite"]
    claim = inputs(PVC, "storage-ds-notebooks-team-checkpoints")
    assert claim["metadata"]["namespace"] == "ds-notebooks"
    assert claim["spec"] == {"accessModes": ["ReadWriteMany"], "storageClassName": "",
                             "volumeName": "ds-notebooks-team-checkpoints", "resources": {"requests": {"storage": "1Gi"}}}
    handles = [r.inputs["spec"]["csi"]["volumeHandle"] for r in rendered("prod").by_type(PV)]
    assert len(handles) == len(set(handles)), "Kubernetes handles one volume per handle"


def test_namespace_quota_adds_the_platforms_claims_to_the_teams_own() -> None:
    teams = {t.name: t for t in plan_of("prod").teams}
    # llm-pretrain: data, checkpoints and the Lustre file system's claim; 2Ti of its own + 3 x 1Gi.
    assert teams["llm-pretrain"].namespace_quota["persistentvolumeclaims"] == "53"
    assert teams["llm-pretrain"].namespace_quota["requests.storage"] == "2051Gi"
    assert teams["vision"].namespace_quota["persistentvolumeclaims"] == "52"
    assert teams["vision"].namespace_quota["requests.storage"] == "2050Gi"
    assert plan_of("staging").teams[0].namespace_quota["requests.storage"] == "2Ti", "no data path, no claims"


# -- FSx for Lustre -------------------------------------------------------------------------------------------


def test_lustre_is_made_in_its_pools_zone_with_the_lnet_ports_and_linked_to_the_teams_prefix() -> None:
    fs = inputs("aws:fsx/lustreFileSystem:LustreFileSystem", "storage-fsx-pretrain")
    assert fs["subnetIds"] == "subnet-0a1"  # h100-train's zone us-east-1a (harness: subnets in zone order)
    valid_request("fsx", "CreateFileSystem", {
        # (the stacks' subnet ids are short placeholders; a real one has the form EC2 checks)
        "FileSystemType": "LUSTRE", "StorageCapacity": fs["storageCapacity"], "SubnetIds": ["subnet-0123456789abcdef0"],
        "SecurityGroupIds": fs["securityGroupIds"], "FileSystemTypeVersion": fs["fileSystemTypeVersion"],
        "LustreConfiguration": {"DeploymentType": fs["deploymentType"],
                                "PerUnitStorageThroughput": fs["perUnitStorageThroughput"]}})
    assert (fs["deploymentType"], fs["storageCapacity"], fs["perUnitStorageThroughput"]) == ("PERSISTENT_2", 4800, 250)
    dra = inputs("aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation", "storage-fsx-pretrain")
    assert dra["dataRepositoryPath"] == "s3://acme-ml-prod-llm-pretrain/datasets/"
    valid_request("fsx", "CreateDataRepositoryAssociation", {
        "FileSystemId": "fs-0123456789abcdef0", "FileSystemPath": dra["fileSystemPath"],
        "DataRepositoryPath": dra["dataRepositoryPath"], "BatchImportMetaDataOnCreate": dra["batchImportMetaDataOnCreate"],
        "S3": {"AutoImportPolicy": {"Events": dra["s3"]["autoImportPolicy"]["events"]}}})
    r = rendered("prod")
    (group,) = [g for g in r.by_type("aws:ec2/securityGroup:SecurityGroup") if g.parent == "storage"]
    assert group.inputs["name"] == "ml-prod-fsx-pretrain"
    rules = {(x.type.split(":")[-1], x.inputs["securityGroupId"] == group.name + "-id" or x.inputs["securityGroupId"],
              x.inputs["referencedSecurityGroupId"], x.inputs["fromPort"], x.inputs["toPort"], x.inputs["ipProtocol"])
             for x in [*r.by_type("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"),
                       *r.by_type("aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule")] if x.parent == "storage"}
    fsx = fs["securityGroupIds"][0]
    expected = set()
    for low, high in ((988, 988), (1018, 1023)):
        for peer in (fsx, "sg-00000000"):  # itself and the cluster's nodes (harness: the looked-up cluster group)
            expected |= {("SecurityGroupIngressRule", fsx, peer, low, high, "tcp"),
                         ("SecurityGroupEgressRule", fsx, peer, low, high, "tcp")}
        expected.add(("SecurityGroupIngressRule", "sg-00000000", fsx, low, high, "tcp"))  # nodes admit the servers
    assert rules == expected
    pv = inputs(PV, "storage-fsx-pretrain-volume")["spec"]
    assert pv["csi"]["driver"] == "fsx.csi.aws.com" and pv["capacity"] == {"storage": "4800Gi"}
    assert pv["claimRef"] == {"namespace": "llm-pretrain", "name": "fsx-pretrain"}


# -- egress ---------------------------------------------------------------------------------------------------


def test_team_pods_reach_the_pod_identity_agent_and_s3_and_nothing_else_beyond_the_default_deny() -> None:
    spec = data_path_policy(["16.15.192.0/18", "3.5.0.0/19"])
    assert spec == {"podSelector": {}, "policyTypes": ["Egress"], "egress": [
        {"to": [{"ipBlock": {"cidr": "169.254.170.23/32"}}, {"ipBlock": {"cidr": "fd00:ec2::23/128"}}],
         "ports": [{"protocol": "TCP", "port": 80}]},
        {"to": [{"ipBlock": {"cidr": "16.15.192.0/18"}}, {"ipBlock": {"cidr": "3.5.0.0/19"}}],
         "ports": [{"protocol": "TCP", "port": 443}]},
    ]}
    # Under the mocks the S3 prefix list has no entries: only the agent's rule is rendered.
    for ns in ("llm-pretrain", "ds-notebooks"):
        policy = inputs("kubernetes:networking.k8s.io/v1:NetworkPolicy", f"tenant-{ns}-allow-data-path")
        assert policy["metadata"]["namespace"] == ns and policy["spec"] == data_path_policy([])


# -- the job template -----------------------------------------------------------------------------------------


def test_the_job_template_mounts_data_read_only_checkpoints_read_write_scratch_and_the_pools_file_system() -> None:
    (j,) = job(plan_of("prod"), JobRequest(team="llm-pretrain", pool="h100-train", gpus=8, name="pretrain"))
    pod = j["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "team-data"
    assert pod["securityContext"] == {"seccompProfile": {"type": "RuntimeDefault"}, "fsGroup": 65534,
                                      "fsGroupChangePolicy": "OnRootMismatch"}
    assert pod["volumes"][1:] == [
        {"name": "data", "persistentVolumeClaim": {"claimName": "team-data", "readOnly": True}},
        {"name": "checkpoints", "persistentVolumeClaim": {"claimName": "team-checkpoints"}},
        {"name": "scratch", "emptyDir": {"sizeLimit": "100Gi"}},  # p5.48xlarge: on the node's NVMe RAID0
        {"name": "fsx-pretrain", "persistentVolumeClaim": {"claimName": "fsx-pretrain"}},
    ]
    assert pod["containers"][0]["volumeMounts"][1:] == [
        {"name": "data", "mountPath": "/data", "readOnly": True},
        {"name": "checkpoints", "mountPath": "/checkpoints"},
        {"name": "scratch", "mountPath": "/scratch"},
        {"name": "fsx-pretrain", "mountPath": "/fsx/pretrain"},
    ]
    (other,) = job(plan_of("prod"), JobRequest(team="llm-finetune", pool="h100-train", gpus=8, name="ft"))
    assert "fsx-pretrain" not in json.dumps(other), "a file system is its owner's"
    (plain,) = job(plan_of("staging"), JobRequest(team=plan_of("staging").teams[0].name,
                                                  pool=plan_of("staging").teams[0].quotas[0].pool, gpus=1, name="x"))
    assert "serviceAccountName" not in plain["spec"]["template"]["spec"], "no data path, no data mounts"


def test_scratch_without_local_nvme_is_a_claim_deleted_with_the_pod_and_must_fit_the_namespace_quota() -> None:
    assert scratch_volume(100, False, "vision") == {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {
        "metadata": {"labels": {"gpu-platform.io/team": "vision"}},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "gp3",
                 "resources": {"requests": {"storage": "100Gi"}}}}}}
    data = plan_of("prod").data
    assert scratch_problem(data, "vision", "2Ti", 50, 20, local_nvme=False) is None
    problem = scratch_problem(data, "vision", "2Ti", 50, 21, local_nvme=False)
    assert problem is not None and "2100Gi in 21 claims" in problem and "teams[].limits.storage 2Ti" in problem
    assert scratch_problem(data, "vision", "2Ti", 50, 64, local_nvme=True) is None, "NVMe scratch is no claim"


# -- bad input ------------------------------------------------------------------------------------------------


def _problems(data: dict[str, Any], **edit: Any) -> dict[str, str]:
    raw = platform_raw("prod")
    raw["data"] = copy.deepcopy(data)
    for key, value in edit.items():
        raw[key] = value
    with pytest.raises(SpecError) as err:
        load_platform(raw, "us-east-1")
    return {p.path: p.message for p in err.value.problems}


DATA = {"enabled": True, "bucketPrefix": "acme-ml-prod"}
FS = {"name": "pretrain", "pool": "h100-train", "team": "llm-pretrain", "storageCapacityGiB": 4800}


@pytest.mark.parametrize("data, path, why", [
    ({**DATA, "fileSystems": [{**FS, "storageCapacityGiB": 3600}]}, "data.fileSystems[0].storageCapacityGiB",
     "3600 GiB is not a size FSx for Lustre offers for SCRATCH_2 or PERSISTENT_2: 1200, 2400 or a multiple of 2400"),
    ({**DATA, "fileSystems": [{**FS, "deploymentType": "PERSISTENT_2"}]}, "data.fileSystems[0]",
     "perUnitStorageThroughput None is not offered for PERSISTENT_2: 125, 250, 500, 1000"),
    ({**DATA, "lifecycle": {"scratchDays": 0}}, "data.lifecycle.scratchDays", "greater than or equal to 1"),
    ({**DATA, "lifecycle": {"failedCheckpointDays": 0}}, "data.lifecycle.failedCheckpointDays", "greater than or equal to 1"),
    ({**DATA, "bucketPrefix": "Acme_ML"}, "data.bucketPrefix", "is not an S3 bucket name"),
    ({**DATA, "bucketPrefix": "acme.ml"}, "data.bucketPrefix", "has a dot"),
    ({**DATA, "bucketPrefix": "xn--acme"}, "data.bucketPrefix", "starts with 'xn--', which S3 reserves"),
    ({**DATA, "bucketPrefix": "a" * 49}, "data.bucketPrefix",
     "team 'search-serving' (teams[3]): bucket name '" + "a" * 49 + "-search-serving' is 64 characters; S3 allows 3 to 63"),
    ({"bucketPrefix": "acme", "fileSystems": [FS]}, "data", "fileSystems need the data path enabled"),
    ({"enabled": True}, "data", "bucketPrefix is required"),
    ({**DATA, "fileSystems": [{**FS, "pool": "l40s-infer"}]}, "data.fileSystems[0].pool", "has no availabilityZone"),
    ({**DATA, "fileSystems": [{**FS, "team": "vision"}]}, "data.fileSystems[0].team", "has no quota on pool 'h100-train'"),
    ({**DATA, "fileSystems": [{**FS, "namespace": "vision"}]}, "data.fileSystems[0].namespace",
     "is not a namespace of team 'llm-pretrain'"),
])
def test_bad_data_config_is_refused_with_the_field_named(data: dict[str, Any], path: str, why: str) -> None:
    problems = _problems(data)
    assert path in problems, problems
    assert why in problems[path]


def test_the_data_path_is_refused_on_a_cluster_that_is_not_eks() -> None:
    raw = platform_raw("local")
    raw["data"] = dict(DATA)
    with pytest.raises(SpecError) as err:
        load_platform(raw)
    assert {p.path for p in err.value.problems} == {"data.enabled"}
    assert "needs cluster.provider 'eks'" in str(err.value)


# -- IAM documents, linted ------------------------------------------------------------------------------------


def test_every_iam_document_of_the_data_path_passes_parliament() -> None:
    """parliament (PyPI, duo-labs) checks that every action exists, that each resource ARN has the format its
    actions take (s3:ListBucket on a bucket, s3:GetObject on objects) and that each condition key applies to
    its actions. A trust policy has no Resource, which parliament reads as malformed; IAM evaluates it against
    the role itself, so it is linted with the role's ARN as its resource."""
    checked = 0
    for r in rendered("prod").custom:
        if r.parent != "storage":
            continue
        if r.type in (ROLE_POLICY, "aws:s3/bucketPolicy:BucketPolicy"):
            assert parliament_findings(json.loads(r.inputs["policy"])) == [], r.name
            checked += 1
        if r.type == ROLE:
            trust = json.loads(r.inputs["assumeRolePolicy"])
            for statement in trust["Statement"]:
                statement["Resource"] = f"arn:aws:iam::123456789012:role/{r.inputs['name']}"
            assert parliament_findings(trust) == [], r.name
            checked += 1
    assert checked == 7 + 6 + 8  # role policies (6 teams, admins), bucket policies, roles (and EBS CSI's)
    # The linter is not a rubber stamp: an object action on a bucket ARN is found.
    assert parliament_findings({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": ["s3:GetObject"], "Resource": ["arn:aws:s3:::acme-ml-prod-vision"]}]}) \
        == [("RESOURCE_MISMATCH", [{"action": "s3:GetObject", "required_format": "arn:*:s3:::*/*"}])]
