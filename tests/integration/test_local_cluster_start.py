"""Starting and stopping the local cluster never depends on timing: a start that fails half-way leaves
nothing running, and a component is never reported dead while it starts, nor left running when a start
fails (the newcomer's first `make up` did both: "kueue exited" one second after launching Kueue, with Kueue
alive and left behind).

The driver (localcluster/supervise.py) forks and execs each component itself and writes the pid Popen returns,
so no launcher stands between the pid file and the component. What is left of the race is forced rather than
hoped for: the window inside an exec, when the process's command line reads empty (the kernel has not yet given
the new image its arguments: torvalds/linux fs/proc/base.c get_mm_cmdline), stretched to a second by an `env`
first on PATH (the components that take a variable, Kueue and Karpenter among them, are launched through `env`)
that runs a program whose command line is empty for a second, which then execs the real `env` and the component
(a kuberay-operator binary off a busy disk was reported exited in that window, alive).
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.realtools import CLUSTER_TOOLS, cluster_env, interrupt_after, processes_under, require, run, wait_for_file

PORTS = ("30543", "21890")  # this test's own: every suite's cluster has its ports
COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kueue", "kwok")

# Runs its arguments with the real env after a second in which its command line is empty: bash reads the script
# from standard input, started with an empty argv[0] and no arguments (its arguments wait in a file).
SLOW_EXEC_ENV = """#!/usr/bin/env bash
args="$(mktemp "${TMPDIR:-/tmp}/blank-args.XXXXXX")"
printf '%s\\0' "$@" >"$args"
real="$(dirname "$0")/env.real"
exec -a '' bash <<<"sleep ${BLANK_DELAY:-1}; mapfile -d '' -t a <'$args'; rm -f '$args'; exec '$real' \\"\\${a[@]}\\" </dev/null"
"""


def racing_env(tmp_path: Path, state: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    stand_in = tmp_path / "bin"
    stand_in.mkdir()
    real = subprocess.run(["bash", "-c", "command -v env"], capture_output=True, text=True, check=True).stdout.strip()
    (stand_in / "env.real").symlink_to(real)
    (stand_in / "env").write_text(SLOW_EXEC_ENV)
    (stand_in / "env").chmod(0o755)
    env = cluster_env(state, *PORTS, extra)
    env["PATH"] = f"{stand_in}:{env['PATH']}"
    return env


def local_cluster(env: dict[str, str], *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return run([str(ROOT / "scripts" / "local-cluster"), *args], env, timeout=600, check=check)


def broken_crds(tmp_path: Path) -> Path:
    crds = tmp_path / "crds" / "broken"
    crds.mkdir(parents=True)
    # A CRD the API server refuses (no versions): installing the reference CRDs fails once etcd, the API
    # server, the controller manager and the scheduler already run.
    (crds / "broken.yaml").write_text(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"
        "metadata: {name: widgets.example.com}\n"
        "spec: {group: example.com, names: {kind: Widget, plural: widgets}, scope: Namespaced, versions: []}\n")
    return tmp_path / "crds"


@pytest.mark.parametrize("launcher", ["env", "env slow to exec"])
def test_a_start_that_fails_after_its_first_processes_stops_them(tmp_path: Path, launcher: str) -> None:
    require(CLUSTER_TOOLS)
    state = tmp_path / "cluster"
    extra = {"GPU_PLATFORM_CRDS": str(broken_crds(tmp_path))}
    env = racing_env(tmp_path, state, extra) if launcher != "env" else cluster_env(state, *PORTS, extra)
    out = local_cluster(env, "start", check=False)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "installing the CRDs (crds) failed" in out.stderr, out.stderr
    assert "stopped kube-apiserver" in out.stderr and "stopped etcd" in out.stderr, out.stderr
    assert processes_under(state) == [], f"processes left behind: {processes_under(state)}"
    status = local_cluster(env, "status", check=False)
    assert status.returncode == 3, status.stdout


def test_components_slow_to_exec_start_and_stop(tmp_path: Path) -> None:
    require(CLUSTER_TOOLS)
    state = tmp_path / "cluster"
    env = racing_env(tmp_path, state, {"GPU_PLATFORM_CRDS": "none"})
    try:
        out = local_cluster(env, "start", check=False)
        assert out.returncode == 0, out.stderr[-4000:]
        assert "exited" not in out.stderr, out.stderr
        status = local_cluster(env, "status")
        for name in COMPONENTS:
            assert f"{name}: running" in status.stdout, status.stdout
            # the pid file names the component's own process, not a launcher that has gone
            pid = (state / "run" / f"{name}.pid").read_text().strip()
            assert Path(os.readlink(f"/proc/{pid}/exe")).name == name, (name, os.readlink(f"/proc/{pid}/exe"))
        # a lost pid file (a crash between launch and write, a hand edit) still does not leave KWOK behind
        (state / "run" / "kwok.pid").unlink()
        stop = local_cluster(env, "stop")
        assert "stopping stray process" in stop.stderr and "kwok" in stop.stderr, stop.stderr
        assert processes_under(state) == [], f"processes left behind: {processes_under(state)}"
    finally:
        local_cluster(env, "stop", check=False)
        subprocess.run(["pkill", "-KILL", "-f", str(state)], check=False)


def test_sigterm_during_a_start_stops_what_it_started(tmp_path: Path) -> None:
    """`make up` interrupted while its cluster starts (Ctrl-C, a cancelled job, `timeout`)."""
    require(CLUSTER_TOOLS)
    state = tmp_path / "cluster"
    env = cluster_env(state, *PORTS, {"GPU_PLATFORM_CRDS": "none"})
    proc = subprocess.Popen([str(ROOT / "scripts" / "local-cluster"), "start"], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    err, left = interrupt_after(
        proc, state, lambda: wait_for_file(proc, state, "run/kube-apiserver.pid", "the API server"), timeout=120)
    assert proc.returncode == 1, err
    assert "interrupted: stopping what this start started" in err, err
    assert "stopped etcd" in err, err
    assert left == [], f"processes left behind: {left}"
