"""Mutants no test can kill, each with the reason: bench.mutation reports them as EQUIVALENT and leaves them
out of the figure instead of running them.

A mutant is named by its file and its description without the line (which moves with every edit above it). An entry belongs here only when the change is invisible to a user of the platform:
the same objects rendered, the same specs accepted and refused with the same messages.
"""

from __future__ import annotations

from bench.mutants import Mutant

# (file, Mutant.describe() after "file:line ") -> why
EQUIVALENT: dict[tuple[str, str], str] = {
    ("policies/gpu_policies/objects/kinds.py", "off by one: 1024  ->  1023"):
        "the size of an lru_cache: the same answers, one entry fewer kept",
    ("gpu_platform/plan/builders.py", "return None: return ()  ->  return None"):
        "the cluster's access entries when it is not on EKS: read only by ClusterIdentity, which exists on eks "
        "stacks only (components/platform.py), so nothing iterates them",
}


def equivalent_reason(m: Mutant) -> str:
    return EQUIVALENT.get((m.file, m.describe().split(" ", 1)[1]), "")
