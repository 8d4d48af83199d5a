"""User pages speak to the user's machine; the development machine's figures live in docs/performance.md and
docs/testing.md (world: the pages on disk).

66 lines of the user docs once talked about the machine the project is developed on (2 cores, load averages,
the Go module proxy's 403 transcripts), and three pages gave three different first-build times (40, 45 and 68+
minutes). A user page may say what a build costs on a given number of cores, not what happened on our machine.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import ROOT

DOCS = ROOT / "docs"
# Where measurements and the development machine belong, and the design record.
MEASUREMENT_PAGES = {"performance.md", "testing.md", "architecture.md"}
USER_PAGES = [ROOT / "README.md", *[p for p in sorted(DOCS.glob("*.md")) if p.name not in MEASUREMENT_PAGES],
              *sorted((DOCS / "tasks").glob("*.md"))]
ABOUT_OUR_MACHINE = re.compile(
    r"load average|2-core machine|this (?:2-core )?machine|these machines|measured here|403 Forbidden|"
    r"shared with other work|other clusters (?:running|shared)|\bchecked here\b", re.IGNORECASE)


def about_our_machine(page: Path) -> list[str]:
    text = page.read_text()
    return [text[max(0, m.start() - 40):m.end() + 40].replace("\n", " ") for m in ABOUT_OUR_MACHINE.finditer(text)]


@pytest.mark.parametrize("page", USER_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_user_page_does_not_talk_about_the_development_machine(page: Path) -> None:
    assert about_our_machine(page) == [], f"move these to docs/performance.md ('The development machine')"


def test_the_pattern_finds_what_the_pages_used_to_say(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("Measured on the 2-core machine (other clusters running beside it), load average 34;\n"
                    "403 Forbidden, checked on this machine. A cold build takes 45 to 60 minutes on 2 cores.\n")
    assert len(about_our_machine(page)) == 5


def test_every_page_quotes_one_first_build_time_and_performance_has_the_measurement() -> None:
    quoted = {(p.name, m) for p in USER_PAGES
              for m in re.findall(r"(\d+ to \d+) min(?:utes)? on 2\s+cores", p.read_text())}
    assert {m for _, m in quoted} == {"60 to 76"}
    assert {name for name, _ in quoted} >= {"README.md", "try-locally.md", "toolchain.md", "pr-preview-in-ci.md"}
    measured = re.search(r"A cold `make up` of the local stack, on a fresh clone, with nothing else running\*\*"
                         r" \([^)]*\): (\d+) min", " ".join((DOCS / "performance.md").read_text().split()))
    assert measured and 60 <= int(measured.group(1)) <= 76
