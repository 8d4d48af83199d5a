"""The rule names a tenant's refusals are known by."""

from __future__ import annotations

from gpu_platform import conventions as cv

# The rules a tenant's refusal is asserted by: rule name -> the part of its message that names it (the unit tests
# and the live layer assert these; docs/submitting-work.md lists them).
RULES: dict[str, str] = {
    "queue-label": "workloads that request GPUs must name a Kueue LocalQueue",
    "queue-name": f"is not a LocalQueue of team namespaces: each has one, {cv.LOCAL_QUEUE_NAME!r}",
    "queueable-kind": "Kueue cannot queue a",
    "whole-gpus": "must be whole numbers",
    "gpus-in-limits": "a GPU request, if set, must equal its limit",
    "host-namespaces": "hostNetwork, hostPID and hostIPC are not allowed",
    "host-path": "hostPath volumes are not allowed in team namespaces",
    "team-pools": "may select only its own pools",
    "gpu-toleration": "a pod template that requests GPUs must tolerate the GPU taint",
    "no-gpu-no-toleration": "a pod that requests no GPU may not tolerate the GPU taint",
    "no-gpu-no-topology": "a pod template that requests no GPU may not ask for a topology",
    "cpu-only-allowance": "a pod set without GPUs asks for more than team",
    "node-name": "spec.nodeName may not be set in team namespaces",
    "topology": "come only from topology-aware pools",
    "priority-label": "(label kueue.x-k8s.io/priority-class) is not granted to team",
    "priority-class-name": "is not granted to team",
    "image-registry": "images must come from a registry team",
    "job-ttl": "must set spec.ttlSecondsAfterFinished",
}
