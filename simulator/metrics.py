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
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from gpu_platform import conventions as cv
from gpu_platform.nodes import scales_locally, spare_nodes
from gpu_platform.plan import Plan
from gpu_platform import useful_work as uw
from gpu_platform.useful_work import (
    at as _at, cost_key, cost_summary, integrate as _integrate, jain as _jain, percentile, step_integral as _step_integral,
    steps as _steps,
)

from . import fidelity, kinds
from .replay import Run, ScaleUp

SAMPLES = 240
RESERVED = frozenset(cv.RESERVED_CAPACITY_TYPES)


@dataclass(frozen=True, slots=True)
class Interval:
    job: int
    team: str
    flavor: str
    units: int
    start: float
    end: float
    ended: str          # finished | failed | evicted | interrupted (started over in place) | running

    @property
    def unit_seconds(self) -> float:
        return self.units * max(0.0, self.end - self.start)


def intervals(run: Run, held: bool = False) -> list[Interval]:
    """Each admission's allocation, in trace seconds. `held`: as the replay held the quota (admission to
    release times the speed); otherwise, in a corrected run, a run that ended by itself lasts its trace
    duration plus what a real cluster adds."""
    out: list[Interval] = []
    open_: dict[int, tuple[float, str, int]] = {}
    late: dict[int, float] = {}   # job -> when its pods all ran, the admission's run waiting for a node
    for e in run.events:
        if e.kind == "admitted":
            open_[e.job] = (e.t, e.flavor, e.units)
            late.pop(e.job, None)
        elif e.kind == "restarted" and e.job in open_:
            # A lost pod replaced while the job stayed admitted: the run so far is lost, a new one starts.
            start, flavor, units = open_.pop(e.job)
            out.append(Interval(e.job, run.jobs[e.job].team, flavor, units, start, min(e.t, run.horizon), "interrupted"))
            open_[e.job] = (e.t, flavor, units)
            late.pop(e.job, None)
        elif e.kind == "started" and e.job in open_:
            late[e.job] = e.t
        elif e.kind in ("evicted", "finished") and e.job in open_:
            start, flavor, units = open_.pop(e.job)
            ended = "evicted" if e.kind == "evicted" else ("failed" if e.reason == "Failed" else "finished")
            end = e.t
            if run.corrected and not held and ended != "evicted":
                end = max(start, late.get(e.job, start)) + run.jobs[e.job].duration + run.added_s
            late.pop(e.job, None)
            out.append(Interval(e.job, run.jobs[e.job].team, flavor, units, start, min(end, run.horizon), ended))
    for job, (start, flavor, units) in open_.items():
        out.append(Interval(job, run.jobs[job].team, flavor, units, start, run.horizon, "running"))
    return [iv for iv in out if iv.start < run.horizon]


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
            "wait_p50_h": _h(percentile(waits, 0.5)),
            "wait_p95_h": _h(percentile(waits, 0.95)),
            "wait_max_h": _h(max(waits + still) if waits or still else None),
            "wait_to_run_p50_h": _h(percentile(to_run, 0.5)),
            "wait_to_run_p95_h": _h(percentile(to_run, 0.95)),
            "gpu_hours_used": round(used, 2),
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
            "wall_over_compressed": round(run.wall_seconds / (H / run.speed), 3) if H else None,
            "submit_lag_p95_s": _r(percentile(run.submit_lag, 0.95)),
            "kueue_reaction_p50_s": _r(percentile(run.handoff, 0.5)),
            "kueue_reaction_p95_s": _r(percentile(run.handoff, 0.95)),
            "reactions": len(run.handoff),
            "kueue_reaction_max_s": _r(max(run.handoff, default=None)),
            "kueue_admission_p50_s": _r(percentile(run.admission, 0.5)),
            "kueue_admission_max_s": _r(max(run.admission, default=None)),
            "resolution_trace_s": _r((percentile(run.handoff, 0.5) or 0) * run.speed),
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


def node_figures(run: Run, plan: Plan, ivs: list[Interval]) -> dict[str, Any] | None:
    """The nodes that ran, per pool and in all, from the replay's node samples (None: a run without them).

    Each sample holds until the next one (the last until the horizon). At each, per pool: units up U (its
    nodes up, spare nodes aside: they are costed as spares), units allocated A (Kueue's quota, from the
    intervals, each run charged to its kind: finished, running at the horizon, lost), used = min(A, U),
    idle = U - used; elastic idle = the units of nodes with no pod of the trace (at most the idle), only on
    pools that are not reserved; reserved idle = the idle of reserved pools; partly used = the rest of the
    idle; held without a node = max(0, A - U). Cost: units up times the unit price, the used part shared
    out over the kinds of allocation in proportion."""
    if run.node_samples is None:
        return None
    H = run.horizon
    spares = {n["metadata"]["name"] for n in spare_nodes(plan, run.spares)}
    samples = sorted((s for s in run.node_samples if s.t < H), key=lambda s: s.t)
    kinds_of = ("useful_usd", "lost_usd", "running_usd")
    alloc: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
    for iv in ivs:
        key = cost_key(iv.ended)
        alloc[(iv.flavor, key)] += [(iv.start, iv.units), (iv.end, -iv.units)]
    steps = {k: _steps(v) for k, v in alloc.items()}
    by_job_pool: dict[str, list[ScaleUp]] = defaultdict(list)
    for su in run.scale_ups:
        if su.running < H:
            by_job_pool[su.pool].append(su)
    out_pools: dict[str, Any] = {}
    up_steps: dict[str, list[tuple[float, float]]] = {}
    totals: dict[str, float] = defaultdict(float)
    for p in plan.pools:
        upn, upg = p.units_per_node, p.units_per_gpu
        unit_usd = p.usd_per_node_hour / upn
        reserved = p.capacity_type in RESERVED
        acc: dict[str, float] = defaultdict(float)   # unit-seconds, node-seconds
        usd: dict[str, float] = defaultdict(float)
        counts: list[int] = []
        seen: set[str] = set()
        first = None
        points: list[tuple[float, float]] = []
        for k, sample in enumerate(samples):
            dt = (samples[k + 1].t if k + 1 < len(samples) else H) - max(0.0, sample.t)
            if dt <= 0:
                continue
            nodes = [(name, held) for name, held in sample.pools.get(p.name, ()) if name not in spares]
            if first is None:
                first = {name for name, _ in nodes}
            seen |= {name for name, _ in nodes}
            counts.append(len(nodes))
            points.append((max(0.0, sample.t), float(len(nodes))))
            up = len(nodes) * upn
            empty = sum(1 for _, held in nodes if not held) * upn
            parts = {key: _at(steps.get((p.flavor, key), []), sample.t) for key in kinds_of}
            allocated = sum(parts.values())
            used = min(allocated, up)
            idle = up - used
            elastic = 0.0 if reserved else min(empty, idle)
            acc["node_s"] += len(nodes) * dt
            acc["idle"] += idle * dt
            acc["reserved_idle"] += (idle if reserved else 0.0) * dt
            acc["elastic_idle"] += elastic * dt
            acc["partly_used_idle"] += (0.0 if reserved else idle - elastic) * dt
            acc["held_without_node"] += max(0.0, allocated - up) * dt
            acc["used"] += used * dt
            acc["up"] += up * dt
            for key, units in parts.items():
                if allocated:
                    usd[key] += units * used / allocated * dt * unit_usd / 3600
            usd["idle_usd"] += idle * dt * unit_usd / 3600
        latencies = [su.latency for su in by_job_pool.get(p.name, [])]
        raw = {
            "node_hours": acc["node_s"] / 3600,
            "usd": acc["node_s"] / 3600 * p.usd_per_node_hour,
            "usd_at_max": p.max_nodes * p.usd_per_node_hour * H / 3600,
            "gpu_hours_up": acc["up"] / upg / 3600,
            **{f"{key}_gpu_hours": acc[key] / upg / 3600
               for key in ("idle", "reserved_idle", "elastic_idle", "partly_used_idle", "held_without_node")},
        }
        for key, value in raw.items():
            totals[key] += value
        row = {
            "capacity_type": p.capacity_type,
            "scales": scales_locally(p),
            "nodes_at_start": len(first or ()),
            "nodes_peak": max(counts, default=0),
            "nodes_max": p.max_nodes,
            "nodes_added": len(seen - (first or set())),
            **{k: round(v, 3 if k == "node_hours" else 2) for k, v in raw.items()},
            "utilization_up": round(acc["used"] / acc["up"], 4) if acc["up"] else None,
            "scale_up_pods": len(latencies),
            "scale_up_jobs": len({su.job for su in by_job_pool.get(p.name, [])}),
            "scale_up_p50_s": _r(percentile(latencies, 0.5)),
            "scale_up_p95_s": _r(percentile(latencies, 0.95)),
            "scale_up_max_s": _r(max(latencies, default=None)),
            "_usd": dict(usd),
        }
        out_pools[p.name] = row
        up_steps[p.name] = points
    latencies = [su.latency for su in run.scale_ups if su.running < H]
    return {
        **{k: round(v, 3 if k == "node_hours" else 2) for k, v in totals.items()},
        "scale_up_delay_s": run.scale_up_delay_s,
        "scale_down_delay_s": run.scale_down_delay_s,
        "samples": len(samples),
        "scale_up_pods": len(latencies),
        "scale_up_p50_s": _r(percentile(latencies, 0.5)),
        "scale_up_p95_s": _r(percentile(latencies, 0.95)),
        "scale_up_max_s": _r(max(latencies, default=None)),
        "scale_up_p50_wall_s": _r(None if not latencies else percentile(latencies, 0.5) / run.speed),
        "pools": out_pools,
        "_up": up_steps,
    }


@dataclass(frozen=True, slots=True)
class Hit:
    """A trace job a node failure struck, resolved against the job's runs (trace seconds)."""
    job: int
    pool: str
    at: float                  # the failure
    units_on_node: int         # what the job held on the failed node
    run_start: float           # the start of the run the failure struck
    stop: float                # when the platform stopped the run (requeued) or started it over (restarted)
    outcome: str               # requeued | restarted | running (neither by the horizon) | finished (it ended first)
    next_start: float | None   # the start of its next run


def hits(run: Run, ivs: list[Interval]) -> list[Hit]:
    """Every job each injected failure struck, with the run it struck and what became of it. A run struck
    twice (a second node of it failed before it was stopped) counts once: it was lost already."""
    runs: dict[int, list[Interval]] = defaultdict(list)
    for iv in sorted(ivs, key=lambda iv: iv.start):
        runs[iv.job].append(iv)
    out: list[Hit] = []
    seen: set[tuple[int, float]] = set()
    for record in sorted(run.failures, key=lambda r: r.at):
        for job, units in record.hits:
            mine = runs.get(job, [])
            k = max((k for k, iv in enumerate(mine) if iv.start <= record.at), default=None)
            if k is None or (job, mine[k].start) in seen:
                continue
            seen.add((job, mine[k].start))
            iv = mine[k]
            outcome = {"evicted": "requeued", "interrupted": "restarted", "running": "running"}.get(iv.ended, "finished")
            stop = iv.end if outcome in ("requeued", "restarted") else (run.horizon if outcome == "running" else iv.end)
            out.append(Hit(job, run.jobs[job].pool, record.at, units, iv.start, stop, outcome,
                           mine[k + 1].start if k + 1 < len(mine) else None))
    return out


FAILURE_KEYS = ("failures", "skipped", "jobs_hit", "runs_struck", "requeued", "restarted", "work_redone_gpu_hours",
                "stalled_gpu_hours", "capacity_down_gpu_hours", "uncovered_down_gpu_hours", "gpu_hours_lost",
                "spare_gpu_hours", "recovery_p50_h", "recovery_max_h", "delay_p50_h", "delay_max_h",
                "not_recovered")


def failure_figures(run: Run, plan: Plan, struck: list[Hit]) -> dict[str, Any] | None:
    """What the replay's node failures cost, per pool and in all (None for a replay without failures).

    GPU-hours lost = work redone + stalled + capacity down not covered by a spare:
    - work redone: each struck run's GPUs times its time from its start to the failure (a run starts over:
      what it had done is done again; a run that ended by itself before it was stopped lost nothing);
    - stalled: the run's GPUs on its other nodes, from the failure until the platform stopped it or
      started it over (a gang's healthy members wait on the lost one);
    - capacity down: each failed node's GPUs from the failure to its repair (or the horizon); uncovered:
      only while more nodes of the pool are down than it has spares.
    Recovery: failure -> the job's next run; delay: the job's next run less the start of the run struck
    (summed over its hits), over the jobs whose every hit was followed by a next run."""
    if run.failure_schedule is None:
        return None
    H = run.horizon
    pools = plan.pools_by_name

    def gpus(pool: str, units: float) -> float:
        return units / pools[pool].units_per_gpu

    raw: dict[str, dict[str, float]] = {}
    rows: dict[str, dict[str, Any]] = {}
    for p in plan.pools:
        node_gpus = p.units_per_node / p.units_per_gpu
        records = [r for r in run.failures if r.failure.pool == p.name]
        down = _steps([d for r in records if r.node is not None
                       for d in ((r.at, 1), (min(r.repaired if r.repaired is not None else H, H), -1))])
        mine = [h for h in struck if h.pool == p.name]
        lost = [h for h in mine if h.outcome != "finished"]
        redone = sum(gpus(p.name, run.jobs[h.job].total_units) * (h.at - h.run_start) for h in lost) / 3600
        stalled = sum(gpus(p.name, run.jobs[h.job].total_units - h.units_on_node) * (h.stop - h.at) for h in lost) / 3600
        down_h = _integrate(down, H) * node_gpus / 3600
        spares = run.spares.get(p.name, 0)
        uncovered = _integrate(down, H, lambda v: max(0.0, v - spares)) * node_gpus / 3600
        raw[p.name] = {
            "failures": sum(1 for r in records if r.node is not None),
            "skipped": sum(1 for r in records if r.node is None),
            "work_redone_gpu_hours": redone,
            "stalled_gpu_hours": stalled,
            "capacity_down_gpu_hours": down_h,
            "uncovered_down_gpu_hours": uncovered,
            "gpu_hours_lost": redone + stalled + uncovered,
            "spare_gpu_hours": spares * node_gpus * H / 3600,
        }
        rows[p.name] = {**{k: round(v, 3) for k, v in raw[p.name].items()}, **_hit_figures(lost)}
    lost = [h for h in struck if h.outcome != "finished"]
    total: dict[str, Any] = {k: round(sum(r[k] for r in raw.values()), 3) for k in next(iter(raw.values()), {})}
    total.update(_hit_figures(lost))
    detection = [h.stop - h.at for h in lost if h.outcome in ("requeued", "restarted")]
    return {
        "rate_per_node_hour": run.failure_rate,
        "seed": run.failure_seed,
        "spare_nodes": dict(run.spares),
        "toleration_s": round(run.toleration_s, 1),
        "scheduled": sum(1 for f in run.failure_schedule if f.at < H),
        **{k: total[k] for k in FAILURE_KEYS},
        "finished_before_stopped": sum(1 for h in struck if h.outcome == "finished"),
        "started_late": sum(1 for e in run.events if e.kind == "started"),
        "stopped_p50_s": _r(percentile(detection, 0.5)),
        "stopped_max_s": _r(max(detection, default=None)),
        "pools": rows,
        "events": [{"t_h": round(r.at / 3600, 4), "pool": r.failure.pool, "node": r.node,
                    "repaired_h": None if r.repaired is None else round(r.repaired / 3600, 4),
                    "jobs": [{"job": j, "line": run.jobs[j].line, "units": u} for j, u in r.hits]}
                   for r in sorted(run.failures, key=lambda r: r.at)],
    }


def _hit_figures(lost: list[Hit]) -> dict[str, Any]:
    """Jobs hit, runs struck (a job restarted and struck again counts twice), requeued, restarted, recovery
    and completion delay over the hits that lost work."""
    recovery = [h.next_start - h.at for h in lost if h.next_start is not None]
    delay: dict[int, float] = defaultdict(float)
    unrecovered = {h.job for h in lost if h.next_start is None}
    for h in lost:
        if h.next_start is not None:
            delay[h.job] += h.next_start - h.run_start
    delays = [d for job, d in delay.items() if job not in unrecovered]
    return {
        "jobs_hit": len({h.job for h in lost}),
        "runs_struck": len(lost),
        "requeued": sum(1 for h in lost if h.outcome == "requeued"),
        "restarted": sum(1 for h in lost if h.outcome == "restarted"),
        "recovery_p50_h": _h(percentile(recovery, 0.5)),
        "recovery_max_h": _h(max(recovery, default=None)),
        "delay_p50_h": _h(percentile(delays, 0.5)),
        "delay_max_h": _h(max(delays, default=None)),
        "not_recovered": len(unrecovered),
    }


def _gpu_hours(ivs: list[Interval], plan: Plan) -> float:
    pools = plan.pools_by_name
    return sum(iv.unit_seconds / pools[iv.flavor].units_per_gpu / 3600 for iv in ivs if iv.flavor in pools)


def overhead(run: Run, plan: Plan, ivs: list[Interval] | None = None) -> dict[str, Any]:
    """The simulator's own time per job, what the correction did with it and the error that remains, from
    the run's timings (wall seconds) of the runs that ended by themselves."""
    timings = run.timings
    per_job = [t.overhead_s for t in timings if t.overhead_s is not None]
    starts = [t.running - t.admitted for t in timings if t.running is not None]
    ends = [t.finished - t.ended for t in timings if t.ended is not None]
    residual = [abs(t.residual_s) for t in timings]
    measured = percentile(per_job, 0.5)
    basis = measured if measured is not None else (
        percentile(run.calibration, 0.5) if run.calibration else fidelity.PRIOR_OVERHEAD_S)
    durations = [run.jobs[e.job].duration for e in run.events if e.kind == "submitted"]
    gpu_h = {e.job: run.jobs[e.job].total_units * run.jobs[e.job].duration
             / plan.pools_by_name[run.jobs[e.job].pool].units_per_gpu for e in run.events if e.kind == "submitted"}
    flags = fidelity.untrusted(durations, basis, run.speed)
    jobs_in_order = [e.job for e in run.events if e.kind == "submitted"]
    untrusted_work = sum(gpu_h[j] for j, f in zip(jobs_in_order, flags) if f)
    share = sum(flags) / len(flags) if flags else 0.0
    fix = fidelity.fastest_trusted_speed(durations, basis)
    warning = None
    if share > fidelity.UNTRUSTED_SHARE_LIMIT:
        warning = (f"{share:.0%} of the jobs run shorter than {fidelity.TRUST_FACTOR:g}x the simulator's own "
                   f"{basis:.2f} s per job ({fidelity.TRUST_FACTOR * basis * run.speed:,.0f} s of trace time at "
                   f"{run.speed:g}x): their waits, and the hand-overs of their quota, are not to be trusted; "
                   f"--speed {math.floor(fix * 10) / 10:g} would keep them under {fidelity.UNTRUSTED_SHARE_LIMIT:.0%}")
    return {
        "corrected": run.corrected,
        "calibration_s": [round(x, 3) for x in run.calibration],
        "added_per_run_s": round(run.added_s, 3),
        "runs_timed": len(timings),
        "per_job_p50_s": _r(measured),
        "per_job_p95_s": _r(percentile(per_job, 0.95)),
        "per_job_trace_s": _r(None if measured is None else measured * run.speed),
        "admission_to_running_p50_s": _r(percentile(starts, 0.5)),
        "admission_to_running_p95_s": _r(percentile(starts, 0.95)),
        "end_to_release_p50_s": _r(percentile(ends, 0.5)),
        "end_to_release_p95_s": _r(percentile(ends, 0.95)),
        "residual_p50_s": _r(percentile(residual, 0.5)),
        "residual_p95_s": _r(percentile(residual, 0.95)),
        "residual_max_s": _r(max(residual, default=None)),
        "gpu_hours_held": round(_gpu_hours(intervals(run, held=True), plan), 2),
        "gpu_hours_counted": round(_gpu_hours(intervals(run) if ivs is None else ivs, plan), 2),
        "trust_factor": fidelity.TRUST_FACTOR,
        "untrusted_below_trace_s": round(fidelity.TRUST_FACTOR * basis * run.speed, 1),
        "untrusted_jobs": sum(flags),
        "untrusted_share": round(share, 4),
        "untrusted_gpu_hours_share": round(untrusted_work / sum(gpu_h.values()), 4) if gpu_h else 0.0,
        "speed_to_trust": None if math.isinf(fix) else math.floor(fix * 10) / 10,
        "warning": warning,
    }


def iv_reason_timeout(run: Run, iv: Interval) -> bool:
    return any(e.kind == "evicted" and e.job == iv.job and e.reason == "PodsReadyTimeout" and abs(e.t - iv.end) < 1e-6
               for e in run.events)


def _h(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds / 3600, 3)


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 3)


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
