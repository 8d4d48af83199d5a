"""GPU resource names (whole, MIG slice, shared replica), the taints GPU nodes carry and the toleration GPU
work carries: what decides which pods may land on a GPU node and what Kueue counts as a GPU."""

from __future__ import annotations

from .labels import WORKLOAD


# ==== GPU resources, taints and tolerations =================================================================
# Resource names the device plugin advertises.
GPU_RESOURCE = "nvidia.com/gpu"
MIG_RESOURCE_PREFIX = "nvidia.com/mig-"
SHARED_GPU_RESOURCE = "nvidia.com/gpu.shared"  # time-slicing with renameByDefault: true


def mig_resource(profile: str) -> str:
    return f"{MIG_RESOURCE_PREFIX}{profile}"


def sharing_resource_name(mode: str, profile: str | None = None) -> str:
    """The extended resource a pool of this sharing mode advertises: whole GPUs, the MIG profile's slices
    (mixed strategy) or shared replicas (time-slicing with renameByDefault). The plan names a pool's units
    with it and the policy pack reads them back from a pool's sharing label through it."""
    if mode == "mig":
        return mig_resource(profile or "")
    if mode == "time-slicing":
        return SHARED_GPU_RESOURCE
    return GPU_RESOURCE


def is_gpu_resource(name: str) -> bool:
    """True for every resource name that consumes a pool's GPUs (whole, MIG slice or shared replica)."""
    return name in (GPU_RESOURCE, SHARED_GPU_RESOURCE) or name.startswith(MIG_RESOURCE_PREFIX)


# Time-sliced pools: the device plugin refuses a container asking for more than one shared replica
# (the operator's config sets failRequestsGreaterThanOne: NVIDIA/k8s-device-plugin internal/plugin/
# server.go, Allocate, per container request: "maximum request size for shared resources is 1").
SHARED_GPU_MAX_PER_CONTAINER = 1
# EFA device plugin resource: pods of EFA pools request it, and Kueue must not count it against quota.
EFA_RESOURCE = "vpc.amazonaws.com/efa"
# Taints. Every GPU node carries the GPU taint; the workload taint keeps training and inference apart.
GPU_TAINT_KEY = GPU_RESOURCE
GPU_TAINT_VALUE = "present"
WORKLOAD_TAINT_KEY = WORKLOAD
TAINT_EFFECT = "NoSchedule"
# What every pod template that asks for GPUs carries itself (the job template sets it; admission refuses a
# GPU template without it). Pool flavors that are not topology-aware list the GPU taint under `nodeTaints`
# and do not tolerate it, and Kueue assigns a flavor only to a pod set that tolerates its nodeTaints (kueue
# v0.19.2 pkg/scheduler/flavorassigner/flavorassigner.go checkFlavorForPodSets; apis/kueue/v1beta2/
# resourceflavor_types.go, nodeTaints); topology-aware ones only to pod sets that ask for a topology. A pod
# set without GPUs may do neither (admission), so it can only be given the CPU-only flavor, never a pool.
GPU_TOLERATION: dict[str, str] = {"key": GPU_TAINT_KEY, "operator": "Exists", "effect": TAINT_EFFECT}
# kubeadm's control-plane taint (kubernetes.io/docs/reference/labels-annotations-taints), which the
# chart's node-feature-discovery workers tolerate by default.
CONTROL_PLANE_TAINT_KEY = "node-role.kubernetes.io/control-plane"


def workload_taint_value(workload: str) -> str:
    return workload
