"""`python -m platform_cli report`: the seeds' three views of a running platform, read from its Prometheus.

Per team and pool: GPU-hours allocated (what Kueue admitted), busy (DCGM graphics-engine activity of the
team's GPUs) and allocated-but-idle; the GPU-hours of runs that failed or that the platform stopped
(preempted, evicted); queue wait p50/p95 (Kueue's admission wait histogram); requeues by reason (Kueue's
evictions); the pending workloads right now with their position and Kueue's reason; and what the capacity
cost per finished job, (compute + idle + failed runs) / jobs finished, at the plan's prices. docs/report.md
says how to read it.

The figures are defined in gpu_platform/useful_work.py, which the what-if replay (`simulate`) uses too, and
read from the platform's recording rules (components/alerts.useful_work_rules): the series are sampled on a
grid of `step` seconds, each sample standing for the step before it, exactly as the rules'
`gpu_platform:team_pool_*_gpu_hours:1h` do, so the report over the last hour equals those rules.
"""

from __future__ import annotations

import datetime
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from components import alerts as a
from gpu_platform import conventions as cv, useful_work as uw
from gpu_platform.errors import InputError
from gpu_platform.plan import Plan
from simulator.figures import save_figure
from simulator.tables import text_table

from .prometheus_api import MAX_POINTS, Prometheus, PrometheusError

DEFAULT_STEP_SECONDS = a.GPU_HOURS_STEP_SECONDS
WAIT_QUANTILES = (0.5, 0.95)


class NoData(RuntimeError):
    """Prometheus answered, but without what the report needs: `what` names it."""

    def __init__(self, what: str, why: str):
        self.what, self.why = what, why
        super().__init__(f"could not read {what}: {why}")


@dataclass(frozen=True)
class Window:
    """Grid points k * step inside (end - since, end]: the points a subquery `x[since:step]` evaluated at
    `end` samples."""

    end: float
    since: float
    step: float

    @property
    def first(self) -> float:
        return (math.floor((self.end - self.since) / self.step) + 1) * self.step

    @property
    def last(self) -> float:
        return math.floor(self.end / self.step) * self.step

    @property
    def grid(self) -> list[float]:
        n = int(round((self.last - self.first) / self.step)) + 1
        return [self.first + i * self.step for i in range(max(0, n))]


def window(end: float, since_s: float, step: float | None = None) -> Window:
    """The report's window; the step grows past DEFAULT_STEP_SECONDS only when Prometheus' limit of points
    per series needs it (a multiple of the default, so the grid still contains the rules' points)."""
    if step is None:
        step = DEFAULT_STEP_SECONDS
        while since_s / step > MAX_POINTS - 1:
            step += DEFAULT_STEP_SECONDS
    return Window(end, since_s, step)


_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(s|m|h|d)$")
_FACTOR = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def duration(value: str, option: str) -> float:
    """Seconds of a duration such as 90s, 30m, 24h, 7d; InputError naming the option otherwise."""
    m = _DURATION.match(value.strip())
    if not m or float(m.group(1)) <= 0:
        raise InputError(f"{option} {value!r} is not a positive duration such as 90s, 30m, 24h or 7d")
    return float(m.group(1)) * _FACTOR[m.group(2)]


def timestamp(value: str, option: str) -> float:
    """Unix seconds from unix seconds or RFC 3339 (2026-05-01T12:00:00Z)."""
    try:
        return float(value)
    except ValueError:
        pass
    try:
        return datetime.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise InputError(f"{option} {value!r} is neither unix seconds nor an RFC 3339 time "
                         "such as 2026-05-01T12:00:00Z") from None


def _regex(values: list[str]) -> str:
    return a.regex_union(values) or "^$"


def _series(result: list[dict[str, Any]], grid: list[float], *keys: str) -> dict[tuple[str, ...], list[float]]:
    """A range query's result as {label values: samples on the grid}, 0 where a series has no sample."""
    index = {round(t, 3): i for i, t in enumerate(grid)}
    out: dict[tuple[str, ...], list[float]] = {}
    for s in result:
        key = tuple(s["metric"].get(k, "") for k in keys)
        row = out.setdefault(key, [0.0] * len(grid))
        for t, v in s["values"]:
            i = index.get(round(float(t), 3))
            if i is not None and math.isfinite(float(v)):
                row[i] += float(v)
    return out


def _instant(result: list[dict[str, Any]], *keys: str) -> dict[tuple[str, ...], float]:
    out: dict[tuple[str, ...], float] = {}
    for s in result:
        key = tuple(s["metric"].get(k, "") for k in keys)
        out[key] = out.get(key, 0.0) + float(s["value"][1])
    return out


def _increase(end: dict[tuple[str, ...], float], start: dict[tuple[str, ...], float]) -> dict[tuple[str, ...], float]:
    """Counter increase between two readings (a series absent at the start counts from 0; a reset, the end)."""
    return {k: (v - start.get(k, 0.0)) if v >= start.get(k, 0.0) else v for k, v in end.items()}


def queries(plan: Plan) -> dict[str, str]:
    """Every expression the report reads, by name (tests/unit/platform_cli/test_report.py answers them)."""
    ns = _regex([n for t in plan.teams for n in t.namespaces])
    r = a.KUEUE_REPLICA
    return {
        "rules": a.CLUSTER_QUEUE_TEAM,
        "allocated": a.TEAM_POOL_ALLOCATED_GPUS,
        "busy": a.TEAM_POOL_BUSY_GPUS,
        "capacity": f"sum by (pool) ({a.POOL_ALLOCATABLE} * on (pool) group_left () {a.POOL_GPUS_PER_UNIT})",
        "pods": a.POD_ALLOCATED_GPUS,
        "pod_phases": f'max by (namespace, pod, phase) ({cv.KSM_POD_STATUS_PHASE}'
                      f'{{phase=~"Succeeded|Failed", namespace=~"{ns}"}} == 1)',
        "pod_deleted": f'count by (namespace, pod) ({cv.KSM_POD_DELETION_TIMESTAMP}{{namespace=~"{ns}"}})',
        "jobs_finished": f'max by (namespace, workload, owner_kind, reason) ({uw.WORKLOAD_CONDITION_METRIC}'
                         f'{{type="Finished", namespace=~"{ns}"}} == 1)',
        "waits": f"sum by (cluster_queue, le) ({cv.KUEUE_ADMISSION_WAIT_BUCKETS}{{{r}}})",
        "evictions": f"sum by (cluster_queue, reason, underlying_cause) ({cv.KUEUE_EVICTED_WORKLOADS}{{{r}}})",
        "admissions": f"sum by (cluster_queue) ({cv.KUEUE_ADMITTED_WORKLOADS}{{{r}}})",
        "workload_states": f"count({uw.WORKLOAD_CONDITION_METRIC})",
        "pool_label": f'count({cv.KSM_NODE_LABELS}{{{a.POOL_NODE_LABEL}!=""}})',
    }


RANGE = ("allocated", "busy", "capacity", "pods", "pod_phases", "pod_deleted", "jobs_finished")
COUNTERS = ("waits", "evictions", "admissions")
WHAT = {
    "rules": "the platform's recording rules (gpu_platform:cluster_queue_team:info)",
    "allocated": "allocated GPUs per team and pool (Kueue)",
    "busy": "busy GPUs per team and pool (DCGM)",
    "capacity": "GPUs on each pool's nodes (kube-state-metrics)",
    "pods": f"GPUs each pod held (DCGM: {a.HELD_FIELD}, or {a.BUSY_FIELD})",
    "pod_phases": "pod phases (kube-state-metrics)",
    "pod_deleted": "pod deletions (kube-state-metrics)",
    "jobs_finished": "finished Kueue Workloads (kube-state-metrics custom resource state)",
    "waits": "admission wait times (Kueue)",
    "evictions": "evictions (Kueue)",
    "admissions": "admissions (Kueue)",
    "workload_states": "Kueue Workloads' conditions (kube-state-metrics custom resource state)",
    "pool_label": f"the nodes' pool label (kube-state-metrics {cv.KSM_NODE_LABELS}{{{a.POOL_NODE_LABEL}}})",
}


def gather(prom: Prometheus, plan: Plan, win: Window) -> dict[str, Any]:
    """Every query's answer. PrometheusError when Prometheus cannot be read; NoData when it answers without
    the platform's rules (not loaded, or not evaluated yet), without any GPU allocation series, or without what
    busy GPU time is measured from (check_busy_inputs)."""
    q = queries(plan)
    raw: dict[str, Any] = {}
    rules = prom.query(q["rules"], win.end, WHAT["rules"])
    if not rules:
        raise NoData(WHAT["rules"], f"{prom.url} has no such series: the stack's PrometheusRule is not loaded "
                                    "there, or it has not been evaluated yet")
    for name in RANGE:
        raw[name] = prom.query_range(q[name], win.first, win.last, win.step, WHAT[name])
    if not raw["allocated"]:
        raise NoData(WHAT["allocated"], f"{prom.url} has no {a.TEAM_POOL_ALLOCATED_GPUS} samples in the window: "
                                        f"is Kueue scraped ({cv.KUEUE_RESOURCE_USAGE})?")
    check_busy_inputs(prom, plan, win, raw)
    for name in COUNTERS:
        raw[name] = {"end": prom.query(q[name], win.last, WHAT[name]),
                     "start": prom.query(q[name], win.first - win.step, WHAT[name])}
    raw["workload_states"] = prom.query(q["workload_states"], win.last, WHAT["workload_states"])
    return raw


def _keys(result: list[dict[str, Any]], *labels: str) -> set[tuple[str, ...]]:
    """The label values of the series of a range query's result that have at least one sample."""
    return {tuple(s["metric"].get(k, "") for k in labels) for s in result if s.get("values")}


def check_busy_inputs(prom: Prometheus, plan: Plan, win: Window, raw: dict[str, Any]) -> None:
    """NoData naming the input when busy GPU time was not measured: busy reads 0 and every allocated GPU-hour
    idle otherwise, and nothing else in the report would say so. Two inputs, both read by the busy rules:
    kube-state-metrics' pool label on nodes (without its --metric-labels-allowlist no GPU series joins a pool:
    neither a held GPU nor a busy one shows, though Kueue allocated some), and dcgm-exporter's profiling field
    (where profiling is unavailable the exporter drops it, and a team's pods hold GPUs, read from the
    framebuffer field, that no busy series measures)."""
    allocated = {(team, pool) for s in raw["allocated"] for team, pool in [(s["metric"].get("team", ""),
                                                                           s["metric"].get("pool", ""))]
                 if any(float(v) > 0 for _, v in s["values"])}
    busy = _keys(raw["busy"], "team", "pool")
    held = _keys(raw["pods"], "team", "pool")
    seen_pools = {pool for _, pool in busy | held}
    blind = sorted({pool for _, pool in allocated if pool not in seen_pools})
    if blind and not prom.query_range(queries(plan)["pool_label"], win.first, win.last, win.step, WHAT["pool_label"]):
        raise NoData(
            WHAT["pool_label"],
            f"{prom.url} has no node with it in the window, while GPUs were allocated in pool {', '.join(blind)}: "
            f"kube-state-metrics exports it only with --metric-labels-allowlist={','.join(a.KSM_METRIC_LABELS_ALLOWLIST)} "
            "(kube-prometheus-stack value kube-state-metrics.metricLabelsAllowlist); without it no GPU series joins "
            "a pool, busy GPU-hours would read 0 and every allocated GPU-hour idle")
    unmeasured = sorted(held - busy)
    if unmeasured:
        raise NoData(
            f"busy GPUs ({a.BUSY_FIELD})",
            f"{prom.url} has {a.HELD_FIELD} but no {a.BUSY_FIELD} series for the GPUs held by "
            f"{', '.join(f'team {t} in pool {p}' for t, p in unmeasured)}: dcgm-exporter drops its profiling "
            f"fields where profiling is unavailable (its log: \"Skipping line N ('{a.BUSY_FIELD}'): metric not "
            "enabled\"), so busy GPU-hours would read 0 and every allocated GPU-hour idle")


def compute(raw: dict[str, Any], plan: Plan, win: Window, time_scale: float = 1.0) -> dict[str, Any]:
    """The report from the answers (pure: the unit tests feed it canned answers). `time_scale`: how many
    seconds each second of the window stands for, 1 on a real cluster; a compressed replay's speed when the
    window is the replay's (tests/integration/test_report_agrees.py): its GPU-hours and their cost come out in
    the trace's time, as the replay's own report gives them. Waits stay in the window's seconds."""
    grid = win.grid
    step = win.step * time_scale   # the (trace) seconds each sample stands for
    pools = plan.pools_by_name
    team_of_cq = {t.cluster_queue: t.name for t in plan.teams}
    team_of_ns = {ns: t.name for t in plan.teams for ns in t.namespaces}
    price = {p.name: uw.usd_per_gpu_hour(p.usd_per_node_hour, p.gpus_per_node) for p in plan.pools}

    allocated = _series(raw["allocated"], grid, "team", "pool")
    busy = _series(raw["busy"], grid, "team", "pool")
    capacity = _series(raw["capacity"], grid, "pool")

    teams: dict[str, Any] = {}
    for t in plan.teams:
        per_pool = {}
        for q in t.quotas:
            alloc = allocated.get((t.name, q.pool), [0.0] * len(grid))
            bsy = busy.get((t.name, q.pool), [0.0] * len(grid))
            ah, bh = uw.sampled_hours(alloc, step), uw.sampled_hours(bsy, step)
            ih = uw.sampled_hours(uw.idle_series(alloc, bsy), step)
            per_pool[q.pool] = {"allocated_gpu_hours": ah, "busy_gpu_hours": bh, "idle_gpu_hours": ih,
                                "busy_share": (bh / ah) if ah else None}
        teams[t.name] = {"pools": per_pool,
                         **{k: sum(p[k] for p in per_pool.values())
                            for k in ("allocated_gpu_hours", "busy_gpu_hours", "idle_gpu_hours")},
                         "runs": {o: 0 for o in uw.RUN_OUTCOMES},
                         **{f"{o}_gpu_hours": 0.0 for o in uw.RUN_OUTCOMES},
                         "jobs_finished": 0, "jobs_failed": 0, "admissions": 0,
                         "requeues": {}, "wait_p50_s": None, "wait_p95_s": None, "wait_buckets": []}

    # ---- runs: each pod's GPU time, by how it ended ---------------------------------------------------------
    pods = _series(raw["pods"], grid, "team", "pool", "namespace", "pod")
    phases = {k for k, row in _series(raw["pod_phases"], grid, "namespace", "pod", "phase").items() if any(row)}
    deleted = {k for k, row in _series(raw["pod_deleted"], grid, "namespace", "pod").items() if any(row)}
    lost_usd = running_usd = 0.0
    for (team, pool, ns, pod), row in pods.items():
        if team not in teams:
            continue
        outcome = uw.run_outcome(holds_at_end=row[-1] > 0, succeeded=(ns, pod, "Succeeded") in phases,
                                 failed=(ns, pod, "Failed") in phases, deleted=(ns, pod) in deleted)
        hours = uw.sampled_hours(row, step)
        teams[team]["runs"][outcome] += 1
        teams[team][f"{outcome}_gpu_hours"] += hours
        usd = hours * price.get(pool, 0.0)
        if uw.cost_key(outcome) == "lost_usd":
            lost_usd += usd
        elif outcome == uw.RUN_RUNNING:
            running_usd += usd

    # ---- Jobs that finished in the window: their Workload's Finished condition turned true inside it (a
    # workload of the same name deleted and created again shows as a gap, then a new rise), counted by the kind
    # of what Kueue ran and the condition's reason (useful_work.job_end: any job kind, not a server) ----------
    field_of = {uw.JOB_FINISHED: "jobs_finished", uw.JOB_FAILED: "jobs_failed"}
    for (ns, _wl, kind, reason), row in _series(raw["jobs_finished"], grid, "namespace", "workload", "owner_kind",
                                                "reason").items():
        end = uw.job_end(kind, reason)
        if ns in team_of_ns and end is not None:
            teams[team_of_ns[ns]][field_of[end]] += sum(1 for i in range(1, len(row)) if row[i] and not row[i - 1])

    # ---- Kueue's counters over the window -----------------------------------------------------------------
    waits = _increase(_instant(raw["waits"]["end"], "cluster_queue", "le"),
                      _instant(raw["waits"]["start"], "cluster_queue", "le"))
    buckets: dict[str, list[tuple[float, float]]] = {}
    for (cq, le), v in waits.items():
        if cq in team_of_cq:
            buckets.setdefault(team_of_cq[cq], []).append((float(le), v))
    for team, bs in buckets.items():
        bs.sort()
        teams[team]["wait_buckets"] = bs
        for q in WAIT_QUANTILES:
            teams[team][f"wait_p{round(q * 100)}_s"] = uw.histogram_quantile(q, bs)
    for (cq, reason, cause), v in _increase(_instant(raw["evictions"]["end"], "cluster_queue", "reason", "underlying_cause"),
                                            _instant(raw["evictions"]["start"], "cluster_queue", "reason",
                                                     "underlying_cause")).items():
        if cq in team_of_cq and round(v):
            label = reason + (f"/{cause}" if cause else "")
            teams[team_of_cq[cq]]["requeues"][label] = teams[team_of_cq[cq]]["requeues"].get(label, 0) + round(v)
    for (cq,), v in _increase(_instant(raw["admissions"]["end"], "cluster_queue"),
                              _instant(raw["admissions"]["start"], "cluster_queue")).items():
        if cq in team_of_cq:
            teams[team_of_cq[cq]]["admissions"] += round(v)

    # ---- pools and cost -----------------------------------------------------------------------------------
    pool_report: dict[str, Any] = {}
    series: dict[str, Any] = {"t": grid, "allocated": {}, "busy": {}, "capacity": {}}
    usd = {"useful_usd": 0.0, "lost_usd": lost_usd, "running_usd": running_usd, "idle_usd": 0.0}
    for p in plan.pools:
        alloc = [sum(allocated.get((t.name, p.name), [0.0] * len(grid))[i] for t in plan.teams) for i in range(len(grid))]
        bsy = [sum(busy.get((t.name, p.name), [0.0] * len(grid))[i] for t in plan.teams) for i in range(len(grid))]
        cap = capacity.get((p.name,), [0.0] * len(grid))
        ah, ch = uw.sampled_hours(alloc, step), uw.sampled_hours(cap, step)
        idle_capacity = uw.sampled_hours([max(0.0, c - x) for c, x in zip(cap, alloc)], step)
        pool_report[p.name] = {
            "capacity_gpu_hours": ch, "allocated_gpu_hours": ah, "busy_gpu_hours": uw.sampled_hours(bsy, step),
            "unallocated_gpu_hours": idle_capacity, "allocation": (ah / ch) if ch else None,
            "usd_per_gpu_hour": price[p.name],
        }
        usd["idle_usd"] += idle_capacity * price[p.name]
        usd["useful_usd"] += ah * price[p.name]
        series["allocated"][p.name], series["busy"][p.name], series["capacity"][p.name] = alloc, bsy, cap
    usd["useful_usd"] = max(0.0, usd["useful_usd"] - lost_usd - running_usd)
    finished = sum(t["jobs_finished"] for t in teams.values())
    first_data = min((float(v[0][0]) for s in raw["allocated"] for v in [s["values"]] if v), default=None)
    return {
        "window": {"start": _iso(win.first - win.step), "end": _iso(win.last), "hours": round(len(grid) * step / 3600, 4),
                   "step_s": win.step, "data_from": None if first_data is None else _iso(first_data),
                   **({"time_scale": time_scale} if time_scale != 1.0 else {})},
        "teams": teams,
        "pools": pool_report,
        "cost": uw.cost_summary(usd, finished),
        "jobs_finished": finished,
        "series": series,
    }


def _iso(t: float) -> str:
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def build(prom: Prometheus, plan: Plan, win: Window, pending: Callable[[], tuple[list[Any], str]] | None,
          time_scale: float = 1.0) -> dict[str, Any]:
    """Gather, compute, and add the pending workloads (or why they could not be read)."""
    raw = gather(prom, plan, win)
    report = compute(raw, plan, win, time_scale)
    report["prometheus"] = prom.url
    report["pending"], report["pending_source"], report["unavailable"] = [], None, []
    if not raw["workload_states"]:
        # GPUs were allocated in the window (gather refuses otherwise), so Workloads exist: a Prometheus without
        # their series lacks kube-state-metrics' Workload configuration, and a silent 0 would read as no job done.
        report["unavailable"].append(
            f"finished jobs: {prom.url} has no {uw.WORKLOAD_CONDITION_METRIC} series (kube-state-metrics needs the "
            "custom resource state of Kueue's Workloads: docs/report.md, 'Against another cluster's Prometheus'); "
            "jobs finished and cost per finished job read 0")
    if pending is not None:
        try:
            items, source = pending()
            report["pending"] = [p.to_json() for p in items]
            report["pending_source"] = source
        except Exception as err:  # noqa: BLE001 (the API server is optional: say what failed and go on)
            report["unavailable"].append(f"pending workloads: {err}")
    return report


# ---------------------------------------------------------------------------------------------------
# Rendering


def _f(v: Any, digits: int = 2) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.{digits}f}"
    return str(v)


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x * 100:.1f}%"


def table(headers: list[str], rows: list[list[Any]], markdown: bool = False) -> str:
    cells = [[_f(v) if not isinstance(v, str) else v for v in r] for r in rows]
    return text_table(headers, cells, markdown)


def text(r: dict[str, Any], stack: str, markdown: bool = False) -> str:
    w, c = r["window"], r["cost"]
    h = "### " if markdown else ""
    head = (f"{h}Useful work: stack {stack}, {w['start']} to {w['end']} ({w['hours']:g} h, samples every "
            f"{w['step_s']:g} s; data from {w['data_from'] or '-'}), Prometheus {r.get('prometheus', '-')}")
    usage = [[team, pool, p["allocated_gpu_hours"], p["busy_gpu_hours"], p["idle_gpu_hours"], _pct(p["busy_share"])]
             for team, t in r["teams"].items() for pool, p in t["pools"].items()]
    runs = [[team, t["jobs_finished"], t["jobs_failed"], t["runs"]["finished"], t["runs"]["failed"],
             t["runs"]["preempted"], t["runs"]["running"], t["failed_gpu_hours"], t["preempted_gpu_hours"],
             _f(t["wait_p50_s"], 1), _f(t["wait_p95_s"], 1), t["admissions"],
             ", ".join(f"{k} {v}" for k, v in sorted(t["requeues"].items())) or "-"]
            for team, t in r["teams"].items()]
    pools = [[name, p["capacity_gpu_hours"], p["allocated_gpu_hours"], p["busy_gpu_hours"], p["unallocated_gpu_hours"],
              _pct(p["allocation"]), f"{p['usd_per_gpu_hour']:.2f}"] for name, p in r["pools"].items()]
    cost = (f"Cost per finished job: ${_f(c['usd_per_finished_job'])} = capacity ${c['total_usd']:,.2f} "
            f"(compute ${c['useful_usd']:,.2f} + still running ${c['running_usd']:,.2f} + failed and preempted runs "
            f"${c['lost_usd']:,.2f} + unallocated ${c['idle_usd']:,.2f}) / {r['jobs_finished']} jobs finished")
    parts = [
        head,
        f"{h}Allocated, busy and idle GPU-hours per team and pool".strip(),
        table(["team", "pool", "allocated GPU-h", "busy GPU-h", "allocated-but-idle GPU-h", "busy"], usage, markdown),
        f"{h}Runs, waits and requeues per team".strip(),
        table(["team", "jobs finished", "jobs failed", "pods finished", "pods failed", "pods preempted",
               "pods running", "failed GPU-h", "preempted GPU-h", "wait p50 s", "wait p95 s", "admissions",
               "requeues (reason/cause)"], runs, markdown),
        f"{h}Pools".strip(),
        table(["pool", "capacity GPU-h", "allocated GPU-h", "busy GPU-h", "unallocated GPU-h", "allocated",
               "USD per GPU-h"], pools, markdown),
        cost,
    ]
    pending = r.get("pending") or []
    if r.get("pending_source") is not None:
        parts.append(f"{h}Pending now ({r['pending_source']})".strip())
        parts.append(table(["team", "workload", "position", "priority", "waiting since", "reason", "waits for"],
                           [[p["team"], f"{p['namespace']}/{p['workload']}",
                             f"{p['position']}{'' if p['position_source'] == 'visibility-api' else ' (est.)'}",
                             p["priority"], p["since"], p["reason"], p["waits_for"]] for p in pending], markdown)
                     if pending else "nothing pending")
    for u in r.get("unavailable") or []:
        parts.append(f"could not read {u}")
    return "\n\n".join(parts) + "\n"


def to_json(r: dict[str, Any]) -> str:
    return json.dumps(r, indent=2)


def plots(r: dict[str, Any], out: Path, stack: str) -> list[Path]:
    """utilization.png (per pool: capacity, allocated, busy GPUs over time) and wait-cdf.png (per team)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    s = r["series"]
    # from the first sample with data (a Prometheus younger than the window has nothing before it)
    begin = next((i for i, _ in enumerate(s["t"]) if any(v[i] for part in ("capacity", "allocated")
                                                         for v in s[part].values())), 0)
    s = {"t": s["t"][begin:], **{part: {k: v[begin:] for k, v in s[part].items()}
                                  for part in ("capacity", "allocated", "busy")}}
    t0 = s["t"][0] if s["t"] else 0.0
    unit, per = ("minutes", 60) if s["t"] and s["t"][-1] - t0 <= 7200 else ("hours", 3600)
    hours = [(t - t0) / per for t in s["t"]]
    written: list[Path] = []
    pools = [p for p in s["capacity"] if any(s["capacity"][p]) or any(s["allocated"][p])]
    fig, axes = plt.subplots(max(1, len(pools)), 1, figsize=(8, 2.6 * max(1, len(pools))), squeeze=False)
    for ax, pool in zip(axes[:, 0], pools or [None]):
        if pool is None:
            ax.text(0.5, 0.5, "no GPU capacity in the window", ha="center", va="center")
            continue
        ax.plot(hours, s["capacity"][pool], label="GPUs on nodes", color="0.6")
        ax.plot(hours, s["allocated"][pool], label="allocated (Kueue)")
        ax.plot(hours, s["busy"][pool], label="busy (DCGM)")
        ax.set(ylabel="GPUs", title=f"pool {pool}")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="upper right")
    axes[-1, 0].set_xlabel(f"{unit} since {_iso(t0)}")
    fig.suptitle(f"Capacity, allocated and busy GPUs: stack {stack}")
    written.append(save_figure(fig, out / "utilization.png"))

    fig, ax = plt.subplots(figsize=(8, 4))
    for team, t in r["teams"].items():
        bs = [(le, n) for le, n in t["wait_buckets"] if math.isfinite(le)]
        total = t["wait_buckets"][-1][1] if t["wait_buckets"] else 0
        if total:
            ax.step([le for le, _ in bs], [n / total for _, n in bs], where="post", label=team)
    ax.set(xlabel="wait before admission (s, Kueue's bucket bounds)", ylabel="fraction of admissions",
           title=f"Wait-time CDF per team: stack {stack}", ylim=(0, 1.05))
    ax.set_xscale("log")
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8, loc="lower right")
    written.append(save_figure(fig, out / "wait-cdf.png"))
    return written


__all__ = ["NoData", "PrometheusError", "Window", "build", "compute", "gather", "plots", "queries", "text",
           "to_json", "window"]
