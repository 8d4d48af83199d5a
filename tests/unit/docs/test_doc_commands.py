"""Every `make` target and `scripts/local-cluster` subcommand the docs tell a reader to run exists (world: the
Makefile, the script and the pages on disk).

The CLI's commands and flags are held to its parsers by test_cli_doc.py; these are the other commands a page
hands out, read from code spans and shell blocks (prose "make the team buckets" is not a command).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from localcluster.cli import COMMANDS
from tests.conftest import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "docs" / "tasks").glob("*.md"))]


def commands(page: Path) -> list[str]:
    """The command lines of a page: each line of a code block, and each inline code span."""
    text = page.read_text()
    lines = [line for block in re.findall(r"(?ms)^```[a-z]*\n(.*?)^```", text) for line in block.splitlines()]
    spans = re.findall(r"`([^`\n]+)`", re.sub(r"(?ms)^```.*?^```", "", text))
    return [re.sub(r"^\$\s+", "", x.strip()) for x in lines + spans]


def make_targets_named(page: Path) -> set[str]:
    """`make up`, `make validate plan STACK=prod`: the targets (not the variables, not the comment)."""
    found: set[str] = set()
    for line in commands(page):
        for m in re.finditer(r"(?:^|[;&|(]\s*)make((?:\s+[a-z][a-z0-9-]*)+)", line.split(" #")[0]):
            found |= set(m.group(1).split())
    return found


def makefile_targets() -> set[str]:
    return set(re.findall(r"(?m)^([a-z][a-z0-9-]*)\s*:", (ROOT / "Makefile").read_text()))


def local_cluster_subcommands() -> set[str]:
    """The commands scripts/local-cluster's driver dispatches (localcluster/cli.py), and its help."""
    return set(COMMANDS) | {"help"}


def test_the_readers_find_targets_and_subcommands() -> None:
    assert {"up", "validate", "plan", "check"} <= makefile_targets()
    assert {"start", "stop", "status", "user", "kubeconfig", "logs", "reset"} <= local_cluster_subcommands()


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_make_target_a_page_names_exists(page: Path) -> None:
    assert sorted(make_targets_named(page) - makefile_targets()) == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_local_cluster_subcommand_a_page_names_exists(page: Path) -> None:
    named = {m for line in commands(page) for m in re.findall(r"scripts/local-cluster\s+([a-z][a-z-]*)", line)}
    # `scripts/local-cluster worker ...`: the worker cluster's prefix (docs/queues.md), then its subcommand.
    assert sorted(named - local_cluster_subcommands() - {"worker"}) == []


def test_the_pages_name_make_targets_at_all() -> None:
    named = set().union(*(make_targets_named(p) for p in PAGES))
    assert {"up", "down", "venv", "test", "test-unit", "preview", "config-reference"} <= named


def local_cluster_settings_read() -> set[str]:
    """Every LOCAL_CLUSTER_* variable the driver reads: the names its modules spell as string literals."""
    return {m for f in (ROOT / "localcluster").rglob("*.py")
            for m in re.findall(r"[\"'](LOCAL_CLUSTER_[A-Z0-9_]+)[\"']", f.read_text())}


def test_every_local_cluster_setting_a_page_names_is_one_the_driver_has() -> None:
    """A page that names a LOCAL_CLUSTER_* variable the driver does not read (renamed, gone) sends a reader to set
    something that changes nothing. The ones `scripts/local-cluster env` exports count too."""
    named = {m for page in PAGES for m in re.findall(r"LOCAL_CLUSTER_[A-Z0-9_]*[A-Z0-9]", page.read_text())}
    exported = set(re.findall(r"export (LOCAL_CLUSTER_[A-Z0-9_]+)=", (ROOT / "localcluster" / "cli.py").read_text()))
    known = local_cluster_settings_read() | exported
    assert exported == {"LOCAL_CLUSTER_SERVER", "LOCAL_CLUSTER_DIR", "LOCAL_CLUSTER_AUDIT_LOG"}
    assert "LOCAL_CLUSTER_REAL_NODE" in named and sorted(named - known) == []


def test_local_cluster_help_names_every_setting_the_driver_reads() -> None:
    from localcluster import cli

    assert sorted(v for v in local_cluster_settings_read() if not re.search(rf"\b{v}\b", cli.__doc__ or "")) == []
