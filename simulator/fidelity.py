"""The error budget of a replay: what the simulator itself adds to every job, and how it is taken out.

Between Kueue admitting a job and giving its quota back, the replay's cluster runs a chain a real cluster
runs too (the Job controller creates the pods, the scheduler binds them, the kubelet, here KWOK, starts and
finishes them, the Job controller sees the end, Kueue sees the Job finish). It takes seconds of wall time
on a loaded 2-core machine, and every wall second of a compressed replay is `speed` seconds of trace time:
unchecked, a 30-minute job held its GPUs 31 minutes at 30x before the correction, and a 60-second job at 12x more
than twice its run. Two corrections, because each fixes what the other cannot (docs/what-if.md, "The error
budget of a replay"):

- the dynamics: each pod is given an end time, its job's admission plus the compressed duration less the
  end of the chain measured so far (pods' end to quota released), so however long the start of the chain
  took, the quota comes back when the trace says and the next job's wait is right. A job shorter than the
  chain cannot end before it has started: there the replay is not to be trusted;
- the accounting: a run that ended by itself is counted for its trace duration plus the whole chain an
  idle cluster takes (what a real cluster adds, measured before the replay), not for the wall time it
  held the quota times the speed; evictions and runs cut by the horizon stay as observed.

What remains is stated in the report: the chain per job (wall and trace seconds), what the correction
missed (the residual), and the share of jobs shorter than TRUST_FACTOR chains at the chosen speed.
"""

from __future__ import annotations

import math
import statistics
import threading
from collections import deque
from collections.abc import Iterable, Sequence

# A job whose compressed run is shorter than this many chains (median) may end late: below one it cannot
# end on time at all, and the chain's p95 was 1.5-2.2x its median in the runs docs/what-if.md records.
TRUST_FACTOR = 2.0
# The report warns, and the default speed is lowered, when more than this share of the jobs is untrusted.
UNTRUSTED_SHARE_LIMIT = 0.10
# The chain per job assumed before a run has measured one (the default --speed is chosen before the
# cluster starts): the median on the 2-core machine running nothing else (2.26-2.29 s in docs/what-if.md).
PRIOR_OVERHEAD_S = 2.3
# End-of-chain measurements of the most recent runs make the estimate: it follows the load of the cluster
# (more jobs in flight, a slower chain) without one slow job swinging it.
WINDOW = 32


def end_time(admitted_s: float, duration_s: float, speed: float, end_chain_s: float) -> float:
    """When a pod should end, on the replay's clock: so that its quota comes back duration / speed after
    the admission, it ends the end of the chain (pods' end to quota released) before that."""
    return admitted_s + duration_s / speed - end_chain_s


class OverheadEstimate:
    """What the replay takes off the next pods' run (the end of the chain): the median of the last WINDOW
    measured in this run, or of the calibration before any was. Measurements arrive on the watch's thread
    while the pods' end times are set on others: both under one lock."""

    def __init__(self, calibration: Iterable[float], window: int = WINDOW):
        self.calibration = [max(0.0, x) for x in calibration]
        self.recent: deque[float] = deque(maxlen=window)
        self._lock = threading.Lock()

    def add(self, overhead_s: float) -> None:
        with self._lock:
            self.recent.append(max(0.0, overhead_s))

    def value(self) -> float:
        with self._lock:
            samples = list(self.recent) or self.calibration
        return statistics.median(samples) if samples else 0.0


def untrusted(durations: Sequence[float], overhead_s: float, speed: float, factor: float = TRUST_FACTOR) -> list[bool]:
    """Per job: is its trace duration shorter than `factor` overheads, in trace time, at this speed? At
    speed 1 nothing is untrusted: the simulator's chain is then the chain a real cluster runs, not a
    multiple of it."""
    if speed <= 1:
        return [False] * len(durations)
    threshold = factor * overhead_s * speed
    return [d < threshold for d in durations]


def fastest_trusted_speed(durations: Sequence[float], overhead_s: float, share: float = UNTRUSTED_SHARE_LIMIT,
                          factor: float = TRUST_FACTOR) -> float:
    """The highest speed at which at most `share` of the jobs are untrusted (shorter than `factor`
    overheads in trace time), at least 1; infinite when no speed makes any untrusted."""
    if not durations or overhead_s <= 0:
        return math.inf
    ordered = sorted(durations)
    k = math.floor(share * len(ordered))   # this many may be untrusted: the (k+1)-th shortest must not be
    if k >= len(ordered):
        return math.inf
    return max(1.0, ordered[k] / (factor * overhead_s))


def default_speed(durations: Sequence[float], horizon_s: float, target_wall_s: float, max_wall_s: float,
                  overhead_s: float = PRIOR_OVERHEAD_S) -> tuple[float, str | None]:
    """The speed a replay runs at unless told: the horizon in target_wall_s, lowered (down to the wall
    budget max_wall_s) when that would leave more than UNTRUSTED_SHARE_LIMIT of the jobs untrusted; when
    even the budget's speed would, the target speed and a warning naming the speed that would do."""
    target = max(1.0, round(horizon_s / target_wall_s, 1))
    fix = fastest_trusted_speed(durations, overhead_s)
    if fix >= target:
        return target, None
    slowest = max(1.0, math.ceil(horizon_s / max_wall_s * 10) / 10)
    share = _share(durations, overhead_s, target)
    if fix >= slowest:
        speed = max(1.0, math.floor(fix * 10) / 10)
        return speed, (f"speed {speed:g}x instead of {target:g}x: at {target:g}x {share:.0%} of the jobs would run "
                       f"shorter than {TRUST_FACTOR:g}x the simulator's own {overhead_s:g} s per job "
                       f"({horizon_s / speed / 60:.1f} min of replay)")
    return target, (f"warning: at {target:g}x {share:.0%} of the jobs run shorter than {TRUST_FACTOR:g}x the "
                    f"simulator's own {overhead_s:g} s per job, so their waits and hand-overs are not to be "
                    f"trusted; --speed {math.floor(fix * 10) / 10:g} would keep them under "
                    f"{UNTRUSTED_SHARE_LIMIT:.0%} ({horizon_s / fix / 60:.0f} min of replay)")


def _share(durations: Sequence[float], overhead_s: float, speed: float) -> float:
    flags = untrusted(durations, overhead_s, speed)
    return sum(flags) / len(flags) if flags else 0.0


# ---- one trace, two modes -------------------------------------------------------------------------------
# The workloads mode (simulator/direct_workloads.py) is measured against the full mode on a shared trace:
# does Kueue admit the jobs in the same order, do they wait as long, does each team get the same GPU-hours?


def first_admissions(events: Iterable) -> dict[int, float]:
    """Each job's first admission (trace seconds) from a replay's events."""
    out: dict[int, float] = {}
    for e in events:
        if e.kind == "admitted":
            out.setdefault(e.job, e.t)
    return out


def waits(events: Iterable) -> list[float]:
    """Submission to first admission (trace seconds), per job admitted."""
    events = list(events)
    submitted = {e.job: e.t for e in events if e.kind == "submitted"}
    return [t - submitted[j] for j, t in first_admissions(events).items() if j in submitted]


def kendall_tau(a: dict[int, float], b: dict[int, float]) -> float | None:
    """Rank agreement of two orders of the same jobs (the jobs in both): 1 same order, -1 reversed. Ties
    are broken by job index. O(n log n): the discordant pairs are the inversions of b's ranks taken in
    a's order (a merge sort counts them)."""
    common = sorted(set(a) & set(b))
    n = len(common)
    if n < 2:
        return None
    rank_b = {j: k for k, j in enumerate(sorted(common, key=lambda j: (b[j], j)))}
    seq = [rank_b[j] for j in sorted(common, key=lambda j: (a[j], j))]

    def count(xs: list[int]) -> tuple[list[int], int]:
        if len(xs) < 2:
            return xs, 0
        mid = len(xs) // 2
        left, x = count(xs[:mid])
        right, y = count(xs[mid:])
        merged, inv, i, k = [], x + y, 0, 0
        while i < len(left) and k < len(right):
            if left[i] <= right[k]:
                merged.append(left[i])
                i += 1
            else:
                merged.append(right[k])
                inv += len(left) - i
                k += 1
        return merged + left[i:] + right[k:], inv

    _, discordant = count(seq)
    pairs = n * (n - 1) // 2
    return 1 - 2 * discordant / pairs


def quantile(values: Sequence[float], q: float) -> float | None:
    """The q-quantile by the nearest rank (what the report's percentiles use)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def compare_runs(full, fast, gpu_hours_full: dict[str, float], gpu_hours_fast: dict[str, float]) -> dict:
    """The fast mode's fidelity to the full one on one trace: admitted order (Kendall's tau over the jobs
    both admitted), wait p50/p95 (trace seconds) each, GPU-hours per team each and the largest difference
    between them as a share of the team's full-mode hours (teams with at least one GPU-hour)."""
    a, b = first_admissions(full.events), first_admissions(fast.events)
    wa, wb = waits(full.events), waits(fast.events)
    diffs = {t: abs(gpu_hours_fast.get(t, 0.0) - h) / h for t, h in gpu_hours_full.items() if h >= 1.0}
    worst = max(diffs, key=lambda t: diffs[t], default=None)
    return {
        "admitted": [len(a), len(b)],
        "admitted_in_both": len(set(a) & set(b)),
        "order_kendall_tau": None if (tau := kendall_tau(a, b)) is None else round(tau, 4),
        "wait_p50_s": [quantile(wa, 0.5), quantile(wb, 0.5)],
        "wait_p95_s": [quantile(wa, 0.95), quantile(wb, 0.95)],
        "gpu_hours_total": [round(sum(gpu_hours_full.values()), 1), round(sum(gpu_hours_fast.values()), 1)],
        "gpu_hours_team_max_diff": None if worst is None else round(diffs[worst], 4),
        "gpu_hours_team_max_diff_team": worst,
        "gpu_hours_team_median_diff": None if not diffs else round(statistics.median(diffs.values()), 4),
    }
