"""localcluster/driver.py: the environment it gives `scripts/local-cluster` and the CLI, and the script's `pid`
and `stop COMPONENT` subcommands it asks instead of reading the script's pid files (no cluster starts here)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from localcluster.driver import ClusterError, LocalCluster, pulumi_env
from localcluster.toolcache import CACHE
from tests.conftest import ROOT


@pytest.fixture
def caller_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PULUMI_BACKEND_URL", "s3://someone-elses-state")
    monkeypatch.setenv("KUBECONFIG", "/home/someone/.kube/config")
    monkeypatch.setenv("LOCAL_CLUSTER_SCALE_UP_DELAY", "1s")
    monkeypatch.setenv("LOCAL_CLUSTER_STACK", "prod")


def test_the_cluster_env_names_its_state_ports_and_settings(caller_env: None) -> None:
    c = LocalCluster(Path("/state"), 30443, "31790", stack=Path("/cfg/Pulumi.sim.yaml"),
                     settings={"LOCAL_CLUSTER_PODS_READY_TIMEOUT": "10s"})
    env = c.env()
    assert {k: v for k, v in env.items() if k.startswith(("LOCAL_CLUSTER_", "KUBECONFIG"))} == {
        "LOCAL_CLUSTER_DIR": "/state",
        "LOCAL_CLUSTER_APISERVER_PORT": "30443",
        "LOCAL_CLUSTER_ETCD_PORT": "31790",
        "LOCAL_CLUSTER_WORKLOADS": "none",
        "LOCAL_CLUSTER_PROMETHEUS": "0",
        "LOCAL_CLUSTER_REAL_NODE": "none",   # no real node unless asked: it needs root, one per machine
        "LOCAL_CLUSTER_STACK": "/cfg/Pulumi.sim.yaml",
        "LOCAL_CLUSTER_PODS_READY_TIMEOUT": "10s",
        "LOCAL_CLUSTER_SCALE_UP_DELAY": "1s",   # the caller's own setting passes through
        "KUBECONFIG": "/state/admin.kubeconfig",
    }
    assert not [k for k in env if k.startswith("PULUMI_")]
    assert env["PATH"].split(":")[:2] == [str(ROOT / ".venv" / "bin"), str(CACHE / "bin")]
    assert c.server == "https://127.0.0.1:30443"


def test_an_isolated_cluster_takes_none_of_the_callers_settings(caller_env: None) -> None:
    env = LocalCluster(Path("/state"), 30543, 31890, inherit_local_cluster=False).env()
    assert "LOCAL_CLUSTER_SCALE_UP_DELAY" not in env
    assert "LOCAL_CLUSTER_STACK" not in env   # the script's default stack, not the shell's prod


def test_the_cli_env_is_pulumi_envs_offline_one_on_a_file_backend(caller_env: None, tmp_path: Path) -> None:
    env = pulumi_env(tmp_path / "backend", "pw", skip_checkpoints=True, base={"PATH": "/bin"})
    assert env == {
        "PATH": "/bin",
        "PULUMI_BACKEND_URL": f"file://{tmp_path / 'backend'}",
        "PULUMI_CONFIG_PASSPHRASE": "pw",
        "PULUMI_SKIP_UPDATE_CHECK": "true",
        "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
        "PULUMI_HOME": str(CACHE / "pulumi-home"),
        "PULUMI_SKIP_CHECKPOINTS": "true",
    }
    assert (tmp_path / "backend").is_dir()


def test_a_component_that_is_not_running_has_no_pid(tmp_path: Path) -> None:
    assert LocalCluster(tmp_path, 30443, 31790).pid("kube-apiserver") is None


@pytest.mark.parametrize("args", [("pid", "apiserver"), ("stop", "apiserver")])
def test_an_unknown_component_is_refused_with_the_valid_ones(tmp_path: Path, args: tuple[str, str]) -> None:
    with pytest.raises(ClusterError) as err:
        LocalCluster(tmp_path, 30443, 31790).script(*args, timeout=60)
    assert "no component apiserver (components: etcd kube-apiserver kube-controller-manager" in str(err.value)


def test_nothing_but_the_scripts_own_tests_reads_its_pid_files() -> None:
    """The pid files are the driver's (`pid COMPONENT` answers); its own tests watch them appear."""
    own = {Path("tests/integration/test_local_cluster_start.py"), Path("tests/simulate/test_interrupt.py"),
           Path("tests/unit/localcluster/test_local_cluster_driver.py"), Path("tests/unit/localcluster/test_supervise.py")}
    pid_file = re.compile(r'"run"\s*/\s*f?"[^"]*\.pid"|run/[\w*{}-]+\.pid')
    # Each top-level directory but the virtualenv (whose files the filter below drops anyway) is walked.
    files = [p for top in ROOT.iterdir() if top.is_dir() and top.name != ".venv" for p in top.glob("**/*.py")]
    readers = [str(p.relative_to(ROOT)) for p in files
               if ".venv" not in p.parts and p.relative_to(ROOT) not in own and pid_file.search(p.read_text())]
    assert readers == []
