"""The report of a replay: a terminal table, report.json, report.md (for a pull-request comment) and PNG
plots (utilization over time per pool, queue depth per team, wait-time CDF per team, nodes up per pool);
and, for a comparison, the deltas of a second configuration against the first, side by side. The nodes
that ran (node_figures) and a replay's node failures (failure_figures) have tables of
their own: the figures are computed there, only shown here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .figures import save_figure
from .tables import text_table

POOL_HEADERS = ["pool", "utilization (saturated)", "utilization (all)", "idle GPU-h"]
TEAM_HEADERS = ["team", "submitted", "finished", "wait p50 h", "wait p95 h", "wait max h", "to running p50 h",
                "to running p95 h", "GPU-h used", "busy GPU-h", "allocated-but-idle GPU-h", "GPU-h nominal", "borrowed GPU-h", "lent GPU-h", "preemptions",
                "GPU-h lost"]
NODE_HEADERS = ["pool", "capacity", "nodes start/peak/max", "node-h up", "cost $", "cost at max $", "idle GPU-h",
                "reserved idle GPU-h", "elastic idle GPU-h", "partly used idle GPU-h", "held, no node GPU-h",
                "scale-up pods", "scale-up p50/p95 s"]
FAILURE_HEADERS = ["pool", "node failures", "jobs hit", "requeued", "restarted", "redone GPU-h", "stalled GPU-h",
                   "down GPU-h", "lost GPU-h", "recovery p50 h", "delay max h"]
SPARE_HEADERS = ["down, not covered GPU-h", "spare GPU-h"]


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.2f}"
    return str(v)


def table(headers: list[str], rows: list[list[Any]], markdown: bool = False) -> str:
    cells = [[_fmt(v) for v in r] for r in rows]
    return text_table(headers, cells, markdown)


def _pool_rows(r: dict[str, Any]) -> list[list[Any]]:
    return [[name, _pct(p["utilization_saturated"]), _pct(p["utilization"]), p["idle_gpu_hours"]]
            for name, p in r["pools"].items()]


def _team_rows(r: dict[str, Any]) -> list[list[Any]]:
    return [[name, t["submitted"], t["finished"], t["wait_p50_h"], t["wait_p95_h"], t["wait_max_h"],
             t.get("wait_to_run_p50_h"), t.get("wait_to_run_p95_h"), t["gpu_hours_used"], t.get("busy_gpu_hours"),
             t.get("idle_gpu_hours"), t["gpu_hours_nominal"],
             t["borrowed_gpu_hours"], t["lent_gpu_hours"], t["preemptions"], t["gpu_hours_lost"]]
            for name, t in r["teams"].items()]


def _node_rows(n: dict[str, Any]) -> list[list[Any]]:
    def latency(p: dict[str, Any]) -> str:
        return "-" if p["scale_up_p50_s"] is None else f"{p['scale_up_p50_s']:,.0f}/{p['scale_up_p95_s']:,.0f}"

    return [[name, p["capacity_type"] + ("" if p["scales"] else ", whole"),
             f"{p['nodes_at_start']}/{p['nodes_peak']}/{p['nodes_max']}", p["node_hours"], p["usd"], p["usd_at_max"],
             p["idle_gpu_hours"], p["reserved_idle_gpu_hours"], p["elastic_idle_gpu_hours"],
             p["partly_used_idle_gpu_hours"], p["held_without_node_gpu_hours"], p["scale_up_pods"], latency(p)]
            for name, p in n["pools"].items()]


def nodes_text(n: dict[str, Any], speed: float, markdown: bool = False) -> list[str]:
    """The nodes that ran: their table (per pool) and what it adds up to, in words."""
    delays = ""
    if n.get("scale_up_delay_s") is not None:
        delays = (f" (the autoscaler's delays in trace time: a node added after {_fmt(n['scale_up_delay_s'])} s, an "
                  f"empty one removed after {_fmt(n['scale_down_delay_s'])} s)")
    latency = ("no pod waited for a node to be added" if not n["scale_up_pods"] else
               f"{n['scale_up_pods']} pods ran on a node added after their job's submission: pod created -> Running "
               f"p50/p95/max {_fmt(n['scale_up_p50_s'])}/{_fmt(n['scale_up_p95_s'])}/{_fmt(n['scale_up_max_s'])} s of "
               f"trace time ({_fmt(n['scale_up_p50_wall_s'])} s wall p50 at {speed:g}x)")
    words = (f"nodes that ran: {_fmt(n['node_hours'])} node-hours, ${n['usd']:,.0f} (every pool at capacity.max: "
             f"${n['usd_at_max']:,.0f}); idle (up, not allocated) {_fmt(n['idle_gpu_hours'])} GPU-h = reserved "
             f"{_fmt(n['reserved_idle_gpu_hours'])} (paid anyway) + elastic {_fmt(n['elastic_idle_gpu_hours'])} (empty "
             f"nodes up: the scale-down delay, or nodes ahead of their pods) + partly used "
             f"{_fmt(n['partly_used_idle_gpu_hours'])}; {_fmt(n['held_without_node_gpu_hours'])} GPU-h of quota held "
             f"while its nodes were added (in the waits, not in the bill); {latency}{delays}")
    return [table(NODE_HEADERS, _node_rows(n), markdown), words]


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x * 100:.1f}%"


def text(r: dict[str, Any], title: str, markdown: bool = False) -> str:
    c = r["cost"]
    sim = r["simulator"]
    head = (f"{'### ' if markdown else ''}What-if: {title}\n\n"
            f"{r['jobs_submitted']} jobs over {r['horizon_h']:g} h at {r['speed']:g}x; {r['jobs_finished']} finished; "
            f"fairness (Jain, use per nominal share) {_fmt(r['fairness_jain'])}; "
            f"cost per finished job ${_fmt(c['usd_per_finished_job'])} "
            f"(capacity ${c['total_usd']:,.0f}: useful ${c['useful_usd']:,.0f}, lost to preemption/failure "
            f"${c['lost_usd']:,.0f}, still running ${c['running_usd']:,.0f}, idle ${c['idle_usd']:,.0f}"
            + (f", spare nodes ${c['spare_usd']:,.0f}" if c.get("spare_usd") else "") + ")")
    foot = (f"simulator: {sim['wall_s']} s wall for {sim['compressed_trace_s']} s of compressed trace "
            f"(x{_fmt(sim['wall_over_compressed'])}"
            + (f", stopped at {sim['stopped_idle_at_h']:g} h: every job had finished and the rest of the horizon is "
               f"idle" if sim.get("stopped_idle_at_h") is not None else "")
            + f"); Kueue reaction p50/p95 {_fmt(sim['kueue_reaction_p50_s'])}/"
            f"{_fmt(sim['kueue_reaction_p95_s'])} s wall over {sim['reactions']} admissions, "
            f"a resolution of about {_fmt(sim['resolution_trace_s'])} s of trace time"
            + (f"; admission of a job that found room p50/max {_fmt(sim['kueue_admission_p50_s'])}/"
               f"{_fmt(sim['kueue_admission_max_s'])} s wall (a burst of submissions queues)"
               if sim.get("kueue_admission_max_s") is not None else ""))
    parts = [head, table(POOL_HEADERS, _pool_rows(r), markdown)]
    if r.get("nodes"):
        parts += nodes_text(r["nodes"], r["speed"], markdown)
    parts.append(table(TEAM_HEADERS, _team_rows(r), markdown))
    if r.get("failures"):
        parts += failures_text(r["failures"], markdown)
    parts.append(foot)
    if "overhead" in sim:
        parts.append(overhead_text(sim["overhead"], r["speed"], markdown))
    return "\n\n".join(parts) + "\n"


def failures_text(f: dict[str, Any], markdown: bool = False) -> list[str]:
    """The node failures' table (per pool that had any) and what it adds up to, in words."""
    spares = f["spare_nodes"]
    headers = FAILURE_HEADERS[:8] + (SPARE_HEADERS if spares else []) + FAILURE_HEADERS[8:]
    rows = []
    for name, p in f["pools"].items():
        if not p["failures"] and not p["skipped"]:
            continue
        rows.append([name, p["failures"], p["jobs_hit"], p["requeued"], p["restarted"], p["work_redone_gpu_hours"],
                     p["stalled_gpu_hours"], p["capacity_down_gpu_hours"]]
                    + ([p["uncovered_down_gpu_hours"], p["spare_gpu_hours"]] if spares else [])
                    + [p["gpu_hours_lost"], p["recovery_p50_h"], p["delay_max_h"]])
    source = (f"{f['rate_per_node_hour']:g} per node-hour, seed {f['seed']}" if f["rate_per_node_hour"]
              else "from a schedule")
    words = (f"node failures: {f['failures']} of {f['scheduled']} scheduled ({source}"
             + (f"; {f['skipped']} found every node of their pool down" if f["skipped"] else "") + "); "
             f"{f['runs_struck']} runs of {f['jobs_hit']} jobs lost work: {f['requeued']} requeued whole, "
             f"{f['restarted']} restarted in place"
             + (f", {f['not_recovered']} not running again by the end" if f["not_recovered"] else "")
             + (f" ({f['finished_before_stopped']} more ended before they were stopped)"
                if f["finished_before_stopped"] else "")
             + f"; {_fmt(f['gpu_hours_lost'])} GPU-h lost = {_fmt(f['work_redone_gpu_hours'])} redone + "
             f"{_fmt(f['stalled_gpu_hours'])} stalled + {_fmt(f['uncovered_down_gpu_hours'])} of capacity down"
             + (f" (of {_fmt(f['capacity_down_gpu_hours'])}: spare nodes covered the rest, "
                + ", ".join(f"{n} in {pool}" for pool, n in spares.items())
                + f", {_fmt(f['spare_gpu_hours'])} GPU-h of spare capacity)" if spares else "")
             + f"; a struck job was stopped or restarted {_fmt(f['stopped_p50_s'])} s after the failure (p50; "
             f"its pods tolerate a lost node {_fmt(f['toleration_s'])} s) and ran again {_fmt(f['recovery_p50_h'])} h "
             f"after it (p50, max {_fmt(f['recovery_max_h'])}); completion delay of a struck job p50/max "
             f"{_fmt(f['delay_p50_h'])}/{_fmt(f['delay_max_h'])} h"
             + (f"; {f['started_late']} jobs admitted waited for a node to run on (a down node's quota, or no node "
                "with room for a pod) and ran their whole duration from then" if f["started_late"] else ""))
    return ([table(headers, rows, markdown)] if rows else []) + [words]


def overhead_text(o: dict[str, Any], speed: float, markdown: bool = False) -> str:
    """The error budget in words: the simulator's own time per job, what was corrected, what remains."""
    if o["per_job_p50_s"] is None:
        measured = "no run ended by itself, so the simulator's own time per job was not measured"
    else:
        measured = (f"the simulator's own time per job {_fmt(o['per_job_p50_s'])} s wall (p95 {_fmt(o['per_job_p95_s'])}), "
                    f"{_fmt(o['per_job_trace_s'])} s of trace time at {speed:g}x: admission -> pods Running "
                    f"{_fmt(o['admission_to_running_p50_s'])} s, pods' end -> quota released "
                    f"{_fmt(o['end_to_release_p50_s'])} s (p50, {o['runs_timed']} runs)")
    if o["corrected"]:
        fix = (f"corrected: each pod ended its compressed duration after the admission, less the end of the chain, "
               f"so quota came back within {_fmt(o['residual_p50_s'])} s wall of the trace's time (p50; p95 "
               f"{_fmt(o['residual_p95_s'])} s, {_fmt(_times(o['residual_p95_s'], speed))} s of trace time), and "
               f"each run counts its trace duration plus {_fmt(o['added_per_run_s'])} s (the chain on the idle "
               f"cluster): {_fmt(o['gpu_hours_counted'])} GPU-h counted for {_fmt(o['gpu_hours_held'])} held in the "
               "replay")
    else:
        fix = f"not corrected (--no-correction): {_fmt(o['gpu_hours_held'])} GPU-h as held in the replay"
    trust = (f"{o['untrusted_jobs']} jobs ({o['untrusted_share']:.1%}, {o['untrusted_gpu_hours_share']:.1%} of the "
             f"trace's GPU-hours) run shorter than {o['trust_factor']:g}x that ({_fmt(o['untrusted_below_trace_s'])} s "
             "of trace time), where the replay cannot be trusted")
    lines = [f"simulator overhead: {measured}; {fix}; {trust}"]
    if o["warning"]:
        lines.append(f"{'**' if markdown else ''}warning{'**' if markdown else ''}: {o['warning']}")
    return "\n\n".join(lines)


def _times(x: float | None, k: float) -> float | None:
    return None if x is None else x * k


def _delta(a: Any, b: Any, pct: bool = False) -> str:
    if a is None or b is None:
        return f"{_fmt(a)} -> {_fmt(b)}"
    if pct:
        return f"{a * 100:.1f}% -> {b * 100:.1f}% ({(b - a) * 100:+.1f} pt)"
    return f"{_fmt(a)} -> {_fmt(b)} ({b - a:+,.2f})"


def compare_text(a: dict[str, Any], b: dict[str, Any], name_a: str, name_b: str, markdown: bool = False) -> str:
    pools = [[p, _delta(a["pools"][p]["utilization_saturated"], b["pools"].get(p, {}).get("utilization_saturated"), True),
              _delta(a["pools"][p]["utilization"], b["pools"].get(p, {}).get("utilization"), True),
              _delta(a["pools"][p]["idle_gpu_hours"], b["pools"].get(p, {}).get("idle_gpu_hours"))]
             for p in a["pools"]]
    teams = []
    for t in a["teams"]:
        x, y = a["teams"][t], b["teams"].get(t, {})
        teams.append([t, _delta(x["finished"], y.get("finished")), _delta(x["wait_p50_h"], y.get("wait_p50_h")),
                      _delta(x["wait_p95_h"], y.get("wait_p95_h")), _delta(x["gpu_hours_used"], y.get("gpu_hours_used")),
                      _delta(x["borrowed_gpu_hours"], y.get("borrowed_gpu_hours")),
                      _delta(x["lent_gpu_hours"], y.get("lent_gpu_hours")),
                      _delta(x["preemptions"], y.get("preemptions"))])
    overall = [["fairness (Jain)", _delta(a["fairness_jain"], b["fairness_jain"])],
               ["cost per finished job (USD)", _delta(a["cost"]["usd_per_finished_job"], b["cost"]["usd_per_finished_job"])],
               ["jobs finished", _delta(a["jobs_finished"], b["jobs_finished"])]]
    na, nb = a.get("nodes"), b.get("nodes")
    if na or nb:
        na, nb = na or {}, nb or {}
        overall += [[label, _delta(na.get(key), nb.get(key))] for label, key in (
            ("node-hours up", "node_hours"), ("cost of the nodes up (USD)", "usd"),
            ("elastic idle GPU-h (empty nodes up)", "elastic_idle_gpu_hours"),
            ("reserved idle GPU-h", "reserved_idle_gpu_hours"),
            ("scale-up latency p95 s", "scale_up_p95_s"))]
    fa, fb = a.get("failures"), b.get("failures")
    if fa or fb:
        fa, fb = fa or {}, fb or {}
        overall += [[label, _delta(fa.get(key), fb.get(key))] for label, key in (
            ("node failures", "failures"), ("jobs requeued after a node failure", "requeued"),
            ("jobs restarted in place", "restarted"), ("GPU-h lost to node failures", "gpu_hours_lost"),
            ("  of which capacity down, not covered", "uncovered_down_gpu_hours"),
            ("completion delay of a struck job, p50 h", "delay_p50_h"),
            ("completion delay of a struck job, max h", "delay_max_h"),
            ("spare capacity GPU-h", "spare_gpu_hours"))]
    head = f"{'### ' if markdown else ''}What-if: {name_b} against {name_a} (same trace)"
    return "\n\n".join([
        head,
        table(["", f"{name_a} -> {name_b}"], overall, markdown),
        table(["pool", "utilization (saturated)", "utilization (all)", "idle GPU-h"], pools, markdown),
        table(["team", "finished", "wait p50 h", "wait p95 h", "GPU-h used", "borrowed GPU-h", "lent GPU-h",
               "preemptions"], teams, markdown),
    ]) + "\n"


def write(r: dict[str, Any], out: Path, title: str) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(r, indent=2))
    (out / "report.md").write_text(text(r, title, markdown=True))
    return [out / "report.json", out / "report.md", *plots(r, out, title)]


def plots(r: dict[str, Any], out: Path, title: str) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = r["series"]["t_h"]
    written = []
    fig, ax = plt.subplots(figsize=(8, 4))
    for pool, ys in r["series"]["utilization"].items():
        ax.plot(t, [y * 100 for y in ys], label=pool)
    ax.set(xlabel="trace time (h)", ylabel="allocated / capacity (%)", title=f"Utilization per pool: {title}",
           ylim=(0, 105))
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(alpha=0.3)
    written.append(save_figure(fig, out / "utilization.png"))

    fig, ax = plt.subplots(figsize=(8, 4))
    for team, ys in r["series"]["queue_depth"].items():
        ax.step(t, ys, where="post", label=team)
    ax.set(xlabel="trace time (h)", ylabel="jobs waiting", title=f"Queue depth per team: {title}")
    ax.legend(fontsize=8, loc="upper left")
    ax.grid(alpha=0.3)
    written.append(save_figure(fig, out / "queue-depth.png"))

    fig, ax = plt.subplots(figsize=(8, 4))
    for team, waits in r["waits_h"].items():
        if waits:
            s = sorted(w * 60 for w in waits)
            ax.plot(s, [(i + 1) / len(s) for i in range(len(s))], label=team)
    ax.set(xlabel="wait before admission (min)", ylabel="fraction of admitted jobs",
           title=f"Wait-time CDF per team: {title}")
    ax.set_xscale("symlog", linthresh=1)
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(alpha=0.3)
    written.append(save_figure(fig, out / "wait-cdf.png"))

    if "nodes_up" in r["series"]:
        fig, ax = plt.subplots(figsize=(8, 4))
        for pool, ys in r["series"]["nodes_up"].items():
            ax.step(t, ys, where="post", label=pool)
        ax.set(xlabel="trace time (h)", ylabel="GPU nodes up", title=f"Nodes up per pool: {title}")
        ax.legend(fontsize=8, loc="upper right")
        ax.grid(alpha=0.3)
        written.append(save_figure(fig, out / "nodes-up.png"))
    return written
