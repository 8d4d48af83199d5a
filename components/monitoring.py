"""Monitoring: the DCGM metrics list, the platform's alert and recording rules, Grafana dashboards, and a
ServiceMonitor for Kueue.

What is made when:
- Always (core objects, harmless without a monitoring stack, and needed by an operator or Grafana
  installed another way): the dcgm-exporter metrics ConfigMap in the GPU Operator namespace (the chart
  values point the exporter at it), the `monitoring` Namespace and the dashboard ConfigMaps.
- With `addons.monitoring.install: true` (a Prometheus Operator is there, so its CRDs exist): the
  PrometheusRule, and, when `addons.kueue.install` is true, the ServiceMonitor for Kueue. Both carry
  `release: <addons.monitoring.prometheusRelease>`, the label kube-prometheus-stack selects rules and
  monitors by. dcgm-exporter's own ServiceMonitor is made by the GPU Operator (see gpu_operator.py).

Prometheus itself (kube-prometheus-stack) is not installed here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from gpu_platform import conventions as cv
from gpu_platform.plan import Plan
from gpu_platform.plan.scrape_jobs import service_monitor_endpoint, source

from . import alerts, dashboards
from .gpu_operator import DCGM_METRICS_KEY
from .kube_object import KubeObject
from .platform_namespace import component_labels as labels, platform_namespace

PROMETHEUS_RULE_NAME = f"{cv.MANAGED_BY_VALUE}-gpu"
KUEUE_SERVICE_MONITOR_NAME = "kueue"
# Kueue chart v0.19.2: the metrics Service carries kueue.metricsService.labels (chart name, release
# name, component metrics-service) and serves /metrics on port `https` with the controller's own
# certificate, authorizing the scraper's bearer token (templates/manager/auth_proxy_service.yaml,
# templates/prometheus/monitor.yaml, values metricsService.ports). The visibility server shares the
# other selector labels and also names its port https, hence the component label in the selector.
KUEUE_CHART_NAME = "kueue"
KUEUE_METRICS_COMPONENT = "metrics-service"


@dataclass(frozen=True, slots=True)
class DcgmField:
    name: str
    kind: str  # gauge | counter | label (dcgm-exporter CSV "Prometheus metric type")
    help: str


# The metrics dcgm-exporter collects: a custom list replaces the exporter's default list entirely, so
# everything the rules and dashboards read must be here (a test checks it). Field names: DCGM field
# identifiers and the exporter's own metrics, as gpu_platform/conventions/monitoring.py spells them (with their
# sources); format and help texts follow dcgm-exporter's etc/default-counters.csv and etc/dcp-metrics-included.csv.
DCGM_FIELDS: tuple[DcgmField, ...] = (
    # Utilization and profiling (DCP metrics are ratios 0..1).
    DcgmField(cv.DCGM_GPU_UTIL, "gauge", "GPU utilization (in %)."),
    DcgmField(cv.DCGM_MEM_COPY_UTIL, "gauge", "Memory utilization (in %)."),
    DcgmField(cv.BUSY_FIELD, "gauge", "Ratio of time the graphics engine is active."),
    DcgmField(cv.DCGM_SM_ACTIVE, "gauge", "The ratio of cycles an SM has at least 1 warp assigned."),
    DcgmField(cv.DCGM_SM_OCCUPANCY, "gauge", "The ratio of number of warps resident on an SM."),
    DcgmField(cv.DCGM_PIPE_TENSOR_ACTIVE, "gauge", "Ratio of cycles the tensor (HMMA) pipe is active."),
    DcgmField(cv.DCGM_DRAM_ACTIVE, "gauge",
              "Ratio of cycles the device memory interface is active sending or receiving data."),
    # Memory.
    DcgmField(cv.DCGM_FB_FREE, "gauge", "Framebuffer memory free (in MiB)."),
    DcgmField(cv.HELD_FIELD, "gauge", "Framebuffer memory used (in MiB)."),
    # Clocks and clock-event (throttle) reasons.
    DcgmField(cv.DCGM_SM_CLOCK, "gauge", "SM clock frequency (in MHz)."),
    DcgmField(cv.DCGM_MEM_CLOCK, "gauge", "Memory clock frequency (in MHz)."),
    DcgmField(cv.DCGM_CLOCKS_EVENT_REASONS, "gauge",
              "Bitmask of the reasons the clocks are lowered (NVML clocks event reasons)."),
    DcgmField(cv.DCGM_POWER_VIOLATION, "counter", "Throttling duration due to power constraints (in ns)."),
    DcgmField(cv.DCGM_THERMAL_VIOLATION, "counter", "Throttling duration due to thermal constraints (in ns)."),
    # Power and temperature.
    DcgmField(cv.DCGM_POWER_USAGE, "gauge", "Power draw (in W)."),
    DcgmField(cv.DCGM_TOTAL_ENERGY, "counter", "Total energy consumption since boot (in mJ)."),
    DcgmField(cv.DCGM_GPU_TEMP, "gauge", "GPU temperature (in C)."),
    DcgmField(cv.DCGM_MEMORY_TEMP, "gauge", "Memory temperature (in C)."),
    # XID.
    DcgmField(cv.DCGM_XID_ERRORS, "gauge", "Value of the last XID error encountered."),
    DcgmField(cv.DCGM_XID_ERRORS_COUNT, "gauge", "Count of XID errors within the exporter's XID window (label xid)."),
    # ECC.
    DcgmField(cv.DCGM_ECC_SBE_VOLATILE, "counter", "Total number of single-bit volatile ECC errors."),
    DcgmField(cv.DCGM_ECC_DBE_VOLATILE, "counter", "Total number of double-bit volatile ECC errors."),
    DcgmField(cv.DCGM_ECC_SBE_AGGREGATE, "counter", "Total number of single-bit persistent ECC errors."),
    DcgmField(cv.DCGM_ECC_DBE_AGGREGATE, "counter", "Total number of double-bit persistent ECC errors."),
    # Row remapping (A100 and later).
    DcgmField(cv.DCGM_UNCORRECTABLE_REMAPPED_ROWS, "counter", "Number of remapped rows for uncorrectable errors"),
    DcgmField(cv.DCGM_CORRECTABLE_REMAPPED_ROWS, "counter", "Number of remapped rows for correctable errors"),
    DcgmField(cv.DCGM_ROW_REMAP_FAILURE, "gauge", "Whether remapping of rows has failed"),
    # NVLink.
    DcgmField(cv.DCGM_NVLINK_BANDWIDTH, "counter", "Total number of NVLink bandwidth counters for all lanes."),
    DcgmField(cv.DCGM_NVLINK_TX_BYTES, "gauge", "The rate of data transmitted over NVLink (in B/s)."),
    DcgmField(cv.DCGM_NVLINK_RX_BYTES, "gauge", "The rate of data received over NVLink (in B/s)."),
    DcgmField(cv.DCGM_NVLINK_CRC_FLIT_ERRORS, "counter", "Total number of NVLink flow-control CRC errors."),
    DcgmField(cv.DCGM_NVLINK_CRC_DATA_ERRORS, "counter", "Total number of NVLink data CRC errors."),
    DcgmField(cv.DCGM_NVLINK_REPLAY_ERRORS, "counter", "Total number of NVLink retries."),
    DcgmField(cv.DCGM_NVLINK_RECOVERY_ERRORS, "counter", "Total number of NVLink recovery errors."),
    # PCIe.
    DcgmField(cv.DCGM_PCIE_TX_BYTES, "gauge", "The rate of data transmitted over the PCIe bus (in B/s)."),
    DcgmField(cv.DCGM_PCIE_RX_BYTES, "gauge", "The rate of data received over the PCIe bus (in B/s)."),
    DcgmField(cv.DCGM_PCIE_REPLAY_COUNTER, "counter", "Total number of PCIe retries."),
    # Static information, exported as a label on the other metrics.
    DcgmField(cv.DCGM_DRIVER_VERSION, "label", "Driver Version"),
)


def dcgm_metrics_csv() -> str:
    """dcgm-exporter's collector file: `DCGM FIELD, Prometheus metric type, help message` per line,
    `#` comments (the help text may not contain commas: the file is parsed as CSV)."""
    lines = ["# Generated by gpu-platform (components/monitoring.py). Format:",
             "# DCGM FIELD, Prometheus metric type, help message"]
    lines += [f"{f.name}, {f.kind}, {f.help}" for f in DCGM_FIELDS]
    return "\n".join(lines) + "\n"


def kueue_service_monitor_spec() -> dict[str, Any]:
    """Kueue's ServiceMonitor: its endpoint is Kueue's scrape job, the one the managed collector and the live local
    cluster run too (gpu_platform/plan/scrape_jobs.py: https with Kueue's self-signed certificate not verified, as the
    Kueue chart's own ServiceMonitor does unless cert-manager is on, and the scraper's ServiceAccount token)."""
    return {
        "namespaceSelector": {"matchNames": [cv.KUEUE_NAMESPACE]},
        "selector": {"matchLabels": {
            cv.APP_NAME: KUEUE_CHART_NAME,
            cv.APP_INSTANCE: cv.KUEUE_RELEASE_NAME,
            cv.COMPONENT: KUEUE_METRICS_COMPONENT,
        }},
        "endpoints": [service_monitor_endpoint(source(cv.KUEUE_JOB))],
    }


class Monitoring(pulumi.ComponentResource):
    def __init__(self, name: str, plan: Plan, operator: Any, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:monitoring:Monitoring", name, None, opts)
        self.plan = plan
        addons = plan.addons
        self.rule_groups = alerts.rule_groups(plan)
        self.dashboards = dashboards.dashboards(plan)
        release_label = {cv.PROMETHEUS_RELEASE_LABEL: addons.monitoring.prometheus_release}
        ns_name = cv.MONITORING_NAMESPACE

        # The operator's release namespace must exist first; dcgm-exporter reads this ConfigMap from there.
        self.dcgm_metrics = k8s.core.v1.ConfigMap(
            f"monitoring-{cv.DCGM_METRICS_CONFIGMAP}",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=cv.DCGM_METRICS_CONFIGMAP, namespace=cv.GPU_OPERATOR_NAMESPACE, labels=labels("dcgm-exporter"),
            ),
            data={DCGM_METRICS_KEY: dcgm_metrics_csv()},
            opts=pulumi.ResourceOptions(parent=self, depends_on=[operator.namespace]),
        )

        # kube-prometheus-stack's node-exporter (hostNetwork, hostPID, hostPath) usually lands in this
        # namespace and is rejected by `baseline`, so enforce privileged and warn/audit at baseline.
        self.namespace, self.admins = platform_namespace(
            self, plan, ns_name, "monitoring", enforce=cv.PSA_LEVELS[0], warn_audit=cv.PSA_LEVELS[1])
        in_ns = pulumi.ResourceOptions(parent=self, depends_on=[self.namespace])
        self.dashboard_maps = [
            k8s.core.v1.ConfigMap(
                f"monitoring-dashboard-{d.uid}",
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name=d.uid, namespace=ns_name,
                    labels={**labels("dashboards"), cv.GRAFANA_DASHBOARD_LABEL: cv.GRAFANA_DASHBOARD_LABEL_VALUE},
                ),
                data={d.file_name: json.dumps(d.to_json(), indent=1, sort_keys=True)},
                opts=in_ns,
            )
            for d in self.dashboards
        ]

        self.rules = None
        self.kueue_monitor = None
        if addons.monitoring.install:
            self.rules = KubeObject(
                f"monitoring-{PROMETHEUS_RULE_NAME}",
                {
                    "apiVersion": "monitoring.coreos.com/v1",
                    "kind": "PrometheusRule",
                    "metadata": {"name": PROMETHEUS_RULE_NAME, "namespace": ns_name,
                                 "labels": {**labels("alerts"), **release_label}},
                    "spec": {"groups": self.rule_groups},
                },
                opts=in_ns,
            )
            if addons.kueue.install:
                self.kueue_monitor = KubeObject(
                    f"monitoring-{KUEUE_SERVICE_MONITOR_NAME}",
                    {
                        "apiVersion": "monitoring.coreos.com/v1",
                        "kind": "ServiceMonitor",
                        "metadata": {"name": KUEUE_SERVICE_MONITOR_NAME, "namespace": ns_name,
                                     "labels": {**labels("kueue-metrics"), **release_label}},
                        "spec": kueue_service_monitor_spec(),
                    },
                    opts=in_ns,
                )
        self.register_outputs({})

    def exports(self) -> dict[str, Any]:
        return {
            "monitoring": {
                "namespace": cv.MONITORING_NAMESPACE,
                "installed": self.plan.addons.monitoring.install,
                "dashboards": [d.uid for d in self.dashboards],
                "alerts": sorted(a.alert for a in alerts.alerts(self.plan)),
            }
        }
