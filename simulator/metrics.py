"""What a replay means in the seeds' terms: useful work, not allocated GPUs.

Everything is computed from the recorded events (admissions, evictions, finishes) and the plan, in trace
seconds; a quota held by an admitted workload counts as allocated from its admission until its finish,
eviction or the horizon. Definitions (README, What-if simulation, "Reading the report"):

- pool utilization: allocated unit-seconds over capacity unit-seconds, over the saturated window (from the
  first to the last moment the pool's demand, admitted plus waiting, reached its capacity), and over the
  whole horizon; idle GPU-hours: capacity not allocated, in GPUs (MIG slices and replicas converted);
- per team: jobs submitted and finished, wait (first admission minus submission) p50/p95/max over admitted
  jobs plus the jobs still waiting at the horizon, GPU-hours used against the nominal share, borrowed
  GPU-hours (use above nominal), lent GPU-hours (what the cohort borrowed, attributed to the teams whose
  lendable quota was idle, in proportion: Kueue pools lendable quota and does not say whose was taken),
  preemptions and the GPU-hours they threw away;
- fairness: Jain's index over the teams that submitted work, of GPU-hours used per nominal GPU-hour;
- cost per finished job: what the capacity cost over the horizon (useful runs, runs lost to preemption,
  eviction or failure, runs still going, idle, spare nodes) divided by the jobs that finished successfully;
- the nodes that ran (`nodes`, from the replay's samples of the GPU Node objects, registered and the
  autoscaler's; docs/what-if.md "Elastic pools"): per pool, node-hours up and what they cost (the capacity
  above is then the nodes up, not capacity.max), idle = units up but not allocated (allocated: Kueue's
  quota, capped at the units up), split into reserved idle (on reserved capacity types: paid whether used
  or not), elastic idle (whole nodes up with no pod of the trace on them: an autoscaler's scale-down delay,
  or a node added ahead of its pods) and partly used (the free units of nodes with work); quota held on
  nodes not up yet (a job admitted while its nodes are added: in the waits, not in the bill); and the
  scale-up latency, each pod's creation to Running for the pods that ran on a node that did not exist
  when their job was submitted. A run without samples assumes every pool at capacity.max throughout;
- wait to run: submission to all of a job's GPU pods Running (the admission wait plus, on an elastic pool,
  its nodes' scale-up);
- node failures (`failures`, when the replay injected them; docs/what-if.md "Node failures"): per pool and
  in all, the failures and the jobs they hit, the requeues (the whole job evicted) and restarts in place
  (a lost pod replaced) they caused, and the GPU-hours lost to them: the work each hit run had done before
  the failure (redone: a run starts over), the GPUs of its other nodes held idle until the platform stopped
  or restarted it (stalled), and the failed nodes' GPUs while down, less what spare nodes covered; the
  completion delay of each hit job (the start of its next run less the start of the run the failure
  ended) and the spare nodes' own GPU-hours.

A corrected run (simulator/fidelity.py) counts a run that ended by itself from its admission for its trace
duration plus what a real cluster adds (Run.added_s), not for the wall time the replay held the quota times
the speed; evictions and runs the horizon cuts count as observed. Where a correction overlaps the next
admission on a full pool (the pod was cut a little too short), the pool's allocation is capped at its
capacity. The `simulator.overhead` section states what was measured and what error remains.

Here: `compute`, the pools, teams, cost and simulator sections. The sections beside it: allocations.py (the
intervals every figure is computed from), node_figures.py, failure_figures.py, overhead_figures.py.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from gpu_platform import conventions as cv
from gpu_platform.plan import Plan
from gpu_platform import useful_work as uw
from gpu_platform.useful_work import (
    at as _at, cost_key, cost_summary, integrate as _integrate, jain as _jain, percentile, step_integral as _step_integral,
    steps as _steps,
)

from . import kinds
from .allocations import Interval, intervals, node_waits
from .failure_figures import failure_figures, hits
from .node_figures import node_figures
from .overhead_figures import overhead
from .records import Run
from .rounding import in_hours, rounded

SAMPLES = 240


def compute(run: Run, plan: Plan) -> dict[str, Any]:
    H = run.horizon
    pools = plan.pools_by_name
    ivs = intervals(run)
    struck = hits(run, ivs)
    # Evictions a node failure caused are requeues, not preemptions.
    failure_evictions = {(h.job, h.stop) for h in struck if h.outcome == "requeued"}
    submitted_at = {e.job: e.t for e in run.events if e.kind == "submitted"}
    first_admit: dict[int, float] = {}
    first_run: dict[int, float] = {}
    for e in run.events:
        if e.kind == "admitted":
            first_admit.setdefault(e.job, e.t)
        elif e.kind == "running":
            first_run.setdefault(e.job, e.t)
    finished = {e.job: e.reason for e in run.events if e.kind == "finished"}
    # Finished and failed jobs as the live report counts them (useful_work.job_end): by the kind Kueue ran
    # and its Workload's Finished reason; a server (lws) ended by the replay is neither.
    job_ends = {i: uw.job_end(kinds.MANAGED[run.jobs[i].kind][0], reason) for i, reason in finished.items()}
    running_at: dict[int, list[float]] = defaultdict(list)
    for e in run.events:
        if e.kind == "running":
            running_at[e.job].append(e.t)

    # ---- pools -------------------------------------------------------------------------------------
    alloc_deltas: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for iv in ivs:
        alloc_deltas[iv.flavor] += [(iv.start, iv.units), (iv.end, -iv.units)]
    # Demand: admitted plus waiting, on the pool the trace asked for.
    wait_deltas: dict[str, list[tuple[float, float]]] = defaultdict(list)
    admits_by_job: dict[int, list[Interval]] = defaultdict(list)
    for iv in ivs:
        admits_by_job[iv.job].append(iv)
    for job, t_sub in submitted_at.items():
        j = run.jobs[job]
        pending_from = t_sub
        for iv in sorted(admits_by_job.get(job, []), key=lambda x: x.start):
            wait_deltas[j.pool] += [(pending_from, j.total_units), (iv.start, -j.total_units)]
            pending_from = iv.end if iv.ended in ("evicted", "interrupted") else H + 1
        if pending_from <= H:
            wait_deltas[j.pool] += [(pending_from, j.total_units), (H, -j.total_units)]
    grid = [H * i / SAMPLES for i in range(SAMPLES + 1)]
    pool_report: dict[str, Any] = {}
    series: dict[str, list[float]] = {}
    idle_unit_s: dict[str, float] = {}
    for p in plan.pools:
        cap = p.capacity_units
        alloc = [(t, min(v, cap)) for t, v in _steps(alloc_deltas.get(p.flavor, []))]
        demand = _steps(alloc_deltas.get(p.flavor, []) + wait_deltas.get(p.name, []))
        saturated = [t for t, v in demand if v >= cap] if cap else []
        window = None
        if saturated:
            # from the first moment demand reached capacity to the last moment it still did
            last = max(t for t, _ in demand if _at(demand, t) >= cap)
            ends = [t for t, _ in demand if t > last]
            window = (saturated[0], ends[0] if ends else H)
        used = _step_integral(alloc, 0.0, H)
        idle_unit_s[p.name] = cap * H - used
        util_all = used / (cap * H) if cap and H else 0.0
        util_sat = (_step_integral(alloc, *window) / (cap * (window[1] - window[0]))
                    if window and window[1] > window[0] else None)
        price = p.usd_per_node_hour / p.units_per_node
        pool_report[p.name] = {
            "capacity_units": cap,
            "resource": p.resource_name,
            "utilization": round(util_all, 4),
            "utilization_saturated": None if util_sat is None else round(util_sat, 4),
            "saturated_window_h": None if window is None else [round(window[0] / 3600, 3), round(window[1] / 3600, 3)],
            "idle_gpu_hours": round((cap * H - used) / p.units_per_gpu / 3600, 2),
            "usd_per_unit_hour": round(price, 4),
        }
        series[p.name] = [_at(alloc, t) / cap if cap else 0.0 for t in grid]

    # ---- teams -------------------------------------------------------------------------------------
    team_report: dict[str, Any] = {}
    used_per_nominal: list[float] = []
    queue_series: dict[str, list[int]] = {}
    waits_by_team: dict[str, list[float]] = {}
    usage_steps: dict[tuple[str, str], list[tuple[float, float]]] = {}
    by_team_flavor: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
    for iv in ivs:
        by_team_flavor[(iv.team, iv.flavor)] += [(iv.start, iv.units), (iv.end, -iv.units)]
    for key, d in by_team_flavor.items():
        usage_steps[key] = _steps(d)
    lent = _lent(plan, usage_steps, H)
    for t in plan.teams:
        mine = [i for i, j in enumerate(run.jobs) if j.team == t.name and i in submitted_at]
        waits = [first_admit[i] - submitted_at[i] for i in mine if i in first_admit]
        to_run = [first_run[i] - submitted_at[i] for i in mine if i in first_run]
        still = [H - submitted_at[i] for i in mine if i not in first_admit]
        ok = [i for i in mine if job_ends.get(i) == uw.JOB_FINISHED]
        failed = [i for i in mine if job_ends.get(i) == uw.JOB_FAILED]
        my_ivs = [iv for iv in ivs if iv.team == t.name]
        gpu_h = lambda iv: iv.unit_seconds / pools[iv.flavor].units_per_gpu / 3600 if iv.flavor in pools else 0.0  # noqa: E731
        used = sum(gpu_h(iv) for iv in my_ivs)
        waiting_for_nodes = sum(gpu_h(iv) for iv in node_waits(run) if iv.team == t.name)
        nominal = sum(q.nominal / pools[q.pool].units_per_gpu for q in t.quotas) * H / 3600
        borrowed = 0.0
        for q in t.quotas:
            steps = usage_steps.get((t.name, q.flavor), [])
            over = _integrate(steps, H, lambda v, n=q.nominal: max(0.0, v - n))
            borrowed += over / pools[q.pool].units_per_gpu / 3600
        preempted = [iv for iv in my_ivs if iv.ended == "evicted" and (iv.job, iv.end) not in failure_evictions]
        lost = sum(gpu_h(iv) for iv in my_ivs if iv.ended in ("evicted", "failed", "interrupted"))
        holds = [(iv, _pods_held(run, iv, running_at.get(iv.job, ()))) for iv in my_ivs]
        by_outcome = {o: sum(_gpus(plan, run, iv) * held / 3600 for iv, held in holds if uw.REPLAY_OUTCOME[iv.ended] == o)
                      for o in uw.RUN_OUTCOMES}
        busy = sum(uw.busy_gpus(_gpus(plan, run, iv), run.jobs[iv.job].busy) * held / 3600 for iv, held in holds)
        team_report[t.name] = {
            "submitted": len(mine),
            "finished": len(ok),
            "failed": len(failed),
            "waiting_at_end": len(still),
            "wait_p50_h": in_hours(percentile(waits, 0.5)),
            "wait_p95_h": in_hours(percentile(waits, 0.95)),
            "wait_max_h": in_hours(max(waits + still) if waits or still else None),
            "wait_to_run_p50_h": in_hours(percentile(to_run, 0.5)),
            "wait_to_run_p95_h": in_hours(percentile(to_run, 0.95)),
            "gpu_hours_used": round(used, 2),
            # Of which the quota was held while the job's pods waited for a node (allocations.node_waits).
            "gpu_hours_waiting_for_nodes": round(waiting_for_nodes, 4),
            "gpu_hours_nominal": round(nominal, 2),
            "borrowed_gpu_hours": round(borrowed, 2),
            "lent_gpu_hours": round(lent.get(t.name, 0.0), 2),
            "preemptions": sum(1 for iv in preempted if not iv_reason_timeout(run, iv)),
            "pods_ready_timeouts": sum(1 for iv in preempted if iv_reason_timeout(run, iv)),
            "gpu_hours_lost": round(lost, 2),
            # The live report's figures (platform_cli/usage_report.py), defined in gpu_platform/useful_work.py:
            # allocated = the quota held (gpu_hours_used, finer); each run's GPU time is its pods' hold on their
            # GPUs (useful_work: a run's GPU time), busy that at its declared busy fraction, allocated-but-idle the
            # rest; GPU-hours of runs by how they ended.
            "allocated_gpu_hours": round(used, 4),
            "busy_gpu_hours": round(busy, 4),
            "idle_gpu_hours": round(uw.allocated_but_idle(used, busy), 4),
            **{f"{o}_gpu_hours": round(h, 4) for o, h in by_outcome.items()},
        }
        if mine and nominal:
            used_per_nominal.append(used / nominal)
        waits_by_team[t.name] = waits
        # queue depth: jobs submitted and not (yet, or any more) admitted
        deltas = []
        for i in mine:
            pending_from = submitted_at[i]
            for iv in sorted(admits_by_job.get(i, []), key=lambda x: x.start):
                deltas += [(pending_from, 1), (iv.start, -1)]
                pending_from = iv.end if iv.ended in ("evicted", "interrupted") else H + 1
            if pending_from <= H:
                deltas += [(pending_from, 1), (H, -1)]
        q = _steps(deltas)
        queue_series[t.name] = [int(_at(q, tt)) for tt in grid]

    # ---- the nodes that ran, and cost -----------------------------------------------------------------
    nodes = node_figures(run, plan, ivs)
    usd = {"useful_usd": 0.0, "lost_usd": 0.0, "running_usd": 0.0, "idle_usd": 0.0, "spare_usd": 0.0}
    if nodes is None:   # every pool at capacity.max throughout: each run at its units, the rest idle
        for iv in ivs:
            p = pools.get(iv.flavor)
            if p is None:
                continue
            usd[cost_key(iv.ended)] += iv.unit_seconds / 3600 * p.usd_per_node_hour / p.units_per_node
        for p in plan.pools:
            usd["idle_usd"] += idle_unit_s[p.name] / 3600 * p.usd_per_node_hour / p.units_per_node
    else:               # the nodes up: what runs on them, and what idles
        for name, n in nodes["pools"].items():
            pool_report[name]["idle_gpu_hours"] = n["idle_gpu_hours"]
            for key, amount in n["_usd"].items():
                usd[key] += amount
    for p in plan.pools:
        usd["spare_usd"] += run.spares.get(p.name, 0) * p.usd_per_node_hour * H / 3600
    done = sum(1 for end in job_ends.values() if end == uw.JOB_FINISHED)
    cost = cost_summary(usd, done)

    return {
        "horizon_h": round(H / 3600, 3),
        "speed": run.speed,
        "jobs": len(run.jobs),
        "jobs_submitted": len(submitted_at),
        "jobs_finished": done,
        "pools": pool_report,
        "teams": team_report,
        "fairness_jain": None if (j := _jain(used_per_nominal)) is None else round(j, 4),
        "cost": cost,
        "nodes": None if nodes is None else _public(nodes),
        "failures": failure_figures(run, plan, struck),
        "simulator": {
            "wall_s": round(run.wall_seconds, 1),
            "compressed_trace_s": round(H / run.speed, 1),
            # Below 1 when the replay stopped before the horizon, every job finished and gone (replay.nothing_left):
            # then stopped_idle_at_h says when.
            "wall_over_compressed": round(run.wall_seconds / (H / run.speed), 3) if H else None,
            "stopped_idle_at_h": in_hours(run.idle_from),
            "submit_lag_p95_s": rounded(percentile(run.submit_lag, 0.95)),
            "kueue_reaction_p50_s": rounded(percentile(run.handoff, 0.5)),
            "kueue_reaction_p95_s": rounded(percentile(run.handoff, 0.95)),
            "reactions": len(run.handoff),
            "kueue_reaction_max_s": rounded(max(run.handoff, default=None)),
            "kueue_admission_p50_s": rounded(percentile(run.admission, 0.5)),
            "kueue_admission_max_s": rounded(max(run.admission, default=None)),
            "resolution_trace_s": rounded((percentile(run.handoff, 0.5) or 0) * run.speed),
            "overhead": overhead(run, plan, ivs),
        },
        "series": {"t_h": [round(t / 3600, 4) for t in grid], "utilization": series, "queue_depth": queue_series,
                   **({"nodes_up": {name: [_at(steps, t) for t in grid] for name, steps in nodes["_up"].items()}}
                      if nodes is not None else {})},
        "waits_h": {k: [round(w / 3600, 4) for w in v] for k, v in waits_by_team.items()},
    }


# What each kind of allocation is charged to in the cost (an interval's `ended`).


def _gpus(plan: Plan, run: Run, iv: Interval) -> float:
    pool = plan.pools_by_name.get(run.jobs[iv.job].pool)
    return iv.units / pool.units_per_gpu if pool is not None and iv.flavor == pool.flavor else 0.0


def _pods_held(run: Run, iv: Interval, running: Any) -> float:
    """Trace seconds a run's pods held their GPUs (useful_work: a run's GPU time): from when all its GPU pods ran
    (the replay's `running` event inside the run; none: they never all ran, nothing held) to their end: for a
    run that ended by itself, its trace duration in a corrected replay, else when its last pod was seen ending
    (the replay's timing of the run; without one, the run's end); for a run stopped by the platform or still
    going, the run's end (its pods are deleted with the eviction)."""
    start = min((t for t in running if iv.start <= t <= iv.end), default=None)
    if start is None:
        return 0.0
    end = iv.end
    if iv.ended in ("finished", "failed"):
        if run.corrected:
            end = min(iv.end, start + run.jobs[iv.job].duration)
        else:
            ended = [t.ended * run.speed for t in run.timings if t.job == iv.job and t.ended is not None
                     and abs(t.finished * run.speed - iv.end) <= run.speed]
            end = min(ended, key=lambda t: abs(t - iv.end), default=iv.end)
    return max(0.0, min(end, iv.end) - start)


def _public(nodes: dict[str, Any]) -> dict[str, Any]:
    """node_figures without its private parts (keys starting with _: what compute() uses and does not report)."""
    out = {k: v for k, v in nodes.items() if not k.startswith("_")}
    out["pools"] = {name: {k: v for k, v in n.items() if not k.startswith("_")} for name, n in nodes["pools"].items()}
    return out


def iv_reason_timeout(run: Run, iv: Interval) -> bool:
    return any(e.kind == "evicted" and e.job == iv.job and e.reason == "PodsReadyTimeout" and abs(e.t - iv.end) < 1e-6
               for e in run.events)


def _root(plan: Plan, cohort: str | None) -> str | None:
    parent = {c.name: c.parent for c in plan.cohorts}
    while cohort is not None and parent.get(cohort) is not None:
        cohort = parent[cohort]
    return cohort


def _lent(plan: Plan, usage: dict[tuple[str, str], list[tuple[float, float]]], H: float) -> dict[str, float]:
    """GPU-hours each team lent: per flavor and cohort tree, what its members borrowed, shared out over the
    members whose lendable quota sat idle, in proportion to it, on every interval of constant usage."""
    pools = {p.flavor: p for p in plan.pools}
    out: dict[str, float] = defaultdict(float)
    members: dict[tuple[str, str], list] = defaultdict(list)
    for t in plan.teams:
        root = _root(plan, t.cohort)
        if root is None:
            continue
        for q in t.quotas:
            members[(root, q.flavor)].append((t, q))
    for (root, flavor), teams in members.items():
        times = sorted({0.0, H, *(tp for t, _ in teams for tp, _v in usage.get((t.name, flavor), []) if tp < H)})
        for a, b in zip(times, times[1:]):
            u = {t.name: _at(usage.get((t.name, flavor), []), a) for t, _ in teams}
            borrowed = sum(max(0.0, u[t.name] - q.nominal) for t, q in teams)
            idle = {t.name: max(0.0, min(q.lending if q.lending is not None else q.nominal, q.nominal - u[t.name]))
                    for t, q in teams}
            total_idle = sum(idle.values())
            if borrowed and total_idle:
                for name, v in idle.items():
                    out[name] += borrowed * v / total_idle * (b - a) / pools[flavor].units_per_gpu / 3600
    return out


def summary_rows(report: dict[str, Any]) -> tuple[list[list[Any]], list[list[Any]]]:
    pools = [[name, f"{p['utilization_saturated'] * 100:.1f}%" if p["utilization_saturated"] is not None else "-",
              f"{p['utilization'] * 100:.1f}%", p["idle_gpu_hours"]] for name, p in report["pools"].items()]
    teams = [[name, t["submitted"], t["finished"], t["wait_p50_h"], t["wait_p95_h"], t["wait_max_h"],
              t["gpu_hours_used"], t["gpu_hours_nominal"], t["borrowed_gpu_hours"], t["lent_gpu_hours"],
              t["preemptions"], t["gpu_hours_lost"]] for name, t in report["teams"].items()]
    return pools, teams


__all__ = ["compute", "intervals", "percentile", "summary_rows", "cv"]
