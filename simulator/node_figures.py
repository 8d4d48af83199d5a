"""The report's nodes section: the GPU nodes that ran, per pool and in all, from the replay's node samples
(node-hours and what they cost, idle split into reserved, elastic and partly used, quota held on nodes not up
yet, scale-up latencies; docs/what-if.md "Elastic pools")."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from gpu_platform import conventions as cv
from gpu_platform.nodes import scales_locally, spare_nodes
from gpu_platform.plan import Plan
from gpu_platform.useful_work import at as _at, cost_key, percentile, steps as _steps

from .allocations import Interval
from .records import Run, ScaleUp
from .rounding import rounded


RESERVED = frozenset(cv.RESERVED_CAPACITY_TYPES)


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
            "scale_up_p50_s": rounded(percentile(latencies, 0.5)),
            "scale_up_p95_s": rounded(percentile(latencies, 0.95)),
            "scale_up_max_s": rounded(max(latencies, default=None)),
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
        "scale_up_p50_s": rounded(percentile(latencies, 0.5)),
        "scale_up_p95_s": rounded(percentile(latencies, 0.95)),
        "scale_up_max_s": rounded(max(latencies, default=None)),
        "scale_up_p50_wall_s": rounded(None if not latencies else percentile(latencies, 0.5) / run.speed),
        "pools": out_pools,
        "_up": up_steps,
    }
