"""`make acceptance`'s set-up (localcluster/acceptance_cluster.py) without a cluster: what it asks the local cluster
for, the command it runs, and what it refuses. World: none (the live run is tests/live/test_acceptance.py, which
uses the same module)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpu_platform.stack_files import load_plan
from localcluster import acceptance_cluster as ac


def test_the_cluster_runs_the_real_node_for_the_pool_the_jobset_controller_and_prometheus(tmp_path: Path) -> None:
    env = ac.local_cluster(tmp_path, tmp_path / "Pulumi.acceptance.yaml").env()
    assert {k: env[k] for k in ("LOCAL_CLUSTER_DIR", "LOCAL_CLUSTER_STACK", "LOCAL_CLUSTER_REAL_NODE",
                                "LOCAL_CLUSTER_WORKLOADS", "LOCAL_CLUSTER_PROMETHEUS", "LOCAL_CLUSTER_SCRAPE_INTERVAL",
                                "LOCAL_CLUSTER_APISERVER_PORT", "LOCAL_CLUSTER_ETCD_PORT")} == {
        "LOCAL_CLUSTER_DIR": str(tmp_path / "cluster"), "LOCAL_CLUSTER_STACK": str(tmp_path / "Pulumi.acceptance.yaml"),
        "LOCAL_CLUSTER_REAL_NODE": "small", "LOCAL_CLUSTER_WORKLOADS": "jobset", "LOCAL_CLUSTER_PROMETHEUS": "1",
        "LOCAL_CLUSTER_SCRAPE_INTERVAL": "5s", "LOCAL_CLUSTER_APISERVER_PORT": "31643", "LOCAL_CLUSTER_ETCD_PORT": "22090"}


def test_the_example_stack_has_the_team_and_the_pool_the_command_names() -> None:
    _, plan = load_plan(str(ac.STACK_FILE), None)
    (zeta,) = [t for t in plan.teams if t.name == "zeta"]
    assert zeta.cost_center == "cc-106"
    assert [q.pool for q in zeta.quotas] == ["small"]


def test_the_command_is_the_one_a_user_types(tmp_path: Path) -> None:
    cmd = ac.command(tmp_path / "s.yaml", "localhost/gpu-platform/t:1", "--format", "json")
    assert cmd[1:] == ["-m", "platform_cli", "acceptance", "--stack", str(tmp_path / "s.yaml"), "--team", "zeta",
                       "--pool", "small", "--image", "localhost/gpu-platform/t:1", "--window", "60s",
                       "--baseline", "gpu-hour=2.50", "--format", "json"]


def test_without_root_it_refuses_before_building_or_starting_anything(monkeypatch: pytest.MonkeyPatch,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(ac.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(ac, "prerequisites", lambda state: pytest.fail("checked the machine without root"))
    assert ac.main([]) == 2
    assert "the real node needs root" in capsys.readouterr().err


def test_a_format_it_does_not_know_is_refused_naming_the_choices(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        ac.main(["--format", "xml"])
    assert exit_.value.code == 2
    assert "argument --format: invalid choice: 'xml' (choose from 'table', 'markdown', 'json')" in capsys.readouterr().err
