"""Prometheus recording and alerting rules of the platform, as data derived from the plan.

One source for two consumers: Monitoring puts `rule_groups(plan)` into a PrometheusRule, and the promtool
tests write the very same groups to a rule file (`rule_file(plan)`), so what CI tests is what deploys.
No pulumi import here: the rules are plain data.

Where the series come from (and the label names they carry):
- dcgm-exporter, scraped through the GPU Operator's ServiceMonitor, which we configure with
  `honorLabels: true` (a GPU's workload keeps its own `namespace`/`pod` labels) and a relabeling that copies
  the target's node name into `node` (see gpu_operator.py). Metric names are DCGM field names.
- kube-state-metrics: `kube_node_labels`, `kube_pod_labels` (both need KSM_METRIC_LABELS_ALLOWLIST below,
  documented in the README's "What the monitoring stack needs") and `kube_node_status_allocatable`.
- Kueue (ClusterQueue metrics; the resource ones need Kueue's `metrics.enableClusterQueueResources`).
- The plan itself: static "info" series (`vector(1)` with labels) that map namespace -> team,
  ClusterQueue -> team, flavor -> pool and record each pool's units per node. They let alerts speak in
  teams and pools without re-deriving anything and without relying on workloads to label themselves.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from gpu_platform import conventions as cv
from gpu_platform.plan import Plan

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
# kube-state-metrics' --metric-labels-allowlist (kube-prometheus-stack value
# kube-state-metrics.metricLabelsAllowlist): the node pool label and the attribution pod labels.
KSM_METRIC_LABELS_ALLOWLIST: tuple[str, ...] = (
    f"nodes=[{cv.POOL}]",
    f"pods=[{','.join(cv.GPU_METRIC_POD_LABELS)}]",
)
# dcgm-exporter's Service carries app=nvidia-dcgm-exporter and the operator's ServiceMonitor sets
# `jobLabel: app` (gpu-operator assets/state-dcgm-exporter/0500_service_monitor.yaml), so that is the job.
DCGM_JOB = "nvidia-dcgm-exporter"
# Kueue 0.19 labels its metrics with replica_role (leader, follower or standalone; pkg/metrics/metrics.go):
# count the leader (or the single replica) only, so an HA Kueue does not double every number.
KUEUE_REPLICA = 'replica_role!="follower"'
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
BUSY_FIELD = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
HELD_FIELD = "DCGM_FI_DEV_FB_USED"
# One GPU, MIG instance or time-sliced replica held by one pod: dcgm-exporter gives a copy of a device's series
# per replica a pod holds (`vgpu`), and, for DCGM_FI_DEV_FB_USED and DCGM_FI_DEV_GPU_UTIL under virtual GPUs, the
# device's own series beside the pods' per-process ones (NVIDIA/dcgm-exporter internal/pkg/transformation/
# kubernetes.go Process and createPerProcessMetrics, PR #594): collapsing to these labels counts each hold once.
HOLD_KEY = "node, pool, UUID, GPU_I_ID, vgpu, namespace, pod"
DEVICE_KEY = "node, UUID, GPU_I_ID"

# Recording rule names (level:metric:operations, Prometheus "Recording rules" naming best practice).
NAMESPACE_TEAM = "gpu_platform:namespace_team:info"
CLUSTER_QUEUE_TEAM = "gpu_platform:cluster_queue_team:info"
FLAVOR_POOL = "gpu_platform:flavor_pool:info"
POOL_UNITS_PER_NODE = "gpu_platform:pool_units_per_node"
POOL_CAPACITY_UNITS = "gpu_platform:pool_capacity_units"
TEAM_POOL_NOMINAL_UNITS = "gpu_platform:team_pool_nominal_units"
NODE_POOL = "gpu_platform:node_pool:info"
NODE_EXPECTED_UNITS = "gpu_platform:node_expected_gpu_units"
POD_ATTRIBUTION = "gpu_platform:pod_attribution:info"
# Each GPU, MIG instance or replica the exporter attributes to a pod (HOLD_KEY), whether profiling is there or not.
HELD_DEVICE = "gpu_platform:held_device:info"
# GPU nodes whose dcgm-exporter is scraped and reports no BUSY_FIELD: busy is not measured there.
NODE_BUSY_UNMEASURED = "gpu_platform:node_busy_unmeasured:info"
GPU_ACTIVE = "gpu_platform:gpu_engine_active:ratio"
ALLOCATED_GPU_ACTIVE = "gpu_platform:allocated_gpu_engine_active:ratio"
POOL_UTILIZATION = "gpu_platform:pool_gpu_engine_active:avg"
TEAM_POOL_UTILIZATION = "gpu_platform:team_pool_gpu_engine_active:avg"
TEAM_UTILIZATION = "gpu_platform:team_gpu_engine_active:avg"
TEAM_POOL_ALLOCATED = "gpu_platform:team_pool_allocated_units:sum"
POOL_ALLOCATED = "gpu_platform:pool_allocated_units:sum"
POOL_ALLOCATION_RATIO = "gpu_platform:pool_allocation:ratio"
POOL_ALLOCATABLE = "gpu_platform:pool_allocatable_units:sum"
# Workload evictions (each one a requeue, or the deactivation that ends them) per team, reason and underlying
# cause over the last hour, from Kueue's kueue_evicted_workloads_total (labels cluster_queue, reason,
# underlying_cause, priority_class, replica_role; pkg/metrics/metrics.go at v0.19.2).
TEAM_EVICTIONS = "gpu_platform:team_workload_evictions:increase1h"
# Useful work per team and pool, in GPUs (gpu_platform/useful_work.py defines what they mean; the report reads
# these): allocated is what Kueue admitted (its ClusterQueue usage, in the pool's units, over units per GPU);
# busy is DCGM's graphics-engine activity of the GPUs attributed to the team's pods, each series weighted by
# the share of a GPU it stands for (a MIG instance, or a pod's replica of a time-sliced GPU, is 1/units per
# GPU of one); idle is allocated minus busy. Per pod the same from DCGM alone, for the runs' outcomes.
POOL_GPUS_PER_UNIT = "gpu_platform:pool_gpus_per_unit"
POD_ALLOCATED_GPUS = "gpu_platform:pod_allocated_gpus"
POD_BUSY_GPUS = "gpu_platform:pod_busy_gpus"
TEAM_POOL_ALLOCATED_GPUS = "gpu_platform:team_pool_allocated_gpus"
TEAM_POOL_BUSY_GPUS = "gpu_platform:team_pool_busy_gpus"
TEAM_POOL_IDLE_GPUS = "gpu_platform:team_pool_idle_gpus"
# ... and as GPU-hours over the last GPU_HOURS_WINDOW, sampled every GPU_HOURS_STEP: sum_over_time of the GPUs
# on a fixed grid times the step (useful_work.sampled_hours), so the report, sampling the same series on the
# same grid, gives the same figure to the last digit.
GPU_HOURS_WINDOW = "1h"
GPU_HOURS_STEP_SECONDS = 60
TEAM_POOL_ALLOCATED_GPU_HOURS = "gpu_platform:team_pool_allocated_gpu_hours:1h"
TEAM_POOL_BUSY_GPU_HOURS = "gpu_platform:team_pool_busy_gpu_hours:1h"
TEAM_POOL_IDLE_GPU_HOURS = "gpu_platform:team_pool_idle_gpu_hours:1h"

# Thresholds (what "idle" and "too long" mean), in one place so the docs can quote them.
IDLE_ENGINE_ACTIVE = 0.01  # DCGM_FI_PROF_GR_ENGINE_ACTIVE below 1% is an idle GPU
IDLE_FOR = "30m"
# A team holds GPUs it does not use: over the last hour at least this share of its allocated GPU-hours in a
# pool were idle, and at least this many GPU-hours (one GPU idle all hour), for TEAM_IDLE_FOR.
TEAM_IDLE_SHARE = 0.5
TEAM_IDLE_MIN_GPU_HOURS = 1.0
TEAM_IDLE_FOR = "15m"
PENDING_FOR = "1h"
AT_QUOTA_FOR = "30m"
NODE_GPUS_MISSING_FOR = "15m"
EXPORTER_DOWN_FOR = "10m"
BUSY_INPUT_MISSING_FOR = "15m"

SEVERITIES = ("critical", "warning", "info")

# NVML clock-event (throttle) reason bits in DCGM_FI_DEV_CLOCKS_EVENT_REASONS (nvml.h
# nvmlClocksEventReason*): SwThermalSlowdown 0x20, HwThermalSlowdown 0x40, HwPowerBrakeSlowdown 0x80.
# A power *cap* (SwPowerCap 0x4) is normal at full load and deliberately not alerted on.
THERMAL_BITS = (0x20, 0x40)
POWER_BRAKE_BITS = (0x80,)


@dataclass(frozen=True, slots=True)
class Xid:
    code: int
    name: str
    meaning: str
    action: str


# The XIDs that mean the hardware needs attention, from NVIDIA's "XID Errors" catalogue
# (docs.nvidia.com/deploy/xid-errors) and the GPU memory error management guide (row remapping, A100+).
CRITICAL_XIDS: tuple[Xid, ...] = (
    Xid(48, "DoubleBitEcc", "a double-bit (uncorrectable) ECC error",
        "Drain the node, then reset the GPU (or reboot the node). If XID 48 repeats on the same GPU, open a "
        "hardware case with AWS and replace the instance."),
    Xid(63, "RowRemapPending", "an ECC page retirement / row-remapping event: a faulty memory row was "
        "recorded and is remapped at the next GPU reset",
        "Finish or checkpoint the GPU's workloads, drain the node and reset the GPU so the remapping takes "
        "effect. Check DCGM_FI_DEV_ROW_REMAP_FAILURE and the remapped-row counters on the GPU health dashboard."),
    Xid(64, "RowRemapFailure", "an ECC page retirement / row-remapper recording failure",
        "Drain the node now and reset the GPU. If the error persists after the reset, the GPU is out of "
        "spare rows: replace the instance."),
    Xid(74, "NvlinkError", "an NVLink error (link training or data failure)",
        "Drain the node; multi-GPU jobs on it run degraded or hang. Reset the GPUs (reboot the node). If "
        "XID 74 returns, replace the instance (NVLink/NVSwitch hardware)."),
    Xid(79, "FallenOffBus", "the GPU has fallen off the PCIe bus and is unreachable",
        "Cordon and drain the node and reboot it; the GPU cannot be recovered in place. If it happens again "
        "on the same instance, replace the instance."),
    Xid(94, "ContainedEccError", "a contained uncorrectable memory error: the affected application was "
        "terminated, other applications on the GPU keep running",
        "Let the affected job restart elsewhere; drain the node at the next opportunity and reset the GPU "
        "so the faulty row is remapped."),
    Xid(95, "UncontainedEccError", "an uncontained uncorrectable memory error: every application on the "
        "GPU is affected",
        "Drain the node now and reset the GPU; restart the affected jobs. Replace the instance if the GPU "
        "has no spare rows left (row-remap failure)."),
)


@dataclass(frozen=True, slots=True)
class Record:
    record: str
    expr: str
    labels: Mapping[str, str] = field(default_factory=dict)

    def to_rule(self) -> dict[str, Any]:
        out: dict[str, Any] = {"record": self.record, "expr": self.expr}
        if self.labels:
            out["labels"] = dict(self.labels)
        return out


@dataclass(frozen=True, slots=True)
class Alert:
    """An alert as a user meets it: a name, when it fires, how bad it is, and what to do about it."""

    alert: str
    expr: str
    severity: str
    summary: str
    description: str
    runbook: str
    for_: str = "0m"

    def to_rule(self) -> dict[str, Any]:
        return {
            "alert": self.alert,
            "expr": self.expr,
            "for": self.for_,
            "labels": {"severity": self.severity},
            "annotations": {"summary": self.summary, "description": self.description, "runbook": self.runbook},
        }


@dataclass(frozen=True, slots=True)
class Group:
    name: str
    rules: tuple[Record | Alert, ...]

    def to_group(self) -> dict[str, Any]:
        return {"name": self.name, "rules": [r.to_rule() for r in self.rules]}


def _static(record: str, value: float, labels: Mapping[str, str]) -> Record:
    """A constant series from the plan: `vector(value)` with the plan's labels."""
    return Record(record, f"vector({value})", labels)


def _with_pool(expr: str) -> str:
    """`expr` with the node's pool attached, keeping series whose node has no known pool (a health alert
    must not vanish because kube-state-metrics lacks the pool label)."""
    return f"(({expr}) * on (node) group_left (pool) {NODE_POOL}) or on (node) ({expr})"


def _per_gpu(expr: str) -> str:
    return f"max by ({GPU_KEY}) ({_with_pool(expr)})"


def _bit_set(metric: str, bits: tuple[int, ...]) -> str:
    """PromQL has no bitwise AND: bit b of x is set when floor(x / b) is odd."""
    return " or ".join(f"floor({metric} / {b}) % 2 == 1" for b in bits)


def plan_rules(plan: Plan) -> Group:
    """The plan as series: who owns which namespace and queue, which flavor is which pool, and how many
    schedulable units each pool's nodes should advertise."""
    rules: list[Record] = []
    for team in plan.teams:
        for ns in team.namespaces:
            rules.append(_static(NAMESPACE_TEAM, 1, {"namespace": ns, "team": team.name}))
        rules.append(_static(CLUSTER_QUEUE_TEAM, 1, {"cluster_queue": team.cluster_queue, "team": team.name}))
        for q in team.quotas:
            rules.append(_static(TEAM_POOL_NOMINAL_UNITS, q.nominal,
                                 {"team": team.name, "pool": q.pool, "resource": q.resource_name}))
    for pool in plan.pools:
        rules.append(_static(FLAVOR_POOL, 1, {"flavor": pool.flavor, "pool": pool.name}))
        rules.append(_static(POOL_UNITS_PER_NODE, pool.units_per_node,
                             {"pool": pool.name, "resource": ksm_resource(pool.resource_name)}))
        rules.append(_static(POOL_CAPACITY_UNITS, pool.capacity_units,
                             {"pool": pool.name, "resource": pool.resource_name}))
        rules.append(_static(POOL_GPUS_PER_UNIT, 1 / pool.units_per_gpu, {"pool": pool.name}))
    return Group("gpu-platform.plan", tuple(rules))


def pod_attribution_expr() -> str:
    """Per pod, its team and queue labels under the names dcgm-exporter gives them, from kube-state-metrics:
    only pods carrying at least one of them (so an unlabelled pod falls through `with_attribution`)."""
    ksm = [ksm_label(k) for k in cv.GPU_METRIC_POD_LABELS]
    expr = " or ".join(f'kube_pod_labels{{{k}!=""}}' for k in ksm)
    for name, source in zip(ATTRIBUTION_LABELS, ksm):
        expr = f'label_replace({expr}, "{name}", "$1", "{source}", "(.+)")'
    return f"max by (namespace, pod, {', '.join(ATTRIBUTION_LABELS)}) ({expr})"


def with_attribution(expr: str) -> str:
    """`expr` (GPU series with the workload pod's namespace/pod) carrying the pod's team and queue labels
    whatever dcgm-exporter's mode: joined from POD_ATTRIBUTION where kube-state-metrics knows the pod's
    labels, the series as the exporter sent it (with the labels it copied itself, or none) where not.
    Under KUBERNETES_VIRTUAL_GPUS the exporter copies no pod label at all (gpu_operator.dcgm_exporter_env)."""
    labels = ", ".join(ATTRIBUTION_LABELS)
    return (f"(({expr}) * on (namespace, pod) group_left ({labels}) {POD_ATTRIBUTION}) "
            f"or (({expr}) unless on (namespace, pod) {POD_ATTRIBUTION})")


def held_device_expr() -> str:
    """One series (value 1) per GPU, MIG instance or replica and the pod the exporter attributes it to, from the
    framebuffer field or the busy field, whichever has a value: held GPUs do not depend on profiling."""
    return (f"max by ({HOLD_KEY}) (({HELD_FIELD} or {BUSY_FIELD}) * on (node) group_left (pool) {NODE_POOL}) "
            "* 0 + 1")


def node_busy_unmeasured_expr() -> str:
    """GPU nodes of a pool whose exporter is up and gives no busy series: dcgm-exporter reports every device,
    held or not (virtual GPUs too since PR #594), so a node without one has no profiling."""
    return (f'((max by (node) (up{{job="{DCGM_JOB}"}}) == 1) * on (node) group_left (pool) {NODE_POOL}) '
            f"unless on (node) {BUSY_FIELD}")


def recording_rules(plan: Plan) -> Group:
    """GPU allocation and utilization per team and per pool (dashboards and alerts read these)."""
    kueue_gpu = regex_union(list(plan.gpu_resource_names))
    ksm_gpu = regex_union([ksm_resource(r) for r in plan.gpu_resource_names])
    return Group("gpu-platform.recording", (
        Record(NODE_POOL, f'max by (node, pool) (label_replace(kube_node_labels{{{POOL_NODE_LABEL}!=""}}, '
                          f'"pool", "$1", "{POOL_NODE_LABEL}", "(.+)"))'),
        Record(NODE_EXPECTED_UNITS, f"{NODE_POOL} * on (pool) group_left (resource) {POOL_UNITS_PER_NODE}"),
        Record(POD_ATTRIBUTION, pod_attribution_expr()),
        Record(GPU_ACTIVE, with_attribution(f"DCGM_FI_PROF_GR_ENGINE_ACTIVE * on (node) group_left (pool) {NODE_POOL}")),
        # A GPU is allocated to a team when dcgm-exporter attributes it to a pod in one of the team's
        # namespaces; unallocated GPUs keep the exporter's own namespace and drop out of the join.
        Record(ALLOCATED_GPU_ACTIVE, f"{GPU_ACTIVE} * on (namespace) group_left (team) {NAMESPACE_TEAM}"),
        Record(HELD_DEVICE, held_device_expr()),
        Record(NODE_BUSY_UNMEASURED, node_busy_unmeasured_expr()),
        # Each GPU (or MIG instance) once: with virtual GPUs a time-sliced GPU has one series per pod.
        Record(POOL_UTILIZATION, f"avg by (pool) (max by (node, pool, UUID, GPU_I_ID) ({GPU_ACTIVE}))"),
        Record(TEAM_POOL_UTILIZATION, f"avg by (team, pool) ({ALLOCATED_GPU_ACTIVE})"),
        Record(TEAM_UTILIZATION, f"avg by (team) ({ALLOCATED_GPU_ACTIVE})"),
        # Allocation is what Kueue admitted: usage per ClusterQueue (team) and flavor (pool), in pool units.
        Record(TEAM_POOL_ALLOCATED, f'sum by (team, pool, resource) (kueue_cluster_queue_resource_usage{{resource=~"{kueue_gpu}", {KUEUE_REPLICA}}} '
                                    f"* on (cluster_queue) group_left (team) {CLUSTER_QUEUE_TEAM} "
                                    f"* on (flavor) group_left (pool) {FLAVOR_POOL})"),
        Record(POOL_ALLOCATED, f"sum by (pool, resource) ({TEAM_POOL_ALLOCATED})"),
        Record(POOL_ALLOCATION_RATIO, f"{POOL_ALLOCATED} / on (pool, resource) {POOL_CAPACITY_UNITS}"),
        Record(POOL_ALLOCATABLE, f'sum by (pool, resource) (kube_node_status_allocatable{{resource=~"{ksm_gpu}"}} '
                                 f"* on (node) group_left (pool) {NODE_POOL})"),
    ))


def _hours(record: str) -> str:
    """GPU-hours of a GPUs series over the last GPU_HOURS_WINDOW: its samples on a GPU_HOURS_STEP grid, each
    standing for one step (gpu_platform.useful_work.sampled_hours)."""
    return f"sum_over_time({record}[{GPU_HOURS_WINDOW}:{GPU_HOURS_STEP_SECONDS}s]) * {GPU_HOURS_STEP_SECONDS} / 3600"


def useful_work_rules(plan: Plan) -> Group:
    """Allocated, busy and idle GPUs (and GPU-hours) per team and pool, and per pod; the team alert on idle
    allocation. The seeds' "useful work" view: what the report (platform_cli report) reads."""
    kueue_gpu = regex_union(list(plan.gpu_resource_names))
    weighted = f"{ALLOCATED_GPU_ACTIVE} * on (pool) group_left () {POOL_GPUS_PER_UNIT}"
    held = (f"{HELD_DEVICE} * on (namespace) group_left (team) {NAMESPACE_TEAM} "
            f"* on (pool) group_left () {POOL_GPUS_PER_UNIT}")
    return Group("gpu-platform.useful-work", (
        Record(POD_ALLOCATED_GPUS, f"sum by (team, pool, namespace, pod) ({held})"),
        Record(POD_BUSY_GPUS, f"sum by (team, pool, namespace, pod) ({weighted})"),
        Record(TEAM_POOL_ALLOCATED_GPUS,
               f'sum by (team, pool) (kueue_cluster_queue_resource_usage{{resource=~"{kueue_gpu}", {KUEUE_REPLICA}}} '
               f"* on (cluster_queue) group_left (team) {CLUSTER_QUEUE_TEAM} "
               f"* on (flavor) group_left (pool) {FLAVOR_POOL} "
               f"* on (pool) group_left () {POOL_GPUS_PER_UNIT})"),
        Record(TEAM_POOL_BUSY_GPUS, f"sum by (team, pool) ({POD_BUSY_GPUS})"),
        Record(TEAM_POOL_IDLE_GPUS, f"clamp_min({TEAM_POOL_ALLOCATED_GPUS} - on (team, pool) "
                                    f"({TEAM_POOL_BUSY_GPUS} or {TEAM_POOL_ALLOCATED_GPUS} * 0), 0)"),
        Record(TEAM_POOL_ALLOCATED_GPU_HOURS, _hours(TEAM_POOL_ALLOCATED_GPUS)),
        Record(TEAM_POOL_BUSY_GPU_HOURS, _hours(TEAM_POOL_BUSY_GPUS)),
        Record(TEAM_POOL_IDLE_GPU_HOURS, _hours(TEAM_POOL_IDLE_GPUS)),
        Alert(
            alert="GpuTeamAllocatedIdle",
            # Not where busy is not measured: without the pool label (no node's pool is known) or without the
            # profiling field on a node of the pool, busy reads 0 and idle all that was allocated
            # (GpuNodePoolLabelMissing and GpuProfilingMetricsMissing say so instead).
            expr=(f"(({TEAM_POOL_IDLE_GPU_HOURS} / on (team, pool) {TEAM_POOL_ALLOCATED_GPU_HOURS} > {TEAM_IDLE_SHARE:g}) "
                  f"and on (team, pool) ({TEAM_POOL_IDLE_GPU_HOURS} >= {TEAM_IDLE_MIN_GPU_HOURS:g})) "
                  f"unless on (pool) {NODE_BUSY_UNMEASURED} unless on () absent({NODE_POOL})"),
            for_=TEAM_IDLE_FOR,
            severity="warning",
            summary="Team {{ $labels.team }} left {{ $value | humanizePercentage }} of its allocated GPU time "
                    "in pool {{ $labels.pool }} idle over the last hour",
            description=f"Of the GPU-hours Kueue admitted for team {{{{ $labels.team }}}} in pool "
                        f"{{{{ $labels.pool }}}} over the last hour, more than {TEAM_IDLE_SHARE:.0%} (and at least "
                        f"{TEAM_IDLE_MIN_GPU_HOURS:g} GPU-hour) had no graphics-engine activity: quota held, "
                        "capacity paid for, nothing computed.",
            runbook="python -m platform_cli report --stack <stack> --since 1h shows the team's allocated, busy and "
                    "idle GPU-hours per pool and its runs; the GpuAllocatedIdle alert and the fleet dashboard's "
                    "\"Idle allocated GPUs by team\" panel name the pods. Ask the team to stop or fix them (finished "
                    "notebooks, jobs stuck before their first kernel, data loaders starving the GPUs).",
        ),
    ))


def gpu_health_alerts() -> Group:
    rules: list[Alert] = []
    for x in CRITICAL_XIDS:
        xid_count = 'DCGM_EXP_XID_ERRORS_COUNT{xid="%d"}' % x.code
        rules.append(Alert(
            alert=f"GpuXid{x.code}{x.name}",
            expr=f"{_per_gpu(xid_count)} > 0",
            severity="critical",
            summary=f"XID {x.code} on GPU {{{{ $labels.gpu }}}} of {{{{ $labels.node }}}} (pool {{{{ $labels.pool }}}})",
            description=f"The NVIDIA driver reported XID {x.code}, {x.meaning}.",
            runbook=x.action,
        ))
    rules += [
        Alert(
            alert="GpuDoubleBitEccErrors",
            expr=f"{_per_gpu('increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL[10m])')} > 0",
            severity="critical",
            summary="Double-bit ECC errors on GPU {{ $labels.gpu }} of {{ $labels.node }} (pool {{ $labels.pool }})",
            description="{{ $value }} uncorrectable (double-bit) ECC errors in the last 10 minutes. Data in GPU "
                        "memory was corrupted; the job on this GPU has likely crashed or produced bad results.",
            runbook="Drain the node and reset the GPU. Check the XID 48/63/64 alerts and the remapped-row "
                    "counters; if errors recur after the reset or row remapping failed, replace the instance.",
        ),
        Alert(
            alert="GpuRowRemapFailure",
            expr=f"{_per_gpu('DCGM_FI_DEV_ROW_REMAP_FAILURE')} > 0",
            severity="critical",
            summary="Row remapping failed on GPU {{ $labels.gpu }} of {{ $labels.node }} (pool {{ $labels.pool }})",
            description="The GPU could not remap a faulty memory row: it has run out of spare rows and will "
                        "keep producing uncorrectable memory errors.",
            runbook="Cordon and drain the node now and replace the instance (terminate it so the node group "
                    "launches a new one); a GPU reset does not fix a remap failure.",
        ),
        Alert(
            alert="GpuThermalThrottling",
            expr=f"{_per_gpu(_bit_set('DCGM_FI_DEV_CLOCKS_EVENT_REASONS', THERMAL_BITS))} > 0",
            for_="10m",
            severity="warning",
            summary="GPU {{ $labels.gpu }} of {{ $labels.node }} (pool {{ $labels.pool }}) is thermally throttled",
            description="The GPU has lowered its clocks for temperature (software or hardware thermal slowdown) "
                        "for 10 minutes; jobs on it, and every job synchronised with it, run slower.",
            runbook="Check DCGM_FI_DEV_GPU_TEMP and DCGM_FI_DEV_MEMORY_TEMP on the GPU health dashboard. One hot "
                    "GPU on a node points at the instance (open an AWS case, replace it); all GPUs of a node "
                    "hot points at cooling in that host. Drain the node if training jobs stall.",
        ),
        Alert(
            alert="GpuPowerThrottling",
            expr=f"{_per_gpu(_bit_set('DCGM_FI_DEV_CLOCKS_EVENT_REASONS', POWER_BRAKE_BITS))} > 0",
            for_="5m",
            severity="warning",
            summary="GPU {{ $labels.gpu }} of {{ $labels.node }} (pool {{ $labels.pool }}) is power-brake throttled",
            description="The hardware power brake has slowed the GPU for 5 minutes (an external power-supply "
                        "signal, not the normal power cap at full load).",
            runbook="Replace the instance if it persists: the power brake is asserted by the host, not by the "
                    "workload. Check the power panel of the GPU health dashboard for other GPUs of the node.",
        ),
        Alert(
            alert="GpuNvlinkErrors",
            expr=_per_gpu(" or ".join(
                f"sum by (node, gpu, UUID, modelName) (increase({m}[15m])) > 0"
                for m in ("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
                          "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL")
            )) + " > 0",
            severity="warning",
            summary="NVLink errors on GPU {{ $labels.gpu }} of {{ $labels.node }} (pool {{ $labels.pool }})",
            description="NVLink recovery, replay or CRC errors increased in the last 15 minutes ({{ $value }}). "
                        "Collective operations over the link slow down or hang.",
            runbook="Watch whether errors keep growing on the GPU health dashboard's NVLink panel. A steady rise, "
                    "or XID 74, means the link hardware is failing: drain the node and replace the instance.",
        ),
    ]
    return Group("gpu-platform.gpu-health", tuple(rules))


def node_alerts() -> Group:
    up = f'up{{job="{DCGM_JOB}"}}'
    return Group("gpu-platform.nodes", (
        Alert(
            alert="GpuNodeMissingGpus",
            expr=(f"{NODE_EXPECTED_UNITS} - on (node, resource) group_left () "
                  f"(max by (node, resource) (kube_node_status_allocatable) "
                  f"or on (node, resource) ({NODE_EXPECTED_UNITS} * 0)) > 0"),
            for_=NODE_GPUS_MISSING_FOR,
            severity="warning",
            summary="{{ $labels.node }} advertises {{ $value }} fewer {{ $labels.resource }} than pool {{ $labels.pool }} nodes have",
            description="The node's allocatable GPU resource has been below what its pool's instance type and "
                        "sharing mode give for " + NODE_GPUS_MISSING_FOR + ": a GPU fell off the bus, the device "
                        "plugin is not running, or the MIG/time-slicing config was not applied.",
            runbook="kubectl describe node {{ $labels.node }} (Allocatable, and the nvidia.com/mig.config.state "
                    "label for MIG pools); check the nvidia-device-plugin and mig-manager pods on the node in "
                    "the gpu-operator namespace, and nvidia-smi on the node. A missing GPU needs a reboot; if it "
                    "stays missing, replace the instance.",
        ),
        Alert(
            alert="DcgmExporterDown",
            expr=(f"({NODE_POOL} unless on (node) ({up} == 1)) "
                  f"or on (node) (max by (node) ({up}) == 0)"),
            for_=EXPORTER_DOWN_FOR,
            severity="warning",
            summary="No GPU metrics from {{ $labels.node }} (pool {{ $labels.pool }})",
            description="dcgm-exporter on this GPU node is down or not scheduled: its GPU health alerts cannot "
                        "fire and its utilization is missing from the dashboards.",
            runbook="kubectl -n gpu-operator get pods -l app=nvidia-dcgm-exporter -o wide; look at the pod on "
                    "the node (taints it does not tolerate, a crash loop, the nvidia.com/gpu.deploy.dcgm-exporter "
                    "node label) and at the ClusterPolicy status.",
        ),
        Alert(
            alert="GpuProfilingMetricsMissing",
            expr=NODE_BUSY_UNMEASURED,
            for_=BUSY_INPUT_MISSING_FOR,
            severity="warning",
            summary=f"dcgm-exporter on {{{{ $labels.node }}}} (pool {{{{ $labels.pool }}}}) reports no {BUSY_FIELD}",
            description="The node's exporter is scraped but gives no profiling (DCGM_FI_PROF_*) series: busy GPU "
                        "time is not measured on it, so the pool's teams would read 0 busy and all their allocation "
                        "idle. GpuTeamAllocatedIdle stays silent for the pool, and the report refuses for teams whose GPUs "
                        "no busy series measures.",
            runbook="kubectl -n gpu-operator logs -l app=nvidia-dcgm-exporter on the node: \"Not collecting DCP "
                    f"metrics\" and \"Skipping line N ('{BUSY_FIELD}'): metric not enabled\" say profiling is "
                    "unavailable: a GPU without profiling support (before Volta), an exporter without the "
                    "SYS_ADMIN capability, or a driver or DCGM error in the same log.",
        ),
        Alert(
            alert="GpuNodePoolLabelMissing",
            expr=(f"(sum by (pool) ({TEAM_POOL_ALLOCATED_GPUS}) > 0) unless on () {NODE_POOL} "
                  f'and on () count(up{{job="{DCGM_JOB}"}} == 1)'),
            for_=BUSY_INPUT_MISSING_FOR,
            severity="warning",
            summary="Pool {{ $labels.pool }} has GPUs allocated, and kube-state-metrics gives no node a "
                    f"{cv.POOL} label",
            description=f"kube_node_labels carries no {POOL_NODE_LABEL}: GPU series cannot be put in a pool, so "
                        "busy GPU time reads 0 for every team, node and health alerts lose their pool, and "
                        "GpuTeamAllocatedIdle stays silent rather than fire for every team.",
            runbook="Give kube-state-metrics --metric-labels-allowlist="
                    f"{','.join(KSM_METRIC_LABELS_ALLOWLIST)} (kube-prometheus-stack value "
                    "kube-state-metrics.metricLabelsAllowlist; docs/gpu-operator-and-monitoring.md, \"What the "
                    "monitoring stack needs\").",
        ),
    ))


def waste_alerts() -> Group:
    return Group("gpu-platform.waste", (
        Alert(
            alert="GpuAllocatedIdle",
            expr=f"max by (team, pool, namespace, pod) ({ALLOCATED_GPU_ACTIVE}) < {IDLE_ENGINE_ACTIVE}",
            for_=IDLE_FOR,
            severity="warning",
            summary="Team {{ $labels.team }}: {{ $labels.namespace }}/{{ $labels.pod }} holds idle GPUs in pool {{ $labels.pool }}",
            description="Every GPU allocated to this pod has been under " + f"{IDLE_ENGINE_ACTIVE:.0%}" +
                        " graphics-engine activity for " + IDLE_FOR + ": the team's quota is spent on nothing "
                        "and other teams' jobs may be waiting for these GPUs.",
            runbook="Ask the team to stop or fix the pod (a finished notebook, a job stuck before its first "
                    "kernel, a data loader starving the GPU). kubectl -n {{ $labels.namespace }} describe pod "
                    "{{ $labels.pod }}; the fleet dashboard shows the team's utilization over time.",
        ),
    ))


def queue_alerts(plan: Plan) -> Group:
    gpu = regex_union(list(plan.gpu_resource_names))
    pending = f"sum by (cluster_queue) (kueue_pending_workloads{{{KUEUE_REPLICA}}})"
    return Group("gpu-platform.queues", (
        Alert(
            alert="KueueWorkloadsPendingTooLong",
            expr=(f"({pending} > 0 unless on (cluster_queue) "
                  f"sum by (cluster_queue) (increase(kueue_admitted_workloads_total{{{KUEUE_REPLICA}}}[15m])) > 0) "
                  f"* on (cluster_queue) group_left (team) {CLUSTER_QUEUE_TEAM}"),
            for_=PENDING_FOR,
            severity="warning",
            summary="ClusterQueue {{ $labels.cluster_queue }} (team {{ $labels.team }}): {{ $value }} workloads pending, none admitted for " + PENDING_FOR,
            description="Workloads have been pending in this ClusterQueue for " + PENDING_FOR + " while it admitted "
                        "nothing: its quota is used up and nothing can be borrowed, or the pending workloads "
                        "ask for something no flavor offers.",
            runbook="kubectl get workloads -n <a namespace of team {{ $labels.team }}> lists the pending ones; "
                    "kubectl describe workload on one: its QuotaReserved condition message says what is missing. "
                    "Compare usage with nominal quota on the queues dashboard; raise the team's quota, add a "
                    "borrowing limit, or add nodes to the pool.",
        ),
        Alert(
            alert="KueueClusterQueueAtQuota",
            expr=(f"((sum by (cluster_queue, flavor, resource) (kueue_cluster_queue_resource_usage{{resource=~\"{gpu}\", {KUEUE_REPLICA}}}) "
                  f">= on (cluster_queue, flavor, resource) "
                  f"sum by (cluster_queue, flavor, resource) (kueue_cluster_queue_nominal_quota{{resource=~\"{gpu}\", {KUEUE_REPLICA}}}) > 0) "
                  f"and on (cluster_queue) ({pending} > 0)) "
                  f"* on (cluster_queue) group_left (team) {CLUSTER_QUEUE_TEAM} "
                  f"* on (flavor) group_left (pool) {FLAVOR_POOL}"),
            for_=AT_QUOTA_FOR,
            severity="info",
            summary="Team {{ $labels.team }} uses its whole {{ $labels.resource }} quota in pool {{ $labels.pool }} with workloads waiting",
            description="ClusterQueue {{ $labels.cluster_queue }} has used at least its nominal quota of "
                        "{{ $labels.resource }} in flavor {{ $labels.flavor }} for " + AT_QUOTA_FOR + " while "
                        "workloads wait: new work runs only by borrowing from the cohort.",
            runbook="Nothing is broken. If it persists, the team needs more quota in this pool: raise "
                    "teams[].quotas.<pool>.units (or the borrowing limit) in the stack config, within the pool's "
                    "capacity, or grow the pool.",
        ),
    ))


def requeue_rules() -> Group:
    """Jobs stopped and requeued because a node failed under them, per team and reason, and the ones Kueue gave
    up on. Kueue's reasons (apis/kueue/v1beta2/workload_types.go, v0.19.2): NodeFailures, a topology-aware
    job's node failed and no replacement was free (or a second one failed); PodsReadyTimeout with underlying
    cause WaitForRecovery, a running job lost a pod and was not whole again within the recovery timeout
    (WaitForStart: its pods never all started); Deactivated with RequeuingLimitExceeded, the requeue limit."""
    evictions = (f"sum by (team, reason, underlying_cause) (increase(kueue_evicted_workloads_total{{{KUEUE_REPLICA}}}[1h]) "
                 f"* on (cluster_queue) group_left (team) {CLUSTER_QUEUE_TEAM})")
    node_lost = (f'{TEAM_EVICTIONS}{{reason="NodeFailures"}} > 0 or '
                 f'{TEAM_EVICTIONS}{{reason="PodsReadyTimeout", underlying_cause="WaitForRecovery"}} > 0')
    return Group("gpu-platform.requeues", (
        Record(TEAM_EVICTIONS, evictions),
        Alert(
            alert="KueueJobsRequeuedAfterNodeFailure",
            expr=node_lost,
            severity="info",
            summary="Team {{ $labels.team }}: {{ $value }} jobs stopped and requeued in the last hour after losing a node ({{ $labels.reason }})",
            description="Jobs of this team lost a node (or a pod on one) while running and were evicted whole "
                        "and requeued with their priority (reason {{ $labels.reason }}, {{ $labels.underlying_cause }}). "
                        "They restart from their last checkpoint; their Workloads' Evicted condition names the node "
                        "for NodeFailures.",
            runbook="docs/runbook.md, \"A GPU node failed during a run\": kubectl get workloads -n <namespace> "
                    "-o custom-columns=NAME:.metadata.name,EVICTED:.status.conditions[?(@.type==\"Evicted\")].message; "
                    "check the node's conditions (kubectl describe node) and whether node repair replaced it.",
        ),
        Alert(
            alert="KueueWorkloadDeactivatedAtRequeueLimit",
            expr=f'{TEAM_EVICTIONS}{{reason="Deactivated", underlying_cause="RequeuingLimitExceeded"}} > 0',
            severity="warning",
            summary="Team {{ $labels.team }}: {{ $value }} jobs deactivated in the last hour after too many requeues",
            description="Kueue stopped requeueing these jobs: their pods failed to all become Ready (after "
                        "admission or after losing a pod) more times than addons.kueue.requeueLimit allows. "
                        "They stay suspended until someone reactivates them, and are deleted after "
                        "jobs.ttlSecondsAfterFinished.",
            runbook="docs/runbook.md, \"A GPU node failed during a run\": find them with kubectl get workloads -A "
                    "-o custom-columns=NS:.metadata.namespace,NAME:.metadata.name,ACTIVE:.spec.active; fix the "
                    "cause (failing nodes, an image that never pulls), then kubectl patch workload <name> "
                    "--type=merge -p '{\"spec\":{\"active\":true}}'.",
        ),
    ))


def groups(plan: Plan) -> tuple[Group, ...]:
    return tuple(g for g in (
        plan_rules(plan),
        recording_rules(plan),
        useful_work_rules(plan),
        gpu_health_alerts(),
        node_alerts(),
        waste_alerts(),
        queue_alerts(plan),
        requeue_rules(),
    ) if g.rules)


def rule_groups(plan: Plan) -> list[dict[str, Any]]:
    """`spec.groups` of the PrometheusRule, and the `groups` of a promtool rule file."""
    return [g.to_group() for g in groups(plan)]


def rule_file(plan: Plan) -> dict[str, Any]:
    return {"groups": rule_groups(plan)}


def without_annotations(groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same groups minus annotations, for `promtool test rules`: it compares annotations verbatim, and
    the unit tests are about when an alert fires and with which labels (annotation templates are checked
    by `promtool check rules` on the full groups)."""
    return [
        {**g, "rules": [{k: v for k, v in r.items() if k != "annotations"} for r in g["rules"]]}
        for g in groups
    ]


def alerts(plan: Plan) -> list[Alert]:
    return [r for g in groups(plan) for r in g.rules if isinstance(r, Alert)]
