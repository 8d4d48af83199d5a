"""Grafana dashboards of the platform, generated from Python (no hand-edited JSON to drift).

Each dashboard reads the recording rules of components/alerts/ (so a panel and an alert never disagree
on what "utilization of team X" means), Kueue's metrics, and the DCGM fields Monitoring asks
dcgm-exporter for. Grafana's dashboard sidecar loads every ConfigMap labelled
`grafana_dashboard: "1"` (kube-prometheus-stack's default sidecar label), one dashboard per data key.

No pulumi import here: dashboards are plain data, and the tests check every query against the rules
and the DCGM metrics list.

The three shapes the dashboards use (timeseries panels, Prometheus targets, label_values variables) are the
dataclasses below rather than grafana-foundation-sdk's builders, whose JSON differs from what is deployed (see
docs/architecture.md, "Dashboards are dataclasses of our own").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpu_platform import conventions as cv
from gpu_platform.plan import Plan

from . import alerts as a

# Grafana dashboard JSON model (grafana.com/docs/grafana/latest/dashboards/build-dashboards/view-dashboard-json-model).
SCHEMA_VERSION = 39
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
TAGS = ("gpu-platform",)
PANEL_WIDTH = 12
PANEL_HEIGHT = 8


# The labels that name one GPU or MIG instance on a DCGM series. With dcgm-exporter's virtual GPUs (any
# time-sliced pool) a device has one copy of each series per pod using it (NVIDIA/dcgm-exporter
# internal/pkg/transformation/kubernetes.go), so a sum over series counts a shared GPU once per pod.
DEVICE = "node, gpu, UUID, GPU_I_ID"


def per_device(expr: str, extra: str = "") -> str:
    """`expr` with one series per GPU or MIG instance (the pods' copies collapsed), to sum or average."""
    return f"max by ({DEVICE}{', ' + extra if extra else ''}) ({expr})"


def in_pool(metric: str, pool_selector: str) -> str:
    """A DCGM series with its node's pool: dcgm-exporter knows the node, the plan's node-pool series the pool."""
    return f"{metric} * on (node) group_left (pool) {a.NODE_POOL}{pool_selector}"


# The NVLink error counters the health dashboard plots, with each line's legend.
NVLINK_ERRORS: tuple[tuple[str, str], ...] = (
    (cv.DCGM_NVLINK_RECOVERY_ERRORS, "recovery_error"),
    (cv.DCGM_NVLINK_REPLAY_ERRORS, "replay_error"),
    (cv.DCGM_NVLINK_CRC_DATA_ERRORS, "crc_data_error"),
    (cv.DCGM_NVLINK_CRC_FLIT_ERRORS, "crc_flit_error"),
)


def framebuffer_by_team(team_selector: str = "") -> str:
    """Framebuffer used per team: each device's own framebuffer used (cv.HELD_FIELD), given to the teams whose pods
    hold it. Under virtual GPUs dcgm-exporter 4.8.3 reports a held device's memory as the device's series without pod
    labels plus one per-process series per pod (with pod_uid), and a pod's per-process value is its processes'
    memory found through /proc/<pid>/cgroup: 0 when the exporter does not share the host's PID namespace, the GPU
    Operator's default (chart values dcgmExporter.hostPID: false; NVIDIA/dcgm-exporter internal/pkg/
    transformation/kubernetes.go createPerProcessMetrics, buildIdlePodValues, pidmapper.go). Summing the pods'
    series read ~0; the device's own value (the largest of its series) attributed through the holds does not."""
    holders = (f"max by ({a.DEVICE_KEY}, team) ({a.HELD_DEVICE} * on (namespace) group_left (team) "
               f"{a.NAMESPACE_TEAM}{team_selector})")
    return (f"sum by (team) ({holders} * on ({a.DEVICE_KEY}) group_left () "
            f"max by ({a.DEVICE_KEY}) ({a.HELD_FIELD}))")


@dataclass(frozen=True, slots=True)
class Target:
    expr: str
    legend: str


@dataclass(frozen=True, slots=True)
class Panel:
    title: str
    description: str
    targets: tuple[Target, ...]
    unit: str = "short"
    kind: str = "timeseries"


@dataclass(frozen=True, slots=True)
class Dashboard:
    uid: str
    title: str
    description: str
    panels: tuple[Panel, ...]
    variables: tuple[tuple[str, str], ...] = ()  # (name, label_values query)

    @property
    def file_name(self) -> str:
        return f"{self.uid}.json"

    @property
    def expressions(self) -> list[str]:
        return [t.expr for p in self.panels for t in p.targets]

    def to_json(self) -> dict[str, Any]:
        panels = []
        for i, p in enumerate(self.panels):
            panels.append({
                "id": i + 1,
                "type": p.kind,
                "title": p.title,
                "description": p.description,
                "datasource": DATASOURCE,
                "gridPos": {"x": (i % 2) * PANEL_WIDTH, "y": (i // 2) * PANEL_HEIGHT, "w": PANEL_WIDTH, "h": PANEL_HEIGHT},
                "fieldConfig": {"defaults": {"unit": p.unit}, "overrides": []},
                "options": {"legend": {"displayMode": "table", "placement": "bottom", "calcs": ["lastNotNull", "max"]}},
                "targets": [
                    {"refId": chr(ord("A") + j), "datasource": DATASOURCE, "expr": t.expr, "legendFormat": t.legend}
                    for j, t in enumerate(p.targets)
                ],
            })
        variables: list[dict[str, Any]] = [
            {"name": "datasource", "label": "Data source", "type": "datasource", "query": "prometheus"},
        ]
        for name, query in self.variables:
            variables.append({
                "name": name, "label": name.replace("_", " "), "type": "query", "datasource": DATASOURCE,
                "query": {"query": query, "refId": f"{name}-values"}, "definition": query,
                "includeAll": True, "multi": True, "allValue": ".*", "refresh": 2, "sort": 1,
                "current": {"text": "All", "value": "$__all"},
            })
        return {
            "uid": self.uid,
            "title": self.title,
            "description": self.description,
            "tags": list(TAGS),
            "editable": False,
            "schemaVersion": SCHEMA_VERSION,
            "time": {"from": "now-24h", "to": "now"},
            "refresh": "1m",
            "timezone": "browser",
            "templating": {"list": variables},
            "panels": panels,
        }


def fleet(plan: Plan) -> Dashboard:
    """Is the fleet's money well spent: allocation against capacity, and utilization of what is allocated."""
    pool = '{pool=~"$pool"}'
    team = '{team=~"$team", pool=~"$pool"}'
    return Dashboard(
        uid="gpu-platform-fleet",
        title="GPU fleet: allocation and utilization",
        description=f"GPU allocation (Kueue-admitted units) and utilization (DCGM graphics-engine activity) by "
                    f"pool and team, environment {plan.environment}, cluster {plan.cluster.name}.",
        variables=(("pool", f"label_values({a.POOL_CAPACITY_UNITS}, pool)"),
                   ("team", f"label_values({a.NAMESPACE_TEAM}, team)")),
        panels=(
            Panel("Allocation by pool", "Admitted units over the pool's maximum capacity (max nodes x units per node).",
                  (Target(f"{a.POOL_ALLOCATION_RATIO}{pool}", "{{pool}}"),), unit="percentunit"),
            Panel("Allocated, allocatable and capacity units by pool",
                  "Units admitted by Kueue, units the pool's current nodes advertise, and the pool's maximum.",
                  (Target(f"{a.POOL_ALLOCATED}{pool}", "{{pool}} allocated"),
                   Target(f"{a.POOL_ALLOCATABLE}{pool}", "{{pool}} allocatable"),
                   Target(f"{a.POOL_CAPACITY_UNITS}{pool}", "{{pool}} capacity"))),
            Panel("Utilization by pool", "Mean graphics-engine activity of every GPU (or MIG instance) in the pool.",
                  (Target(f"{a.POOL_UTILIZATION}{pool}", "{{pool}}"),), unit="percentunit"),
            Panel("Utilization by team", "Mean graphics-engine activity of the GPUs allocated to the team's pods.",
                  (Target(f"{a.TEAM_POOL_UTILIZATION}{team}", "{{team}} / {{pool}}"),), unit="percentunit"),
            Panel("Allocated units by team and pool", "Units admitted by Kueue per team (ClusterQueue) and pool (flavor), "
                  "against the team's nominal quota.",
                  (Target(f"{a.TEAM_POOL_ALLOCATED}{team}", "{{team}} / {{pool}}"),
                   Target(f"{a.TEAM_POOL_NOMINAL_UNITS}{team}", "{{team}} / {{pool}} nominal"))),
            Panel("Idle allocated GPUs by team", f"GPUs held by a team's pods with graphics-engine activity under "
                  f"{a.IDLE_ENGINE_ACTIVE:.0%} right now (the {a.IDLE_FOR} alert is GpuAllocatedIdle).",
                  (Target(f"count by (team, pool) ({a.ALLOCATED_GPU_ACTIVE}{team} < {a.IDLE_ENGINE_ACTIVE})",
                          "{{team}} / {{pool}}"),)),
            Panel("SM and memory activity by pool", "Streaming-multiprocessor and DRAM activity: how hard the GPUs "
                  "that are busy are actually worked.",
                  (Target(f"avg by (pool) ({per_device(in_pool(cv.DCGM_SM_ACTIVE, pool), 'pool')})", "{{pool}} SM"),
                   Target(f"avg by (pool) ({per_device(in_pool(cv.DCGM_DRAM_ACTIVE, pool), 'pool')})", "{{pool}} DRAM")),
                  unit="percentunit"),
            Panel("Framebuffer memory used by team", "GPU memory of the GPUs and MIG instances each team's pods "
                  "hold (a time-sliced GPU's memory counts in full for every team using it).",
                  (Target(framebuffer_by_team('{team=~"$team"}'), "{{team}}"),), unit="mbytes"),
        ),
    )


def queues(plan: Plan) -> Dashboard:
    """Who waits for GPUs and for how long: one line per ClusterQueue (one per team)."""
    gpu = a.regex_union(list(plan.gpu_resource_names))
    cq = '{cluster_queue=~"$cluster_queue"}'
    cq_gpu = f'{{cluster_queue=~"$cluster_queue", resource=~"{gpu}"}}'
    return Dashboard(
        uid="gpu-platform-queues",
        title="GPU queues: wait and admissions by ClusterQueue",
        description="Kueue pending workloads, admissions, wait times and quota usage per ClusterQueue.",
        variables=(("cluster_queue", f"label_values({cv.KUEUE_PENDING_WORKLOADS}, cluster_queue)"),),
        panels=(
            Panel("Pending workloads", "Workloads waiting for quota (active) or parked until something changes (inadmissible).",
                  (Target(f"sum by (cluster_queue, status) ({cv.KUEUE_PENDING_WORKLOADS}{cq})",
                          "{{cluster_queue}} {{status}}"),)),
            Panel("Admissions per minute", "Workloads admitted.",
                  (Target(f"sum by (cluster_queue) (rate({cv.KUEUE_ADMITTED_WORKLOADS}{cq}[$__rate_interval])) * 60",
                          "{{cluster_queue}}"),)),
            Panel("Admission wait time (p50, p90)", "Time from creation or requeue to admission.",
                  (Target("histogram_quantile(0.5, sum by (cluster_queue, le) "
                          f"(rate({cv.KUEUE_ADMISSION_WAIT_BUCKETS}{cq}[$__rate_interval])))", "{{cluster_queue}} p50"),
                   Target("histogram_quantile(0.9, sum by (cluster_queue, le) "
                          f"(rate({cv.KUEUE_ADMISSION_WAIT_BUCKETS}{cq}[$__rate_interval])))", "{{cluster_queue}} p90")),
                  unit="s"),
            Panel("GPU usage against nominal quota", "Admitted GPU units per ClusterQueue and flavor; above nominal is borrowed.",
                  (Target(f"sum by (cluster_queue, flavor) ({cv.KUEUE_RESOURCE_USAGE}{cq_gpu})",
                          "{{cluster_queue}} / {{flavor}} usage"),
                   Target(f"sum by (cluster_queue, flavor) ({cv.KUEUE_NOMINAL_QUOTA}{cq_gpu})",
                          "{{cluster_queue}} / {{flavor}} nominal"))),
            Panel("Admitted active workloads", "Admitted workloads that are running.",
                  (Target(f"sum by (cluster_queue) ({cv.KUEUE_ADMITTED_ACTIVE_WORKLOADS}{cq})", "{{cluster_queue}}"),)),
            Panel("Evictions per hour by reason", "Preemptions, PodsReady timeouts and other evictions.",
                  (Target(f"sum by (cluster_queue, reason) (rate({cv.KUEUE_EVICTED_WORKLOADS}{cq}[$__rate_interval])) * 3600",
                          "{{cluster_queue}} {{reason}}"),)),
        ),
    )


def health(plan: Plan) -> Dashboard:
    """Is the hardware healthy: errors, throttling, temperatures and links, per node and GPU."""
    sel = '{node=~"$node"}'
    return Dashboard(
        uid="gpu-platform-gpu-health",
        title="GPU health",
        description="XID errors, ECC and row remapping, throttling, temperature, power, NVLink and PCIe per GPU "
                    "(dcgm-exporter), and GPU nodes without metrics.",
        variables=(("node", f"label_values({a.NODE_POOL}, node)"),),
        panels=(
            Panel("XID errors (5 min window)", "XIDs reported by the driver, by code. 48, 63, 64, 74, 79, 94 and 95 alert.",
                  (Target(f"sum by (node, gpu, xid) ({per_device(cv.DCGM_XID_ERRORS_COUNT + sel, 'xid')})",
                          "{{node}} GPU {{gpu}} XID {{xid}}"),)),
            Panel("ECC errors per hour", "Single-bit (corrected) and double-bit (uncorrectable) volatile ECC errors.",
                  (Target(f"sum by (node, gpu) ({per_device(f'increase({cv.DCGM_ECC_SBE_VOLATILE}{sel}[1h])')})",
                          "{{node}} GPU {{gpu}} SBE"),
                   Target(f"sum by (node, gpu) ({per_device(f'increase({cv.DCGM_ECC_DBE_VOLATILE}{sel}[1h])')})",
                          "{{node}} GPU {{gpu}} DBE"))),
            Panel("Remapped rows", "Rows remapped for correctable and uncorrectable errors, and remap failures (1 = failed).",
                  (Target(f"max by (node, gpu) ({cv.DCGM_CORRECTABLE_REMAPPED_ROWS}{sel})", "{{node}} GPU {{gpu}} correctable"),
                   Target(f"max by (node, gpu) ({cv.DCGM_UNCORRECTABLE_REMAPPED_ROWS}{sel})",
                          "{{node}} GPU {{gpu}} uncorrectable"),
                   Target(f"max by (node, gpu) ({cv.DCGM_ROW_REMAP_FAILURE}{sel})", "{{node}} GPU {{gpu}} failure"))),
            Panel("Throttled time", "Share of time clocks were lowered for thermal or power reasons.",
                  (Target(f"max by (node, gpu) (rate({cv.DCGM_THERMAL_VIOLATION}{sel}[$__rate_interval])) / 1e9",
                          "{{node}} GPU {{gpu}} thermal"),
                   Target(f"max by (node, gpu) (rate({cv.DCGM_POWER_VIOLATION}{sel}[$__rate_interval])) / 1e9",
                          "{{node}} GPU {{gpu}} power")), unit="percentunit"),
            Panel("Temperature", "GPU and HBM temperature.",
                  (Target(f"max by (node, gpu) ({cv.DCGM_GPU_TEMP}{sel})", "{{node}} GPU {{gpu}}"),
                   Target(f"max by (node, gpu) ({cv.DCGM_MEMORY_TEMP}{sel})", "{{node}} GPU {{gpu}} memory")),
                  unit="celsius"),
            Panel("Power draw", "Board power.",
                  (Target(f"max by (node, gpu) ({cv.DCGM_POWER_USAGE}{sel})", "{{node}} GPU {{gpu}}"),), unit="watt"),
            Panel("NVLink errors per hour", "Recovery, replay and CRC errors on the GPU's NVLinks.",
                  tuple(Target(f"sum by (node, gpu) ({per_device(f'increase({metric}{sel}[1h])')})",
                               f"{{{{node}}}} GPU {{{{gpu}}}} {legend}")
                        for metric, legend in NVLINK_ERRORS)),
            Panel("NVLink and PCIe throughput", "Bytes per second over NVLink and PCIe (transmit + receive).",
                  (Target(f"sum by (node) ({per_device(f'{cv.DCGM_NVLINK_TX_BYTES}{sel} + {cv.DCGM_NVLINK_RX_BYTES}{sel}')})",
                          "{{node}} NVLink"),
                   Target(f"sum by (node) ({per_device(f'{cv.DCGM_PCIE_TX_BYTES}{sel} + {cv.DCGM_PCIE_RX_BYTES}{sel}')})",
                          "{{node}} PCIe")),
                  unit="Bps"),
            Panel("PCIe replays per hour", "Link-level retries on the GPU's PCIe link; a rising count is a failing link.",
                  (Target(f"sum by (node, gpu) ({per_device(f'increase({cv.DCGM_PCIE_REPLAY_COUNTER}{sel}[1h])')})",
                          "{{node}} GPU {{gpu}}"),)),
            Panel("GPU nodes: expected against allocatable units", "What each node's pool says it should advertise, and what it does.",
                  (Target(f"{a.NODE_EXPECTED_UNITS}{sel}", "{{node}} expected {{resource}}"),
                   Target(f"max by (node, resource) ({cv.KSM_NODE_ALLOCATABLE}{sel} and on (node, resource) {a.NODE_EXPECTED_UNITS})",
                          "{{node}} allocatable {{resource}}"))),
            Panel("dcgm-exporter targets up", "1 per GPU node whose exporter is scraped.",
                  (Target(f'max by (node) ({cv.SCRAPE_UP}{{job="{a.DCGM_JOB}", node=~"$node"}})', "{{node}}"),)),
            Panel("Framebuffer memory", "Used and free GPU memory.",
                  (Target(f"sum by (node) ({per_device(cv.DCGM_FB_USED + sel)})", "{{node}} used"),
                   Target(f"sum by (node) ({per_device(cv.DCGM_FB_FREE + sel)})", "{{node}} free")), unit="mbytes"),
        ),
    )


def dashboards(plan: Plan) -> tuple[Dashboard, ...]:
    return (fleet(plan), queues(plan), health(plan))
