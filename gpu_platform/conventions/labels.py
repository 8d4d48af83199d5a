"""Label keys and values: on the platform's own objects, on nodes (the pools', the system pool's, the GPU
Operator's) and on tenants' namespaces, workloads and monitoring objects. Node labels become Kueue flavor
selectors, quota dimensions, AWS cost tags and DCGM metric labels, so a key spelled twice would drift."""

from __future__ import annotations


# ==== Labels on the platform's own objects ==================================================================
# The prefix of the platform's own label, annotation and tag keys.
PREFIX = "gpu-platform.io"
MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGED_BY_VALUE = "gpu-platform"
PART_OF = "app.kubernetes.io/part-of"
COMPONENT = "app.kubernetes.io/component"
APP_NAME = "app.kubernetes.io/name"
APP_INSTANCE = "app.kubernetes.io/instance"


# ==== Node labels: the pools', the system pool's, the GPU Operator's ========================================
# Node pool labels (on every node of a pool; the ResourceFlavor selects on all of them).
POOL = f"{PREFIX}/pool"
ACCELERATOR = f"{PREFIX}/accelerator"
TOPOLOGY = f"{PREFIX}/topology"
FABRIC = f"{PREFIX}/fabric"
WORKLOAD = f"{PREFIX}/workload"
SHARING = f"{PREFIX}/sharing"
POOL_LABEL_KEYS: tuple[str, ...] = (POOL, ACCELERATOR, TOPOLOGY, FABRIC, WORKLOAD, SHARING)
# The FABRIC value of EFA pools (spec pools[].fabric), which the EFA device plugin selects nodes by.
FABRIC_EFA = "efa"


def topology_value(gpus: int, form_factor: str, interconnect: str) -> str:
    """`8gpu-sxm-nvlink`, `4gpu-pcie`: how many GPUs a node has and how they talk to each other."""
    if interconnect == "nvswitch":
        return f"{gpus}gpu-{form_factor}-nvlink"
    return f"{gpus}gpu-{form_factor}"


def sharing_value(mode: str, profile: str | None = None, replicas: int | None = None) -> str:
    if mode == "mig":
        return f"mig-{profile}"
    if mode == "time-slicing":
        return f"time-sliced-{replicas}"
    return "full-gpu"


def parse_sharing_value(value: str) -> tuple[str, str | None, int | None] | None:
    """The inverse of `sharing_value`: (mode, MIG profile, replicas), or None for a value it never makes.

    The policy pack sees resources, not the spec, so it reads a pool's sharing back from its label."""
    if value == sharing_value("full"):
        return "full", None, None
    mig_prefix = sharing_value("mig", "")
    if value.startswith(mig_prefix) and len(value) > len(mig_prefix):
        return "mig", value[len(mig_prefix):], None
    ts_prefix = sharing_value("time-slicing", replicas="")  # type: ignore[arg-type]
    replicas = value[len(ts_prefix):]
    if value.startswith(ts_prefix) and replicas.isdigit():
        return "time-slicing", None, int(replicas)
    return None


# The system pool (cluster.systemPool): CPU nodes for CoreDNS, Kueue, the GPU Operator's controller and
# the monitoring stack. Its nodes carry this label and no taint, and deliberately no gpu-platform.io/pool
# label: the pool label means "GPU pool" to the flavors, the node recording rules and the exporter-down
# alert.
NODE_ROLE = f"{PREFIX}/node-role"
SYSTEM_NODE_ROLE = "system"
SYSTEM_POOL_NAME = "system"
# GPU Operator node labels that select a pool's MIG layout and device-plugin (time-slicing) config.
MIG_CONFIG_LABEL = "nvidia.com/mig.config"
DEVICE_PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"
# GPU Operator deploy labels: each operand's DaemonSet runs only on nodes labelled "true" (NVIDIA/gpu-operator
# assets/state-device-plugin/0500_daemonset.yaml nodeSelector), and the operator adds a missing one but keeps
# a value already on the node (controllers/state_manager.go, addGPUStateLabels: "If a required state label
# already exists on the node, honor the current value"; the MIG manager's only when absent). A node group
# that sets "false" keeps that operand off its nodes for good.
GPU_OPERATOR_DEPLOY_DEVICE_PLUGIN_LABEL = "nvidia.com/gpu.deploy.device-plugin"
GPU_OPERATOR_DEPLOY_MIG_MANAGER_LABEL = "nvidia.com/gpu.deploy.mig-manager"
GPU_OPERATOR_DEPLOY_OFF = "false"


# ==== Tenant, workload and monitoring labels ================================================================
# Tenant labels (namespaces, and the pod labels DCGM exports so GPU metrics carry the team).
TEAM = f"{PREFIX}/team"
COST_CENTER = f"{PREFIX}/cost-center"
ENVIRONMENT = f"{PREFIX}/environment"
TENANT_NAMESPACE_LABEL_KEYS: tuple[str, ...] = (TEAM, COST_CENTER, ENVIRONMENT)
# Kueue's labels on a workload: the LocalQueue it is queued in, and its priority class.
QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"
# Pod labels that attribute a GPU's metrics to a team and a queue. dcgm-exporter copies them onto GPU
# series only without KUBERNETES_VIRTUAL_GPUS; the recording rules join them from kube-state-metrics'
# kube_pod_labels in every mode (components/alerts/).
GPU_METRIC_POD_LABELS: tuple[str, ...] = (TEAM, QUEUE_NAME_LABEL)
# The API server sets this label on every namespace (kubernetes.io/docs/reference/labels-annotations-taints).
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
# Grafana's dashboard sidecar picks up ConfigMaps with this label.
GRAFANA_DASHBOARD_LABEL = "grafana_dashboard"
GRAFANA_DASHBOARD_LABEL_VALUE = "1"
# kube-prometheus-stack's Prometheus selects ServiceMonitors and PrometheusRules by this label, whose
# value is the stack's Helm release name (spec addons.monitoring.prometheusRelease).
PROMETHEUS_RELEASE_LABEL = "release"
# The JobSet controller's labels on a JobSet's Jobs and pods: the JobSet's name, and its restart attempt (0, then
# one more each time its failure policy recreates the gang) (kubernetes-sigs/jobset api/jobset/v1alpha2/
# jobset_types.go JobSetNameKey, RestartsKey).
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
JOBSET_RESTART_ATTEMPT_LABEL = "jobset.sigs.k8s.io/restart-attempt"
