"""Step 5: a checkpoint written to the data path, one pod deleted after it, the whole job brought back by the
platform (the JobSet's failure policy recreates the gang), and training resumed from the checkpoint's step.

The runner (platform_cli/acceptance_run.py) deletes the pod and times the recovery; what it saw is a Recovery,
and the verdict is here, tested with literal figures."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from .results import Figure, StepResult
from .workload import Event, error_text, first_error, of_kind


@dataclass(frozen=True, slots=True)
class Recovery:
    """What the runner saw around the deletion."""

    # rank 0's checkpoint events of the first attempt, in order (`ok` false: the write failed)
    checkpoints: tuple[Event, ...]
    # the pod deleted, or None when the runner did not delete one (`why_not` says why)
    deleted_pod: str | None
    # deletion to every pod of the next attempt Running; None: not recovered
    recovery_s: float | None
    # the events of the attempt after the deletion
    resumed: tuple[Event, ...] = ()
    why_not: str | None = None


def _number(event: Event, key: str) -> float | None:
    value = event.get(key)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def evaluate_recovery(r: Recovery, pods: int) -> StepResult:
    expected_ckpt = "a checkpoint written to the data path before the pod is deleted"
    written = [c for c in r.checkpoints if c.get("ok") is True]
    failed = [c for c in r.checkpoints if c.get("ok") is False]
    if not written:
        if failed:
            c = failed[0]
            return StepResult.failed(5, expected_ckpt, f"rank 0 could not write its checkpoint of step {c.get('step')} "
                                                       f"to {c.get('key')}: {c.get('message')}")
        return StepResult.failed(5, expected_ckpt, r.why_not or "no checkpoint event")
    last = written[-1]
    figures = [Figure("checkpoint_write", _number(last, "seconds"), "s"),
               Figure("checkpoint_step", int(_number(last, "step") or 0))]
    if r.deleted_pod is None:
        return StepResult.failed(5, "a pod deleted after the checkpoint", r.why_not or "no pod deleted", *figures)
    figures.append(Figure("recovery", None if r.recovery_s is None else round(r.recovery_s, 1), "s"))
    if r.recovery_s is None:
        return StepResult.failed(5, f"the job running again on {pods} pods after {r.deleted_pod} was deleted",
                                 r.why_not or "not recovered", *figures)
    restores = of_kind(r.resumed, "restore")
    error = first_error(r.resumed)
    if len(restores) < pods:
        seen = error_text(error) if error is not None else f"a restore event from {len(restores)} pod(s)"
        return StepResult.failed(5, f"a restore event from each of {pods} pods of the recovered job", seen, *figures)
    steps = {int(_number(e, "step") or 0) for e in restores.values()}
    resumed = min(steps)
    restore_s = max(_number(e, "seconds") or 0.0 for e in restores.values())
    figures += [Figure("restore", round(restore_s, 4), "s"), Figure("resumed_step", resumed)]
    checkpoint_step = int(_number(last, "step") or 0)
    expected = f"training resumed from the checkpoint's step ({checkpoint_step} or a later checkpoint), not from zero"
    if resumed < checkpoint_step or len(steps) > 1:
        return StepResult.failed(5, expected, f"restored step(s) {sorted(steps)}", *figures)
    return StepResult.passed(5, *figures, expected=expected)


def resumed_steps(events: Sequence[Event]) -> list[int]:
    """The steps the ranks' `restore` events resumed from (0: from the base weights)."""
    return sorted(int(_number(e, "step") or 0) for e in of_kind(events, "restore").values())
