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
