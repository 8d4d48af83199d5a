"""The report's failures section: what the replay's node failures cost, per pool and in all (the jobs they
hit, requeues and restarts, the GPU-hours lost to work redone, stalled GPUs and capacity down, the spares' own
GPU-hours, recovery and completion delay; docs/what-if.md "Node failures")."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from gpu_platform.plan import Plan
from gpu_platform.useful_work import integrate as _integrate, percentile, steps as _steps

from .allocations import Interval
from .records import Run
from .rounding import in_hours, rounded


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
        "stopped_p50_s": rounded(percentile(detection, 0.5)),
        "stopped_max_s": rounded(max(detection, default=None)),
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
        "recovery_p50_h": in_hours(percentile(recovery, 0.5)),
        "recovery_max_h": in_hours(max(recovery, default=None)),
        "delay_p50_h": in_hours(percentile(delays, 0.5)),
        "delay_max_h": in_hours(max(delays, default=None)),
        "not_recovered": len(unrecovered),
    }
