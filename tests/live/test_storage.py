"""Storage on the live platform: the team ResourceQuota's claim count and storage as tenants hit them, the data
path's job template (its volumes, service account and fsGroup) through every tenant admission rule, and the
data path's Kubernetes objects as the real API server validates them.

The live stack is `existing` (no AWS), so the data path's plan is built from the same stack with it switched
on (provider eks, a bucket prefix): the team, pool and namespace names are the deployed ones, only the
mounts come from the data path. Requests are made with the team member's client certificate.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
import yaml

from components.storage import claim, default_storage_class, lustre_volume, s3_volume
from gpu_platform import conventions as cv
from gpu_platform.data import FileSystemPlan, scratch_volume
from gpu_platform.jobs import JobRequest, job
from gpu_platform.plan import Plan, build_plan
from gpu_platform.spec import load_stack_config
from tests.live.conftest import STACK_FILE, Live
from tests.live.test_tenants import refused

TEAM = "delta"  # restricted Pod Security, alone on the `shared` pool
QUOTA = f"exceeded quota: {cv.TENANT_QUOTA_NAME}"


def data_plan() -> Plan:
    doc = yaml.safe_load(STACK_FILE.read_text())
    platform = doc["config"]["gpu-platform:platform"]
    platform["cluster"] = {**platform["cluster"], "provider": "eks", "subnetIds": ["subnet-0123456789abcdef0"]}
    platform["data"] = {"enabled": True, "bucketPrefix": "live-data"}
    doc["config"]["aws:region"] = "us-east-1"  # an eks stack names its region (the data path's S3 endpoints)
    spec, _ = load_stack_config(doc)
    return build_plan(spec, "us-east-1")


def claim_of(name: str, size: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": TEAM},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": cv.DEFAULT_STORAGE_CLASS,
                     "resources": {"requests": {"storage": size}}}}


@pytest.fixture
def claims(live: Live):
    try:
        yield live
    finally:
        live.kubectl("delete", "pvc", "--all", "-n", TEAM, "--wait=false", check=False)


def test_claims_within_the_namespaces_storage_quota_are_accepted_and_beyond_it_refused_naming_the_quota(claims) -> None:
    live = claims
    hard = live.team(TEAM).namespace_quota
    assert (hard["requests.storage"], hard["persistentvolumeclaims"]) == ("2Ti", "50")
    live.create(claim_of("checkpoints", "1536Gi"), as_team=TEAM)
    err = refused(live, claim_of("one-too-many", "600Gi"), TEAM)
    assert QUOTA in err
    assert "requested: requests.storage=600Gi, used: requests.storage=1536Gi, limited: requests.storage=2Ti" in err
    # The claim count: 49 more small claims fit, the 51st is refused by count.
    live.create([claim_of(f"shard-{i:02d}", "1Gi") for i in range(49)], as_team=TEAM)
    err = refused(live, claim_of("shard-49", "1Gi"), TEAM)
    assert QUOTA in err
    assert "requested: persistentvolumeclaims=1, used: persistentvolumeclaims=50, limited: persistentvolumeclaims=50" in err


def test_the_data_path_job_template_passes_the_tenant_admission_rules(live: Live) -> None:
    plan = data_plan()
    (j,) = job(plan, JobRequest(team=TEAM, pool="shared", gpus=1, name="data-path"))
    pod_spec = j["spec"]["template"]["spec"]
    assert pod_spec["serviceAccountName"] == cv.DATA_SERVICE_ACCOUNT
    assert [v["name"] for v in pod_spec["volumes"]] == ["dshm", "data", "checkpoints", "scratch"]
    # The service account the platform makes beside the claims (a pod naming a missing one is refused).
    live.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": cv.DATA_SERVICE_ACCOUNT, "namespace": TEAM}}))
    try:
        for scratch_on_nvme in (True, False):  # emptyDir on local NVMe, else a gp3 generic ephemeral volume
            candidate = copy.deepcopy(j)
            spec = candidate["spec"]["template"]["spec"]
            spec["volumes"][3] = scratch_volume(100, scratch_on_nvme, TEAM)
            out = live.kubectl("create", "--dry-run=server", "-o", "name", "-f", "-", as_team=TEAM,
                               input=json.dumps(candidate))
            assert out.stdout.strip() == "job.batch/data-path"
            # Pod Security is enforced on pods (a Job's template only warns): the pod as the Job would make it.
            pod = {"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": "data-path-0", "namespace": TEAM, **candidate["spec"]["template"]["metadata"]},
                   "spec": spec}
            out = live.kubectl("create", "--dry-run=server", "-o", "name", "-f", "-", as_team=TEAM, input=json.dumps(pod))
            assert out.stdout.strip() == "pod/data-path-0"
        # The same pod with a host path beside its volumes is refused, by Pod Security, naming the volume.
        spec = copy.deepcopy(pod["spec"])
        spec["volumes"].append({"name": "host", "hostPath": {"path": "/var/lib"}})
        err = refused(live, {**pod, "spec": spec}, TEAM)
        assert 'violates PodSecurity "restricted:v1.33": restricted volume types (volume "host" uses restricted ' \
               'volume type "hostPath")' in err
    finally:
        live.kubectl("delete", "serviceaccount", cv.DATA_SERVICE_ACCOUNT, "-n", TEAM, "--ignore-not-found", check=False)


def test_the_data_paths_storage_class_volumes_and_claims_are_valid_kubernetes_objects(live: Live) -> None:
    """The real API server's validation (server-side dry run) of what the data path applies: the gp3 class,
    the bucket and checkpoint volumes and claims, and a Lustre volume."""
    plan = data_plan()
    team = plan.data.team(TEAM)
    fs = FileSystemPlan(name="shared", pool="shared", team=TEAM, namespace=TEAM, availability_zone="us-east-1a",
                        deployment_type="SCRATCH_2", storage_capacity_gib=1200, per_unit_storage_throughput=None,
                        security_group_name="live-fsx-shared", data_repository=None)
    objects = [
        default_storage_class(),
        *(s3_volume(plan.data, team, TEAM, c) for c in (cv.DATA_CLAIM, cv.CHECKPOINTS_CLAIM)),
        claim(TEAM, cv.DATA_CLAIM, TEAM, "ReadOnlyMany"),
        claim(TEAM, cv.CHECKPOINTS_CLAIM, TEAM, "ReadWriteMany"),
        lustre_volume(fs, "fs-0123456789abcdef0", "fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com", "abcdefgh"),
        claim(TEAM, fs.claim, TEAM, "ReadWriteMany"),
    ]
    out = live.kubectl("create", "--dry-run=server", "-o", "name", "-f", "-",
                       input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    assert out.stdout.split() == [
        "storageclass.storage.k8s.io/gp3",
        "persistentvolume/delta-team-data", "persistentvolume/delta-team-checkpoints",
        "persistentvolumeclaim/team-data", "persistentvolumeclaim/team-checkpoints",
        "persistentvolume/delta-fsx-shared", "persistentvolumeclaim/fsx-shared",
    ]
