"""How much the observability layer holds: active series and samples per second, by source, and the Prometheus
memory and volume they need, at the stack's capacity.max and at the fleet the design targets (1,000 GPU nodes).

Counted per source, each figure either counted from what the platform configures (its DCGM field list, its
recording rules, Kueue's metric families at v0.19.2) or an assumption stated where it is made. The estimate
is an upper bound where the exporters' shape varies (a device's series are counted once per MIG instance or
time-sliced replica as well as for the GPU itself).

Pure: the plan computes it (plan/monitoring.py), `plan` prints it, and the chosen sizes are checked against it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

from .. import conventions as cv

# The fleet the design targets (the seed-scale stack, bench/seed_stack.py: 1,000 GPU nodes, 8,000 GPUs, 100 teams;
# docs/performance.md): `plan` prints the estimate at that many nodes too.
TARGET_FLEET_NODES = 1000

# Scrape and rule evaluation interval, both modes: kube-prometheus-stack leaves prometheusSpec.scrapeInterval
# empty, which the operator makes 30s (chart 88.5.3 values.yaml: "Interval between consecutive scrapes. Defaults
# to 30s"), and a managed collector cannot scrape more often than every 30 s (docs.aws.amazon.com/prometheus/
# latest/userguide/AMP-collector-how-to.html, "Scraper limitations").
SCRAPE_INTERVAL_SECONDS = 30

# dcgm-exporter: one series per field of the platform's list per device, less the one field exported as a label
# (DCGM_FI_DRIVER_VERSION): 38 fields in components/monitoring.DCGM_FIELDS, 37 series
# (tests/unit/gpu_platform/test_monitoring_sizing.py holds the two in step).
DCGM_SERIES_PER_DEVICE = 37
# Every scrape target adds up, scrape_duration_seconds, scrape_samples_scraped, scrape_samples_post_metric_relabeling
# and scrape_series_added (prometheus/prometheus docs/concepts/jobs_instances.md, "Automatically generated labels
# and time series").
SERIES_PER_TARGET = 5
# The platform's recording rules (components/alerts/) that keep a series per device: gpu_engine_active,
# allocated_gpu_engine_active, held_device; per GPU pod: pod_attribution, pod_allocated_gpus, pod_busy_gpus;
# per GPU node: node_pool, node_expected_gpu_units. Per quota (team x pool): team_pool_nominal_units,
# team_pool_allocated_units, team_pool_gpu_engine_active, team_pool_{allocated,busy,idle}_gpus and their three
# _gpu_hours:1h (9); per pool: flavor_pool, pool_units_per_node, pool_capacity_units, pool_gpus_per_unit,
# pool_gpu_engine_active, pool_allocated_units, pool_allocation, pool_allocatable_units (8); per team:
# cluster_queue_team, team_gpu_engine_active and the evictions by reason (assumed 2) (4); per namespace:
# namespace_team (1).
RULE_SERIES_PER_DEVICE = 3
RULE_SERIES_PER_GPU_POD = 3
RULE_SERIES_PER_GPU_NODE = 2
RULE_SERIES_PER_QUOTA = 9
RULE_SERIES_PER_POOL = 8
RULE_SERIES_PER_TEAM = 4
RULE_SERIES_PER_NAMESPACE = 1

# Assumptions (no exporter publishes a per-object count; these are counted from the families each one exports):
# kube-state-metrics per node: kube_node_info, _labels, _created, _spec_unschedulable, _spec_taint (2), and
# kube_node_status_condition (5 conditions x 3 statuses), _allocatable and _capacity (4 resources each).
KSM_SERIES_PER_NODE = 30
# kube-state-metrics per pod (one container): kube_pod_info, _labels, _owner, _created, _start_time,
# _status_phase (5 phases), _status_ready and _status_scheduled (3 each), _container_info, the container's
# waiting/running/terminated state and reasons (about 12), its requests and limits (4), restarts, ready.
KSM_SERIES_PER_POD = 40
# Each GPU pod's Kueue Workload: kube_kueue_workload_status_condition, one series per condition (QuotaReserved,
# Admitted, PodsReady, Evicted, Finished) (gpu_platform/useful_work.KSM_WORKLOAD_CONDITIONS).
WORKLOAD_SERIES_PER_GPU_POD = 5
# The pods every GPU node runs besides the work: the GPU Operator's operands (device plugin, DCGM, dcgm-exporter,
# feature discovery, NFD worker, MIG manager, validator), kube-proxy, the VPC CNI, the EBS CSI node, the node
# monitoring agent, the Pod Identity agent, and node-exporter (in-cluster).
DAEMON_PODS_PER_GPU_NODE = 12
# In-cluster only (kube-prometheus-stack scrapes them by default; the managed collector's configuration scrapes no
# node-exporter and no kubelet metrics, and of cAdvisor only the four counters below):
# node-exporter's node_cpu_seconds_total has 8 modes per CPU (prometheus/node_exporter collector/cpu_linux.go: user,
# nice, system, idle, iowait, irq, softirq, steal) and its other collectors about 400 series a node (assumption);
# the kubelet about 500 (assumption: its own histograms) and cAdvisor about 60 per pod (assumption: one
# container's CPU, memory, filesystem and network families).
NODE_EXPORTER_SERIES_PER_VCPU = 8
NODE_EXPORTER_SERIES_PER_NODE = 400
KUBELET_SERIES_PER_NODE = 500
CADVISOR_SERIES_PER_POD = 60
# Managed only: the managed collector's cAdvisor job (plan/scrape_jobs.managed_cadvisor_job) keeps the four byte
# counters of cv.CADVISOR_POD_METRICS and nothing else. Assumption: a pod has one network interface (eth0, for the
# two network counters) and one container reading and writing one block device (for the two filesystem counters),
# so one series per counter per pod; and, like the other sources, only the GPU nodes and their pods are counted. Each
# node is one target (SERIES_PER_TARGET). Mode external has no collector of the platform's and counts none.
MANAGED_CADVISOR_SERIES_PER_POD = len(cv.CADVISOR_POD_METRICS)
MANAGED_CADVISOR_SOURCE = "cAdvisor (pod bytes)"

# Kueue v0.19.2 (pkg/metrics/metrics.go). Histogram series: its buckets, +Inf, _sum and _count. Per ClusterQueue
# and priority class: quota_reserved, ready, admitted_until_ready and admission_checks wait times (14 buckets
# each, generateExponentialBuckets(14)) and admission_wait_time (16): 4 x 17 + 19 = 87, plus the
# quota_reserved, admitted and finished counters: 90. Per ClusterQueue: pending_workloads (active, inadmissible),
# reserving_active, admitted_active, cluster_queue_status (pending, active, terminating), finished_workloads: 8;
# evictions by reason, assumed 6. Per flavor and resource: reservation, usage, nominal quota, borrowing and lending
# limits: 5; per resource: resource_pending. LocalQueue metrics (feature gate LocalQueueMetrics, on by default from
# 0.17) per LocalQueue and priority class: five 14-bucket histograms (85) and three counters; per LocalQueue:
# pending (2), reserving, admitted, status, finished: 6; per flavor and resource: reservation, usage.
KUEUE_CQ_SERIES_PER_PRIORITY = 90
KUEUE_CQ_SERIES = 8 + 6
KUEUE_CQ_SERIES_PER_FLAVOR_RESOURCE = 5
KUEUE_CQ_SERIES_PER_RESOURCE = 1
KUEUE_LQ_SERIES_PER_PRIORITY = 88
KUEUE_LQ_SERIES = 6
KUEUE_LQ_SERIES_PER_FLAVOR_RESOURCE = 2
# The controller's own (build info, admission attempts and their duration, Go and process metrics): assumed 100.
KUEUE_CONTROLLER_SERIES = 100

# Prometheus' memory: "around 3kB per series in the head" (robustperception.io, "Why does Prometheus use so much
# RAM?", as of Prometheus 2.20), doubled for queries, compaction and the page cache (assumption); at least 2 GiB.
HEAD_BYTES_PER_SERIES = 3000
MEMORY_HEADROOM = 2
MIN_MEMORY_GIB = 2
# Its disk: retention x samples/s x 1-2 bytes a sample, and the retention size at most 85% of the volume, the rest
# for compactions in progress (prometheus/prometheus docs/storage.md, "Operational aspects"); 2 bytes (the upper
# figure), and at least 10 GiB (assumption: the write-ahead log's segments and churn on a small stack).
BYTES_PER_SAMPLE = 2
RETENTION_SHARE_OF_VOLUME = 0.85
MIN_VOLUME_GIB = 10

GIB = 2 ** 30
DAY_SECONDS = 86400


@dataclass(frozen=True, slots=True)
class PoolShape:
    """A pool at capacity.max, as the estimate sees it."""

    nodes: int
    gpus_per_node: int
    units_per_gpu: int
    vcpus: int

    @property
    def devices_per_node(self) -> int:
        """Devices dcgm-exporter reports on: each GPU, and each MIG instance or time-sliced replica too."""
        return self.gpus_per_node * (1 + (self.units_per_gpu if self.units_per_gpu > 1 else 0))

    @property
    def gpu_pods_per_node(self) -> int:
        """At most one pod per unit."""
        return self.gpus_per_node * self.units_per_gpu


@dataclass(frozen=True, slots=True)
class QueueShape:
    """One team's queues: its ClusterQueue's flavors (its quotas and the CPU-only one) and covered resources, its
    namespaces (a LocalQueue each) and the priority classes its workloads carry (none counts as one)."""

    flavors: int
    resources: int
    namespaces: int
    priority_classes: int
    quotas: int


@dataclass(frozen=True, slots=True)
class MonitoringSize:
    nodes: int
    series: Mapping[str, int]
    retention_days: int
    in_cluster: bool

    @property
    def active_series(self) -> int:
        return sum(self.series.values())

    @property
    def samples_per_second(self) -> int:
        return math.ceil(self.active_series / SCRAPE_INTERVAL_SECONDS)

    @property
    def memory_gib(self) -> int:
        return max(MIN_MEMORY_GIB, math.ceil(self.active_series * HEAD_BYTES_PER_SERIES * MEMORY_HEADROOM / GIB))

    @property
    def volume_gib(self) -> int:
        stored = self.samples_per_second * self.retention_days * DAY_SECONDS * BYTES_PER_SAMPLE
        return max(MIN_VOLUME_GIB, math.ceil(stored / RETENTION_SHARE_OF_VOLUME / GIB))

    @property
    def retention_size_gib(self) -> int:
        """Prometheus' retentionSize for a volume of `volume_gib`: the share the storage docs recommend."""
        return math.floor(self.volume_gib * RETENTION_SHARE_OF_VOLUME)

    @property
    def samples_per_month(self) -> int:
        """Samples ingested in 30 days (what a managed workspace bills)."""
        return self.samples_per_second * 30 * DAY_SECONDS

    def to_json(self) -> dict[str, object]:
        return {"nodes": self.nodes, "series": dict(self.series), "activeSeries": self.active_series,
                "samplesPerSecond": self.samples_per_second, "samplesPerMonth": self.samples_per_month,
                "memoryGiB": self.memory_gib if self.in_cluster else None,
                "volumeGiB": self.volume_gib if self.in_cluster else None, "retentionDays": self.retention_days}


@dataclass(frozen=True, slots=True)
class Fleet:
    pools: tuple[PoolShape, ...]
    queues: tuple[QueueShape, ...]
    # The pools: the recording rules' per-pool part (the queues carry the per-team, quota and namespace parts).
    pool_count: int = 0

    @property
    def nodes(self) -> int:
        return sum(p.nodes for p in self.pools)


def node_series(fleet: Fleet, in_cluster: bool, managed: bool = False) -> dict[str, float]:
    """The series that grow with the nodes, by source: what every mode's Prometheus holds of the platform's sources,
    plus the chart's node-exporter and kubelet jobs in-cluster, or the managed collector's cAdvisor job when
    `managed` (mode external passes neither: the platform configures no scraping of its own there)."""
    out = {"dcgm-exporter": 0.0, "kube-state-metrics": 0.0, "recording rules": 0.0}
    if in_cluster:
        out |= {"node-exporter": 0.0, "kubelet and cAdvisor": 0.0}
    if managed:
        out[MANAGED_CADVISOR_SOURCE] = 0.0
    for p in fleet.pools:
        devices, gpu_pods = p.nodes * p.devices_per_node, p.nodes * p.gpu_pods_per_node
        pods = gpu_pods + p.nodes * DAEMON_PODS_PER_GPU_NODE
        out["dcgm-exporter"] += devices * DCGM_SERIES_PER_DEVICE + p.nodes * SERIES_PER_TARGET
        out["kube-state-metrics"] += (p.nodes * KSM_SERIES_PER_NODE + pods * KSM_SERIES_PER_POD
                                      + gpu_pods * WORKLOAD_SERIES_PER_GPU_POD)
        out["recording rules"] += (devices * RULE_SERIES_PER_DEVICE + gpu_pods * RULE_SERIES_PER_GPU_POD
                                   + p.nodes * RULE_SERIES_PER_GPU_NODE)
        if in_cluster:
            out["node-exporter"] += p.nodes * (p.vcpus * NODE_EXPORTER_SERIES_PER_VCPU + NODE_EXPORTER_SERIES_PER_NODE
                                               + SERIES_PER_TARGET)
            out["kubelet and cAdvisor"] += (p.nodes * (KUBELET_SERIES_PER_NODE + 2 * SERIES_PER_TARGET)
                                            + pods * CADVISOR_SERIES_PER_POD)
        if managed:
            out[MANAGED_CADVISOR_SOURCE] += p.nodes * SERIES_PER_TARGET + pods * MANAGED_CADVISOR_SERIES_PER_POD
    return out


def fixed_series(fleet: Fleet) -> dict[str, int]:
    """The series that do not grow with the nodes: Kueue's and the plan's own rules."""
    kueue = KUEUE_CONTROLLER_SERIES + SERIES_PER_TARGET
    rules = fleet.pool_count * RULE_SERIES_PER_POOL
    for q in fleet.queues:
        fr = q.flavors * q.resources
        kueue += (KUEUE_CQ_SERIES + q.priority_classes * KUEUE_CQ_SERIES_PER_PRIORITY
                  + fr * KUEUE_CQ_SERIES_PER_FLAVOR_RESOURCE + q.resources * KUEUE_CQ_SERIES_PER_RESOURCE)
        kueue += q.namespaces * (KUEUE_LQ_SERIES + q.priority_classes * KUEUE_LQ_SERIES_PER_PRIORITY
                                 + fr * KUEUE_LQ_SERIES_PER_FLAVOR_RESOURCE)
        rules += q.quotas * RULE_SERIES_PER_QUOTA + RULE_SERIES_PER_TEAM + q.namespaces * RULE_SERIES_PER_NAMESPACE
    return {"kueue": kueue, "recording rules": rules}


def estimate(fleet: Fleet, retention_days: int, in_cluster: bool, nodes: int | None = None,
             managed: bool = False) -> MonitoringSize:
    """The size at the fleet's own nodes, or with its pool mix scaled to `nodes` GPU nodes (the queues as they are).
    `in_cluster` and `managed` name the mode's own scraping (node_series); mode external passes both False."""
    scale = 1.0 if nodes is None or not fleet.nodes else nodes / fleet.nodes
    per_node = node_series(fleet, in_cluster, managed)
    fixed = fixed_series(fleet)
    series = {k: round(v * scale) + fixed.get(k, 0) for k, v in per_node.items()}
    series |= {k: v for k, v in fixed.items() if k not in series}
    return MonitoringSize(nodes=fleet.nodes if nodes is None else nodes, series=series,
                          retention_days=retention_days, in_cluster=in_cluster)


def shortfalls(size: MonitoringSize, volume_gib: int | None, memory_gib: int | None) -> list[str]:
    """What a size set in the spec lacks against the estimate at the stack's capacity.max."""
    out: list[str] = []
    if volume_gib is not None and volume_gib < size.volume_gib:
        out.append(f"addons.monitoring.volumeGiB {volume_gib} GiB is short: {size.active_series:,} active series at "
                   f"capacity.max ({size.samples_per_second:,} samples/s) kept {size.retention_days} days need "
                   f"{size.volume_gib} GiB; raise it or lower retentionDays")
    if memory_gib is not None and memory_gib < size.memory_gib:
        out.append(f"addons.monitoring.memoryGiB {memory_gib} GiB is short: {size.active_series:,} active series at "
                   f"capacity.max need {size.memory_gib} GiB")
    return out
