"""A step's result (passed, failed with what was expected and what was seen, or skipped with why), its figures,
and the verdict over all seven with the command's exit code."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from .steps import STEPS, Step

PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"
STATUSES: tuple[str, ...] = (PASSED, FAILED, SKIPPED)
# The command's exit code: 0 when every step passed, 1 when any failed or was skipped (the CLI's EXIT_VIOLATIONS);
# bad input is 2 before anything is submitted.
EXIT_PASSED, EXIT_NOT_PASSED = 0, 1


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
