"""Where work runs, as a tenant hits it on the live platform (the real API server, Kueue v0.19.2,
kube-scheduler and KWOK nodes of tests/live/stack.yaml).

Item 1: work without GPUs runs inside the team's CPU-only allowance on CPU nodes, or is refused at creation
with the allowance named; it is never admitted on a GPU pool's flavor and left unable to start (before the
fix, a GPU-less Job arriving while the allowance was in use was admitted on `train`, and the tenant policy
then refused Kueue's own update that added the flavor's GPU toleration).
Item 2: a container asking for two time-sliced replicas is refused by the tenant workload policy (the
device plugin would refuse it at the kubelet, after Kueue admitted it).
"""

from __future__ import annotations

import json
import time
from typing import Any

from gpu_platform import conventions as cv
from gpu_platform.nodes import cpu_node_name
from tests.live.conftest import Live, condition, is_true, wait_for
from tests.live.test_tenants import WORKLOADS, refused


def cpu_job(lv: Live, team: str, name: str, cpu: str, memory: str, *, duration: str = "1h",
            annotations: dict[str, str] | None = None) -> dict[str, Any]:
    """A Job without GPUs as a tenant writes one: no queue label (Kueue gives it the `default` LocalQueue)."""
    resources = {"requests": {"cpu": cpu, "memory": memory}, "limits": {"cpu": cpu, "memory": memory}}
    return {
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": lv.namespace(team)},
        "spec": {"ttlSecondsAfterFinished": lv.plan.job_ttl_seconds, "template": {
            "metadata": {"annotations": {cv.SIM_DURATION_ANNOTATION: duration, **(annotations or {})}},
            "spec": {"restartPolicy": "Never", "containers": [{
                "name": "main", "image": "busybox:1.37", "command": ["true"], "resources": resources}]},
        }},
    }


def test_work_without_gpus_waits_for_its_allowance_and_never_spills_onto_a_gpu_pool(platform: Live) -> None:
    """gamma's ClusterQueue has the CPU-only flavor, then `mig` (not topology-aware, 14 slices' worth of CPU).
    Before the fix, a GPU-less Job arriving while the allowance was in use was admitted on `mig`: Kueue
    added the pool's node labels and GPU toleration, and the tenant policy refused Kueue's update."""
    lv = platform
    team = lv.team("gamma")
    cpu = team.namespace_annotations[cv.CPU_ONLY_CPU_ANNOTATION]
    memory = team.namespace_annotations[cv.CPU_ONLY_MEMORY_ANNOTATION]
    assert (cpu, memory) == ("8", "32Gi")  # the default allowance: a Ray head at Ray's starting size
    lv.create(cpu_job(lv, "gamma", "holder", cpu, memory), as_team="gamma")
    held = wait_for(lambda: (w := lv.workload("gamma", "holder")) and is_true(w, "Admitted") and w, 60, "holder admitted")
    assert held["status"]["admission"]["podSetAssignments"][0]["flavors"]["cpu"] == cv.CPU_FLAVOR
    # The allowance is in use: the next one waits, and Kueue says why the pool is not for it.
    lv.create(cpu_job(lv, "gamma", "waiter", "1", "1Gi", duration="2s"), as_team="gamma")
    # kueue v0.19.2 flavorassigner.go: "untolerated taint %s in flavor %s" of a corev1.Taint value.
    untolerated = f"untolerated taint {{{cv.GPU_TAINT_KEY} {cv.GPU_TAINT_VALUE} {cv.TAINT_EFFECT} <nil>}} in flavor mig"
    wl = wait_for(lambda: (w := lv.workload("gamma", "waiter")) and ("admission" in w.get("status", {}) or untolerated in (
        (condition(w, "QuotaReserved") or {}).get("message", ""))) and w, 60, "Kueue's verdict on the waiter")
    assert "admission" not in wl["status"], f"admitted on {wl['status']['admission']['podSetAssignments'][0]['flavors']}"
    message = condition(wl, "QuotaReserved")["message"]
    assert f"insufficient unused quota for cpu in flavor {cv.CPU_FLAVOR}" in message, message
    time.sleep(3)  # another scheduling pass: still not admitted anywhere
    wl = lv.workload("gamma", "waiter")
    assert not is_true(wl, "QuotaReserved") and "admission" not in wl.get("status", {}), wl.get("status")
    assert lv.usage("gamma", "mig", "cpu")[0] == 0.0
    # The allowance frees up: the waiter is admitted on it, Kueue's update passes admission, it runs on a CPU node.
    lv.kubectl("delete", "job", "holder", "-n", lv.namespace("gamma"), "--wait=false")
    wl = wait_for(lambda: (w := lv.workload("gamma", "waiter")) and is_true(w, "Admitted") and w, 60, "waiter admitted")
    assert wl["status"]["admission"]["podSetAssignments"][0]["flavors"] == {"cpu": cv.CPU_FLAVOR, "memory": cv.CPU_FLAVOR}
    pods = wait_for(lambda: [p for p in lv.pods("gamma", "waiter") if p["spec"].get("nodeName")], 60, "waiter bound")
    assert pods[0]["spec"]["nodeName"].startswith(cpu_node_name(0).rsplit("-", 1)[0])
    wait_for(lambda: is_true(lv.workload("gamma", "waiter"), "Finished"), 60, "waiter finished")


def test_a_pod_set_without_gpus_beyond_the_allowance_is_refused_at_creation(live: Live) -> None:
    err = refused(live, cpu_job(live, "alpha", "too-big", "9", "4Gi"), "alpha")
    assert WORKLOADS in err
    assert ("a pod set without GPUs asks for more than team alpha's CPU-only allowance of 8 CPU and 32Gi memory "
            "(teams[].limits.cpu and memoryGiB): work without GPUs is admitted only on the Kueue flavor cpu-only, "
            "never on a GPU pool, so it could never start") in err
    # Nor may it ask for a topology: the CPU-only flavor has none, and the pools' flavors are not for it.
    tas = cpu_job(live, "alpha", "tas-cpu", "1", "1Gi",
                  annotations={cv.TAS_PREFERRED_TOPOLOGY_ANNOTATION: cv.TAS_PREFERRED_LEVEL})
    err = refused(live, tas, "alpha")
    assert WORKLOADS in err and "a pod template that requests no GPU may not ask for a topology" in err


def test_a_gpu_job_without_the_gpu_toleration_is_refused_at_creation(live: Live) -> None:
    """The pools' flavors are given only to pod sets that tolerate the GPU taint: such a job would wait forever."""
    (job,) = live.job("alpha", "train", 2, "no-toleration")
    del job["spec"]["template"]["spec"]["tolerations"]
    err = refused(live, job, "alpha")
    assert WORKLOADS in err
    assert ("a pod template that requests GPUs must tolerate the GPU taint nvidia.com/gpu=present:NoSchedule itself "
            "(tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]; a TrainJob in a runtime "
            "patch's pod template)") in err


def test_a_time_sliced_container_of_two_replicas_is_refused_by_the_workload_policy(live: Live) -> None:
    (job,) = live.job("delta", "shared", 1, "two-replicas", priority="production-inference")
    job["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"][cv.SHARED_GPU_RESOURCE] = "2"
    err = refused(live, job, "delta")
    assert WORKLOADS in err
    assert ("a container may ask for at most 1 nvidia.com/gpu.shared: on time-sliced pools the device plugin refuses "
            "more per container (failRequestsGreaterThanOne: \"maximum request size for shared resources is 1\")") in err
    # One replica in each of two containers is what the device plugin allows: accepted.
    second = {**job["spec"]["template"]["spec"]["containers"][0], "name": "second"}
    for c in (job["spec"]["template"]["spec"]["containers"][0], second):
        c["resources"] = {"limits": {**c["resources"]["limits"], cv.SHARED_GPU_RESOURCE: "1"},
                          "requests": dict(c["resources"]["requests"])}
    job["spec"]["template"]["spec"]["containers"].append(second)
    job["metadata"]["name"] = "two-containers"
    ok = live.kubectl("create", "--dry-run=server", "-f", "-", as_team="delta", check=False,
                      input=json.dumps(job))
    assert ok.returncode == 0, ok.stderr
