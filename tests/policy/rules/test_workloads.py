"""The workload rules (policies/gpu_policies/workloads.py): tenant GPU work tolerates the GPU taint, names its
queue, asks GPUs as whole limits, stays off the host, and runs at the priorities its team was granted."""

from __future__ import annotations

import pytest

from gpu_platform import conventions as cv

from tests.policy.helpers import ALPHA, BETA, DEPLOYMENT, INFER, MIG, POD, cpu_pod_spec, gpu_pod_spec, job, meta, res
from tests.policy.rules.cases import Allowed, Disallowed, add, check_allowed, check_disallowed, inputs


# (what, rule, mutation, resource the violation names, words the message contains)
DISALLOWED: list[Disallowed] = [
    ("GPU job without the GPU toleration", "workload-gpu-toleration",
     add(job(ALPHA.name, {**gpu_pod_spec(), "tolerations": []})), "job-job", "GPU taint"),
    ("GPU job without a queue name", "workload-queue-name",
     add(job(ALPHA.name, gpu_pod_spec(), queue=False)), "job-job", cv.QUEUE_NAME_LABEL),
    ("GPUs in requests", "workload-gpu-limits-only",
     add(job(ALPHA.name, {**gpu_pod_spec(), "containers": [
         {"name": "m", "image": "x:1", "resources": {"requests": {cv.GPU_RESOURCE: 1}, "limits": {cv.GPU_RESOURCE: 1}}}]})),
     "job-job", "requests"),
    ("fractional GPU limit", "workload-gpu-limits-only",
     add(job(ALPHA.name, {**gpu_pod_spec(), "containers": [
         {"name": "m", "image": "x:1", "resources": {"limits": {MIG.resource: "0.5"}}}]})), "job-job", "whole units"),
    ("two time-sliced replicas in one container", "workload-shared-gpu-per-container",
     add(job(BETA.name, {**gpu_pod_spec(INFER.resource), "containers": [
         {"name": "m", "image": "x:1", "resources": {"limits": {cv.SHARED_GPU_RESOURCE: "2"}}}]})),
     "job-job", "at most 1 time-sliced replica"),
    ("host network in a tenant namespace", "workload-no-host-access",
     add(job(BETA.name, gpu_pod_spec(hostNetwork=True))), "job-job", "hostNetwork"),
    ("hostPath in a tenant namespace", "workload-no-host-access",
     add(job(BETA.name, gpu_pod_spec(volumes=[{"name": "h", "hostPath": {"path": "/"}}]))), "job-job", "hostPath"),
    ("privileged pod in a tenant namespace", "workload-no-privileged",
     add(res(POD, "pod-debug", {"apiVersion": "v1", "kind": "Pod", "metadata": meta("debug", ALPHA.name),
                                "spec": {"containers": [{"name": "sh", "image": "busybox:1.36",
                                                         "securityContext": {"privileged": True}}]}})),
     "pod-debug", "privileged"),
    ("CPU-only pod tolerating the GPU taint", "workload-no-gpu-squatting",
     add(job(ALPHA.name, cpu_pod_spec(tolerations=[{"key": cv.GPU_TAINT_KEY, "operator": "Exists"}]))),
     "job-job", "requests no GPU but tolerates the GPU taint"),
    ("pod pinned to a node", "workload-no-gpu-squatting",
     add(job(ALPHA.name, gpu_pod_spec(nodeName="train-0"))), "job-job", "sets nodeName"),
    ("tenant namespace granted the system tier", "tenant-priorities",
     lambda w: inputs(w, "ns-alpha")["metadata"]["annotations"].update(
         {cv.ALLOWED_PRIORITIES_ANNOTATION: cv.priority_class_name("system-critical")}),
     "ns-alpha", "system priorities"),
    ("tenant namespace without its grant", "tenant-priorities",
     lambda w: inputs(w, "ns-beta")["metadata"].pop("annotations"), "ns-beta", cv.ALLOWED_PRIORITIES_ANNOTATION),
    ("job above its team's grant", "tenant-priorities",
     add(job(ALPHA.name, gpu_pod_spec(), priority="production-inference")), "job-job", "not granted"),
]


@pytest.mark.parametrize("case", DISALLOWED, ids=[c[0] for c in DISALLOWED])
def test_disallowed_is_reported(case: Disallowed) -> None:
    check_disallowed(case)


# (what, rule, mutation); cases that need config have tests of their own
ALLOWED: list[Allowed] = [
    ("GPU deployment in a tenant namespace done right", "workload-gpu-toleration",
     lambda w: w.append(res(DEPLOYMENT, "dep", {"metadata": meta("serve", BETA.name),
                                                "spec": {"template": {"metadata": {"labels": {
                                                    cv.QUEUE_NAME_LABEL: cv.LOCAL_QUEUE_NAME}},
                                                    "spec": gpu_pod_spec(INFER.resource)}}}))),
    ("queue name on the pod template", "workload-queue-name", lambda w: w.append(res(DEPLOYMENT, "dep", {
        "metadata": meta("serve", BETA.name),
        "spec": {"template": {"metadata": {"labels": {cv.QUEUE_NAME_LABEL: cv.LOCAL_QUEUE_NAME}},
                              "spec": gpu_pod_spec(INFER.resource)}}}))),
    ("one time-sliced replica in each of two containers", "workload-shared-gpu-per-container",
     lambda w: w.append(job(BETA.name, {**gpu_pod_spec(INFER.resource), "containers": [
         {"name": n, "image": "x:1", "resources": {"limits": {cv.SHARED_GPU_RESOURCE: 1}}} for n in ("a", "b")]}))),
    ("GPU limit as a string", "workload-gpu-limits-only", lambda w: w.append(job(ALPHA.name, {
        **gpu_pod_spec(), "containers": [{"name": "m", "image": "x:1", "resources": {"limits": {cv.GPU_RESOURCE: "2"}}}]}))),
    ("host network in a system namespace", "workload-no-host-access",
     lambda w: w.append(job(cv.GPU_OPERATOR_NAMESPACE, gpu_pod_spec(hostNetwork=True)))),
    ("privileged pod in the operator namespace", "workload-no-privileged", lambda w: w.append(
        res(POD, "pod-op", {"metadata": meta("op", cv.GPU_OPERATOR_NAMESPACE), "spec": {
            "containers": [{"name": "c", "image": "nvcr.io/x:1", "securityContext": {"privileged": True}}]}}))),
]


@pytest.mark.parametrize("case", ALLOWED, ids=[c[0] for c in ALLOWED])
def test_allowed_passes(case: Allowed) -> None:
    check_allowed(case)
