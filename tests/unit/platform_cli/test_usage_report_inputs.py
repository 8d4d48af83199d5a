"""`python -m platform_cli report` refuses (exit 2) when busy GPU time was not measured, naming the missing input,
rather than print every allocated GPU-hour as idle: a kube-state-metrics without the node pool label in its
allowlist (no GPU series joins a pool), or a dcgm-exporter that dropped its profiling fields (GPUs held, read from
the framebuffer field, that no busy series measures). The canned answers are tests/unit/platform_cli/test_report's
(stack `local`: vision holds 8 train GPUs all hour, nlp 4 for the second half hour)."""

from __future__ import annotations

from typing import Any

from platform_cli import usage_report as ur
from platform_cli.cli import main
from platform_cli.prometheus_api import Prometheus
from tests.conftest import plan_of
from tests.unit.platform_cli.test_report import END, FakePrometheus, canned, matrix


def run(answers: dict[tuple[str, str], list[dict[str, Any]]], capsys) -> tuple[int, str]:
    fake = FakePrometheus(answers)
    try:
        code = main(["report", "--stack", "local", "--prometheus", fake.url, "--no-pending", "--at", str(END)])
    finally:
        fake.close()
    return code, capsys.readouterr().err


def test_without_the_node_pool_label_the_report_refuses_naming_the_allowlist(capsys) -> None:
    """kube_node_labels without label_gpu_platform_io_pool: neither held nor busy GPUs join a pool."""
    answers = {**canned(), ("busy", "range"): [], ("pods", "range"): []}
    code, err = run(answers, capsys)
    assert code == 2
    assert "could not read the nodes' pool label (kube-state-metrics kube_node_labels{label_gpu_platform_io_pool})" in err
    assert "while GPUs were allocated in pool train" in err
    assert "--metric-labels-allowlist=nodes=[gpu-platform.io/pool]," in err
    assert "busy GPU-hours would read 0 and every allocated GPU-hour idle" in err


def test_without_the_profiling_field_the_report_refuses_naming_the_field(capsys) -> None:
    """dcgm-exporter without DCGM_FI_PROF_GR_ENGINE_ACTIVE: the pods' GPUs are held (framebuffer) but not busy."""
    answers = {**canned(), ("busy", "range"): [],
               ("pool_label", "range"): [matrix({}, lambda i: 3)]}
    code, err = run(answers, capsys)
    assert code == 2
    assert "could not read busy GPUs (DCGM_FI_PROF_GR_ENGINE_ACTIVE)" in err
    assert "has DCGM_FI_DEV_FB_USED but no DCGM_FI_PROF_GR_ENGINE_ACTIVE series" in err
    assert "team nlp in pool train, team vision in pool train" in err
    assert "Skipping line N ('DCGM_FI_PROF_GR_ENGINE_ACTIVE'): metric not enabled" in err


def test_gpus_allocated_that_no_pod_held_are_idle_not_a_missing_input() -> None:
    """The pool label is there and no pod of the team ran on a GPU (admitted, waiting for its node): nothing was
    measured because nothing was held, so the report stands and the allocation is idle."""
    answers = {**canned(), ("busy", "range"): [], ("pods", "range"): [],
               ("pool_label", "range"): [matrix({}, lambda i: 3)]}
    fake = FakePrometheus(answers)
    try:
        report = ur.build(Prometheus(fake.url), plan_of("local"), ur.window(END, 3600), pending=None)
    finally:
        fake.close()
    vision = report["teams"]["vision"]["pools"]["train"]
    assert (vision["allocated_gpu_hours"], vision["busy_gpu_hours"], vision["idle_gpu_hours"]) == (8.0, 0.0, 8.0)


def test_a_prometheus_with_every_input_asks_nothing_more(capsys) -> None:
    """Busy series for every team that held GPUs: the pool label is not even asked for."""
    fake = FakePrometheus(canned())
    try:
        ur.build(Prometheus(fake.url), plan_of("local"), ur.window(END, 3600), pending=None)
    finally:
        fake.close()
    assert ("pool_label", "range") not in fake.asked
