"""A deterministic synthetic trace whose job sizes, run times and failures follow a published GPU cluster
trace, at a chosen load.

The profile is SenseTime's Helios (Hu et al., "Characterization and Prediction of Deep Learning Workloads
in Large-Scale GPU Datacenters", SC'21, arXiv 2109.01313), read from the authors' released artifacts
(github.com/S-Lab-System-Group/HeliosArtifact, helios_cluster_summary.csv and the data behind Figures 1,
5, 6 and 7), because its size, duration and status figures are exact there:

- GPUs per job (Fig. 6, four clusters pooled): 1: 72%, 2: 2.5%, 4: 6%, 8: 14%, 16: 3%, 32: 1.6%, 64+: 0.9%
  (mean 3.70 GPUs; the summary CSV's avg_gpu_num is 3.716). Jobs above 8 GPUs are 5.3% of jobs and 59% of
  GPU time.
- Run time: log-normal, median 206 s over all GPU jobs (summary CSV, med_run_time_gpu), sigma 2.74 fitted
  to the p90 of about 6,900 s (Fig. 1a/5a), clamped to [10 s, 2^20 s]. Larger jobs run longer (Fig. 6a
  against 6b): the median is 150 s for 1 GPU, x3 for 2-8 GPUs, x5 for 16 and more, which keeps the overall
  median near 206 s and large jobs near 60% of GPU time.
- Failures: 15.5% of GPU jobs fail (Fig. 7a, fail_rate_gpu 0.155). How long a failed job ran is not
  published; it fails after U(0.2, 1) of its sampled run time (a heuristic, so that failed jobs take about
  9% of GPU time as the summary CSV's GPU time by status says).

On a pool, a job's size is in the pool's units: whole-GPU pools take the GPU count as is (a job larger than a
node becomes one pod per node); MIG and time-sliced pools serve single-pod work, so the size is capped at
a node's units. Jobs arrive uniformly at random over the horizon, on each pool until the work offered there
(units x run time inside the horizon) is `load` times the pool's capacity, and go to the pool's teams in
proportion to their nominal quota. Priorities: the team's granted `training` (else `research`) on training
pools, `production-inference` where granted on inference pools, otherwise none.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from gpu_platform import conventions as cv
from gpu_platform.plan import Plan, PoolPlan, TeamPlan

from .trace import TraceJob

SIZES: tuple[tuple[int, float], ...] = ((1, 0.72), (2, 0.025), (4, 0.06), (8, 0.14), (16, 0.03), (32, 0.016), (64, 0.009))
SIGMA = 2.74
MEDIAN_1_GPU_S = 150.0
MIN_DURATION_S = 10.0
MAX_DURATION_S = float(2 ** 20)
FAILED_FRACTION = 0.155


def _median(size: int) -> float:
    return MEDIAN_1_GPU_S * (1 if size == 1 else 3 if size <= 8 else 5)


@dataclass(frozen=True)
class Profile:
    """What the generator produces, for checking against the source (README, What-if simulation)."""

    single_gpu_share: float
    large_job_share: float
    median_duration_s: float
    failed_share: float


def _size(rng: random.Random) -> int:
    x = rng.random()
    acc = 0.0
    for size, p in SIZES:
        acc += p
        if x < acc:
            return size
    return SIZES[-1][0]


def _duration(rng: random.Random, size: int) -> float:
    d = _median(size) * math.exp(SIGMA * rng.gauss(0.0, 1.0))
    return min(MAX_DURATION_S, max(MIN_DURATION_S, d))


def _priority(team: TeamPlan, pool: PoolPlan) -> str | None:
    granted = team.allowed_priorities
    if pool.workload == "training":
        return next((p for p in ("training", "research") if p in granted), None)
    if pool.workload == "inference" and "production-inference" in granted:
        return "production-inference"
    return None


def _teams_on(plan: Plan, pool: PoolPlan) -> list[tuple[TeamPlan, int]]:
    return [(t, q.nominal) for t in plan.teams for q in t.quotas if q.pool == pool.name and q.nominal > 0]


def generate(plan: Plan, seed: int, hours: float, load: float = 1.2) -> list[TraceJob]:
    """The same (plan, seed, hours, load) always gives the same trace."""
    horizon = hours * 3600.0
    rng = random.Random(seed)
    jobs: list[TraceJob] = []
    line = 0
    for pool in plan.pools:
        teams = _teams_on(plan, pool)
        if not teams or pool.capacity_units == 0:
            continue
        weights = [n for _, n in teams]
        target = load * pool.capacity_units * horizon
        offered = 0.0
        while offered < target:
            size = _size(rng)
            duration = _duration(rng, size)
            submit = rng.uniform(0.0, horizon)
            team = rng.choices([t for t, _ in teams], weights)[0]
            failed = rng.random() < FAILED_FRACTION
            if failed:
                duration = max(MIN_DURATION_S, duration * rng.uniform(0.2, 1.0))
            if pool.sharing_mode == "full":
                per_node = pool.units_per_node
                pods = max(1, math.ceil(size / per_node)) if size > per_node else 1
                units = per_node if size > per_node else size
            elif pool.resource_name == cv.SHARED_GPU_RESOURCE:
                # One replica per pod: the device plugin refuses more per container (the job template too).
                pods, units = min(size, pool.units_per_node), cv.SHARED_GPU_MAX_PER_CONTAINER
            else:
                pods, units = 1, min(size, pool.units_per_node)
            ceiling = _ceiling(team, pool)
            while units * pods > ceiling and pods > 1:
                pods -= 1
            units = min(units, ceiling)
            line += 1
            jobs.append(TraceJob(line, round(submit, 1), team.name, pool.name, units, pods, round(duration, 1),
                                 _priority(team, pool), "failed" if failed else "succeeded"))
            offered += units * pods * min(duration, horizon - submit)
    jobs.sort(key=lambda j: (j.submit, j.line))
    return jobs


def _ceiling(team: TeamPlan, pool: PoolPlan) -> int:
    """The most units of the pool the team can ever hold: the plan's reach, what the trace check accepts."""
    return next(q for q in team.quotas if q.pool == pool.name).reach.units


def profile(jobs: list[TraceJob], plan: Plan) -> Profile:
    pools = plan.pools_by_name
    gpus = [j.total_units / pools[j.pool].units_per_gpu for j in jobs]
    durations = sorted(j.duration for j in jobs)
    return Profile(
        single_gpu_share=sum(1 for g in gpus if g <= 1) / len(jobs),
        large_job_share=sum(1 for g in gpus if g > 8) / len(jobs),
        median_duration_s=durations[len(durations) // 2],
        failed_share=sum(1 for j in jobs if j.outcome == "failed") / len(jobs),
    )
