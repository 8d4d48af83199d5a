"""Where work runs, at admission: where work with and without GPUs may be admitted, as the prod stack's
rendered tenant-workloads policy decides it (CEL run by tests/cel.py, bound as the API server binds it).

- A GPU pod template carries the GPU toleration itself: the pools' Kueue flavors list the GPU taint as a node
  taint, so Kueue gives them only to pod sets that tolerate it, and work without GPUs (which may not) can only
  be given the `cpu-only` flavor. Without the toleration a GPU job would wait forever: refused at creation.
- Work without GPUs runs within the team's CPU-only allowance: a pod set that asks for more (or asks for a
  topology, which the CPU-only flavor does not have) could never be admitted: refused at creation, the
  allowance named.
- Kueue's own update on admission (the flavor's node labels and tolerations, unsuspend) passes for every flavor.
- A container asks for at most one time-sliced replica (the device plugin refuses more).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from gpu_platform import conventions as cv
from tests.conftest import plan_of, rendered
from tests.unit.components.admission_requests import (
    NS, STACK, TAS_NS, TOLERATIONS, admitted, container, denied_by, job, labels, pod, pod_spec, workloads,
)

KUEUE = "system:serviceaccount:kueue-system:kueue-controller-manager"
TOLERATION = "a pod template that requests GPUs must tolerate the GPU taint nvidia.com/gpu=present:NoSchedule itself"
SQUAT = "a pod that requests no GPU may not tolerate the GPU taint"
GPU_LESS_TOPOLOGY = "a pod template that requests no GPU may not ask for a topology"
SHARED = "a container may ask for at most 1 nvidia.com/gpu.shared"
TEAM = next(t for t in plan_of(STACK).teams if t.namespaces[0] == NS)


def allowance_message(team: str, cpu: str, memory: str) -> str:
    return (f"a pod set without GPUs asks for more than team {team}'s CPU-only allowance of {cpu} CPU and {memory} "
            "memory (teams[].limits.cpu and memoryGiB): work without GPUs is admitted only on the Kueue flavor "
            "cpu-only, never on a GPU pool")


def cpu_container(cpu: str, memory: str = "1Gi", name: str = "main") -> dict[str, Any]:
    return {"name": name, "image": "busybox:1.37",
            "resources": {"requests": {"cpu": cpu, "memory": memory}, "limits": {"cpu": cpu, "memory": memory}}}


def cpu_job(*containers: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return job(queue=False, pod={"containers": list(containers), "restartPolicy": "Never"}, **spec)


# --- the GPU toleration ----------------------------------------------------------------------------------


def test_a_gpu_template_without_the_gpu_toleration_is_refused_at_creation() -> None:
    bare = job(pod=pod_spec(tolerations=[]))
    denied_by(workloads(bare), TOLERATION)
    # A toleration of another effect, or of another value, does not tolerate NoSchedule nvidia.com/gpu=present.
    for wrong in ({"key": cv.GPU_TAINT_KEY, "operator": "Exists", "effect": "NoExecute"},
                  {"key": cv.GPU_TAINT_KEY, "operator": "Equal", "value": "absent"}):
        denied_by(workloads(job(pod=pod_spec(tolerations=[wrong]))), TOLERATION)
    for right in ({"key": cv.GPU_TAINT_KEY, "operator": "Equal", "value": cv.GPU_TAINT_VALUE, "effect": "NoSchedule"},
                  {"key": cv.GPU_TAINT_KEY, "operator": "Exists"}, dict(cv.GPU_TOLERATION)):
        admitted(workloads(job(pod=pod_spec(tolerations=[right]))))
    # Every kind that holds GPU pod templates: a RayCluster's GPU worker group too.
    ray = {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "r", "namespace": NS, "labels": labels(True)},
           "spec": {"headGroupSpec": {"template": {"spec": pod_spec(gpus=None)}},
                    "workerGroupSpecs": [{"groupName": "w", "template": {"spec": pod_spec(tolerations=[])}}]}}
    denied_by(workloads(ray), TOLERATION)


def test_kueue_may_update_a_gpu_job_created_before_the_toleration_rule() -> None:
    """Create only: Kueue suspends and restores Jobs it admitted, and one made before the rule must pass."""
    old = job(pod=pod_spec(tolerations=[]))
    new = copy.deepcopy(old)
    new["spec"]["suspend"] = True
    admitted(workloads(new, operation="UPDATE", old=old, user=KUEUE))


def _flavors() -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o["spec"] for o in rendered(STACK).kubernetes_objects() if o["kind"] == "ResourceFlavor"}


def _kueue_admits(obj: dict[str, Any], flavor: dict[str, Any]) -> dict[str, Any]:
    """What Kueue writes on admission (kueue v0.19.2 pkg/podset/podset.go: the flavor's nodeLabels merged into
    the nodeSelector, its tolerations appended unless already there) and the Job unsuspended."""
    out = copy.deepcopy(obj)
    out["spec"]["suspend"] = False
    spec = out["spec"]["template"]["spec"]
    spec["nodeSelector"] = {**spec.get("nodeSelector", {}), **flavor.get("nodeLabels", {})}
    tolerations = spec.setdefault("tolerations", [])
    tolerations += [t for t in flavor.get("tolerations", []) if t not in tolerations]
    return out


def test_kueues_admission_update_passes_for_every_flavor_of_the_stack() -> None:
    """The workload each flavor is given (GPU-less: cpu-only; GPU: its pool), updated as Kueue updates it when it
    admits it there, is never refused: no flavor carries a toleration the policy forbids its pod sets."""
    plan = plan_of(STACK)
    flavors = _flavors()
    cpu = cpu_job(cpu_container("1"), suspend=True)
    admitted(workloads(_kueue_admits(cpu, flavors[cv.CPU_FLAVOR]), operation="UPDATE", old=cpu, user=KUEUE))
    checked = {cv.CPU_FLAVOR}
    for pool in plan.pools:
        team = next((t for t in plan.teams if any(q.pool == pool.name for q in t.quotas)), None)
        if team is None:
            continue
        spec = {"containers": [container("1", resource=pool.resource_name)], "restartPolicy": "Never",
                "nodeSelector": {cv.POOL: pool.name}, "tolerations": copy.deepcopy(TOLERATIONS)}
        created = job(ns=team.namespaces[0], tas=pool.topology is not None, pod=spec, suspend=True)
        admitted(workloads(created))
        admitted(workloads(_kueue_admits(created, flavors[pool.flavor]), operation="UPDATE", old=created, user=KUEUE))
        checked.add(pool.flavor)
    assert checked == set(flavors), sorted(set(flavors) - checked)


# --- work without GPUs -------------------------------------------------------------------------------------


def test_the_team_namespace_carries_its_cpu_only_allowance() -> None:
    annotations = TEAM.namespace_annotations
    assert TEAM.cpu_only_cpu_millis == 8000 and TEAM.cpu_only_memory_mib == 32 * 1024  # prod: the defaults
    assert annotations[cv.CPU_ONLY_CPU_ANNOTATION] == "8" and annotations[cv.CPU_ONLY_MEMORY_ANNOTATION] == "32Gi"


def test_a_pod_set_without_gpus_beyond_the_cpu_only_allowance_is_refused_at_creation() -> None:
    refused = allowance_message(TEAM.name, "8", "32Gi")
    admitted(workloads(cpu_job(cpu_container("8", "32Gi"))))
    denied_by(workloads(cpu_job(cpu_container("8500m"))), refused)
    denied_by(workloads(cpu_job(cpu_container("1", "33Gi"))), refused)
    # A pod's containers add up; a Job's pods too: parallelism, or completions when fewer (Kueue's count).
    denied_by(workloads(cpu_job(cpu_container("5", name="a"), cpu_container("4", name="b"))), refused)
    denied_by(workloads(cpu_job(cpu_container("3"), parallelism=3)), refused)
    admitted(workloads(cpu_job(cpu_container("3"), parallelism=3, completions=2)))
    # A limit without a request is the request (Kubernetes defaults one from the other).
    limits_only = cpu_container("9")
    del limits_only["resources"]["requests"]
    denied_by(workloads(cpu_job(limits_only)), refused)


def test_the_allowance_counts_pod_sets_without_gpus_only_in_any_kind() -> None:
    """A Ray head above the allowance is refused; GPU workers' CPU is theirs, charged to their pool."""
    big_head = {"containers": [cpu_container("16", "64Gi")]}
    workers = pod_spec()
    workers["containers"][0]["resources"]["limits"].update(cpu="48", memory="400Gi")
    workers["containers"][0]["resources"]["requests"].update(cpu="48", memory="400Gi")
    ray = {"apiVersion": "ray.io/v1", "kind": "RayCluster",
           "metadata": {"name": "r", "namespace": NS, "labels": labels(True)},
           "spec": {"headGroupSpec": {"template": {"spec": big_head}},
                    "workerGroupSpecs": [{"groupName": "w", "template": {"spec": workers}}]}}
    denied_by(workloads(ray), allowance_message(TEAM.name, "8", "32Gi"))
    ray["spec"]["headGroupSpec"]["template"]["spec"] = {"containers": [cpu_container("8", "32Gi")]}
    admitted(workloads(ray))


def test_the_allowance_is_checked_on_creation_by_the_tenant_only() -> None:
    big = cpu_job(cpu_container("64"))
    # Kueue's and the tenant's later updates of a Job made before the allowance shrank, and a controller's
    # pods (their Job was checked), are not refused on it.
    admitted(workloads(big, operation="UPDATE", old=big, user=KUEUE))
    pods = pod(queue=False, containers=[cpu_container("64")])
    pods["metadata"]["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "u",
                                            "controller": True}]
    admitted(workloads(pods, user="system:serviceaccount:kube-system:job-controller"))


def test_a_pod_template_without_gpus_may_not_ask_for_a_topology() -> None:
    tas_cpu = cpu_job(cpu_container("1"), tas=True)
    denied_by(workloads(tas_cpu), GPU_LESS_TOPOLOGY)
    admitted(workloads(job(ns=TAS_NS, tas=True)))


def test_a_pod_without_gpus_still_may_not_tolerate_the_gpu_taint() -> None:
    """The other half: the toleration the pools' flavors require is for GPU pod templates only."""
    squatter = job(queue=False, pod={"containers": [cpu_container("1")], "tolerations": TOLERATIONS})
    denied_by(workloads(squatter), SQUAT)


# --- time-sliced pools -------------------------------------------------------------------------------------


@pytest.mark.parametrize("amount,allowed", [("1", True), ("2", False), ("4", False), ("1000m", True)])
def test_a_container_asks_for_at_most_one_time_sliced_replica(amount: str, allowed: bool) -> None:
    spec = {"containers": [container(amount, resource=cv.SHARED_GPU_RESOURCE)], "tolerations": TOLERATIONS}
    decision = workloads(job(pod=spec))
    if allowed:
        admitted(decision)
    else:
        denied_by(decision, SHARED)
        assert "maximum request size for shared resources is 1" in decision.denials[0]


def test_two_replicas_are_two_containers_or_two_pods() -> None:
    """The device plugin checks each container's request, so two containers of one replica each pass."""
    second = container("1", resource=cv.SHARED_GPU_RESOURCE) | {"name": "second"}
    spec = {"containers": [container("1", resource=cv.SHARED_GPU_RESOURCE), second], "tolerations": TOLERATIONS}
    admitted(workloads(job(pod=spec)))
    admitted(workloads(job(pod=spec, parallelism=2)))
