"""What a tenant cannot do on the live platform, refused by name: RBAC, the admission policies, Kueue.

Every request is made with the team member's client certificate (`scripts/local-cluster user`), exactly
as a user's kubeconfig would hold it; each denial is asserted by the policy (or authorizer) that made it
and its message.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from gpu_platform import conventions as cv
from tests.live.conftest import Live

WORKLOADS = f"ValidatingAdmissionPolicy '{cv.TENANT_WORKLOAD_POLICY}'"
PRIORITIES = f"ValidatingAdmissionPolicy '{cv.TENANT_PRIORITY_POLICY}'"


def refused(lv: Live, objects: Any, team: str) -> str:
    out = lv.create(objects, as_team=team, check=False)
    assert out.returncode != 0, f"accepted: {json.dumps(objects)[:300]}"
    return out.stderr


def pod(ns: str, name: str, gpus: int = 0, **spec: Any) -> dict[str, Any]:
    limits: dict[str, str] = {"cpu": "1", "memory": "1Gi"}
    if gpus:
        limits[cv.GPU_RESOURCE] = str(gpus)
    # Whole GPUs come from the topology-aware train pool: a GPU pod asks for a topology, and tolerates the GPU
    # taint, as the template does.
    annotations = {cv.TAS_PREFERRED_TOPOLOGY_ANNOTATION: cv.TAS_PREFERRED_LEVEL} if gpus else {}
    if gpus:
        spec.setdefault("tolerations", [dict(cv.GPU_TOLERATION)])
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": {cv.QUEUE_NAME_LABEL: cv.LOCAL_QUEUE_NAME},
                     "annotations": annotations},
        "spec": {"containers": [{"name": "main", "image": "busybox:1.37",
                                 "resources": {"limits": limits, "requests": {"cpu": "1", "memory": "1Gi"}}}],
                 **spec},
    }


def test_a_tenant_cannot_submit_into_another_teams_namespace_or_make_its_own_queue(live: Live) -> None:
    job = live.job("beta", "train", 2, "intruder")
    err = refused(live, job, "alpha")
    assert "forbidden" in err and "cannot create resource \"jobs\"" in err and f"namespace \"{live.namespace('beta')}\"" in err
    # Nor point a queue of its own at another team's ClusterQueue.
    lq = {"apiVersion": cv.KUEUE_API_VERSION, "kind": "LocalQueue",
          "metadata": {"name": "sneaky", "namespace": live.namespace("alpha")},
          "spec": {"clusterQueue": live.team("beta").cluster_queue}}
    err = refused(live, lq, "alpha")
    assert "forbidden" in err and "cannot create resource \"localqueues\"" in err


@pytest.mark.parametrize("priority", ["system-critical", "production-inference"])
def test_a_tenant_cannot_label_work_with_a_priority_it_is_not_granted(live: Live, priority: str) -> None:
    (job,) = live.job("alpha", "train", 2, f"greedy-{priority}")
    job["metadata"]["labels"][cv.PRIORITY_CLASS_LABEL] = cv.priority_class_name(priority)
    err = refused(live, job, "alpha")
    assert PRIORITIES in err
    assert f"priority class {cv.priority_class_name(priority)} (label {cv.PRIORITY_CLASS_LABEL}) is not granted to team alpha" in err
    assert "granted: training, research, development" in err


def test_a_tenant_cannot_raise_its_pods_priority_class_either(live: Live) -> None:
    (job,) = live.job("alpha", "train", 2, "greedy-pods", priority="research")
    job["spec"]["template"]["spec"]["priorityClassName"] = cv.priority_class_name("system-critical")
    err = refused(live, job, "alpha")
    assert PRIORITIES in err and f"priorityClassName {cv.priority_class_name('system-critical')} is not granted" in err


def test_a_granted_priority_is_accepted(live: Live) -> None:
    objs = live.job("delta", "shared", 1, "granted", priority="production-inference")
    out = live.kubectl("create", "--dry-run=server", "-f", "-", as_team="delta",
                       input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}), check=False)
    assert out.returncode == 0, out.stderr


def test_a_pod_without_gpus_cannot_tolerate_its_way_onto_gpu_nodes(live: Live) -> None:
    ns = live.namespace("alpha")
    squatter = pod(ns, "squatter", tolerations=[{"key": cv.GPU_TAINT_KEY, "operator": "Exists"}])
    err = refused(live, squatter, "alpha")
    assert WORKLOADS in err and "a pod that requests no GPU may not tolerate the GPU taint" in err
    everything = pod(ns, "tolerates-all", tolerations=[{"operator": "Exists"}])
    err = refused(live, everything, "alpha")
    assert WORKLOADS in err and "may not tolerate the GPU taint" in err


def test_a_pod_cannot_pick_its_node_past_the_scheduler(live: Live) -> None:
    """Two layers: Kueue gates every pod of a team namespace (its pod integration), and the API server
    refuses a nodeName on a gated pod; a Job template, which Kueue does not gate, meets the platform's
    policy."""
    err = refused(live, pod(live.namespace("alpha"), "pinned", gpus=1, nodeName="train-0"), "alpha")
    assert "spec.nodeName: Forbidden: cannot be set until all schedulingGates have been cleared" in err
    (job,) = live.job("alpha", "train", 1, "pinned-job")
    job["spec"]["template"]["spec"]["nodeName"] = "train-0"
    err = refused(live, job, "alpha")
    assert WORKLOADS in err and "spec.nodeName may not be set in team namespaces" in err


@pytest.mark.parametrize("kind", ["StatefulSet", "ReplicaSet", "DaemonSet"])
def test_gpu_workloads_kueue_cannot_queue_are_refused(live: Live, kind: str) -> None:
    """StatefulSets (the stack does not enable Kueue's statefulset integration), bare ReplicaSets and
    DaemonSets would run GPUs outside every quota."""
    ns = live.namespace("alpha")
    template = pod(ns, "x", gpus=1)
    template_meta = {"labels": {"app": "x", cv.QUEUE_NAME_LABEL: cv.LOCAL_QUEUE_NAME}}
    spec: dict[str, Any] = {"selector": {"matchLabels": {"app": "x"}},
                            "template": {"metadata": template_meta, "spec": template["spec"]}}
    if kind == "StatefulSet":
        spec["serviceName"] = "x"
    obj = {"apiVersion": "apps/v1", "kind": kind,
           "metadata": {"name": "gpu-" + kind.lower(), "namespace": ns,
                        "labels": {cv.QUEUE_NAME_LABEL: cv.LOCAL_QUEUE_NAME}}, "spec": spec}
    err = refused(live, obj, "alpha")
    assert WORKLOADS in err and f"Kueue cannot queue a {kind}" in err


def test_an_owner_reference_does_not_exempt_a_tenants_own_pod(platform: Live) -> None:
    """A pod claiming a controller owner is still the tenant's. Pointing at a ConfigMap, Kueue's pod
    webhook takes it as a plain pod: queued in the default LocalQueue and gated until admitted. Pointing
    at the tenant's own Job (Kueue leaves pods of Jobs to the Job), the platform's policy refuses it: only
    a workload controller's service account makes exempt pods."""
    live = platform
    ns = live.namespace("alpha")
    owner = json.loads(live.kubectl("create", "configmap", "owner", "-n", ns, "-o", "json", as_team="alpha").stdout)
    (own_job,) = live.job("alpha", "train", 1, "owner-job")
    live.create(own_job, as_team="alpha")
    job_uid = live.get("job", "owner-job", "-n", ns)["metadata"]["uid"]
    try:
        bare = pod(ns, "owned", gpus=1)
        bare["metadata"]["labels"] = {}
        bare["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
                                                "uid": owner["metadata"]["uid"], "controller": True}]
        out = live.kubectl("create", "--dry-run=server", "-o", "json", "-f", "-", as_team="alpha",
                           input=json.dumps(bare))
        queued = json.loads(out.stdout)
        assert queued["metadata"]["labels"][cv.QUEUE_NAME_LABEL] == cv.LOCAL_QUEUE_NAME
        assert {"name": "kueue.x-k8s.io/admission"} in queued["spec"]["schedulingGates"]
        as_job = copy.deepcopy(bare)
        as_job["metadata"]["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": "owner-job",
                                                  "uid": job_uid, "controller": True}]
        err = refused(live, as_job, "alpha")
        assert WORKLOADS in err and "workloads that request GPUs must name a Kueue LocalQueue" in err
    finally:
        live.kubectl("delete", "configmap", "owner", "-n", ns, check=False)


def test_gpu_work_on_topology_aware_pools_must_ask_for_a_topology(live: Live) -> None:
    """alpha's whole GPUs come only from the topology-aware train pool, whose flavor admits a pod set only
    if it asks for a topology (its ClusterQueue also has the CPU-only flavor, so Kueue implies nothing):
    without the annotation the job would wait forever, so admission refuses it and says what to add."""
    (job,) = live.job("alpha", "train", 2, "no-topology")
    del job["spec"]["template"]["metadata"]["annotations"][cv.TAS_PREFERRED_TOPOLOGY_ANNOTATION]
    err = refused(live, job, "alpha")
    assert WORKLOADS in err and f"the team's {cv.GPU_RESOURCE} come only from topology-aware pools" in err
    assert f"{cv.TAS_PREFERRED_TOPOLOGY_ANNOTATION}: {cv.TAS_PREFERRED_LEVEL}" in err
