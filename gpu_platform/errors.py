"""The errors every layer raises for bad input, so that no layer imports one from above to catch it.

`SpecError` is a config that breaks the contract (every problem with its config path); `InputError` is bad
input that is not a spec problem (a missing file, unreadable YAML or JSON, an impossible job request).
Entry points print both without a traceback and exit 2.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with a config, at its path (`teams[2].quotas.h100-train.units`)."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class SpecError(Exception):
    """Every problem found in a config, each with its path. Raised instead of a partial result."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


class InputError(Exception):
    """Bad input that is not a spec problem: a missing file, unreadable YAML."""
