"""Steps 2 and 4 from the acceptance workload's events (workloads/acceptance/train.py), and where in its run the
workload stopped: a step after the phase that failed is skipped saying so, the step of that phase fails with the
workload's own message (an S3 AccessDenied, a rendezvous timeout), so a failure names the step that broke."""

from __future__ import annotations

from typing import Mapping, Sequence

from .allreduce import BusbwExpectation, evaluate_allreduce
from .results import Figure, StepResult

Event = Mapping[str, object]
# The workload's phases in the order it runs them, and the step each belongs to (its `error` event's `phase`).
PHASES: tuple[str, ...] = ("config", "data-pull", "allreduce", "restore", "train", "checkpoint")
PHASE_STEP: Mapping[str, int] = {"config": 2, "data-pull": 2, "allreduce": 3, "restore": 5, "train": 4,
                                 "checkpoint": 5}


def _number(event: Event, key: str) -> float | None:
    value = event.get(key)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def of_kind(events: Sequence[Event], kind: str) -> dict[object, Event]:
    """The last event of KIND per rank."""
    return {e.get("rank"): e for e in events if e.get("event") == kind}


def first_error(events: Sequence[Event]) -> Event | None:
    """The error of the earliest phase among the events (a rank that failed first may make another fail later)."""
    errors = [e for e in events if e.get("event") == "error"]
    if not errors:
        return None
    return min(errors, key=lambda e: PHASES.index(str(e.get("phase"))) if e.get("phase") in PHASES else len(PHASES))


def error_text(error: Event) -> str:
    return f"rank {error.get('rank')} failed in {error.get('phase')}: {error.get('message')}"


def stopped_before(step: int, events: Sequence[Event]) -> StepResult | None:
    """Skipped when the workload stopped in an earlier step's phase: nothing of this step ran."""
    error = first_error(events)
    if error is None:
        return None
    failed_step = PHASE_STEP.get(str(error.get("phase")), 2)
    if failed_step < step:
        return StepResult.skipped(step, f"the workload stopped before this step (step {failed_step}): {error_text(error)}")
    return None


def failed_here(step: int, events: Sequence[Event], expected: str) -> StepResult | None:
    """Failed, with the workload's message, when its error belongs to this step."""
    error = first_error(events)
    if error is not None and PHASE_STEP.get(str(error.get("phase")), 2) == step:
        return StepResult.failed(step, expected, error_text(error))
    return None


def _every_rank(step: int, expected: str, by_rank: dict[object, Event], kind: str, pods: int, field: str,
               none_says: str) -> StepResult | None:
    """Step STEP failed unless every one of PODS ranks sent its KIND event with a positive FIELD (what it failed
    on, said as the step's other checks say it), else None."""
    if len(by_rank) < pods:
        return StepResult.failed(step, expected,
                                 f"a {kind} event from {len(by_rank)} pod(s) (ranks {sorted(map(str, by_rank))})")
    missing = sorted(str(r) for r, e in by_rank.items() if not (_number(e, field) or 0) > 0)
    if missing:
        return StepResult.failed(step, expected, f"{none_says} on rank(s) {', '.join(missing)}")
    return None


def evaluate_data_pull(events: Sequence[Event], pods: int) -> StepResult:
    """Step 2 from the first attempt's events: a `data` event from every rank with bytes read."""
    expected = f"a dataset sample and the base weights read from the team's data path by each of {pods} pods"
    if (failed := failed_here(2, events, expected)) is not None:
        return failed
    data = of_kind(events, "data")
    if (short := _every_rank(2, expected, data, "data", pods, "bytes", "no bytes read")) is not None:
        return short
    total = int(sum(_number(e, "bytes") or 0 for e in data.values()))
    slowest = max(data.values(), key=lambda e: _number(e, "seconds") or 0.0)
    seconds = _number(slowest, "seconds") or 0.0
    rate = (_number(slowest, "bytes") or 0) / seconds / 1e6 if seconds > 0 else None
    return StepResult.passed(2, Figure("bytes", total, "B"), Figure("seconds", round(seconds, 4), "s"),
                             Figure("throughput", None if rate is None else round(rate, 2), "MB/s"),
                             expected=expected)


def evaluate_allreduce_run(events: Sequence[Event], pods: int, expectation: BusbwExpectation) -> StepResult:
    """Step 3 from the first attempt's events, naming the workload's own error when its all-reduce failed."""
    if pods < 2:
        return evaluate_allreduce(events, pods, expectation)
    if (skipped := stopped_before(3, events)) is not None:
        return skipped
    expected = f"an all-reduce across the {pods} pods"
    if (failed := failed_here(3, events, expected)) is not None:
        return failed
    return evaluate_allreduce(events, pods, expectation)


def evaluate_training(events: Sequence[Event], pods: int, window_s: float) -> StepResult:
    """Step 4 from the events of the attempt that finished: a `done` event from every rank, steps trained, the
    window (training time, counted across a restart) run to its end."""
    if (skipped := stopped_before(4, events)) is not None:
        return skipped
    expected = f"training on each of {pods} pods for the {window_s:g} s window"
    if (failed := failed_here(4, events, expected)) is not None:
        return failed
    done = of_kind(events, "done")
    if (short := _every_rank(4, expected, done, "done", pods, "steps", "no step trained")) is not None:
        return short
    # Every rank stops at the same step, once the window is over for any of them (workloads/acceptance/train.py: the
    # ranks all-reduce "over" with MAX), each timing its own: the ranks' figures differ by their start (a live run:
    # 60.001 and 59.996 s of a 60 s window), and the window ran to its end when the longest says so.
    trained = max(_number(e, "trained_s") or _number(e, "seconds") or 0.0 for e in done.values())
    last = max(int(_number(e, "last_step") or 0) for e in done.values())
    step_time = max(_number(e, "step_time_s") or 0.0 for e in done.values())
    throughput = sum(_number(e, "tokens_per_s") or 0.0 for e in done.values())
    tokens = int(sum(_number(e, "tokens") or 0 for e in done.values()))
    samples = int(sum(_number(e, "samples") or 0 for e in done.values()))
    figures = (Figure("steps", last), Figure("step_time", round(step_time, 6), "s"),
               Figure("throughput", round(throughput, 1), "tokens/s"), Figure("tokens", tokens),
               Figure("samples", samples))
    if trained + 1e-6 < window_s:
        return StepResult.failed(4, expected, f"the window ended after {trained:.1f} s of training", *figures)
    return StepResult.passed(4, *figures, expected=expected)
