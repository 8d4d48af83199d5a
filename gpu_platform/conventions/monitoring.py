"""Monitoring: the scrape jobs the platform's rules and the report read, the Services and ports they find, the label
names the report's joins key on, and the upstream metric names the dashboards, the report and the rules read.

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
# The kubelet: kube-prometheus-stack's kubelet ServiceMonitor labels its /metrics and /metrics/cadvisor series with
# the job its Service's k8s-app label names, `kubelet` (kube-prometheus-stack 88.5.3 values.yaml
# kubelet.serviceMonitor, jobLabel k8s-app of the Operator's kubelet Service), and the managed collector's cAdvisor
# job is named so too (gpu_platform/plan/scrape_jobs.managed_cadvisor_job): a pod's network and block I/O series
# carry the same `job` in every mode.
KUBELET_JOB = "kubelet"
# cAdvisor's per-pod byte counters the platform reads (acceptance step 6, platform_cli/acceptance_labels.py: network
# received and sent, block I/O read and written; google/cadvisor v0.52.1 metrics/prometheus.go). Not in METRIC_NAMES:
# no rule, dashboard or report query reads them (tests/unit/components/test_metric_names.py holds that set to those).
CADVISOR_NETWORK_RECEIVE_BYTES = "container_network_receive_bytes_total"
CADVISOR_NETWORK_TRANSMIT_BYTES = "container_network_transmit_bytes_total"
CADVISOR_FS_READS_BYTES = "container_fs_reads_bytes_total"
CADVISOR_FS_WRITES_BYTES = "container_fs_writes_bytes_total"
CADVISOR_POD_METRICS: tuple[str, ...] = (CADVISOR_NETWORK_RECEIVE_BYTES, CADVISOR_NETWORK_TRANSMIT_BYTES,
                                         CADVISOR_FS_READS_BYTES, CADVISOR_FS_WRITES_BYTES)
# The labels cAdvisor (through the kubelet) gives a container's series that tell one of the platform's apart:
# namespace, pod and container (k8s.io/kubernetes v1.33.13 pkg/kubelet/server/server.go containerPrometheusLabelsFunc),
# the network interface and the block device (google/cadvisor v0.52.1 metrics/prometheus.go, extraLabels).
INTERFACE_LABEL = "interface"
DEVICE_LABEL = "device"

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

# ==== Labels the platform's rules give their series ===========================================================
# A team's cost center (the stack's teams[].costCenter) beside `team` on the plan's info series
# gpu_platform:namespace_team:info and gpu_platform:cluster_queue_team:info (components/alerts/plan_series.py): a pod's
# series gets it by a join on namespace, Kueue's by a join on cluster_queue (acceptance step 6 joins them so). The
# pod label itself (labels.COST_CENTER) is on neither dcgm-exporter's nor kube-state-metrics' allowlist.
COST_CENTER_SERIES_LABEL = "cost_center"

# ==== Metric names ==========================================================================================
# The series names of the exporters and of Prometheus that the platform configures or reads: the dcgm-exporter metrics
# list (components/monitoring.DCGM_FIELDS), the rules (components/alerts/), the dashboards (components/dashboards.py),
# the report and --check. METRIC_NAMES holds them all: tests/unit/components/test_metric_names.py fails when a
# dashboard or report query reads a name that is not in it, and when one of those modules spells a name itself. The
# platform's own recording rules are named in components/alerts/record_names.py.

# dcgm-exporter: DCGM field identifiers (docs.nvidia.com/datacenter/dcgm/latest/dcgm-api/dcgm-api-field-ids.html) as
# NVIDIA/dcgm-exporter names its series (etc/default-counters.csv, etc/dcp-metrics-included.csv); exported only when
# on the platform's metrics list (components/monitoring.DCGM_FIELDS). Profiling (DCP) fields, ratios 0..1 (rates
# in bytes per second for the NVLink and PCIe ones):
DCGM_GR_ENGINE_ACTIVE = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
DCGM_SM_ACTIVE = "DCGM_FI_PROF_SM_ACTIVE"
DCGM_DRAM_ACTIVE = "DCGM_FI_PROF_DRAM_ACTIVE"
DCGM_NVLINK_TX_BYTES = "DCGM_FI_PROF_NVLINK_TX_BYTES"
DCGM_NVLINK_RX_BYTES = "DCGM_FI_PROF_NVLINK_RX_BYTES"
DCGM_PCIE_TX_BYTES = "DCGM_FI_PROF_PCIE_TX_BYTES"
DCGM_PCIE_RX_BYTES = "DCGM_FI_PROF_PCIE_RX_BYTES"
# Device fields: memory (MiB), temperature (C), power (W), throttled time (ns), errors.
DCGM_FB_USED = "DCGM_FI_DEV_FB_USED"
DCGM_FB_FREE = "DCGM_FI_DEV_FB_FREE"
DCGM_GPU_TEMP = "DCGM_FI_DEV_GPU_TEMP"
DCGM_MEMORY_TEMP = "DCGM_FI_DEV_MEMORY_TEMP"
DCGM_POWER_USAGE = "DCGM_FI_DEV_POWER_USAGE"
DCGM_THERMAL_VIOLATION = "DCGM_FI_DEV_THERMAL_VIOLATION"
DCGM_POWER_VIOLATION = "DCGM_FI_DEV_POWER_VIOLATION"
DCGM_ECC_SBE_VOLATILE = "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL"
DCGM_ECC_DBE_VOLATILE = "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"
DCGM_CORRECTABLE_REMAPPED_ROWS = "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS"
DCGM_UNCORRECTABLE_REMAPPED_ROWS = "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"
DCGM_ROW_REMAP_FAILURE = "DCGM_FI_DEV_ROW_REMAP_FAILURE"
DCGM_NVLINK_RECOVERY_ERRORS = "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL"
DCGM_NVLINK_REPLAY_ERRORS = "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL"
DCGM_NVLINK_CRC_DATA_ERRORS = "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL"
DCGM_NVLINK_CRC_FLIT_ERRORS = "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL"
DCGM_PCIE_REPLAY_COUNTER = "DCGM_FI_DEV_PCIE_REPLAY_COUNTER"
# The bitmask of NVML clock-event (throttle) reasons: field 112, DCGM 3.3's name for the clock throttle reasons
# (NVIDIA/go-dcgm pkg/dcgm/const_fields.go DCGM_FI_DEV_CLOCKS_EVENT_REASONS).
DCGM_CLOCKS_EVENT_REASONS = "DCGM_FI_DEV_CLOCKS_EVENT_REASONS"
# The exporter's own count of XIDs in its window, labelled `xid` (internal/pkg/counters, DCGMExpXIDErrorsCount).
DCGM_XID_ERRORS_COUNT = "DCGM_EXP_XID_ERRORS_COUNT"
# On the metrics list and read by none of the platform's rules, dashboards or queries: there for a user's own
# dashboards (utilization, occupancy, tensor pipe, clocks, energy in mJ, the last XID, persistent ECC counts, NVLink
# bandwidth; NVIDIA/dcgm-exporter etc/dcp-metrics-included.csv).
DCGM_GPU_UTIL = "DCGM_FI_DEV_GPU_UTIL"
DCGM_MEM_COPY_UTIL = "DCGM_FI_DEV_MEM_COPY_UTIL"
DCGM_SM_OCCUPANCY = "DCGM_FI_PROF_SM_OCCUPANCY"
DCGM_PIPE_TENSOR_ACTIVE = "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"
DCGM_SM_CLOCK = "DCGM_FI_DEV_SM_CLOCK"
DCGM_MEM_CLOCK = "DCGM_FI_DEV_MEM_CLOCK"
DCGM_TOTAL_ENERGY = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"
DCGM_XID_ERRORS = "DCGM_FI_DEV_XID_ERRORS"
DCGM_ECC_SBE_AGGREGATE = "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL"
DCGM_ECC_DBE_AGGREGATE = "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL"
DCGM_NVLINK_BANDWIDTH = "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"
# A label field: dcgm-exporter gives it no series, it puts its value in a label of that name on the other series
# ("These appear as labels on the other metrics", etc/dcp-metrics-included.csv), so it is not in METRIC_NAMES.
DCGM_DRIVER_VERSION = "DCGM_FI_DRIVER_VERSION"
# What every profiling (DCP) field's name starts with (field ids 1000-1099): what a node without profiling lacks.
DCGM_PROFILING_PREFIX = "DCGM_FI_PROF_"
# Busy is graphics-engine activity, a profiling field; held is framebuffer used, which needs no profiling
# (components/alerts/sources.py says why each).
BUSY_FIELD = DCGM_GR_ENGINE_ACTIVE
HELD_FIELD = DCGM_FB_USED
# kube-state-metrics (kubernetes/kube-state-metrics internal/store/node.go, pod.go).
KSM_NODE_INFO = "kube_node_info"
KSM_NODE_LABELS = "kube_node_labels"
KSM_POD_LABELS = "kube_pod_labels"
KSM_NODE_ALLOCATABLE = "kube_node_status_allocatable"
KSM_POD_STATUS_PHASE = "kube_pod_status_phase"
KSM_POD_DELETION_TIMESTAMP = "kube_pod_deletion_timestamp"
# kube-state-metrics' custom resource state series of Kueue's Workloads, one per condition: the platform's
# configuration (gpu_platform/useful_work.KSM_WORKLOAD_CONDITIONS) names it, metricNamePrefix + "_" + the metric's
# name (kubernetes/kube-state-metrics docs/metrics/extend/customresourcestate-metrics.md: prefix "kube" and
# "verticalpodautoscaler_labels" make kube_verticalpodautoscaler_labels).
KSM_WORKLOAD_METRIC_PREFIX = "kube_kueue_workload"
KSM_WORKLOAD_CONDITION_NAME = "status_condition"  # the name of the configuration's metric entry
KSM_WORKLOAD_CONDITION = f"{KSM_WORKLOAD_METRIC_PREFIX}_{KSM_WORKLOAD_CONDITION_NAME}"
# Kueue (kueue v0.19.2 pkg/metrics/metrics.go): ClusterQueue resource metrics need enableClusterQueueResources.
# The admission wait is a histogram, read through its buckets.
KUEUE_PENDING_WORKLOADS = "kueue_pending_workloads"
KUEUE_ADMITTED_ACTIVE_WORKLOADS = "kueue_admitted_active_workloads"
KUEUE_ADMITTED_WORKLOADS = "kueue_admitted_workloads_total"
KUEUE_EVICTED_WORKLOADS = "kueue_evicted_workloads_total"
KUEUE_ADMISSION_WAIT_BUCKETS = "kueue_admission_wait_time_seconds_bucket"
KUEUE_NOMINAL_QUOTA = "kueue_cluster_queue_nominal_quota"
KUEUE_RESOURCE_USAGE = "kueue_cluster_queue_resource_usage"
# Prometheus' own series per scrape target, 1 when its last scrape succeeded (prometheus.io/docs/concepts/
# jobs_instances, "Automatically generated labels and time series").
SCRAPE_UP = "up"

METRIC_NAMES: frozenset[str] = frozenset({
    DCGM_GR_ENGINE_ACTIVE, DCGM_SM_ACTIVE, DCGM_DRAM_ACTIVE, DCGM_NVLINK_TX_BYTES, DCGM_NVLINK_RX_BYTES,
    DCGM_PCIE_TX_BYTES, DCGM_PCIE_RX_BYTES, DCGM_FB_USED, DCGM_FB_FREE, DCGM_GPU_TEMP, DCGM_MEMORY_TEMP,
    DCGM_POWER_USAGE, DCGM_THERMAL_VIOLATION, DCGM_POWER_VIOLATION, DCGM_ECC_SBE_VOLATILE, DCGM_ECC_DBE_VOLATILE,
    DCGM_CORRECTABLE_REMAPPED_ROWS, DCGM_UNCORRECTABLE_REMAPPED_ROWS, DCGM_ROW_REMAP_FAILURE,
    DCGM_NVLINK_RECOVERY_ERRORS, DCGM_NVLINK_REPLAY_ERRORS, DCGM_NVLINK_CRC_DATA_ERRORS, DCGM_NVLINK_CRC_FLIT_ERRORS,
    DCGM_PCIE_REPLAY_COUNTER, DCGM_CLOCKS_EVENT_REASONS, DCGM_XID_ERRORS_COUNT,
    DCGM_GPU_UTIL, DCGM_MEM_COPY_UTIL, DCGM_SM_OCCUPANCY, DCGM_PIPE_TENSOR_ACTIVE, DCGM_SM_CLOCK, DCGM_MEM_CLOCK,
    DCGM_TOTAL_ENERGY, DCGM_XID_ERRORS, DCGM_ECC_SBE_AGGREGATE, DCGM_ECC_DBE_AGGREGATE, DCGM_NVLINK_BANDWIDTH,
    KSM_NODE_INFO, KSM_NODE_LABELS, KSM_POD_LABELS, KSM_NODE_ALLOCATABLE, KSM_POD_STATUS_PHASE,
    KSM_POD_DELETION_TIMESTAMP, KSM_WORKLOAD_CONDITION,
    KUEUE_PENDING_WORKLOADS, KUEUE_ADMITTED_ACTIVE_WORKLOADS, KUEUE_ADMITTED_WORKLOADS, KUEUE_EVICTED_WORKLOADS,
    KUEUE_ADMISSION_WAIT_BUCKETS, KUEUE_NOMINAL_QUOTA, KUEUE_RESOURCE_USAGE,
    SCRAPE_UP,
})
