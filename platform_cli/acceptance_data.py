"""Where the acceptance workload reads its data and writes its checkpoints: the team's data path
(docs/data-path.md), on EKS its bucket reached with the pod's own Pod Identity credentials, on the local cluster
the S3-compatible object store beside the real node (localcluster/objectstore.py) reached with the team's keys
from a Secret of its namespace. What the pods get (environment), what is made before the job (the Secret, when
the local store's team has none) and what is removed after it (the run's checkpoints)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from gpu_platform import conventions as cv
from gpu_platform.plan import Plan
from localcluster import objectstore

ENV_PREFIX = "GPU_PLATFORM_ACCEPTANCE_"
LOCAL_RENDEZVOUS_TIMEOUT_S = 90
REPOSITORY = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class DataPath:
    """The team's data path as the workload reaches it."""

    bucket: str
    # an S3-compatible endpoint (path-style), None: AWS S3 with the pod's own credentials
    endpoint: str | None = None
    # the local store's team keys, put in the Secret cv.LOCAL_DATA_SECRET when the namespace has none
    keys: objectstore.Keys | None = None
    # "s3": the cluster has no DNS for the JobSet's pod names (the local one), so the pods meet through the bucket
    rendezvous: str = "dns"

    @property
    def local(self) -> bool:
        return self.endpoint is not None


def local_state_dir() -> Path:
    """The live local cluster's state directory (scripts/local-cluster: LOCAL_CLUSTER_DIR, else .local/cluster)."""
    return Path(os.environ.get("LOCAL_CLUSTER_DIR") or REPOSITORY / ".local" / "cluster")


def data_path(plan: Plan, team: str, store: objectstore.Store | None) -> DataPath | None:
    """The stack's data path for the team (its bucket on EKS), else the local cluster's object store's bucket for
    it, else None."""
    data = plan.data.team(team) if plan.data is not None and plan.data.enabled else None
    if data is not None:
        return DataPath(data.bucket)
    if store is not None and team in store.buckets:
        return DataPath(store.buckets[team], store.endpoint, store.team_keys[team], rendezvous="s3")
    return None


def pod_env(data: DataPath, name: str, window_s: int) -> list[dict[str, Any]]:
    """What train.py reads (its Config.from_env) beyond the template's GPU_PLATFORM_NODES, _RANK, _COORDINATOR: the
    bucket and run prefix, the window, a checkpoint every sixth of it (at least every 5 s), the pod's address
    and the JobSet's restart attempt (downward API), and on the local store its endpoint and the team's keys."""
    plain = {"S3_BUCKET": data.bucket, "WINDOW_SECONDS": str(window_s), "CHECKPOINT_PREFIX": checkpoint_prefix(name),
             "CHECKPOINT_SECONDS": str(max(5, window_s // 6)), "RENDEZVOUS": data.rendezvous}
    if data.endpoint:
        plain["S3_ENDPOINT"] = data.endpoint
        # The local real node starts both pods within seconds of each other: a rendezvous that has not met in
        # 90 s will not (the workload's default, 300 s, leaves room for image pulls on separate EKS nodes).
        plain["RENDEZVOUS_TIMEOUT_SECONDS"] = str(LOCAL_RENDEZVOUS_TIMEOUT_S)
    env: list[dict[str, Any]] = [{"name": ENV_PREFIX + k, "value": v} for k, v in plain.items()]
    env += [
        {"name": ENV_PREFIX + "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        {"name": ENV_PREFIX + "ATTEMPT", "valueFrom": {"fieldRef": {
            "fieldPath": f"metadata.labels['{cv.JOBSET_RESTART_ATTEMPT_LABEL}']"}}},
    ]
    if data.local:
        env += [{"name": var, "valueFrom": {"secretKeyRef": {"name": cv.LOCAL_DATA_SECRET, "key": var}}}
                for var in (cv.S3_ACCESS_KEY_ENV, cv.S3_SECRET_KEY_ENV)]
        # botocore needs a region to sign with; the local store accepts any
        env.append({"name": "AWS_DEFAULT_REGION", "value": "us-east-1"})
    return env


def checkpoint_prefix(name: str) -> str:
    return f"{cv.CHECKPOINTS_PREFIX}{name}/"


def credentials_secret(data: DataPath, namespace: str, team: str) -> dict[str, Any] | None:
    """The team's S3 keys as a Secret of its namespace (the local store's stand-in for Pod Identity); None on EKS."""
    if data.keys is None:
        return None
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": cv.LOCAL_DATA_SECRET, "namespace": namespace,
                         "labels": {cv.TEAM: team, cv.MANAGED_BY: cv.MANAGED_BY_VALUE}},
            "stringData": {cv.S3_ACCESS_KEY_ENV: data.keys.access_key, cv.S3_SECRET_KEY_ENV: data.keys.secret_key}}


def run_prefixes(name: str) -> tuple[str, str]:
    """What a run leaves in the bucket: its checkpoints, and its rendezvous objects under scratch/ (train.py
    rendezvous_key)."""
    return checkpoint_prefix(name), f"{cv.SCRATCH_PREFIX}{name}/"


def remove_run_objects(data: DataPath, name: str, progress: Callable[[str], None]) -> None:
    """Delete the run's objects (run_prefixes), with the team's keys locally or the caller's AWS credentials on
    EKS; a failure is reported, not raised (the job is already gone)."""
    for prefix in run_prefixes(name):
        _remove_prefix(data, prefix, progress)


def _remove_prefix(data: DataPath, prefix: str, progress: Callable[[str], None]) -> None:
    try:
        import boto3
        from botocore.config import Config

        if data.local and data.keys is not None:
            s3 = boto3.client("s3", endpoint_url=data.endpoint, aws_access_key_id=data.keys.access_key,
                              aws_secret_access_key=data.keys.secret_key, region_name="us-east-1",
                              config=Config(s3={"addressing_style": "path"}))
        else:
            s3 = boto3.client("s3")
        keys = [o["Key"] for page in s3.get_paginator("list_objects_v2").paginate(Bucket=data.bucket, Prefix=prefix)
                for o in page.get("Contents", [])]
        for i in range(0, len(keys), 1000):
            s3.delete_objects(Bucket=data.bucket, Delete={"Objects": [{"Key": k} for k in keys[i:i + 1000]]})
        progress(f"removed {len(keys)} object(s) under s3://{data.bucket}/{prefix}")
    except Exception as err:  # noqa: BLE001 - reported; the objects can be removed by hand
        progress(f"could not remove s3://{data.bucket}/{prefix} (remove it by hand): {type(err).__name__}: {err}")
