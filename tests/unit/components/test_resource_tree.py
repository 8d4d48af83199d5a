"""Where prod's resources hang in the stack's tree: a resource's parents are part of its URN, so one moved
(a dropped `parent=`) is deleted and made anew on the next `pulumi up`, and a Kubernetes provider moved
replaces every object it applies. World: the prod stack rendered under mocks (the shared render)."""

from __future__ import annotations

from tests.conftest import rendered


def test_the_kubernetes_provider_and_every_component_hang_under_the_platform() -> None:
    r = rendered("prod")
    assert [(x.name, x.parent) for x in r.resources if x.type == "pulumi:providers:kubernetes"] == [("k8s", "platform")]
    assert [(x.type, x.name) for x in r.resources if x.parent is None] == [("gpu-platform:index:GpuPlatform", "platform")]
    assert sorted((x.type, x.name) for x in r.resources if x.parent == "platform" and not x.custom) == [
        ("gpu-platform:admission:Admission", "admission"),
        ("gpu-platform:autoscaler:ClusterAutoscaler", "cluster-autoscaler"),
        ("gpu-platform:efa:EfaDevicePlugin", "efa-device-plugin"),
        ("gpu-platform:gpu_operator:GpuOperator", "gpu-operator"),
        ("gpu-platform:monitoring:Monitoring", "monitoring"),
        ("gpu-platform:node_pools:NodePools", "node-pools"),
        ("gpu-platform:observability:Observability", "observability"),
        ("gpu-platform:queues:Queues", "queues"),
        ("gpu-platform:storage:Storage", "storage"),
        ("gpu-platform:tenancy:Tenancy", "tenancy"),
        ("gpu-platform:workloads:WorkloadControllers", "workload-controllers"),
        ("kubernetes:yaml/v2:ConfigFile", "provisioning-request-crd"),
    ]


def test_every_aws_resource_of_the_data_path_hangs_under_storage() -> None:
    parents = {(x.type.rsplit(":", 1)[1], x.parent) for x in rendered("prod").resources
               if x.type.startswith(("aws:s3/", "aws:fsx/")) or (x.type.startswith("aws:iam/") and x.name.startswith("storage-"))}
    assert parents == {(kind, "storage") for kind in (
        "DataRepositoryAssociation", "LustreFileSystem", "Role", "RolePolicy", "RolePolicyAttachment", "Bucket",
        "BucketLifecycleConfiguration", "BucketPolicy", "BucketPublicAccessBlock",
        "BucketServerSideEncryptionConfiguration", "BucketVersioning")}
