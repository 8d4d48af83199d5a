"""A team's data outlives `pulumi destroy` on prod: its buckets and its Lustre file system are retained (left in
the account) and belong to the storage component. World: the prod stack rendered under mocks (the shared
render)."""

from __future__ import annotations

from tests.conftest import rendered

LUSTRE = "aws:fsx/lustreFileSystem:LustreFileSystem"


def test_prods_buckets_and_file_system_are_retained_on_delete() -> None:
    prod = rendered("prod")
    # one bucket per team of Pulumi.prod.yaml, one file system (data.fileSystems: pretrain)
    kept = {(x.type.rsplit(":", 1)[-1], x.name, x.parent): x.options["retainOnDelete"]
            for x in prod.resources if x.type in (LUSTRE, "aws:s3/bucket:Bucket")}
    assert kept == {
        ("LustreFileSystem", "storage-fsx-pretrain", "storage"): True,
        ("Bucket", "storage-data-science", "storage"): True,
        ("Bucket", "storage-llm-finetune", "storage"): True,
        ("Bucket", "storage-llm-pretrain", "storage"): True,
        ("Bucket", "storage-recsys", "storage"): True,
        ("Bucket", "storage-search-serving", "storage"): True,
        ("Bucket", "storage-vision", "storage"): True,
    }


def test_what_guards_and_reaches_the_kept_data_is_kept_with_it_and_access_goes() -> None:
    """A team removed from prod keeps its bucket as it was (public access block, encryption, versioning,
    lifecycle, policy: a kept bucket without them would be open and unversioned) and its file system reachable
    (its security group, which EC2 refuses to delete while the kept file system uses it, its Lustre rules, its
    link to the bucket); what gave the team access (role, Pod Identity, claims) is not kept. Staging keeps nothing."""
    prod = rendered("prod")
    kept = {}
    for x in prod.resources:
        if x.parent == "storage" and x.options.get("retainOnDelete"):
            kind = x.type.rsplit(":", 1)[-1]
            kept[kind] = kept.get(kind, 0) + 1
    assert kept == {
        "Bucket": 6, "BucketPublicAccessBlock": 6, "BucketServerSideEncryptionConfiguration": 6,
        "BucketVersioning": 6, "BucketLifecycleConfiguration": 6, "BucketPolicy": 6,
        "LustreFileSystem": 1, "SecurityGroup": 1, "DataRepositoryAssociation": 1,
        # 2 port ranges x (in and out, with itself and the nodes) on its group, and the nodes' group's ingress from it
        "SecurityGroupIngressRule": 6, "SecurityGroupEgressRule": 4,
    }
    gone = {x.type.rsplit(":", 1)[-1] for x in prod.resources if x.parent == "storage" and not x.options.get("retainOnDelete")}
    assert {"Role", "RolePolicy", "PodIdentityAssociation", "PersistentVolumeClaim"} <= gone
    assert not [x.name for x in rendered("staging").resources if x.options.get("retainOnDelete")]
