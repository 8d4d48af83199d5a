"""The local cluster driver's pure parts (localcluster/ports.py, state.py, cli.py): the ports a cluster takes, where
its state lives, what a running cluster's cluster.env tells later commands, and the command line's answers to
wrong input. No cluster runs here: a world of plain values and a scratch state directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from localcluster import cli, control_plane, ports, state
from localcluster.ports import PortError, Ports
from localcluster.state import Paths, Settings


def test_every_port_is_at_its_documented_offset() -> None:
    p = Ports(16443, 23790)
    assert (p.etcd_peer, p.kueue_webhook, p.kueue_health, p.kueue_metrics, p.kwok, p.scheduler) == (
        23800, 16444, 16445, 16446, 16447, 16448)
    assert (p.karpenter_metrics, p.karpenter_health, p.prometheus, p.gpu_telemetry, p.kubelet, p.kubelet_healthz) == (
        16449, 16450, 16463, 16464, 16465, 16466)
    assert p.server == "https://127.0.0.1:16443"


def test_a_start_checks_the_kubelets_ports_only_with_a_real_node() -> None:
    p = Ports(30443, 31790)
    assert p.checked_at_start(real_node=False) == [30443, 31790, 31800, 30444, 30445, 30446, 30447, 30448, 30449,
                                                   30450, 30463, 30464]
    assert p.checked_at_start(real_node=True)[-2:] == [30465, 30466]


@pytest.mark.parametrize("value", ["http", "0", "70000", ""])
def test_a_port_setting_that_is_no_port_is_refused_by_name(value: str) -> None:
    with pytest.raises(PortError, match=r"LOCAL_CLUSTER_APISERVER_PORT=.* is not a port number \(1-65535\)"):
        ports.parse_port("LOCAL_CLUSTER_APISERVER_PORT", value)


def test_the_environment_gives_the_defaults_and_the_settings(tmp_path: Path) -> None:
    defaults = state.from_environment({}, tmp_path)
    assert (defaults.ports, defaults.stack, defaults.workloads, defaults.monitoring, defaults.real_node) == (
        Ports(16443, 23790), "local", None, True, "none")
    s = state.from_environment({"LOCAL_CLUSTER_APISERVER_PORT": "30443", "LOCAL_CLUSTER_ETCD_PORT": "31790",
                                "LOCAL_CLUSTER_STACK": "fixtures/tiny.yaml", "LOCAL_CLUSTER_PROMETHEUS": "0",
                                "LOCAL_CLUSTER_WORKLOADS": "none"}, tmp_path)
    assert (s.ports, s.stack, s.monitoring, s.workloads) == (
        Ports(30443, 31790), str(tmp_path / "fixtures" / "tiny.yaml"), False, "none")


@pytest.mark.parametrize("value, expected", [(None, state.ROOT / ".local" / "cluster"), ("c/", "/work/c"),
                                             ("/abs/dir//", "/abs/dir"), ("../c", "/c")])
def test_the_state_directory_is_absolute_without_trailing_slashes(value: str | None, expected: str | Path) -> None:
    assert state.state_dir(value, Path("/work")) == Path(expected)


def test_a_running_clusters_env_wins_over_the_shells(tmp_path: Path) -> None:
    """cluster.env as a start writes it (and as the shell version wrote it: quoted lists)."""
    env = tmp_path / "cluster.env"
    started = Settings(Ports(30443, 31790), "/stacks/live.yaml", pods_ready_timeout="10s", real_node="small",
                       started_workloads=["jobset-controller"], started_monitoring=["gpu-telemetry", "prometheus"],
                       started_real_node=["containerd", "kubelet", "gpu-device-plugin"])
    state.write_cluster_env(env, started)
    assert env.read_text() == (
        "APISERVER_PORT=30443\nETCD_PORT=31790\nSTACK=/stacks/live.yaml\nPODS_READY_TIMEOUT=10s\nWORKER_LOST_TIMEOUT=\n"
        'STARTED_WORKLOADS="jobset-controller"\nSTARTED_MONITORING="gpu-telemetry prometheus"\nREAL_NODE="small"\n'
        'STARTED_REAL_NODE="containerd kubelet gpu-device-plugin"\nPROMETHEUS_PORT=30463\n')
    shell = state.from_environment({"LOCAL_CLUSTER_APISERVER_PORT": "16443", "LOCAL_CLUSTER_STACK": "prod"}, tmp_path)
    running = state.with_running(shell, env)
    assert (running.ports, running.stack, running.pods_ready_timeout) == (Ports(30443, 31790), "/stacks/live.yaml", "10s")
    assert running.components == ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kueue", "kwok",
                                  "karpenter-kwok", "containerd", "kubelet", "gpu-device-plugin", "jobset-controller",
                                  "gpu-telemetry", "prometheus"]


def test_reset_deletes_only_a_directory_a_start_wrote(tmp_path: Path) -> None:
    assert Paths(tmp_path / "absent").looks_like_state()
    assert not Paths(tmp_path).looks_like_state()          # somebody's directory
    (tmp_path / "pki").mkdir()
    assert Paths(tmp_path).looks_like_state()


def _main(capsys: pytest.CaptureFixture[str], *args: str, env: dict[str, str]) -> tuple[int, str, str]:
    code = cli.main(list(args), env)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_a_wrong_command_prints_the_usage_and_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = _main(capsys, "launch", env={"LOCAL_CLUSTER_DIR": str(tmp_path)})
    assert (code, out) == (2, "")
    assert err.startswith("Usage: scripts/local-cluster COMMAND\n  start ") and err.rstrip().endswith(
        "reset               stop and delete all state (certificates, etcd data, kubeconfigs)")


@pytest.mark.parametrize("args, message", [
    (("pid", "apiserver"), "no component apiserver (components: etcd kube-apiserver kube-controller-manager"),
    (("user", "al ice"), "invalid user name: al ice"),
    (("user", "alice", "-admins"), "invalid group name: -admins"),
    (("restart",), "usage: local-cluster restart COMPONENT (one of: etcd kube-apiserver"),
])
def test_bad_arguments_are_refused_with_the_reason(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                   args: tuple[str, ...], message: str) -> None:
    code, _, err = _main(capsys, *args, env={"LOCAL_CLUSTER_DIR": str(tmp_path)})
    assert code == 1 and f"local-cluster: error: {message}" in err, err
    assert not (tmp_path / "pki").exists()


def test_a_bad_port_setting_stops_the_command(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = _main(capsys, "status", env={"LOCAL_CLUSTER_DIR": str(tmp_path), "LOCAL_CLUSTER_ETCD_PORT": "x"})
    assert (code, err) == (1, "local-cluster: error: LOCAL_CLUSTER_ETCD_PORT='x' is not a port number (1-65535)\n")


def test_the_worker_is_a_second_cluster_on_its_own_state_and_ports() -> None:
    env = cli.worker_env({"LOCAL_CLUSTER_DIR": "/mine", "LOCAL_CLUSTER_APISERVER_PORT": "1"})
    assert (env["LOCAL_CLUSTER_DIR"], env["LOCAL_CLUSTER_APISERVER_PORT"], env["LOCAL_CLUSTER_ETCD_PORT"]) == (
        str(state.ROOT / ".local" / "worker"), "17443", "23890")
    env = cli.worker_env({"LOCAL_CLUSTER_WORKER_DIR": "/w", "LOCAL_CLUSTER_WORKER_APISERVER_PORT": "27443"})
    assert (env["LOCAL_CLUSTER_DIR"], env["LOCAL_CLUSTER_APISERVER_PORT"]) == ("/w", "27443")


def test_status_of_a_cluster_that_never_started(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = _main(capsys, "status", env={"LOCAL_CLUSTER_DIR": str(tmp_path),
                                                "LOCAL_CLUSTER_APISERVER_PORT": "30443"})
    assert code == 3
    assert out.splitlines() == ["etcd: stopped", "kube-apiserver: stopped", "kube-controller-manager: stopped",
                                "kube-scheduler: stopped", "kueue: stopped", "kwok: stopped", "karpenter-kwok: stopped",
                                "cluster: stopped (server would be https://127.0.0.1:30443)"]


def test_kueue_logs_at_the_level_asked_and_a_bad_level_is_refused_by_name() -> None:
    """LOCAL_CLUSTER_KUEUE_LOG_LEVEL (docs/local-cluster.md): info unless asked; a level Kueue's zap flag would not
    take is refused naming the variable and the choices. World: none."""
    assert control_plane.kueue_log_level({}) == "info"
    assert control_plane.kueue_log_level({"LOCAL_CLUSTER_KUEUE_LOG_LEVEL": "3"}) == "3"
    assert control_plane.kueue_log_level({"LOCAL_CLUSTER_KUEUE_LOG_LEVEL": "debug"}) == "debug"
    for bad in ("verbose", "0", "10", "-3"):
        with pytest.raises(ValueError, match=f"LOCAL_CLUSTER_KUEUE_LOG_LEVEL '{bad}' is not one of info, debug, "
                                             "error or 1-9"):
            control_plane.kueue_log_level({"LOCAL_CLUSTER_KUEUE_LOG_LEVEL": bad})
