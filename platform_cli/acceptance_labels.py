"""Step 6 live: the job's series read from the stack's Prometheus (or Amazon Managed Service for Prometheus, signed
with SigV4), with the info series of the platform's rules, and judged by the spec layer (gpu_platform/acceptance/
labels.py).

Read per family, each over the job's life (the seconds since it was submitted, so the series of pods that have
ended count, the gang step 5 deleted too), and per metric name (a function of a range drops the name):

- gpu: dcgm-exporter's held and busy fields of the job's pods, the two the platform attributes GPUs by
  (components/alerts HELD_DEVICE and GPU_ACTIVE);
- network: cAdvisor's bytes received and sent by the job's pods (the kubelet's /metrics/cadvisor: google/cadvisor
  v0.52.1 metrics/prometheus.go, container_network_receive_bytes_total and container_network_transmit_bytes_total,
  one series per interface), scraped in mode in-cluster by kube-prometheus-stack's kubelet job (written out in
  gpu_platform/plan/scrape_jobs.py kubelet_jobs), in mode managed by the managed collector's kubelet job
  (scrape_jobs.managed_cadvisor_job, which keeps these and the storage family's counters only), in mode external by
  the user's own Prometheus;
- storage: cAdvisor's block I/O of the job's pods (container_fs_reads_bytes_total and
  container_fs_writes_bytes_total, one series per device the pod read or wrote; the same file). cAdvisor reports no
  filesystem usage for containerd's containers (container/containerd/handler.go GetSpec: hasFilesystem false), so a
  job that reads its data from its bucket and keeps nothing on disk has none: with its network series there (the
  same scrape), storage is reported as not exercised rather than not exported;
- queue: Kueue's usage of the team's ClusterQueue on the pool's flavor and GPU resource, where it counted the job
  (above 0 since it was submitted; kueue v0.19.2 pkg/metrics/metrics.go ClusterQueueResourceUsage, labels
  cluster_queue, cohort, flavor, resource and replica_role), the leader's only (components/alerts KUEUE_REPLICA).

The joins are the platform's info series, as the rules name and label them (components/alerts/plan_series.py and
recording.py): a pod's team and queue labels on (namespace, pod), a node's pool on node, a namespace's team and its
cost center, a ClusterQueue's team and its cost center, a flavor's pool. Where the Prometheus is:
$GPU_PLATFORM_PROMETHEUS_URL, else the live local cluster's (as `report` finds it without --prometheus).
"""

from __future__ import annotations

import math
import os
import time
from typing import Any, Callable, Protocol

from components import alerts as a
from gpu_platform import acceptance as acc, conventions as cv
from localcluster.prometheus import local_url

from .acceptance_data import local_state_dir
from .acceptance_request import Request
from .acceptance_run import Observed
from .prometheus_api import Prometheus, PrometheusError, amp_region

PROMETHEUS_URL_ENV = "GPU_PLATFORM_PROMETHEUS_URL"
# The label names the platform's rules give their info series (components/alerts/plan_series.py, recording.py).
TEAM_LABEL, POOL_LABEL = "team", "pool"
# Kueue's labels of its ClusterQueue series (kueue v0.19.2 pkg/metrics/metrics.go), which the rules join on too.
CLUSTER_QUEUE_LABEL, FLAVOR_LABEL, RESOURCE_LABEL = "cluster_queue", "flavor", "resource"
# cAdvisor's families (google/cadvisor v0.52.1 metrics/prometheus.go), spelled in conventions.monitoring, whose
# CADVISOR_POD_METRICS the managed collector's cAdvisor job keeps.
NETWORK_METRICS: tuple[str, ...] = (cv.CADVISOR_NETWORK_RECEIVE_BYTES, cv.CADVISOR_NETWORK_TRANSMIT_BYTES)
STORAGE_METRICS: tuple[str, ...] = (cv.CADVISOR_FS_READS_BYTES, cv.CADVISOR_FS_WRITES_BYTES)
# Kueue's usage of a ClusterQueue per flavor and resource (kueue v0.19.2 pkg/metrics/metrics.go).
QUEUE_METRIC = cv.KUEUE_RESOURCE_USAGE
# Beyond the job's own life: a scrape and a rule evaluation apart (the local cluster's 15 s, kube-prometheus-stack's
# 30 s), and the clocks of this machine and the Prometheus.
LOOKBACK_MARGIN_S = 120
# When a look does not pass, step 6 looks again after SETTLE_POLL_S, for what the run's last scrapes and rule
# evaluations add, while each look sees something the one before did not, for at most SETTLE_S.
SETTLE_S = 60.0
SETTLE_POLL_S = 10.0

WHY_NO_PROMETHEUS = (f"no Prometheus to read the job's series from: set {PROMETHEUS_URL_ENV} to its URL (an Amazon "
                     "Managed Service for Prometheus workspace's is signed with SigV4); the local cluster runs one "
                     "unless LOCAL_CLUSTER_PROMETHEUS=0")


class Reader(Protocol):
    url: str

    def query(self, expr: str, at: float, what: str) -> list[dict[str, Any]]: ...


class StepState(Protocol):
    """What step 6 reads of the run's state (acceptance_steps.RunState)."""

    request: Request
    progress: Callable[[str], None]
    clock: Callable[[], float]
    sleep: Callable[[float], None]
    submitted_at: float | None
    observed: Observed | None


def prometheus_of(progress: Callable[[str], None]) -> Prometheus | None:
    """The Prometheus of $GPU_PLATFORM_PROMETHEUS_URL (the variable `report` reads too), else the live local
    cluster's; None when none is known (step 6 then says so). An Amazon Managed Service for Prometheus workspace URL
    is signed with SigV4 in its region, with the default AWS credential chain (the workspace accepts nothing else)."""
    url = os.environ.get(PROMETHEUS_URL_ENV) or local_url(local_state_dir())
    if not url:
        return None
    return Prometheus(url, sigv4_region=amp_region(url), progress=progress)


def dimensions(r: Request) -> tuple[acc.Dimension, ...]:
    """The job's team, pool, queue and cost center under every label name that carries them: the rules' own names,
    the pod labels as dcgm-exporter and the rules' attribution name them (gpu_platform_io_team, ...), and Kueue's
    ClusterQueue. The pods carry all four labels (gpu_platform/jobs.py gpu_pod)."""
    team, pool = r.team, r.pool
    return (
        acc.Dimension("team", {TEAM_LABEL: team.name, a.prom_label(cv.TEAM): team.name}),
        acc.Dimension("pool", {POOL_LABEL: pool.name, a.prom_label(cv.POOL): pool.name}),
        acc.Dimension("queue", {a.prom_label(cv.QUEUE_NAME_LABEL): cv.LOCAL_QUEUE_NAME,
                                CLUSTER_QUEUE_LABEL: team.cluster_queue}),
        acc.Dimension("cost-center", {cv.COST_CENTER_SERIES_LABEL: team.cost_center,
                                      a.prom_label(cv.COST_CENTER): team.cost_center}),
    )


def _over(expr: str, lookback_s: int, fn: str = "last_over_time") -> str:
    return f"{fn}({expr}[{lookback_s}s])"


def queries(r: Request, lookback_s: int) -> dict[str, dict[str, str]]:
    """Every expression step 6 reads, by family and metric name, and the joins by info series name."""
    pods = (f'{cv.NAMESPACE_LABEL}="{r.namespace}", '
            f'{cv.POD_LABEL}=~"{a.regex_union([r.name])}-.+"')
    cq, flavor, resource = r.team.cluster_queue, r.pool.flavor, r.pool.resource_name
    usage = (f'{QUEUE_METRIC}{{{CLUSTER_QUEUE_LABEL}="{cq}", {FLAVOR_LABEL}="{flavor}", '
             f'{RESOURCE_LABEL}="{resource}", {a.KUEUE_REPLICA}}}')
    by_family = {"gpu": (cv.HELD_FIELD, cv.BUSY_FIELD), "network": NETWORK_METRICS, "storage": STORAGE_METRICS}
    out = {key: {m: _over(f"{m}{{{pods}}}", lookback_s) for m in names} for key, names in by_family.items()}
    out["queue"] = {QUEUE_METRIC: f"{_over(usage, lookback_s, 'max_over_time')} > 0"}
    out["joins"] = {
        a.POD_ATTRIBUTION: _over(f'{a.POD_ATTRIBUTION}{{{cv.NAMESPACE_LABEL}="{r.namespace}"}}', lookback_s),
        a.NODE_POOL: _over(a.NODE_POOL, lookback_s),
        a.NAMESPACE_TEAM: _over(f'{a.NAMESPACE_TEAM}{{{cv.NAMESPACE_LABEL}="{r.namespace}"}}', lookback_s),
        a.CLUSTER_QUEUE_TEAM: _over(f'{a.CLUSTER_QUEUE_TEAM}{{{CLUSTER_QUEUE_LABEL}="{cq}"}}', lookback_s),
        a.FLAVOR_POOL: _over(f'{a.FLAVOR_POOL}{{{FLAVOR_LABEL}="{flavor}"}}', lookback_s),
    }
    return out


# What each info series is joined on (its rule's `on (...)`).
JOIN_KEYS: dict[str, tuple[str, ...]] = {
    a.POD_ATTRIBUTION: (cv.NAMESPACE_LABEL, cv.POD_LABEL), a.NODE_POOL: (cv.NODE_LABEL,),
    a.NAMESPACE_TEAM: (cv.NAMESPACE_LABEL,), a.CLUSTER_QUEUE_TEAM: (CLUSTER_QUEUE_LABEL,),
    a.FLAVOR_POOL: (FLAVOR_LABEL,),
}


def wheres(r: Request) -> dict[str, str]:
    pods = f"of pods {r.name}-* in namespace {r.namespace}"
    return {"gpu": pods, "network": pods, "storage": pods,
            "queue": f"of ClusterQueue {r.team.cluster_queue} on flavor {r.pool.flavor} ({r.pool.resource_name}) "
                     "above 0 since the job was submitted"}


def last_gang(observed: Observed | None) -> tuple[str, ...]:
    """The pods of the run's last attempt that ran: each has GPU and network series (it ran the rest of the window,
    many scrapes); the gang step 5 deleted may have ended between two scrapes, and a pod reads or writes a block
    device only if it does."""
    if observed is None:
        return ()
    return tuple(sorted(p.name for p in observed.pods.values()
                        if p.attempt == observed.last_attempt and p.first_running is not None))


def read(prom: Reader, r: Request, lookback_s: int, at: float,
         pods: tuple[str, ...] = ()) -> tuple[list[acc.Family], list[acc.Join]]:
    """The families and joins as Prometheus answers them now (PrometheusError when it cannot be read); PODS must
    each have GPU and network series."""
    q, where = queries(r, lookback_s), wheres(r)
    families = []
    for key in acc.FAMILIES:
        found = [(m, s["metric"]) for m, expr in q[key].items() for s in prom.query(expr, at, f"step 6: {m}")]
        families.append(acc.Family(key, tuple(q[key]), where[key], tuple(found),
                                   pods if key in ("gpu", "network") else (),
                                   "network" if key == "storage" else None))
    joins = [acc.Join(name, JOIN_KEYS[name], tuple(s["metric"] for s in prom.query(expr, at, f"step 6: {name}")))
             for name, expr in q["joins"].items()]
    return families, joins


class SeriesLabels:
    """Step 6: the job's series and their attribution, read once the workload has run; looked at again while the
    answer changes (up to SETTLE_S), for the run's last scrapes and rule evaluations to land. An answer that does
    not change is the platform's, not a scrape's lag: a label no series carries stays missing."""

    number = 6

    def __init__(self, prometheus: Reader | None, wall: Callable[[], float] = time.time):
        self.prometheus, self.wall = prometheus, wall

    def run(self, state: StepState) -> acc.StepResult:
        r = state.request
        if self.prometheus is None:
            return acc.StepResult.not_available(6, WHY_NO_PROMETHEUS)
        dims = dimensions(r)
        start = state.clock()
        submitted = start if state.submitted_at is None else state.submitted_at
        before: str | None = None
        while True:
            lookback = math.ceil(state.clock() - submitted) + LOOKBACK_MARGIN_S
            state.progress(f"step 6: reading the job's series of the last {lookback}s from {self.prometheus.url}")
            try:
                families, joins = read(self.prometheus, r, lookback, self.wall(), last_gang(state.observed))
            except PrometheusError as err:
                return acc.StepResult.failed(6, f"the job's series read from Prometheus at {self.prometheus.url}",
                                             str(err))
            result = acc.evaluate_labels(families, joins, dims)
            if result.status == acc.PASSED or result.seen == before or state.clock() - start >= SETTLE_S:
                return result
            before = result.seen
            first, *rest = (result.seen or "").split("; ")
            more = f" and {len(rest)} more" if rest else ""
            state.progress(f"step 6: not yet ({first}{more}); looking again in {SETTLE_POLL_S:g}s")
            state.sleep(SETTLE_POLL_S)
