"""The design guide's acceptance test as data: its seven steps (what each proves, the figures it reports, when it
passes), a step's result, the verdict over all seven, what the all-reduce of step 3 should reach on the pool's
instance type, and step 7's comparison of the run's useful work against a baseline given on the command line.

The guide: a GPU cluster is not production until, before any long-term reservation or large cost commitment, one
job has gone through the whole path (queued as the team, real data, a communication benchmark, a training window,
a checkpoint survived a lost pod, the labels the cost and usage reports read, and useful work priced against
renting or buying the output elsewhere). `python -m platform_cli acceptance` (platform_cli/acceptance.py) runs
the steps on the stack's cluster and hands what it saw here; the program its pods run
(workloads/acceptance/train.py) prints one JSON line per event, which `events_from_log` reads back from the
pods' logs. Pure: no I/O, no clock, so every verdict is tested with literal figures.

Why a verdict is exit code 0 only when all seven steps pass: a skipped step proved nothing, and the point of the
test is that nothing is assumed. A failure says the step, what was expected and what was seen.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from . import useful_work as uw
from .errors import InputError
from .plan import PoolPlan

PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"
STATUSES: tuple[str, ...] = (PASSED, FAILED, SKIPPED)
# The command's exit code: 0 when every step passed, 1 when any failed or was skipped (the CLI's EXIT_VIOLATIONS);
# bad input is 2 before anything is submitted.
EXIT_PASSED, EXIT_NOT_PASSED = 0, 1
# How long step 1 waits for Kueue to admit the job before it fails (the team's quota may be busy: the step then
# says what the Workload waits for, from its QuotaReserved condition's message).
ADMISSION_TIMEOUT_S = 300
# The shortest training window: step 5 needs a checkpoint written, a pod deleted after it, and training resumed.
MIN_WINDOW_S = 60


@dataclass(frozen=True, slots=True)
class FigureSpec:
    """A figure a step reports: its key in the JSON report, its unit, what it measures."""

    name: str
    unit: str
    meaning: str


@dataclass(frozen=True, slots=True)
class Step:
    number: int
    key: str
    title: str
    proves: str
    figures: tuple[FigureSpec, ...]
    criteria: tuple[str, ...]


# The seven steps, in the guide's order and words (issue 39).
STEPS: tuple[Step, ...] = (
    Step(1, "queued-job", "Submit a queued training job with the production container",
         "the platform's JobSet template, submitted as the team, goes through Kueue (the team's LocalQueue and "
         "quota, the pool's flavor), the tenant admission policies and TAS like any job; the queue wait is "
         "measured as Kueue measures it",
         (FigureSpec("quota_reserved_wait", "s", "Workload created to QuotaReserved (Kueue's quota_reserved_wait_time)"),
          FigureSpec("admitted_wait", "s", "Workload created to Admitted (Kueue's admission_wait_time)"),
          FigureSpec("cluster_queue", "", "the ClusterQueue that admitted it"),
          FigureSpec("flavor", "", "the ResourceFlavor its GPUs were charged to"),
          FigureSpec("submitted_as", "", "the user and group the job was created as (impersonated)")),
         ("the JobSet and its ConfigMap are accepted when created as the team",
          "its Workload is queued in the team's LocalQueue",
          "quota is reserved in the team's ClusterQueue, the GPUs on the pool's flavor",
          f"Admitted within {ADMISSION_TIMEOUT_S} s")),
    Step(2, "data-pull", "Pull the real dataset sample and base model weights",
         "every pod reads a dataset sample and the base weights from the team's data path with its own credentials",
         (FigureSpec("bytes", "B", "bytes read, all pods"),
          FigureSpec("seconds", "s", "the slowest pod's read time"),
          FigureSpec("throughput", "MB/s", "the slowest pod's read rate (10^6 bytes per second)")),
         ("a data event from every pod, bytes above 0", "no pod reports a data-pull error")),
    Step(3, "all-reduce", "Run a multi-node communication benchmark",
         "the job's pods reach each other and all-reduce across them (NCCL over EFA on EKS GPU pools, gloo over "
         "TCP locally) at the bus bandwidth the instance type should reach",
         (FigureSpec("busbw", "GB/s", "bus bandwidth of the slowest rank, nccl-tests' definition (10^9 bytes/s)"),
          FigureSpec("algbw", "GB/s", "algorithm bandwidth of the slowest rank: message bytes / time"),
          FigureSpec("message", "B", "all-reduce message size"),
          FigureSpec("ranks", "", "processes in the all-reduce"),
          FigureSpec("expected_busbw", "GB/s", "the pass threshold, or none when the figure is reported only")),
         ("an all-reduce event from every pod, each with the right sum",
          "bus bandwidth at least BUSBW_PASS_FRACTION of the published figure for the instance type, where one "
          "exists (report only otherwise)",
          "a job of one pod skips it: nothing to reduce across")),
    Step(4, "train", "Train or fine-tune for a fixed window",
         "the production container trains across the pods for the window, with step time and throughput",
         (FigureSpec("steps", "", "optimizer steps in the window"),
          FigureSpec("step_time", "s", "mean wall time per step"),
          FigureSpec("throughput", "tokens/s", "tokens trained per second, all ranks"),
          FigureSpec("tokens", "", "tokens trained"),
          FigureSpec("samples", "", "sequences trained")),
         ("steps above 0 on every rank", "the window ran to its end")),
    Step(5, "checkpoint-restore", "Write a checkpoint, delete a pod, and restore from checkpoint",
         "a checkpoint reaches the data path, a pod lost mid-run brings the whole job back through the platform "
         "(requeued or restarted as its failure policy says), and training resumes from the checkpoint's step",
         (FigureSpec("checkpoint_write", "s", "time to write the last checkpoint before the deletion"),
          FigureSpec("checkpoint_step", "", "its step"),
          FigureSpec("recovery", "s", "pod deleted to every pod of the job running again"),
          FigureSpec("restore", "s", "time to read the checkpoint back"),
          FigureSpec("resumed_step", "", "the step training resumed from")),
         ("a checkpoint written before the deletion", "the job recovered without a person",
          "training resumed from the checkpoint's step, not from zero")),
    Step(6, "labels", "Export GPU, network, storage, queue, and cost labels",
         "the job's series in Prometheus carry its team, pool, queue and cost-center labels, so the usage and "
         "cost reports attribute it",
         (FigureSpec("series", "", "the job's series found, per family"),),
         ("GPU, network, storage and queue series of the job, each with team, pool, queue and cost-center labels",)),
    Step(7, "useful-work", "Compare useful work against the model/API or GPU rental baseline",
         "from the run's own figures (useful_work.py: the GPU time of finished and lost runs at the plan's prices), "
         "what a unit of work cost on the cluster against the baseline given on the command line",
         (FigureSpec("cluster_cost", "USD/unit", "the cluster's cost per unit of work"),
          FigureSpec("baseline_cost", "USD/unit", "the baseline's"),
          FigureSpec("total_usd", "USD", "the job's GPU time at the plan's price, finished and lost runs"),
          FigureSpec("useful_gpu_hours", "GPU-h", "GPU time of runs that finished")),
         ("useful work to price", "the cluster's cost per unit below the baseline's")),
)
STEP_BY_KEY: Mapping[str, Step] = {s.key: s for s in STEPS}


# ---------------------------------------------------------------------------------------------------
# Results and the verdict


@dataclass(frozen=True, slots=True)
class Figure:
    name: str
    value: float | int | str | None
    unit: str = ""

    def text(self) -> str:
        if self.value is None:
            return "-"
        if isinstance(self.value, float):
            shown = f"{self.value:.4g}" if abs(self.value) < 1000 else f"{self.value:,.0f}"
        elif isinstance(self.value, int):
            shown = f"{self.value:,}"
        else:
            shown = self.value
        return f"{shown} {self.unit}".rstrip()


@dataclass(frozen=True, slots=True)
class StepResult:
    """What one step showed: passed, failed (what was expected, what was seen) or skipped (why)."""

    step: int
    status: str
    figures: tuple[Figure, ...] = ()
    expected: str | None = None
    seen: str | None = None
    reason: str | None = None

    def __post_init__(self) -> None:
        if not 1 <= self.step <= len(STEPS):
            raise ValueError(f"step {self.step} is not one of 1..{len(STEPS)}")
        if self.status not in STATUSES:
            raise ValueError(f"status {self.status!r} is not one of {', '.join(STATUSES)}")
        if self.status == FAILED and not (self.expected and self.seen):
            raise ValueError(f"a failed step {self.step} must say what was expected and what was seen")
        if self.status == SKIPPED and not self.reason:
            raise ValueError(f"a skipped step {self.step} must say why")

    @property
    def spec(self) -> Step:
        return STEPS[self.step - 1]

    @classmethod
    def passed(cls, step: int, *figures: Figure, expected: str | None = None) -> StepResult:
        return cls(step, PASSED, tuple(figures), expected=expected)

    @classmethod
    def failed(cls, step: int, expected: str, seen: str, *figures: Figure) -> StepResult:
        return cls(step, FAILED, tuple(figures), expected=expected, seen=seen)

    @classmethod
    def skipped(cls, step: int, reason: str, *figures: Figure) -> StepResult:
        return cls(step, SKIPPED, tuple(figures), reason=reason)

    @classmethod
    def not_available(cls, step: int, why: str) -> StepResult:
        """A step whose live part this cluster cannot run (yet): skipped, so the verdict cannot pass."""
        return cls.skipped(step, f"not available on this cluster: {why}")

    def line(self) -> str:
        """The one line a verdict gives a step that did not pass."""
        head = f"step {self.step} ({self.spec.key})"
        if self.status == FAILED:
            return f"{head} failed: expected {self.expected}; seen {self.seen}"
        if self.status == SKIPPED:
            return f"{head} skipped: {self.reason}"
        return f"{head} passed"


@dataclass(frozen=True, slots=True)
class Verdict:
    results: tuple[StepResult, ...]

    @property
    def passed(self) -> bool:
        return all(r.status == PASSED for r in self.results)

    @property
    def exit_code(self) -> int:
        return EXIT_PASSED if self.passed else EXIT_NOT_PASSED

    def problems(self) -> list[str]:
        """Each step that did not pass, in order: the step, what was expected and what was seen (or why skipped)."""
        return [r.line() for r in self.results if r.status != PASSED]

    def summary(self) -> str:
        counts = {s: sum(r.status == s for r in self.results) for s in STATUSES}
        word = "PASSED" if self.passed else "NOT PASSED"
        return f"{word}: {counts[PASSED]} passed, {counts[FAILED]} failed, {counts[SKIPPED]} skipped of {len(STEPS)}"


def verdict(results: Iterable[StepResult]) -> Verdict:
    """The verdict over exactly one result per step, ordered by step; a missing or repeated step is a bug of the
    runner, not a pass."""
    ordered = sorted(results, key=lambda r: r.step)
    numbers = [r.step for r in ordered]
    if numbers != list(range(1, len(STEPS) + 1)):
        raise ValueError(f"a verdict needs one result per step 1..{len(STEPS)}; got steps {numbers}")
    return Verdict(tuple(ordered))


# ---------------------------------------------------------------------------------------------------
# The workload's events (workloads/acceptance/train.py prints them, one JSON object per line)

EVENTS: tuple[str, ...] = ("start", "data", "allreduce", "restore", "train", "checkpoint", "done", "error")


def events_from_log(text: str) -> list[dict[str, object]]:
    """The workload's events in a pod's log, in order. Other lines (a library's warnings, a traceback) are not
    events and are left out, as is a JSON line without a known `event`."""
    out: list[dict[str, object]] = []
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict) and value.get("event") in EVENTS:
            out.append(value)
    return out


# ---------------------------------------------------------------------------------------------------
# Step 3: what the all-reduce should reach

# Published nccl-tests all_reduce_perf results (busbw, GB/s = 10^9 bytes/s: NVIDIA/nccl-tests src/all_reduce.cu
# AllReduceGetBw) for two nodes of 8 GPUs over EFA, at a 2 GiB message, from AWS's own benchmark page:
# aws-samples/awsome-distributed-training micro-benchmarks/nccl-tests/README.md, "Results": 2x p4de.24xlarge,
# 2147483648 B, busbw 78.33 (out-of-place); 2x p5.48xlarge, 2147483648 B, busbw 443.72 (the same run reaches
# 487.09 at 16 GiB). No published figure was found for p4d.24xlarge, p5e, p5en, p6-b200 or the G families, so
# those are reported only. Bus bandwidth is comparable across node counts by design (nccl-tests
# doc/PERFORMANCE.md: the 2(n-1)/n correction "should be independent of the number of ranks").
PUBLISHED_ALLREDUCE_BUSBW: Mapping[str, tuple[float, int, int]] = {
    # instance type: (busbw GB/s, message bytes, nodes)
    "p4de.24xlarge": (78.33, 2**31, 2),
    "p5.48xlarge": (443.72, 2**31, 2),
}
PUBLISHED_ALLREDUCE_SOURCE = "aws-samples/awsome-distributed-training micro-benchmarks/nccl-tests/README.md"
# Our threshold, not a published one: a run within 20% of AWS's sample passes; below it the fabric (EFA devices,
# GPUDirect RDMA, the placement group) is suspect.
BUSBW_PASS_FRACTION = 0.8


@dataclass(frozen=True, slots=True)
class BusbwExpectation:
    instance_type: str
    # None: report only (`reason` says why).
    min_gb_per_s: float | None
    published_gb_per_s: float | None = None
    message_bytes: int | None = None
    reason: str | None = None

    def text(self) -> str:
        if self.min_gb_per_s is None:
            return f"report only: {self.reason}"
        return (f"busbw >= {self.min_gb_per_s:.1f} GB/s ({BUSBW_PASS_FRACTION:.0%} of {self.published_gb_per_s} GB/s, "
                f"2 x {self.instance_type} at {self.message_bytes} B, {PUBLISHED_ALLREDUCE_SOURCE})")


def busbw_expectation(pool: PoolPlan) -> BusbwExpectation:
    """What step 3's bus bandwidth must reach on `pool`: a threshold on EFA pools whose instance type has a
    published figure, otherwise report only, with the reason."""
    if not pool.efa_interfaces:
        return BusbwExpectation(pool.instance_type, None, reason=(
            f"pool {pool.name!r} has no EFA ({pool.instance_type} as this stack runs it), so the all-reduce goes over "
            "TCP, for which no figure is published"))
    published = PUBLISHED_ALLREDUCE_BUSBW.get(pool.instance_type)
    if published is None:
        return BusbwExpectation(pool.instance_type, None, reason=(
            f"no published nccl-tests all_reduce figure for {pool.instance_type} (published: "
            f"{', '.join(sorted(PUBLISHED_ALLREDUCE_BUSBW))})"))
    busbw, message, _ = published
    return BusbwExpectation(pool.instance_type, round(busbw * BUSBW_PASS_FRACTION, 2), busbw, message)


def _number(event: Mapping[str, object], key: str) -> float | None:
    value = event.get(key)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def evaluate_allreduce(events: Sequence[Mapping[str, object]], pods: int, expectation: BusbwExpectation) -> StepResult:
    """Step 3 from the pods' `allreduce` events (one per rank): every rank reduced the right sum, and the slowest
    rank's bus bandwidth meets the expectation where there is one."""
    if pods < 2:
        return StepResult.skipped(3, f"a job of {pods} pod has no all-reduce across pods: pass --nodes 2 or more")
    ranks = {e.get("rank"): e for e in events if e.get("event") == "allreduce"}
    if len(ranks) < pods:
        return StepResult.failed(3, f"an allreduce event from each of {pods} pods",
                                 f"{len(ranks)} (ranks {sorted(str(r) for r in ranks)})")
    wrong = sorted(str(r) for r, e in ranks.items() if e.get("correct") is not True)
    if wrong:
        return StepResult.failed(3, "the all-reduce's sum on every rank", f"a wrong sum on rank(s) {', '.join(wrong)}")
    busbw = min(_number(e, "busbw_gb_per_s") or 0.0 for e in ranks.values())
    algbw = min(_number(e, "algbw_gb_per_s") or 0.0 for e in ranks.values())
    first = next(iter(ranks.values()))
    figures = (Figure("busbw", busbw, "GB/s"), Figure("algbw", algbw, "GB/s"),
               Figure("message", int(_number(first, "bytes") or 0), "B"), Figure("ranks", len(ranks)),
               Figure("expected_busbw", expectation.min_gb_per_s, "GB/s"))
    if busbw <= 0:
        return StepResult.failed(3, "a bus bandwidth above 0", f"{busbw} GB/s", *figures)
    if expectation.min_gb_per_s is not None and busbw < expectation.min_gb_per_s:
        return StepResult.failed(3, expectation.text(), f"busbw {busbw:.2f} GB/s", *figures)
    return StepResult.passed(3, *figures, expected=expectation.text())


# ---------------------------------------------------------------------------------------------------
# Step 7: useful work against a baseline

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
    cost = job_cost(runs, usd_per_gpu_hour)
    total = float(cost["total_usd"] or 0.0)
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
               Figure("baseline_cost", baseline.usd, unit), Figure("total_usd", c.total_usd, "USD"),
               Figure("useful_gpu_hours", round(c.useful_gpu_hours, 4), "GPU-h"))
    if c.cluster_usd_per_unit is None:
        what = "GPU time of finished runs" if baseline.kind == GPU_HOUR else f"{baseline.unit} trained"
        return StepResult.failed(7, f"useful work to price ({what})", "none", *figures)
    expected = f"the cluster's cost below {baseline.usd:g} {unit} ({baseline.text})"
    if not c.beats:
        return StepResult.failed(7, expected, f"{round(c.cluster_usd_per_unit, 6):g} {unit}", *figures)
    return StepResult.passed(7, *figures, expected=expected)
