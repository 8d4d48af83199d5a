"""The engine benchmark's synthetic stack must deploy onto a local cluster with nothing to download: every
add-on that is a Helm chart is off (bench/engine.py's module docstring), whichever pools the stack has."""

from __future__ import annotations

from bench.engine import NO_ADDONS, STACK
from bench.synth import stack_config
from components.program import run
from harness.render import run_program


def test_the_benchmark_stack_installs_no_chart_but_keeps_the_efa_pools() -> None:
    config = stack_config(2, addons=NO_ADDONS)
    assert any(p["fabric"] == "efa" for p in config["gpu-platform:platform"]["pools"])
    rendered = run_program(run, STACK, config)
    charts = sorted({r.type for r in rendered.custom if r.type.startswith("kubernetes:helm.sh/")})
    assert charts == [], charts
    assert rendered.kubernetes_objects(), "the teams' objects are still there"
