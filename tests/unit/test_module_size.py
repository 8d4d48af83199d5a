"""Modules along their seams: no module of the split packages is over 450 lines (issue 43's done-when), so a
module a newcomer opens holds one concern. The packages listed are the ones already split; the rest of
gpu_platform/, components/ and localcluster/ join the list as their own splits land."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import ROOT

MAX_LINES = 450
SPLIT = ("simulator", "policies", "gpu_platform/spec", "gpu_platform/conventions")
MODULES = sorted(p for package in SPLIT for p in (ROOT / package).rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_module_is_over_450_lines(path: Path) -> None:
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_LINES, f"{path.relative_to(ROOT)} has {lines} lines: split it along its seams"


def test_the_split_packages_are_all_there() -> None:
    """A package renamed or moved would leave the check above with nothing to hold."""
    assert [p for p in SPLIT if not (ROOT / p / "__init__.py").is_file()] == []
