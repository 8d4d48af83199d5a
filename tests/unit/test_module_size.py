"""Modules along their seams: no module of the platform's packages is over 450 lines (issue 43's done-when), so a
module a newcomer opens holds one concern. Every module of the packages below counts, the ones added later too."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import ROOT

MAX_LINES = 450
PACKAGES = ("gpu_platform", "components", "policies", "localcluster", "simulator")
MODULES = sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_module_is_over_450_lines(path: Path) -> None:
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_LINES, f"{path.relative_to(ROOT)} has {lines} lines: split it along its seams"


def test_the_packages_are_all_there() -> None:
    """A package renamed or moved would leave the check above with nothing to hold."""
    assert [p for p in PACKAGES if not (ROOT / p / "__init__.py").is_file()] == []

