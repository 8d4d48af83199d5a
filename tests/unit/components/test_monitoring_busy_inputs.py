"""What busy GPU time is measured from, in the rules and dashboards the stack deploys: the held GPUs behind the
runs' GPU-hours need no profiling field, the team idle alert makes way for the missing input, and the fleet
dashboard's framebuffer-by-team panel reads the devices' own memory (under virtual GPUs a pod's per-process
framebuffer reads 0: dcgm-exporter 4.8.3 without the host's PID namespace). The series semantics are promtool's
(tests/promtool/busy_inputs.test.yaml); here, that the deployed objects are the ones promtool evaluates."""

from __future__ import annotations

from pathlib import Path


from components import alerts, dashboards
from tests.conftest import ROOT, load_yaml, plan_of

PROMTOOL_CASES = ROOT / "tests" / "promtool" / "busy_inputs.test.yaml"


def _promtool_exprs(path: Path) -> set[str]:
    doc = load_yaml(path.read_text())
    return {case["expr"] for group in doc["tests"] for case in group.get("promql_expr_test", [])}


def test_the_framebuffer_by_team_panel_is_the_expression_promtool_checks() -> None:
    fleet = next(d for d in dashboards.dashboards(plan_of("prod")) if d.uid == "gpu-platform-fleet")
    panel = next(p for p in fleet.panels if p.title == "Framebuffer memory used by team")
    assert [t.expr for t in panel.targets] == [
        'sum by (team) (max by (node, UUID, GPU_I_ID, team) (gpu_platform:held_device:info * on (namespace) '
        'group_left (team) gpu_platform:namespace_team:info{team=~"$team"}) * on (node, UUID, GPU_I_ID) '
        'group_left () max by (node, UUID, GPU_I_ID) (DCGM_FI_DEV_FB_USED))']
    assert dashboards.framebuffer_by_team() in _promtool_exprs(PROMTOOL_CASES)


def test_the_runs_gpus_are_read_from_the_framebuffer_or_the_busy_field() -> None:
    rules = {r.record: r.expr for g in alerts.groups(plan_of("prod")) for r in g.rules if isinstance(r, alerts.Record)}
    assert rules[alerts.HELD_DEVICE] == (
        "max by (node, pool, UUID, GPU_I_ID, vgpu, namespace, pod) ((DCGM_FI_DEV_FB_USED or "
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE) * on (node) group_left (pool) gpu_platform:node_pool:info) * 0 + 1")
    assert rules[alerts.POD_ALLOCATED_GPUS].startswith(f"sum by (team, pool, namespace, pod) ({alerts.HELD_DEVICE} ")


def test_the_team_idle_alert_is_silent_where_busy_is_not_measured_and_two_alerts_say_why() -> None:
    by_name = {a.alert: a for a in alerts.alerts(plan_of("prod"))}
    assert by_name["GpuTeamAllocatedIdle"].expr.endswith(
        "unless on (pool) gpu_platform:node_busy_unmeasured:info unless on () absent(gpu_platform:node_pool:info)")
    assert by_name["GpuProfilingMetricsMissing"].expr == "gpu_platform:node_busy_unmeasured:info"
    assert "--metric-labels-allowlist=nodes=[gpu-platform.io/pool]," in by_name["GpuNodePoolLabelMissing"].runbook
