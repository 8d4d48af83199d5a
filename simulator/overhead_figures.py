"""The report's simulator.overhead section: the simulator's own time per job (admission to pods Running, pods'
end to quota released), what the correction (simulator/fidelity.py) did with it, the error that remains, and
the share of jobs too short for the speed to be trusted."""

from __future__ import annotations

import math
from typing import Any

from gpu_platform.plan import Plan
from gpu_platform.useful_work import percentile

from . import fidelity
from .allocations import Interval, intervals
from .records import Run
from .rounding import rounded


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
        "per_job_p50_s": rounded(measured),
        "per_job_p95_s": rounded(percentile(per_job, 0.95)),
        "per_job_trace_s": rounded(None if measured is None else measured * run.speed),
        "admission_to_running_p50_s": rounded(percentile(starts, 0.5)),
        "admission_to_running_p95_s": rounded(percentile(starts, 0.95)),
        "end_to_release_p50_s": rounded(percentile(ends, 0.5)),
        "end_to_release_p95_s": rounded(percentile(ends, 0.95)),
        "residual_p50_s": rounded(percentile(residual, 0.5)),
        "residual_p95_s": rounded(percentile(residual, 0.95)),
        "residual_max_s": rounded(max(residual, default=None)),
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
