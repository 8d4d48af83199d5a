"""The tenant ValidatingAdmissionPolicies' CEL, evaluated: the prod stack's rendered policies run by a CEL
implementation (cel-python, tests/cel.py) against sample requests, bound as the API server binds them.

Each case is one a tenant could submit; the expected denials are the policies' own messages (the live
layer asserts the same messages from a real kube-apiserver). The namespace is the rendered Namespace
object, with the label the API server adds.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from gpu_platform import conventions as cv
from tests import cel
from tests.conftest import plan_of, rendered
from tests.unit.components.admission_requests import (
    JOB_CONTROLLER, NS, STACK, TAS_NS, TOLERATIONS, VAP, admitted, container, denied_by, job, labels, namespace, pod,
    pod_spec, review, workloads,
)

QUEUE = "workloads that request GPUs must name a Kueue LocalQueue"
WHOLE = "must be whole numbers"
IN_LIMITS = "a GPU request, if set, must equal its limit"
HOST = "hostNetwork, hostPID and hostIPC are not allowed"
TAINT = "a pod that requests no GPU may not tolerate the GPU taint"
NODE_NAME = "spec.nodeName may not be set in team namespaces"
TOPOLOGY = "come only from topology-aware pools"


# --- every expression is CEL ----------------------------------------------------------------------------


def test_every_expression_of_every_policy_parses_as_cel() -> None:
    specs = [r.inputs["spec"] for r in rendered(STACK).by_type(VAP)]
    assert len(specs) == 5
    count = 0
    for spec in specs:
        for part in ("matchConditions", "variables", "validations"):
            for item in spec.get(part, []):
                cel.program(item["expression"])
                count += 1
                if "messageExpression" in item:
                    cel.program(item["messageExpression"])
    assert count > 40


def test_the_parser_rejects_broken_cel() -> None:
    """The check above can fail: an unbalanced expression is a parse error, not a pass."""
    with pytest.raises(cel.celpy.CELParseError):
        cel.program("variables.podSpecs.all(s, has(s.hostNetwork)")


# --- tenant-workloads ------------------------------------------------------------------------------------


def test_a_queued_gpu_job_with_whole_gpus_in_its_limits_is_admitted() -> None:
    admitted(workloads(job()))
    admitted(workloads(job(pod=pod_spec(gpus="8"))))


def test_a_gpu_job_without_a_queue_is_refused_unless_a_controller_made_it() -> None:
    denied_by(workloads(job(queue=False)), QUEUE)
    owned = job(queue=False)
    owned["metadata"]["ownerReferences"] = [{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                                             "name": "js", "uid": "u", "controller": True}]
    # Made by a controller's service account of another namespace: its owner was checked when admitted.
    admitted(workloads(owned, user=JOB_CONTROLLER))
    # The same claim from the tenant, or from a service account of the tenant's own namespace, is not exempt.
    denied_by(workloads(owned), QUEUE)
    denied_by(workloads(owned, user=f"system:serviceaccount:{NS}:default"), QUEUE)
    # Nor is an owner that is no workload controller.
    owned["metadata"]["ownerReferences"][0].update(kind="ConfigMap", apiVersion="v1")
    denied_by(workloads(owned, user=JOB_CONTROLLER), QUEUE)


def test_a_controllers_exemption_covers_the_queue_rules_only() -> None:
    owned = job(queue=False, pod=pod_spec(gpus="0.5", hostNetwork=True))
    owned["metadata"]["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "CronJob", "name": "c",
                                             "uid": "u", "controller": True}]
    denied_by(workloads(owned, user=JOB_CONTROLLER), WHOLE, HOST)


def test_a_job_without_gpus_needs_no_queue() -> None:
    admitted(workloads(job(queue=False, pod=pod_spec(gpus=None))))


GPU_AMOUNTS = [(cv.GPU_RESOURCE, "1", True), (cv.GPU_RESOURCE, "8", True), (cv.GPU_RESOURCE, "1k", True),
               (cv.GPU_RESOURCE, "1.5", False), (cv.GPU_RESOURCE, "500m", False), (cv.GPU_RESOURCE, "abc", False),
               (cv.SHARED_GPU_RESOURCE, "1", True), (cv.SHARED_GPU_RESOURCE, "0.5", False),
               (f"{cv.MIG_RESOURCE_PREFIX}1g.10gb", "7", True), (f"{cv.MIG_RESOURCE_PREFIX}1g.10gb", "2500m", False)]


@pytest.mark.parametrize("resource,amount,whole", GPU_AMOUNTS)
def test_gpu_limits_must_be_whole_numbers(resource: str, amount: str, whole: bool) -> None:
    spec = {"containers": [container(amount, resource=resource)], "restartPolicy": "Never",
            "tolerations": TOLERATIONS}
    decision = workloads(job(pod=spec))
    if whole:
        admitted(decision)
    else:
        denied_by(decision, WHOLE)


def test_a_gpu_request_must_equal_its_limit() -> None:
    def spec(c: dict[str, Any]) -> dict[str, Any]:
        return {"containers": [c], "tolerations": TOLERATIONS}

    admitted(workloads(job(pod=spec(container("2", request="2")))))
    denied_by(workloads(job(pod=spec(container("2", request="1")))), IN_LIMITS)
    # Requested but not limited: Kubernetes would refuse it too, the policy says where GPUs belong.
    denied_by(workloads(job(pod=spec(container(None, request="1")))), IN_LIMITS)


def test_an_init_container_counts_like_any_other() -> None:
    spec = pod_spec(gpus=None, tolerations=TOLERATIONS)
    spec["initContainers"] = [container("1.5")]
    denied_by(workloads(job(pod=spec)), WHOLE)
    denied_by(workloads(job(queue=False, pod=spec)), QUEUE, WHOLE)


@pytest.mark.parametrize("field", ["hostNetwork", "hostPID", "hostIPC"])
def test_host_namespaces_are_refused(field: str) -> None:
    denied_by(workloads(job(pod=pod_spec(**{field: True}))), HOST)
    admitted(workloads(job(pod=pod_spec(**{field: False}))))


def test_a_pod_without_gpus_may_not_tolerate_the_gpu_taint() -> None:
    key = {"key": cv.GPU_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}
    denied_by(workloads(pod(gpus=None, tolerations=[key])), TAINT)
    denied_by(workloads(pod(gpus=None, tolerations=[{"operator": "Exists"}])), TAINT)
    admitted(workloads(pod(gpus=None, tolerations=[{"key": "other", "operator": "Exists"}])))
    # A GPU pod tolerates the taint (the GPU pools' taint is what it is for).
    admitted(workloads(pod(gpus="1", tolerations=[key])))


def test_node_name_is_refused_on_create_only() -> None:
    obj = job(pod=pod_spec(nodeName="gpu-node-0"))
    denied_by(workloads(obj), NODE_NAME)
    # The scheduler binds pods by setting it: an update is not the tenant picking a node.
    admitted(workloads(obj, operation="UPDATE", old=obj))


def test_gpu_work_on_topology_aware_pools_must_ask_for_a_topology() -> None:
    denied_by(workloads(job(ns=TAS_NS)), TOPOLOGY)
    admitted(workloads(job(ns=TAS_NS, tas=True)))
    # Teams whose GPUs are not topology-aware need no annotation.
    admitted(workloads(job(ns=NS)))


@pytest.mark.parametrize("kind", ["DaemonSet", "ReplicaSet", "StatefulSet"])
def test_gpu_workloads_kueue_cannot_queue_are_refused(kind: str) -> None:
    template = {"metadata": {"labels": {"app": "x"}}, "spec": pod_spec()}
    obj = {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": "x", "namespace": NS, "labels": labels(True)},
           "spec": {"selector": {"matchLabels": {"app": "x"}}, "template": template}}
    denied_by(workloads(obj), f"Kueue cannot queue a {kind}")
    template["spec"] = pod_spec(gpus=None)
    admitted(workloads(obj))


def test_a_cronjob_names_its_queue_on_the_job_template() -> None:
    inner = job()["spec"]
    cron = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "nightly", "namespace": NS},
            "spec": {"schedule": "0 3 * * *", "jobTemplate": {"spec": inner}}}
    denied_by(workloads(cron), QUEUE)
    cron["metadata"]["labels"] = labels(True)  # on the CronJob itself Kueue does not read it
    denied_by(workloads(cron), QUEUE)
    cron["spec"]["jobTemplate"]["metadata"] = {"labels": labels(True)}
    admitted(workloads(cron))


def test_integration_kinds_are_read_where_their_pod_templates_are() -> None:
    """LeaderWorkerSet (leader and worker templates), JobSet (a list of replicated Jobs), RayCluster (head and worker
    groups): a whole-number violation deep inside each is found."""
    bad = {"spec": {"containers": [container("0.5")], "tolerations": TOLERATIONS}}
    meta = {"name": "x", "namespace": NS, "labels": labels(True)}
    objs = [
        {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "metadata": meta,
         "spec": {"leaderWorkerTemplate": {"leaderTemplate": {"spec": pod_spec()}, "workerTemplate": bad}}},
        {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": meta,
         "spec": {"replicatedJobs": [{"name": "a", "template": {"spec": {"template": {"spec": pod_spec()}}}},
                                     {"name": "b", "template": {"spec": {"template": bad}}}]}},
        {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": meta,
         "spec": {"headGroupSpec": {"template": {"spec": pod_spec(gpus=None)}},
                  "workerGroupSpecs": [{"groupName": "w", "template": bad}]}},
    ]
    for obj in objs:
        denied_by(workloads(obj), WHOLE)
        fixed = copy.deepcopy(obj)
        for spec in _specs(fixed):
            for c in spec["containers"]:
                if cv.GPU_RESOURCE in c["resources"]["limits"]:
                    c["resources"]["limits"][cv.GPU_RESOURCE] = "1"
        admitted(workloads(fixed))


def _specs(obj: dict[str, Any]) -> list[dict[str, Any]]:
    s = obj["spec"]
    if obj["kind"] == "LeaderWorkerSet":
        return [t["spec"] for t in s["leaderWorkerTemplate"].values()]
    if obj["kind"] == "JobSet":
        return [r["template"]["spec"]["template"]["spec"] for r in s["replicatedJobs"]]
    return [s["headGroupSpec"]["template"]["spec"], *(w["template"]["spec"] for w in s["workerGroupSpecs"])]


def test_objects_being_deleted_are_not_checked() -> None:
    obj = job(queue=False, pod=pod_spec(gpus="0.5", hostNetwork=True))
    assert workloads(obj).denials
    obj["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert workloads(obj, operation="UPDATE", old=obj).matched is False


# --- tenant-priorities -----------------------------------------------------------------------------------


def test_a_team_labels_work_only_with_its_granted_priorities() -> None:
    team = next(t for t in plan_of(STACK).teams if t.namespaces[0] == NS)
    granted = team.namespace_annotations[cv.ALLOWED_PRIORITIES_ANNOTATION].split(",")
    obj = job()
    obj["metadata"]["labels"][cv.PRIORITY_CLASS_LABEL] = granted[0]
    admitted(review(cv.TENANT_PRIORITY_POLICY, obj))
    other = cv.priority_class_name("system-critical")
    assert other not in granted
    obj["metadata"]["labels"][cv.PRIORITY_CLASS_LABEL] = other
    denied_by(review(cv.TENANT_PRIORITY_POLICY, obj),
              f"priority class {other} (label {cv.PRIORITY_CLASS_LABEL}) is not granted to team {team.name}; "
              f"granted: {', '.join(granted)}")
    pinned = job(pod=pod_spec(priorityClassName=other))
    denied_by(review(cv.TENANT_PRIORITY_POLICY, pinned), f"priorityClassName {other} is not granted")


# --- tenant-images ---------------------------------------------------------------------------------------


def _allowed_registries(ns: str) -> list[str]:
    return namespace(ns)["metadata"]["annotations"][cv.ALLOWED_REGISTRIES_ANNOTATION].split(",")


@pytest.mark.parametrize("image,qualified", [
    ("busybox:1.37", None),                       # docker.io/library/busybox: allowed by default
    ("nvcr.io/nvidia/pytorch:25.01-py3", None),
    ("evil.example/fetch", "evil.example/fetch"),  # a dot: a registry host, nobody's official image
    ("someone/tool:2", "docker.io/someone/tool:2"),
    ("nvcr.io.evil.example/nvidia/x:1", "nvcr.io.evil.example/nvidia/x:1"),  # a longer host is another host
    ("localhost/x", "localhost/x"),
])
def test_images_come_from_the_namespaces_registries(image: str, qualified: str | None) -> None:
    assert "docker.io/library" in _allowed_registries(NS) and "nvcr.io/nvidia" in _allowed_registries(NS)
    spec = pod_spec()
    spec["initContainers"] = [container(None, image=image) | {"name": "init"}]
    decision = review(cv.TENANT_IMAGE_POLICY, job(pod=spec))
    if qualified is None:
        admitted(decision)
    else:
        (message,) = decision.denials
        assert f"not allowed: {qualified}; allowed registries: {', '.join(_allowed_registries(NS))}" in message


def test_an_ephemeral_container_is_held_to_the_same_registries() -> None:
    target = pod()
    target["spec"]["ephemeralContainers"] = [{"name": "dbg", "image": "registry.example.com/payload/miner:1.0"}]
    decision = review(cv.TENANT_IMAGE_POLICY, target, operation="UPDATE", old=pod(),
                      sub_resource="ephemeralcontainers")
    (message,) = decision.denials
    assert "not allowed: registry.example.com/payload/miner:1.0;" in message


# --- tenant-job-cleanup ----------------------------------------------------------------------------------


def test_jobs_set_a_bounded_ttl_and_cannot_drop_it() -> None:
    limit = plan_of(STACK).job_max_ttl_seconds
    cleanup = f"must set spec.ttlSecondsAfterFinished, at most {limit} seconds"
    admitted(review(cv.TENANT_JOB_CLEANUP_POLICY, job(ttl=limit)))
    denied_by(review(cv.TENANT_JOB_CLEANUP_POLICY, job(ttl=limit + 1)), cleanup)
    denied_by(review(cv.TENANT_JOB_CLEANUP_POLICY, job(ttl=None)), cleanup)
    # Removing it later is refused; a Job that predates the policy (no TTL before) may still be updated.
    denied_by(review(cv.TENANT_JOB_CLEANUP_POLICY, job(ttl=None), operation="UPDATE", old=job()), cleanup)
    assert review(cv.TENANT_JOB_CLEANUP_POLICY, job(ttl=None), operation="UPDATE", old=job(ttl=None)).matched is False
    # Jobs a workload controller makes are its owner's to clean up.
    owned = job(ttl=None)
    owned["metadata"]["ownerReferences"] = [{"kind": "CronJob", "name": "c", "uid": "u", "controller": True,
                                             "apiVersion": "batch/v1"}]
    assert review(cv.TENANT_JOB_CLEANUP_POLICY, owned, user=JOB_CONTROLLER).matched is False
    cron = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c", "namespace": NS},
            "spec": {"schedule": "@daily", "jobTemplate": {"spec": job(ttl=None)["spec"]}}}
    denied_by(review(cv.TENANT_JOB_CLEANUP_POLICY, cron), cleanup)
    cron["spec"]["jobTemplate"]["spec"]["ttlSecondsAfterFinished"] = 600
    admitted(review(cv.TENANT_JOB_CLEANUP_POLICY, cron))


# --- tenant-network-policies -----------------------------------------------------------------------------


@pytest.mark.parametrize("operation,verb", [("CREATE", "create"), ("UPDATE", "update"), ("DELETE", "delete")])
def test_network_policies_change_only_with_a_cluster_wide_grant(operation: str, verb: str) -> None:
    netpol = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
              "metadata": {"name": cv.NETWORK_POLICY_DEFAULT_DENY, "namespace": NS}, "spec": {"podSelector": {}}}
    obj = None if operation == "DELETE" else netpol
    old = None if operation == "CREATE" else netpol
    guard = cv.TENANT_NETWORK_POLICY_GUARD
    (message,) = review(guard, obj, operation=operation, old=old).denials
    assert "NetworkPolicies in team namespaces are managed by the platform" in message
    # Only a cluster-wide grant of that verb passes: the team's own `admin` RoleBinding, which RBAC lets
    # write NetworkPolicies in its namespace, does not (the guard asks the authorizer without a namespace).
    admitted(review(guard, obj, operation=operation, old=old,
                    grants=(("networking.k8s.io", "networkpolicies", verb, ""),)))
    for grants in ((("networking.k8s.io", "networkpolicies", verb, NS),),
                   (("networking.k8s.io", "networkpolicies", "get", ""),)):
        assert review(guard, obj, operation=operation, old=old, grants=grants).denials, grants
