"""Admission requests of a tenant, reviewed by the prod stack's rendered ValidatingAdmissionPolicies as the
API server binds them (CEL run by tests/cel.py): the sample objects a tenant could submit, the namespace as
the API server sees it, and the two verdicts a case asserts. Shared by the admission policies' tests and the
paved-road templates' tests."""

from __future__ import annotations

import copy
import functools
from typing import Any

from gpu_platform import conventions as cv
from tests import cel
from tests.conftest import plan_of, rendered

STACK = "prod"
VAP = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"
TAS = {cv.TAS_PREFERRED_TOPOLOGY_ANNOTATION: cv.TAS_PREFERRED_LEVEL}
MEMBER = "alice"  # a team member: a user, not a service account
JOB_CONTROLLER = "system:serviceaccount:kube-system:job-controller"

KINDS = {  # kind -> (group, version, resource)
    "Pod": ("", "v1", "pods"), "Job": ("batch", "v1", "jobs"), "CronJob": ("batch", "v1", "cronjobs"),
    "Deployment": ("apps", "v1", "deployments"), "StatefulSet": ("apps", "v1", "statefulsets"),
    "ReplicaSet": ("apps", "v1", "replicasets"), "DaemonSet": ("apps", "v1", "daemonsets"),
    "JobSet": ("jobset.x-k8s.io", "v1alpha2", "jobsets"), "PyTorchJob": ("kubeflow.org", "v1", "pytorchjobs"),
    "RayCluster": ("ray.io", "v1", "rayclusters"), "RayJob": ("ray.io", "v1", "rayjobs"),
    "LeaderWorkerSet": ("leaderworkerset.x-k8s.io", "v1", "leaderworkersets"),
    "NetworkPolicy": ("networking.k8s.io", "v1", "networkpolicies"),
}


def policy(name: str) -> dict[str, Any]:
    (spec,) = [r.inputs["spec"] for r in rendered(STACK).by_type(VAP) if r.inputs["metadata"]["name"] == name]
    return spec


@functools.cache
def _namespace(name: str) -> dict[str, Any]:
    (ns,) = [o for o in rendered(STACK).kubernetes_objects() if o["kind"] == "Namespace" and o["metadata"]["name"] == name]
    ns = copy.deepcopy(ns)
    ns["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = name
    return ns


def namespace(name: str) -> dict[str, Any]:
    return copy.deepcopy(_namespace(name))


def team_namespace(topology: bool) -> str:
    """A prod team namespace whose whole GPUs come from topology-aware pools, or one whose do not."""
    for team in plan_of(STACK).teams:
        if bool(team.namespace_annotations.get(cv.TOPOLOGY_RESOURCES_ANNOTATION)) == topology:
            return team.namespaces[0]
    raise AssertionError(f"prod has no team with topology={topology}")


NS = team_namespace(topology=False)
TAS_NS = team_namespace(topology=True)


def review(policy_name: str, obj: dict[str, Any] | None, *, operation: str = "CREATE",
           old: dict[str, Any] | None = None, user: str = MEMBER, sub_resource: str = "",
           grants: tuple[tuple[str, str, str, str], ...] = ()) -> cel.Decision:
    subject = obj or old
    assert subject is not None
    kind = subject["kind"]
    group, version, resource = KINDS[kind]
    ns = subject["metadata"]["namespace"]
    request = cel.Request(kind=kind, group=group, version=version, resource=resource, operation=operation,
                          namespace=ns, name=subject["metadata"]["name"], username=user,
                          sub_resource=sub_resource)
    return cel.review(policy(policy_name), request, obj, old=old, namespace=namespace(ns), grants=grants)


def workloads(obj: dict[str, Any], **kw: Any) -> cel.Decision:
    return review(cv.TENANT_WORKLOAD_POLICY, obj, **kw)


def container(gpus: str | None = None, request: str | None = None, resource: str = cv.GPU_RESOURCE,
              image: str = "busybox:1.37") -> dict[str, Any]:
    limits: dict[str, Any] = {"cpu": "1", "memory": "1Gi"}
    requests: dict[str, Any] = {"cpu": "1", "memory": "1Gi"}
    if gpus is not None:
        limits[resource] = gpus
    if request is not None:
        requests[resource] = request
    return {"name": "main", "image": image, "resources": {"limits": limits, "requests": requests}}


# What a GPU pod template carries itself: the pools' flavors list the GPU taint as a node taint.
TOLERATIONS = [dict(cv.GPU_TOLERATION)]


def pod_spec(gpus: str | None = "1", **extra: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"containers": [container(gpus)], "restartPolicy": "Never"}
    if gpus is not None:
        base["tolerations"] = copy.deepcopy(TOLERATIONS)
    return {**base, **extra}


def labels(queue: bool) -> dict[str, str]:
    return {cv.QUEUE_NAME_LABEL: cv.LOCAL_QUEUE_NAME} if queue else {}


def job(ns: str = NS, queue: bool = True, ttl: int | None = 3600, tas: bool = False, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"template": {"metadata": {"annotations": dict(TAS) if tas else {}},
                                         "spec": spec.pop("pod", None) or pod_spec()}, **spec}
    if ttl is not None:
        body["ttlSecondsAfterFinished"] = ttl
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "train", "namespace": ns, "labels": labels(queue)}, "spec": body}


def pod(ns: str = NS, queue: bool = True, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": ns, "labels": labels(queue)},
            "spec": pod_spec(**spec) if "containers" not in spec else spec}



def denied_by(decision: cel.Decision, *fragments: str) -> None:
    assert decision.matched, "the policy's matchConditions left the request out"
    for fragment in fragments:
        assert any(fragment in d for d in decision.denials), (fragment, decision.denials)
    assert len(decision.denials) == len(fragments), decision.denials


def admitted(decision: cel.Decision) -> None:
    assert decision.matched and decision.denials == [], decision.denials
