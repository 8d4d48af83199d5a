"""The README and docs/ pages link each other by file and heading: a moved page or a renamed heading
leaves a link that leads nowhere, which is what a newcomer meets first."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "docs" / "tasks").glob("*.md"))]
LINK = re.compile(r"(?<!!)\[[^\]]+\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    return {slug(m.group(1)) for m in re.finditer(r"(?m)^#{1,6} (.+)$", page.read_text())}


def links(page: Path) -> list[str]:
    out, fence = [], False
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            fence = not fence
        elif not fence:
            out += [t for t in LINK.findall(line) if not t.startswith(("http://", "https://", "mailto:"))]
    return out


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_leads_to_a_file_and_heading(page: Path) -> None:
    broken = []
    for target in links(page):
        path, _, fragment = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif fragment and dest.suffix == ".md" and fragment not in anchors(dest):
            broken.append(f"{target}: no heading #{fragment} in {dest.name}")
    assert broken == []


def test_the_readme_links_every_docs_page() -> None:
    readme = (ROOT / "README.md").read_text()
    unlinked = [str(p.relative_to(ROOT)) for p in PAGES[1:] if str(p.relative_to(ROOT)) not in readme]
    assert unlinked == [], "docs pages a newcomer cannot reach from the README"
