"""The engine benchmark's synthetic stack must deploy onto a local cluster with nothing to download: every
add-on that is a Helm chart is off (bench/engine.py's module docstring), whichever pools the stack has."""

from __future__ import annotations

from typing import Any

from bench.engine import NO_ADDONS, STACK
from bench.synth import stack_config
from tests.conftest import background_render


@background_render()
def benchmark_stack() -> tuple[str, dict[str, Any]]:
    return STACK, stack_config(2, addons=NO_ADDONS)


def test_the_benchmark_stack_installs_no_chart_but_keeps_the_efa_pools() -> None:
    _, config = benchmark_stack.config()
    assert any(p["fabric"] == "efa" for p in config["gpu-platform:platform"]["pools"])
    rendered = benchmark_stack()
    charts = sorted({r.type for r in rendered.custom if r.type.startswith("kubernetes:helm.sh/")})
    assert charts == [], charts
    assert rendered.kubernetes_objects(), "the teams' objects are still there"
