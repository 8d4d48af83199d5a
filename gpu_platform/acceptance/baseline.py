"""Step 7: the run's useful work against a baseline given on the command line (a GPU rental price or an API's
price per unit of output): the `--baseline` forms, the job's cost, the comparison and the step's result."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Sequence

from .. import useful_work as uw
from ..errors import InputError
from .results import Figure, StepResult

GPU_HOUR, API = "gpu-hour", "api"
WORK_UNITS: tuple[str, ...] = ("tokens", "samples")
BASELINE_FORMS = ("gpu-hour=USD (a GPU rental price per GPU-hour, e.g. gpu-hour=2.50), or "
                  "api=USD/[N[k|M]-]UNIT (an API price per N units of output, UNIT one of "
                  f"{', '.join(WORK_UNITS)}: e.g. api=0.002/1k-tokens, api=2.50/1M-tokens, api=0.01/samples)")
_PRICE = r"(?P<usd>\d+(?:\.\d+)?|\.\d+)"
_GPU_HOUR = re.compile(rf"^gpu-hour={_PRICE}$")
_API = re.compile(rf"^api={_PRICE}/(?:(?P<n>\d+(?:\.\d+)?)(?P<mult>[kM]?)-)?(?P<unit>[a-z]+)$")
_MULT = {"": 1, "k": 1_000, "M": 1_000_000}


@dataclass(frozen=True, slots=True)
class Baseline:
    """A price to beat: `usd` per `per` units of `unit` (a GPU-hour, or N tokens or samples of an API's output)."""

    kind: str
    usd: float
    per: float
    unit: str
    text: str

    @property
    def per_text(self) -> str:
        """`GPU-hour`, `1k tokens`, `1M tokens`, `sample`."""
        if self.kind == GPU_HOUR:
            return "GPU-hour"
        for suffix, mult in (("M", 1_000_000), ("k", 1_000)):
            if self.per >= mult and self.per % mult == 0:
                return f"{self.per / mult:g}{suffix} {self.unit}"
        return f"{self.per:g} {self.unit}" if self.per != 1 else self.unit.removesuffix("s")


def parse_baseline(text: str) -> Baseline:
    """`--baseline`: gpu-hour=USD or api=USD/[N[k|M]-]UNIT; InputError naming the flag and the valid forms."""
    value = text.strip()
    if m := _GPU_HOUR.match(value):
        usd = float(m["usd"])
        baseline = Baseline(GPU_HOUR, usd, 1.0, "GPU-hour", value)
    elif m := _API.match(value):
        unit = m["unit"] if m["unit"].endswith("s") else m["unit"] + "s"
        if unit not in WORK_UNITS:
            raise InputError(f"--baseline {text!r}: unit {m['unit']!r} is not a unit of work the acceptance run "
                             f"reports; units: {', '.join(WORK_UNITS)}")
        per = float(m["n"] or 1) * _MULT[m["mult"] or ""]
        if per <= 0:
            raise InputError(f"--baseline {text!r}: the count of {unit} must be above 0; valid forms: {BASELINE_FORMS}")
        usd = float(m["usd"])
        baseline = Baseline(API, usd, per, unit, value)
    else:
        kind = value.partition("=")[0]
        what = (f"kind {kind!r} is not a baseline; kinds: {GPU_HOUR}, {API}" if "=" in value and kind not in (GPU_HOUR, API)
                else "not a baseline")
        raise InputError(f"--baseline {text!r}: {what}; valid forms: {BASELINE_FORMS}")
    if baseline.usd <= 0:
        raise InputError(f"--baseline {text!r}: the price must be above 0 USD; valid forms: {BASELINE_FORMS}")
    return baseline


@dataclass(frozen=True, slots=True)
class Run:
    """One pod's hold on its GPUs: how many GPUs, for how long, and how it ended (useful_work's outcomes: finished,
    running, failed, preempted; a pod the platform stopped, such as the one step 5 deletes, is preempted)."""

    pod: str
    gpus: float
    seconds: float
    outcome: str

    @property
    def gpu_hours(self) -> float:
        return self.gpus * self.seconds / uw.SECONDS_PER_HOUR


@dataclass(frozen=True, slots=True)
class Work:
    """What the training window produced (the workload's `done` events, all ranks)."""

    tokens: int
    samples: int

    def units(self, unit: str) -> int:
        return {"tokens": self.tokens, "samples": self.samples}[unit]


def job_cost(runs: Iterable[Run], usd_per_gpu_hour: float, finished_jobs: int = 1) -> dict[str, float | None]:
    """The job's cost table as both reports print it (useful_work.cost_summary): each run's GPU time at the price,
    in the bucket its outcome puts it (useful_work.cost_key)."""
    usd: dict[str, float] = {}
    for run in runs:
        key = uw.cost_key(run.outcome)
        usd[key] = usd.get(key, 0.0) + run.gpu_hours * usd_per_gpu_hour
    return uw.cost_summary(usd, finished_jobs)


@dataclass(frozen=True, slots=True)
class Comparison:
    baseline: Baseline
    # USD per the baseline's unit (a useful GPU-hour; N tokens or samples); None when no work was done.
    cluster_usd_per_unit: float | None
    total_usd: float
    useful_gpu_hours: float
    work_units: float

    @property
    def beats(self) -> bool:
        return self.cluster_usd_per_unit is not None and self.cluster_usd_per_unit < self.baseline.usd


def compare(baseline: Baseline, runs: Sequence[Run], usd_per_gpu_hour: float, work: Work) -> Comparison:
    """The cluster's cost per unit of work against the baseline's.

    The cluster's cost is the job's whole GPU time at the plan's price (useful_work's cost per finished job: the
    runs that finished and the ones lost, including the pod step 5 deletes, so the comparison is conservative).
    Against a GPU rental, the unit of work is a useful GPU-hour (GPU time of runs that finished): renting the same
    GPUs for only the useful hours is the baseline, so the cluster beats it when its cost per useful GPU-hour is
    below the rental price. Against an API, the unit is the baseline's N tokens or samples of output."""
    # Unrounded: the cost table (job_cost) rounds to cents, which makes a short run's cost 0.
    total = sum(r.gpu_hours for r in runs) * usd_per_gpu_hour
    useful = sum(r.gpu_hours for r in runs if uw.cost_key(r.outcome) == "useful_usd")
    units = useful if baseline.kind == GPU_HOUR else work.units(baseline.unit) / baseline.per
    return Comparison(baseline, total / units if units > 0 else None, total, useful, units)


def evaluate_useful_work(baseline: Baseline | None, runs: Sequence[Run], usd_per_gpu_hour: float,
                         work: Work) -> StepResult:
    """Step 7: passed when the cluster's cost per unit of work is below the baseline's."""
    if baseline is None:
        return StepResult.skipped(7, f"no --baseline to compare against: pass one ({BASELINE_FORMS})")
    c = compare(baseline, runs, usd_per_gpu_hour, work)
    unit = f"USD/{c.baseline.per_text}"
    figures = (Figure("cluster_cost", None if c.cluster_usd_per_unit is None else round(c.cluster_usd_per_unit, 6), unit),
               Figure("baseline_cost", baseline.usd, unit), Figure("total_usd", round(c.total_usd, 6), "USD"),
               Figure("useful_gpu_hours", round(c.useful_gpu_hours, 4), "GPU-h"))
    if c.cluster_usd_per_unit is None:
        what = "GPU time of finished runs" if baseline.kind == GPU_HOUR else f"{baseline.unit} trained"
        return StepResult.failed(7, f"useful work to price ({what})", "none", *figures)
    expected = f"the cluster's cost below {baseline.usd:g} {unit} ({baseline.text})"
    if not c.beats:
        return StepResult.failed(7, expected, f"{round(c.cluster_usd_per_unit, 6):g} {unit}", *figures)
    return StepResult.passed(7, *figures, expected=expected)
