"""The workload controllers, live: JobSet, Kubeflow Trainer, KubeRay and LeaderWorkerSet (the real controllers,
built from their Go modules, localcluster/workloads.py) run what tenants submit from the paved-road templates
(`python -m platform_cli job --kind ...`), queued by the real Kueue and placed by the real scheduler on nodes
that exist (the training pool, topology-aware, whole) or that Karpenter adds (mig, shared: from 0).

What "completes" means per kind here: KWOK plays every kubelet, so a pod runs for the duration it carries and
then succeeds. A JobSet and a TrainJob (a JobSet underneath) complete when their Jobs do, as on a real
cluster. A RayJob cannot: its operator asks the Ray head's dashboard (HTTP, port 8265) for the Ray job's
state, and no Ray runs on a simulated node. So a RayJob is proven up to what Kubernetes does: one Kueue
workload for head and workers, admitted whole, the head on CPU capacity, the workers on the GPU pool, all
Running; then it is deleted and the quota must come back (docs/submitting-work.md says the same).
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from components.admission import RULES
from gpu_platform.jobs import JobRequest
from gpu_platform.workload_templates import template
from tests.live.conftest import Live, TIMINGS, cv, is_true, wait_for

# Labels the controllers put on the pods they make (sigs.k8s.io/jobset api/jobset/v1alpha2 JobSetNameKey;
# ray-operator pkg/utils/constant.go RayClusterLabelKey, RayNodeTypeLabelKey; sigs.k8s.io/lws api/leaderworkerset/v1 SetNameLabelKey).
JOBSET_NAME = "jobset.sigs.k8s.io/jobset-name"
RAY_CLUSTER = "ray.io/cluster"
RAY_NODE_TYPE = "ray.io/node-type"
LWS_NAME = "leaderworkerset.sigs.k8s.io/name"
TENANT_POLICY = "ValidatingAdmissionPolicy 'tenant-workloads.gpu-platform.io'"
PRIORITY_POLICY = "ValidatingAdmissionPolicy 'tenant-priorities.gpu-platform.io'"
IMAGES_POLICY = "ValidatingAdmissionPolicy 'tenant-images.gpu-platform.io'"


def submit(live: Live, team: str, kind: str, pool: str, gpus: int, name: str, **kw: Any) -> list[dict[str, Any]]:
    objs = template(live.plan, JobRequest(team=team, pool=pool, gpus=gpus, kind=kind, name=name, **kw))
    live.create(objs, as_team=team)
    return objs


def owned_workloads(live: Live, team: str, kind: str, name: str) -> list[dict[str, Any]]:
    return [w for w in live.workloads(team)
            if any(o.get("kind") == kind and o.get("name") == name for o in w["metadata"].get("ownerReferences", []))]


def pods(live: Live, team: str, selector: str) -> list[dict[str, Any]]:
    return live.get("pods", "-n", live.namespace(team), "-l", selector)["items"]


def all_running(ps: list[dict[str, Any]], n: int) -> bool:
    return len(ps) == n and all(p["status"].get("phase") == "Running" for p in ps)


def node_labels(live: Live, name: str) -> dict[str, str]:
    return live.get("node", name)["metadata"]["labels"]


def test_a_four_worker_jobset_is_one_workload_gang_admitted_on_one_block_and_completes(platform: Live) -> None:
    live = platform
    t0 = time.monotonic()
    submit(live, "alpha", "jobset", "train", 2, "js-train", nodes=4, duration="20s")
    wl = wait_for(lambda: (lambda ws: ws[0] if len(ws) == 1 and is_true(ws[0], "Admitted") else None)(
        owned_workloads(live, "alpha", "JobSet", "js-train")), 60, "one admitted Workload for JobSet js-train")
    # one pod set of 4, admitted whole with a topology assignment (TAS)
    (ps_assign,) = wl["status"]["admission"]["podSetAssignments"]
    assert ps_assign["count"] == 4 and ps_assign.get("topologyAssignment")
    wait_for(lambda: all_running(pods(live, "alpha", f"{JOBSET_NAME}=js-train"), 4), 60, "4 JobSet pods Running")
    TIMINGS["live: jobset, submission to 4 pods Running"] = round(time.monotonic() - t0, 1)
    running = pods(live, "alpha", f"{JOBSET_NAME}=js-train")
    blocks = {node_labels(live, p["spec"]["nodeName"])[cv.TOPOLOGY_LEVELS[2]] for p in running}
    assert len(blocks) == 1, f"the gang spans network blocks {blocks}"
    assert live.usage("alpha", "train", "nvidia.com/gpu")[0] == 8
    wait_for(lambda: is_true(live.get("jobset", "js-train", "-n", live.namespace("alpha")), "Completed"), 90,
             "JobSet js-train Completed")
    wait_for(lambda: live.usage("alpha", "train", "nvidia.com/gpu")[0] == 0, 60, "alpha's train quota released")


def test_a_two_node_trainjob_runs_as_one_workload_and_completes(platform: Live) -> None:
    live = platform
    t0 = time.monotonic()
    submit(live, "beta", "trainjob", "train", 8, "tj-train", nodes=2, duration="20s")
    wl = wait_for(lambda: (lambda ws: ws[0] if len(ws) == 1 and is_true(ws[0], "Admitted") else None)(
        owned_workloads(live, "beta", "TrainJob", "tj-train")), 60, "one admitted Workload for TrainJob tj-train")
    assert sum(p["count"] for p in wl["status"]["admission"]["podSetAssignments"]) == 2
    # Trainer runs it as a JobSet of the same name.
    wait_for(lambda: all_running(pods(live, "beta", f"{JOBSET_NAME}=tj-train"), 2), 60, "2 TrainJob pods Running")
    TIMINGS["live: trainjob, submission to 2 pods Running"] = round(time.monotonic() - t0, 1)
    assert live.usage("beta", "train", "nvidia.com/gpu")[0] == 16
    wait_for(lambda: is_true(live.get("trainjob", "tj-train", "-n", live.namespace("beta")), "Complete"), 90,
             "TrainJob tj-train Complete")
    wait_for(lambda: live.usage("beta", "train", "nvidia.com/gpu")[0] == 0, 60, "beta's train quota released")


def test_a_rayjob_puts_its_head_on_cpu_capacity_and_its_workers_on_the_pool(platform: Live) -> None:
    live = platform
    t0 = time.monotonic()
    submit(live, "alpha", "rayjob", "train", 8, "ray-train", nodes=1, duration="10m")
    wl = wait_for(lambda: (lambda ws: ws[0] if len(ws) == 1 and is_true(ws[0], "Admitted") else None)(
        owned_workloads(live, "alpha", "RayJob", "ray-train")), 60, "one admitted Workload for RayJob ray-train")
    assert {p["name"] for p in wl["status"]["admission"]["podSetAssignments"]} >= {"head", "gpu-workers"}
    cluster = wait_for(lambda: live.get("rayjob", "ray-train", "-n", live.namespace("alpha"))
                       .get("status", {}).get("rayClusterName"), 60, "the RayJob's RayCluster")
    wait_for(lambda: all_running(pods(live, "alpha", f"{RAY_CLUSTER}={cluster}"), 2), 90, "Ray head and worker Running")
    TIMINGS["live: rayjob, submission to head and worker Running"] = round(time.monotonic() - t0, 1)
    by_type = {p["metadata"]["labels"][RAY_NODE_TYPE]: p for p in pods(live, "alpha", f"{RAY_CLUSTER}={cluster}")}
    head_node = node_labels(live, by_type["head"]["spec"]["nodeName"])
    worker_node = node_labels(live, by_type["worker"]["spec"]["nodeName"])
    assert cv.POOL not in head_node            # a CPU node: no GPU pool's
    assert worker_node[cv.POOL] == "train"
    assert live.usage("alpha", "train", "nvidia.com/gpu")[0] == 8
    live.kubectl("delete", "rayjob", "ray-train", "-n", live.namespace("alpha"), as_team="alpha")
    wait_for(lambda: live.usage("alpha", "train", "nvidia.com/gpu")[0] == 0, 90, "alpha's train quota released")


# A tenant's refusals, one per rule, for every new kind: (kind, team, pool, gpus per pod, pods). LeaderWorkerSets
# are inference only: delta's shared pool.
KINDS = [("jobset", "alpha", "train", 2, 2), ("trainjob", "alpha", "train", 8, 1), ("rayjob", "alpha", "train", 8, 1),
         ("lws", "delta", "shared", 1, 2)]


def _pod_specs(obj: Any) -> list[dict[str, Any]]:
    """Every pod spec inside an object (the same walk for every kind: each `spec` that has `containers`)."""
    found: list[dict[str, Any]] = []
    if isinstance(obj, dict):
        if isinstance(obj.get("containers"), list):
            found.append(obj)
        for v in obj.values():
            found += _pod_specs(v)
    elif isinstance(obj, list):
        for v in obj:
            found += _pod_specs(v)
    return found


def _wrong_queue(obj: dict[str, Any]) -> None:
    obj["metadata"]["labels"][cv.QUEUE_NAME_LABEL] = "other"


def _forged_priority(obj: dict[str, Any]) -> None:
    # a platform priority the team is not granted: alpha holds training, research, development; delta
    # production-inference and development
    forged = "training" if obj["metadata"]["namespace"] == "delta" else "production-inference"
    obj["metadata"]["labels"][cv.PRIORITY_CLASS_LABEL] = forged


def _unlisted_image(obj: dict[str, Any]) -> None:
    if obj["kind"] == "TrainJob":   # its trainer's image (a runtime patch's containers carry no image field)
        obj["spec"].setdefault("trainer", {})["image"] = "evil.example.com/miner:1"
        return
    for spec in _pod_specs(obj):
        for c in spec["containers"]:
            c["image"] = "evil.example.com/miner:1"


def _host_path(obj: dict[str, Any]) -> None:
    for spec in _pod_specs(obj):
        spec.setdefault("volumes", []).append({"name": "host", "hostPath": {"path": "/var/run"}})


def _another_teams_pool(obj: dict[str, Any]) -> None:
    for spec in _pod_specs(obj):
        if spec.get("nodeSelector", {}).get(cv.POOL):
            spec["nodeSelector"][cv.POOL] = "mig"


REFUSALS = {"queue-name": _wrong_queue, "priority-label": _forged_priority, "image-registry": _unlisted_image,
            "host-path": _host_path, "team-pools": _another_teams_pool}


@pytest.mark.parametrize("kind,team,pool,gpus,nodes", KINDS, ids=[k[0] for k in KINDS])
def test_every_refusal_of_a_new_kind_names_its_rule(live: Live, kind: str, team: str, pool: str, gpus: int,
                                                    nodes: int) -> None:
    """Refused on the real API server by the tenant admission policy, each by the rule it breaks, before any
    controller sees the object."""
    refused = {}
    for rule, forge in REFUSALS.items():
        objs = template(live.plan, JobRequest(team=team, pool=pool, gpus=gpus, kind=kind, name=f"bad-{rule}",
                                              nodes=nodes))
        (obj,) = [o for o in objs if o["kind"] not in ("Service", "PodDisruptionBudget")]
        forge(obj)
        out = live.kubectl("create", "--dry-run=server", "-f", "-", as_team=team, check=False, input=json.dumps(obj))
        policy = {"priority-label": PRIORITY_POLICY, "image-registry": IMAGES_POLICY}.get(rule, TENANT_POLICY)
        refused[rule] = out.returncode != 0 and policy in out.stderr and RULES[rule] in out.stderr
        assert refused[rule], f"{kind} with {rule} broken: {out.stderr or 'accepted'}"
    assert sorted(refused) == sorted(REFUSALS)


def test_production_inference_preempts_lower_priority_work_which_is_requeued_not_failed(platform: Live) -> None:
    """delta's pool (shared: 16 time-sliced units, one node, from 0) full of `development` work; a
    `production-inference` LeaderWorkerSet (one group of 2 pods) takes its place by priority preemption."""
    live = platform
    ns = live.namespace("delta")
    live.submit("delta", "shared", 1, "batch-dev", nodes=16, priority="development", duration="10m")
    wait_for(lambda: len([p for p in live.pods("delta", "batch-dev") if p["status"].get("phase") == "Running"]) == 16,
             120, "16 development pods Running on the shared pool")
    t0 = time.monotonic()
    submit(live, "delta", "lws", "shared", 1, "serve", nodes=2, duration="10m")
    wait_for(lambda: all_running(pods(live, "delta", f"{LWS_NAME}=serve"), 2), 90, "the serving group's 2 pods Running")
    TIMINGS["live: lws, submission to 2 pods Running by preemption"] = round(time.monotonic() - t0, 1)
    wl = live.workload("delta", "batch-dev")
    evicted = next(c for c in wl["status"]["conditions"] if c["type"] == "Evicted")
    assert evicted["reason"] == "Preempted", evicted
    assert not is_true(wl, "Admitted") and not is_true(wl, "Finished")
    job = live.get("job", "batch-dev", "-n", ns)
    assert job["spec"]["suspend"] is True                       # requeued: suspended, waiting for quota again
    assert not any(c["type"] == "Failed" and c["status"] == "True" for c in job["status"].get("conditions", []))
