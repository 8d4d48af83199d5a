"""Mutants no test can kill, each with the reason: bench.mutation reports them as EQUIVALENT and leaves them
out of the figure instead of running them.

A mutant is named by its file, its description without the line number (which moves with every edit above it)
and the text of its line (two `0 -> 1` in one file are told apart by it). An entry belongs here only when the change is invisible to a user of the platform:
the same objects rendered, the same specs accepted and refused with the same messages.
"""

from __future__ import annotations

from bench.mutants import Mutant

# (file, Mutant.describe() after "file:line ", the line's text stripped) -> why
EQUIVALENT: dict[tuple[str, str, str], str] = {
    ("policies/gpu_policies/objects/kinds.py", "off by one: 1024  ->  1023", "@functools.lru_cache(maxsize=1024)"):
        "the size of an lru_cache: the same answers, one entry fewer kept",
    ("gpu_platform/plan/builders.py", "return None: return ()  ->  return None", "return ()"):
        "the cluster's access entries when it is not on EKS: read only by ClusterIdentity, which exists on eks "
        "stacks only (components/platform.py), so nothing iterates them",
    ("gpu_platform/spec/data.py", "off by one: 0  ->  1",
     "return gib in LUSTRE_SMALL_SIZES_GIB or (gib > 0 and gib % LUSTRE_SIZE_INCREMENT_GIB == 0)"):
        "`gib > 1` for `gib > 0` before `gib % 2400 == 0`: the one size they differ on, 1 GiB, is no multiple of "
        "2400 either way",
}


def equivalent_reason(m: Mutant, source: str) -> str:
    """Why m is equivalent, or "" (source: m's file before the mutation)."""
    line = source.splitlines()[m.line - 1].strip()
    return EQUIVALENT.get((m.file, m.describe().split(" ", 1)[1], line), "")
