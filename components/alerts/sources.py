"""The series the rules read, as their sources name them: Kubernetes label keys as Prometheus label names, the
label allowlist kube-state-metrics needs, dcgm-exporter's job, the DCGM fields busy and held are read from, and
the label sets that identify a GPU, a hold and a device. Every rule group builds on these."""

from __future__ import annotations

import re

from gpu_platform import conventions as cv
from gpu_platform.plan import monitoring as monitoring_plan

# ---------------------------------------------------------------------------------------------------
# Label names as Prometheus sees them

_INVALID_LABEL_CHARS = re.compile(r"[^a-zA-Z0-9_]")


def prom_label(key: str) -> str:
    """A Kubernetes label key as a Prometheus label name: dcgm-exporter (internal/pkg/utils SanitizeLabelName)
    and kube-state-metrics both replace every character outside [a-zA-Z0-9_] with '_'."""
    return _INVALID_LABEL_CHARS.sub("_", key)


def ksm_label(key: str) -> str:
    """The label kube-state-metrics puts a Kubernetes object label under in `kube_*_labels`."""
    return f"label_{prom_label(key)}"


def ksm_resource(resource: str) -> str:
    """An extended resource name as kube-state-metrics' `resource` label value (`nvidia.com/gpu` ->
    `nvidia_com_gpu`): kube-state-metrics sanitizes extended resource names like label names."""
    return prom_label(resource)


def regex_union(values: list[str]) -> str:
    """A PromQL regex (RE2, inside a double-quoted string) matching exactly these values."""
    return "|".join(re.sub(r"([.+*?()\[\]{}|^$\\])", r"\\\\\1", v) for v in sorted(set(values)))


POOL_NODE_LABEL = ksm_label(cv.POOL)
# The pod labels that attribute a GPU to a team and a queue, as dcgm-exporter names them on its series
# (gpu_platform_io_team, kueue_x_k8s_io_queue_name) and as kube-state-metrics exports them (label_...).
ATTRIBUTION_LABELS: tuple[str, ...] = tuple(prom_label(k) for k in cv.GPU_METRIC_POD_LABELS)
# kube-state-metrics' --metric-labels-allowlist and dcgm-exporter's scrape job: the plan's (one place for what the
# monitoring stack is given and what the rules read).
KSM_METRIC_LABELS_ALLOWLIST = monitoring_plan.KSM_METRIC_LABELS_ALLOWLIST
DCGM_JOB = cv.DCGM_JOB
# Kueue 0.19 labels its metrics with replica_role (leader, follower or standalone; pkg/metrics/metrics.go):
# count the leader (or the single replica) only, so an HA Kueue does not double every number.
KUEUE_REPLICA = f'{cv.KUEUE_REPLICA_ROLE_LABEL}!="follower"'
# The DCGM metrics that carry a GPU's identity; health alerts aggregate to them (one alert per GPU,
# not one per pod sharing it).
GPU_KEY = "node, pool, gpu, UUID, modelName"
# What busy and held are read from. The GPU Operator v26.7.0 runs dcgm-exporter 4.8.3 (chart values
# dcgmExporter.version 4.6.0-4.8.3-distroless), which drops every DCGM_FI_PROF_* (profiling, DCP) field it
# cannot collect with a warning, "Skipping line N ('DCGM_FI_PROF_...'): metric not enabled" (NVIDIA/dcgm-exporter
# internal/pkg/counters/counter_config.go ExtractCounters and fieldIsSupported: field ids 1000-1099 only when
# profiling was found, pkg/cmd/app.go queryDCPMetrics "Not collecting DCP metrics"), and keeps every other field.
# So busy (graphics-engine activity) is a profiling field, and which devices a pod holds is read from a field
# that does not need profiling as well: framebuffer used, which dcgm-exporter reports per GPU and per MIG
# instance, where GPU utilization has no value on MIG (NVIDIA/dcgm-exporter issues #105 and #430: "not
# supported for MIG configurations"); the busy field too, for MIG instances whose framebuffer has no value
# (NVIDIA/dcgm-exporter issues #380 and #512).
BUSY_FIELD = cv.BUSY_FIELD
HELD_FIELD = cv.HELD_FIELD
# One GPU, MIG instance or time-sliced replica held by one pod: dcgm-exporter gives a copy of a device's series
# per replica a pod holds (`vgpu`), and, for DCGM_FI_DEV_FB_USED and DCGM_FI_DEV_GPU_UTIL under virtual GPUs, the
# device's own series beside the pods' per-process ones (NVIDIA/dcgm-exporter internal/pkg/transformation/
# kubernetes.go Process and createPerProcessMetrics, PR #594): collapsing to these labels counts each hold once.
HOLD_KEY = "node, pool, UUID, GPU_I_ID, vgpu, namespace, pod"
DEVICE_KEY = "node, UUID, GPU_I_ID"
