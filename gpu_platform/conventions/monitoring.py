"""Monitoring: the scrape jobs the platform's rules and the report read, the Services and ports they find, and the
metric and label names the report's joins key on.

Every monitoring stack the platform configures gives these names (addons.monitoring.mode: the ServiceMonitors
kube-prometheus-stack's Prometheus selects, the managed collector's scrape configuration, the live local cluster's
Prometheus), so the rules, the report and `report --check` can spell them as literals in PromQL. The scrape jobs
themselves are built once, in gpu_platform/plan/scrape_jobs.py.
"""

from __future__ import annotations

from .kueue import KUEUE_RELEASE_NAME

# ==== Scrape jobs: the `job` label, the Service and its port ==================================================
# dcgm-exporter: the GPU Operator's Service nvidia-dcgm-exporter (label app=nvidia-dcgm-exporter, port gpu-metrics;
# NVIDIA/gpu-operator assets/state-dcgm-exporter/0600_service.yaml); its ServiceMonitor names the job from
# `jobLabel: app` (0500_service_monitor.yaml).
DCGM_JOB = "nvidia-dcgm-exporter"
DCGM_SERVICE = "nvidia-dcgm-exporter"
DCGM_PORT = "gpu-metrics"
# kube-state-metrics: the chart's release and Service (the managed mode installs it under this name, fullnameOverride),
# port `http`; its ServiceMonitor names the job from `jobLabel: app.kubernetes.io/name` (kube-state-metrics chart
# templates/servicemonitor.yaml), which is this name too.
KSM_RELEASE_NAME = "kube-state-metrics"
KSM_JOB = KSM_RELEASE_NAME
KSM_SERVICE = KSM_RELEASE_NAME
KSM_PORT = "http"
# Kueue: the chart's metrics Service (kueue v0.19.2 charts/kueue templates/manager/auth_proxy_service.yaml,
# `<release>-controller-manager-metrics-service`, port `https`); a ServiceMonitor without jobLabel names the job after
# the Service.
KUEUE_METRICS_SERVICE = f"{KUEUE_RELEASE_NAME}-controller-manager-metrics-service"
KUEUE_METRICS_PORT = "https"
KUEUE_JOB = KUEUE_METRICS_SERVICE
# The bearer token a scraper in the cluster sends: its ServiceAccount's, mounted at this path (Kubernetes'
# projected service account token). The managed collector may send only this one ("Scraper configuration",
# docs.aws.amazon.com/prometheus/latest/userguide/AMP-collector-how-to.html).
SERVICE_ACCOUNT_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"

# ==== Target labels the report joins on ========================================================================
# A scrape target's labels as a ServiceMonitor gives them (prometheus-operator pkg/prometheus/promcfg.go,
# generateServiceMonitorConfig: namespace, service, pod, container, endpoint), and `node`, which only dcgm-exporter's
# ServiceMonitor adds (the GPU Operator chart values' dcgmExporter.serviceMonitor relabeling example): a GPU series
# joins kube-state-metrics' node series on it.
NAMESPACE_LABEL = "namespace"
SERVICE_LABEL = "service"
POD_LABEL = "pod"
CONTAINER_LABEL = "container"
ENDPOINT_LABEL = "endpoint"
NODE_LABEL = "node"
# Kueue 0.19 labels its metrics with replica_role (leader, follower or standalone; pkg/metrics/metrics.go).
KUEUE_REPLICA_ROLE_LABEL = "replica_role"

# ==== Metric names the report and --check read ===============================================================
# dcgm-exporter: busy is graphics-engine activity, a profiling (DCP) field; held is framebuffer used, which needs
# no profiling (components/alerts/sources.py says why each).
BUSY_FIELD = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
HELD_FIELD = "DCGM_FI_DEV_FB_USED"
# kube-state-metrics (kubernetes/kube-state-metrics internal/store/node.go, pod.go).
KSM_NODE_INFO = "kube_node_info"
KSM_NODE_LABELS = "kube_node_labels"
KSM_POD_LABELS = "kube_pod_labels"
KSM_NODE_ALLOCATABLE = "kube_node_status_allocatable"
# Kueue (kueue v0.19.2 pkg/metrics/metrics.go): ClusterQueue resource metrics need enableClusterQueueResources.
KUEUE_PENDING_WORKLOADS = "kueue_pending_workloads"
KUEUE_ADMITTED_ACTIVE_WORKLOADS = "kueue_admitted_active_workloads"
KUEUE_NOMINAL_QUOTA = "kueue_cluster_queue_nominal_quota"
