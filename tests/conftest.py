"""Shared fixtures: stack specs, plans and renders (cached per session: each is pure and immutable)."""

from __future__ import annotations

import copy
import functools
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from localcluster.toolcache import BIN

ROOT = Path(__file__).resolve().parent.parent
STACKS = ("local", "staging", "prod")
TOOL_BIN = BIN


def tool(name: str) -> Path | None:
    """A tool from the cache (scripts/toolchain) or, failing that, from PATH."""
    cached = TOOL_BIN / name
    if cached.is_file() and os.access(cached, os.X_OK):
        return cached
    found = shutil.which(name)
    return Path(found) if found else None


def require_tools(*names: str) -> list[Path]:
    """The one rule for every layer: a missing real tool fails the test under CI (CI set), where a skip
    would pass a run that tested nothing, and skips elsewhere with the command that builds it."""
    found = {n: tool(n) for n in names}
    missing = [n for n, p in found.items() if p is None]
    if missing:
        message = f"missing {', '.join(missing)} (tool cache {TOOL_BIN} or PATH): run scripts/toolchain {' '.join(missing)}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return [found[n] for n in names]  # type: ignore[misc]


# Stack files that exist for tests only (not deployed, so not Pulumi.<stack>.yaml at the root).
FIXTURE_STACKS = ROOT / "tests" / "fixtures" / "stacks"
KARPENTER_STACK = "staging-karpenter"


def stack_file(stack: str) -> Path:
    fixture = FIXTURE_STACKS / f"Pulumi.{stack}.yaml"
    return fixture if fixture.is_file() else ROOT / f"Pulumi.{stack}.yaml"


@functools.cache
def stack_doc(stack: str) -> dict[str, Any]:
    return yaml.safe_load(stack_file(stack).read_text())


def platform_raw(stack: str) -> dict[str, Any]:
    """A fresh, mutable copy of a stack's `gpu-platform:platform` value."""
    return copy.deepcopy(stack_doc(stack)["config"]["gpu-platform:platform"])


@functools.cache
def plan_of(stack: str):
    from gpu_platform.plan import build_plan
    from gpu_platform.spec import load_stack_config

    spec, region = load_stack_config(stack_doc(stack))
    return build_plan(spec, region)


@functools.cache
def rendered(stack: str):
    """The real program run under mocks for a stack: harness.render.Rendered."""
    from components.program import run
    from harness.render import run_program

    return run_program(run, stack, copy.deepcopy(stack_doc(stack)["config"]))


def render_config(config: dict[str, Any], stack: str = "test"):
    from components.program import run
    from harness.render import run_program

    return run_program(run, stack, config)


@pytest.fixture(params=STACKS)
def stack(request) -> str:
    return request.param


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Timings of the real tools (engine, clusters, Kueue), for the README and closing notes."""
    import sys

    realtools = sys.modules.get("tests.realtools")
    timings = getattr(realtools, "TIMINGS", None)
    if timings:
        terminalreporter.write_sep("-", "real engine, cluster and Kueue timings (seconds)")
        for label, seconds in timings.items():
            terminalreporter.write_line(f"{label:<48} {seconds:>8.1f}")
