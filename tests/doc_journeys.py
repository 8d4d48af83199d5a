"""The user journeys the docs walk through, as the shell blocks a reader copies: read from the pages, run by
tests/live/test_doc_journeys.py against a live local cluster, counted by tests/unit/docs/test_doc_journeys.py.

A page marks a block to run with an HTML comment (invisible on GitHub) on the line before its fence:

    <!-- journey: NAME -->           the block runs once and must exit 0
    <!-- journey: NAME, retry -->    the block shows state that takes a moment to arrive (Kueue admitting, a
                                     node added or removed): it is run again until it exits 0 and shows its
                                     expected output, as a reader would run it again

The blocks of a journey run in page order in one shell session: a variable one block sets (`ALICE`, `WL`) is
there in the next. EXPECTED says what each block must print, in order; a fragment starting with `!` must not
appear. The count of EXPECTED's entries is the number of marked blocks each page must have, so a marker that
goes missing (or a block added without its expectations) fails the unit test, not silently the journey.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import ROOT

MARKER = re.compile(r"^<!-- journey: ([a-z][a-z-]*)(, retry)? -->\s*$")
# Every page a journey may be on: the README and the docs, task pages included.
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "docs" / "tasks").glob("*.md"))]
# Journey -> its page. They run in this order against one cluster, its teams' work deleted in between: the
# README's `make up` starts and deploys it, why-wait (which starts from a running platform) uses it, and
# try-locally, whose `make up` finds it running and whose clean-up's `make down` destroys and stops it, comes last.
JOURNEYS = {
    "readme": ROOT / "README.md",
    "why-wait": ROOT / "docs" / "tasks" / "why-does-my-job-wait.md",
    "try-locally": ROOT / "docs" / "tasks" / "try-locally.md",
}
# `make up` ends with Pulumi's summary of the update: "Resources:", then what it created (the README's, on a new
# cluster) or that everything is unchanged (try-locally's, on the running one); `make down` with the destroy's
# ("- N deleted": Pulumi's closing line says "deleted" after any destroy, so the count's line is what is read).
DEPLOYED = ["Resources:", " created\n", "!error:"]
REDEPLOYED = ["Resources:", " unchanged\n", "!created", "!error:"]
# What each block prints (stdout and stderr together), block by block.
EXPECTED: dict[str, list[list[str]]] = {
    "readme": [
        DEPLOYED,
        ["job.batch/first created"],
        ["job-first-", "vision", "True", "Running", "train-"],
    ],
    "try-locally": [
        REDEPLOYED,
        ["job.batch/first created"],
        ["job-first-", "vision", "True", "Running", "train-"],
        ["cpu-0", "train-0", "train-1", "infer-0", "!notebooks"],
        ["job.batch/nb created"],
        ["notebooks-", "Ready"],
        ["No resources found"],
        ["Resources:", " deleted\n", "!error:"],
    ],
    "why-wait": [
        ["job.batch/big-1 created", "job.batch/big-2 created", "job.batch/big-3 created", "job.batch/big-4 created"],
        ["job-big-1-", "job-big-2-", "job-big-3-", "job-big-4-"],
        ["workload.kueue.x-k8s.io/job-big-4-"],
        ["couldn't assign flavors to pod set main", "insufficient unused quota for nvidia.com/gpu in flavor train"],
        ["pending 1, admitted 3"],
        ["big-1-", "Events:"],
        ['job.batch "big-1" deleted', 'job.batch "big-4" deleted'],
    ],
}


# Every variable a block sets is exported (`set -a`) and saved after it (`export -p` into $JOURNEY_STATE), so the
# next block's shell has it, as in the one terminal a reader uses; `set -eo pipefail`: a failing command, or the
# job printer before a pipe, fails the block, and a failed block saves nothing.
PRELUDE = 'set -a\n[ ! -s "$JOURNEY_STATE" ] || . "$JOURNEY_STATE"\nset -eo pipefail\n'
EPILOGUE = '\nexport -p > "$JOURNEY_STATE"\n'


def script(code: str) -> str:
    """What `bash -c` runs for a block: its code between the state's restore and save."""
    return PRELUDE + code + EPILOGUE


class MarkerError(ValueError):
    """A journey marker that is not followed by a shell block."""


def shown(page: Path) -> str:
    """A page as its messages name it: relative to the repository when it is in it."""
    return str(page.relative_to(ROOT)) if page.is_relative_to(ROOT) else str(page)


@dataclass(frozen=True)
class Block:
    journey: str
    page: Path
    line: int  # 1-based line of the block's first line
    code: str
    retry: bool

    @property
    def where(self) -> str:
        return f"{shown(self.page)}:{self.line}"

    @property
    def make_targets(self) -> list[str]:
        """The make targets the block runs (`make up`, `make down`): they build, start or stop a cluster."""
        return [words[1] for words in (line.split() for line in self.code.splitlines())
                if len(words) > 1 and words[0] == "make"]

    @property
    def runs_make(self) -> bool:
        return bool(self.make_targets)


def blocks(page: Path, text: str | None = None) -> list[Block]:
    """The marked blocks of a page (or of TEXT, read as that page), in order. A marker must be followed (blank
    lines allowed) by a ```sh fence."""
    lines = (page.read_text() if text is None else text).splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        m = MARKER.match(lines[i])
        i += 1
        if not m:
            continue
        while i < len(lines) and not lines[i].strip():
            i += 1
        if i >= len(lines) or lines[i].strip() != "```sh":
            raise MarkerError(f"{shown(page)}:{i + 1}: `<!-- journey: {m.group(1)} -->` is not followed by a ```sh block")
        start = i + 1
        end = next((j for j in range(start, len(lines)) if lines[j].strip() == "```"), None)
        if end is None:
            raise MarkerError(f"{shown(page)}:{start + 1}: the journey's ```sh block is never closed")
        found.append(Block(m.group(1), page, start + 1, "\n".join(lines[start:end]) + "\n", bool(m.group(2))))
        i = end + 1
    return found


def journey(name: str) -> list[Block]:
    """The blocks of one journey, from its page."""
    return [b for b in blocks(JOURNEYS[name]) if b.journey == name]


def missing_or_forbidden(output: str, expected: list[str]) -> list[str]:
    """The expected fragments the output lacks, and the `!` ones it has."""
    return [f for f in expected if (f[1:] in output if f.startswith("!") else f not in output)]
