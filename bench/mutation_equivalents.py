"""Mutants no test can kill, each with the reason: bench.mutation reports them as EQUIVALENT and leaves them
out of the figure instead of running them.

A mutant is named by its file and its description without the line (which moves with every edit above it). An entry belongs here only when the change is invisible to a user of the platform:
the same objects rendered, the same specs accepted and refused with the same messages.
"""

from __future__ import annotations

from bench.mutants import Mutant

# (file, Mutant.describe() after "file:line ") -> why
EQUIVALENT: dict[tuple[str, str], str] = {
}


def equivalent_reason(m: Mutant) -> str:
    return EQUIVALENT.get((m.file, m.describe().split(" ", 1)[1]), "")
