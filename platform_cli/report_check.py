"""`python -m platform_cli report --check`: is every input of the report there, in the target Prometheus?

The report's figures are joins of series from four sources (docs/report.md, "The recording rules behind it"):
a source that is missing does not fail a query, it makes a figure read 0. So before trusting a report on a new
cluster (or after changing its monitoring stack), --check asks the Prometheus for each input and names each one
that is missing or wrong, with what to fix:

- the platform's recording rules are loaded (for this stack's teams: a stale rule file knows other teams);
- Kueue is scraped (every ClusterQueue of the stack reports) with its ClusterQueue resource metrics;
- kube-state-metrics is scraped;
- dcgm-exporter is up on every GPU node, with its profiling field (busy is DCGM_FI_PROF_GR_ENGINE_ACTIVE);
- the nodes carry the pool label in kube_node_labels (kube-state-metrics' allowlist);
- Kueue Workloads' states are exported (kube-state-metrics' custom resource state);
- every pool has a price.

An input that cannot be judged right now (no GPU node up, no Workload anywhere) is reported as such and does not
fail the check. Exit 0 when nothing is missing, 1 when something is (EXIT_VIOLATIONS), 2 when the Prometheus
cannot be read.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any

from components import alerts as a
from gpu_platform import conventions as cv, useful_work as uw
from gpu_platform.plan import Plan
from gpu_platform.plan.monitoring import KSM_METRIC_LABELS_ALLOWLIST, MODE_MANAGED

from .prometheus_api import Prometheus

OK, MISSING, UNKNOWN = "ok", "MISSING", "UNKNOWN"
# How many names a line lists before "and N more".
NAMES_SHOWN = 5
DOCS = "docs/gpu-operator-and-monitoring.md, \"What the monitoring stack needs\""


@dataclass(frozen=True, slots=True)
class Check:
    """One input: its name, whether it is there, what was found, and what to do when it is not."""

    input: str
    status: str
    detail: str
    fix: str = ""

    @property
    def missing(self) -> bool:
        return self.status == MISSING


def _names(values: set[str] | list[str]) -> str:
    ordered = sorted(values)
    shown = ", ".join(ordered[:NAMES_SHOWN])
    return shown + (f" and {len(ordered) - NAMES_SHOWN} more" if len(ordered) > NAMES_SHOWN else "")


def queries(plan: Plan) -> dict[str, str]:
    """Every expression --check reads, by name (instant queries)."""
    r = a.KUEUE_REPLICA
    ksm_gpu = a.regex_union([a.ksm_resource(x) for x in plan.gpu_resource_names]) or "^$"
    return {
        "rules": f"count by (team) ({a.CLUSTER_QUEUE_TEAM})",
        "kueue": f"count by (cluster_queue) ({cv.KUEUE_PENDING_WORKLOADS}{{{r}}})",
        "kueue_resources": f"count({cv.KUEUE_NOMINAL_QUOTA}{{{r}}})",
        "ksm": f"count({cv.KSM_NODE_INFO})",
        "gpu_nodes": f'count by (node) ({cv.KSM_NODE_ALLOCATABLE}{{resource=~"{ksm_gpu}"}} > 0)',
        "dcgm_up": f'max by (node) ({cv.SCRAPE_UP}{{job="{cv.DCGM_JOB}"}})',
        "dcgm_busy": f"count by (node) ({cv.BUSY_FIELD})",
        "pool_label": f'count by (node) ({cv.KSM_NODE_LABELS}{{{a.POOL_NODE_LABEL}!=""}})',
        "workload_states": f"count({uw.WORKLOAD_CONDITION_METRIC})",
        "kueue_workloads": f'sum({{__name__=~"{cv.KUEUE_PENDING_WORKLOADS}|{cv.KUEUE_ADMITTED_ACTIVE_WORKLOADS}", {r}}})',
    }


def _by(result: list[dict[str, Any]], label: str) -> dict[str, float]:
    return {s["metric"].get(label, ""): float(s["value"][1]) for s in result}


def _total(result: list[dict[str, Any]]) -> float:
    return sum(float(s["value"][1]) for s in result)


def _kueue_scrape_fix(plan: Plan) -> str:
    """Who scrapes Kueue depends on the mode: a ServiceMonitor the Prometheus selects, or the managed collector's
    job (gpu_platform/plan/scrape_jobs.py), whose access entry the service makes."""
    if plan.addons.monitoring.mode == MODE_MANAGED:
        return (f"the managed collector's job {cv.KUEUE_JOB} keeps the endpoints of Service {cv.KUEUE_NAMESPACE}/"
                f"{cv.KUEUE_METRICS_SERVICE} on port {cv.KUEUE_METRICS_PORT} (kubectl -n {cv.KUEUE_NAMESPACE} get "
                f"endpoints {cv.KUEUE_METRICS_SERVICE}), and its access entry must allow get on /metrics (Kueue "
                "checks its token; aws amp describe-scraper shows the scraper's status)")
    return (f"the Kueue ServiceMonitor (monitoring/kueue, label release={plan.addons.monitoring.prometheus_release}) "
            "must be selected, and Prometheus' ServiceAccount allowed to get /metrics (Kueue checks its token)")


def check(prom: Prometheus, plan: Plan, at: float) -> list[Check]:
    """Every input, in the order a fix is best made (PrometheusError when the Prometheus cannot be read)."""
    q = queries(plan)
    got = {name: prom.query(expr, at, f"--check: {name}") for name, expr in q.items()}
    out: list[Check] = []

    # ---- the platform's rules ------------------------------------------------------------------------------
    teams = {t.name for t in plan.teams}
    ruled = set(_by(got["rules"], "team"))
    if not ruled:
        out.append(Check("rules loaded", MISSING,
                         f"no {a.CLUSTER_QUEUE_TEAM} series: the stack's PrometheusRule is not loaded (or not evaluated "
                         "yet)",
                         "mode external: your Prometheus must select PrometheusRules labelled release="
                         f"{plan.addons.monitoring.prometheus_release} (addons.monitoring.prometheusRelease); mode "
                         "managed: the rule groups namespace of the workspace; then wait one evaluation interval"))
    elif teams - ruled:
        out.append(Check("rules loaded", MISSING,
                         f"{a.CLUSTER_QUEUE_TEAM} has no series for team {_names(teams - ruled)}: the rules loaded "
                         "are another plan's",
                         "deploy this stack (pulumi up) so its PrometheusRule is the one loaded"))
    else:
        out.append(Check("rules loaded", OK, f"{a.CLUSTER_QUEUE_TEAM} for all {len(teams)} teams"))

    # ---- Kueue ---------------------------------------------------------------------------------------------
    queues = {t.cluster_queue for t in plan.teams}
    reported = set(_by(got["kueue"], "cluster_queue"))
    if not reported:
        out.append(Check("Kueue scraped", MISSING,
                         f"no {cv.KUEUE_PENDING_WORKLOADS} series: Kueue's metrics endpoint is not scraped",
                         _kueue_scrape_fix(plan)))
    elif queues - reported:
        out.append(Check("Kueue scraped", MISSING,
                         f"Kueue reports no ClusterQueue {_names(queues - reported)} of this stack",
                         "deploy this stack, or point --prometheus at the Prometheus of the cluster it runs on"))
    elif not _total(got["kueue_resources"]):
        out.append(Check("Kueue scraped", MISSING,
                         f"no {cv.KUEUE_NOMINAL_QUOTA} series: Kueue runs without its ClusterQueue resource "
                         "metrics, so allocation reads 0",
                         "Kueue's configuration needs metrics.enableClusterQueueResources: true (the stack's Queues "
                         "component sets it: python -m platform_cli kueue-config --stack <stack>)"))
    else:
        out.append(Check("Kueue scraped", OK, f"all {len(queues)} ClusterQueues, with resource metrics"))

    # ---- kube-state-metrics --------------------------------------------------------------------------------
    ksm = _total(got["ksm"]) > 0
    if not ksm:
        out.append(Check("kube-state-metrics scraped", MISSING, f"no {cv.KSM_NODE_INFO} series",
                         "install kube-state-metrics and scrape it with honor labels (mode in-cluster and managed "
                         f"install it; {DOCS})"))
    else:
        out.append(Check("kube-state-metrics scraped", OK, f"{int(_total(got['ksm']))} nodes"))

    # ---- dcgm-exporter and its profiling field -------------------------------------------------------------
    gpu_nodes = set(_by(got["gpu_nodes"], "node"))
    up = _by(got["dcgm_up"], "node")
    up_nodes = {n for n, v in up.items() if v == 1}
    busy_nodes = set(_by(got["dcgm_busy"], "node"))
    if not gpu_nodes and not up:
        out.append(Check("dcgm-exporter up", UNKNOWN if ksm else MISSING,
                         "no GPU node advertises GPUs and no dcgm-exporter target is known: nothing to check now",
                         "" if ksm else "kube-state-metrics first (above)"))
    elif gpu_nodes - up_nodes:
        out.append(Check("dcgm-exporter up", MISSING,
                         f"GPU node {_names(gpu_nodes - up_nodes)} has no dcgm-exporter target up (job {cv.DCGM_JOB})",
                         "kubectl -n gpu-operator get pods -l app=nvidia-dcgm-exporter -o wide; with mode external, "
                         "the GPU Operator's ServiceMonitor must be selected (addons.monitoring.install)"))
    elif up_nodes - busy_nodes:
        out.append(Check("dcgm-exporter profiling field", MISSING,
                         f"dcgm-exporter on {_names(up_nodes - busy_nodes)} reports no {cv.BUSY_FIELD}: busy GPU time "
                         "is not measured there",
                         f"the exporter's log says why (\"Skipping line N ('{cv.BUSY_FIELD}'): metric not "
                         "enabled\"): a GPU without profiling, or an exporter without SYS_ADMIN"))
    else:
        out.append(Check("dcgm-exporter up", OK, f"{len(up_nodes)} GPU nodes, each with {cv.BUSY_FIELD}"))

    # ---- the node pool label -------------------------------------------------------------------------------
    labelled = set(_by(got["pool_label"], "node"))
    if gpu_nodes and not labelled:
        out.append(Check("node pool labels", MISSING,
                         f"no node has {a.POOL_NODE_LABEL} in {cv.KSM_NODE_LABELS}: GPU series join no pool, busy reads 0",
                         f"kube-state-metrics --metric-labels-allowlist={','.join(KSM_METRIC_LABELS_ALLOWLIST)} "
                         f"(kube-prometheus-stack value kube-state-metrics.metricLabelsAllowlist; {DOCS})"))
    elif gpu_nodes - labelled:
        out.append(Check("node pool labels", MISSING,
                         f"GPU node {_names(gpu_nodes - labelled)} has no {a.POOL_NODE_LABEL}",
                         "the node is not one of the stack's pools (its node group's labels), or joined outside them"))
    elif not gpu_nodes:
        out.append(Check("node pool labels", UNKNOWN, "no GPU node is up: nothing to check now"))
    else:
        out.append(Check("node pool labels", OK, f"{len(labelled)} nodes with {a.POOL_NODE_LABEL}"))

    # ---- Workloads' states ---------------------------------------------------------------------------------
    states, workloads = _total(got["workload_states"]), _total(got["kueue_workloads"])
    if states:
        out.append(Check("Workload states", OK, f"{int(states)} {uw.WORKLOAD_CONDITION_METRIC} series"))
    elif workloads:
        out.append(Check("Workload states", MISSING,
                         f"Kueue has {int(workloads)} Workloads and there is no {uw.WORKLOAD_CONDITION_METRIC}: jobs "
                         "finished and cost per finished job would read 0",
                         "kube-state-metrics needs the custom resource state of Kueue's Workloads "
                         "(gpu_platform/useful_work.KSM_WORKLOAD_CONDITIONS) and RBAC to list and watch "
                         f"workloads.kueue.x-k8s.io (modes in-cluster and managed configure both; {DOCS})"))
    else:
        out.append(Check("Workload states", UNKNOWN, "no Workload exists right now: submit a job and check again"))

    # ---- prices --------------------------------------------------------------------------------------------
    unpriced = [p.name for p in plan.pools if not p.usd_per_node_hour > 0]
    if unpriced:
        out.append(Check("prices known", MISSING, f"pool {_names(unpriced)} has no price per node-hour",
                         "set pricing.<instanceType> in the stack"))
    else:
        out.append(Check("prices known", OK, f"all {len(plan.pools)} pools"))
    return out


def text(checks: list[Check], stack: str, url: str, at: float) -> str:
    when = datetime.datetime.fromtimestamp(at, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    width = max(len(c.status) for c in checks)
    lines = [f"report --check: stack {stack}, Prometheus {url}, at {when}"]
    for c in checks:
        lines.append(f"  {c.status.ljust(width)}  {c.input}: {c.detail}")
        if c.fix and c.status != OK:
            lines.append(f"  {' ' * width}  fix: {c.fix}")
    missing = [c.input for c in checks if c.missing]
    lines.append(f"{len(missing)} of {len(checks)} inputs missing: {', '.join(missing)}; the report would read 0 "
                 "for what they feed" if missing else f"every input the report reads is there ({len(checks)} checked)")
    return "\n".join(lines) + "\n"
