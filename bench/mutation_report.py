"""bench.mutation's markdown report: the figure, then every survivor and equivalent mutant at its file:line."""

from __future__ import annotations

import re
from collections import Counter
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:
    from bench.mutation import Result


# Killed at the first call, before any assertion: a required argument dropped. Real, but no test had to look.
STILLBORN = re.compile(r"TypeError: .*(missing \d+ required|got an unexpected keyword)")


def stillborn(r: Result) -> bool:
    return r.status == "KILLED" and bool(STILLBORN.search(r.by))


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _row(r: Result) -> str:
    where, _, what = r.mutant.partition(" ")
    return f"| `{where}` | {_cell(what)} | {_cell(r.by or '')} |"


def markdown(command: str, seed: int, commit: str, results: Sequence[Result],
             load_before: tuple[float, float, float], load_after: tuple[float, float, float], seconds: float) -> str:
    counted = [r for r in results if r.status != "EQUIVALENT"]
    caught = [r for r in counted if r.status in ("KILLED", "TIMEOUT")]
    survived = [r for r in counted if r.status == "SURVIVED"]
    equivalent = [r for r in results if r.status == "EQUIVALENT"]
    timeouts = sum(r.status == "TIMEOUT" for r in results)
    born = [r for r in counted if not stillborn(r)]
    caught_born = [r for r in born if r.status in ("KILLED", "TIMEOUT")]
    kinds = Counter(r.kind for r in counted)
    kinds_survived = Counter(r.kind for r in survived)
    lines = [
        "# Mutation run", "",
        f"- command: `{command}`",
        f"- seed {seed}, commit {commit}, {len(results)} mutants drawn",
        f"- killed {len(caught)} of {len(counted)} ({100 * len(caught) / max(len(counted), 1):.1f}%; "
        f"{timeouts} of them by timeout), {len(survived)} survived, {len(equivalent)} equivalent (not counted)",
        *([f"- without the {len(counted) - len(born)} stillborn ones (a TypeError at the first call: a required "
           f"argument dropped): killed {len(caught_born)} of {len(born)} "
           f"({100 * len(caught_born) / max(len(born), 1):.1f}%)"] if len(born) < len(counted) else []),
        "- by kind (survived/drawn): " + ", ".join(f"{k} {kinds_survived[k]}/{n}" for k, n in kinds.most_common()),
        f"- load average (1, 5, 15 min) {', '.join(f'{x:.1f}' for x in load_before)} at the start, "
        f"{', '.join(f'{x:.1f}' for x in load_after)} at the end; {seconds / 60:.0f} min", "",
        "## Survivors", "",
        "| where | mutation | note |", "| --- | --- | --- |",
        *(_row(r) for r in survived), "",
        "## Equivalent (not counted)", "",
        "| where | mutation | why no test can see it |", "| --- | --- | --- |",
        *(_row(r) for r in equivalent), "",
    ]
    return "\n".join(lines)
