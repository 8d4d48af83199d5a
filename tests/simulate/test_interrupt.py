"""A stopped `simulate` stops the cluster it started: a SIGTERM (a cancelled CI job, `timeout`, `kill`) in the
middle of the cluster's start left etcd, kube-apiserver, the controller manager, the scheduler, Kueue and
KWOK of its temporary state directory running, to be killed by hand."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT
from tests.realtools import CLUSTER_TOOLS, ENGINE_TOOLS, base_env, interrupt_after, processes_under, require, wait_for_file

STACK = ROOT / "tests" / "simulate" / "stack.yaml"
PORTS = {"GPU_PLATFORM_SIM_APISERVER_PORT": "30643", "GPU_PLATFORM_SIM_ETCD_PORT": "21990"}  # this test's own


def test_sigterm_while_the_cluster_starts_stops_every_process_it_started(tmp_path: Path) -> None:
    require(CLUSTER_TOOLS + ENGINE_TOOLS)
    scratch = tmp_path / "tmp"   # simulate's state directory is a temporary one: under here
    scratch.mkdir()
    trace = tmp_path / "trace.csv"
    trace.write_text("submit,team,pool,units,pods,duration\n0,solo,fill,8,1,10m\n")
    env = {**base_env(), **PORTS, "TMPDIR": str(scratch)}
    proc = subprocess.Popen([sys.executable, "-m", "platform_cli", "simulate", "--stack", str(STACK), "--trace",
                             str(trace), "--speed", "60", "--out", str(tmp_path / "out")],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen_running: list[str] = []

    def half_up() -> None:
        # Wait until the cluster is half-way up: the API server runs (its pid file), Kueue does not yet.
        wait_for_file(proc, scratch, "gpu-platform-sim-*/cluster/run/kube-apiserver.pid", "the cluster's API server")
        assert not any(scratch.glob("gpu-platform-sim-*/cluster/run/kueue.pid")), "too late: Kueue runs already"
        seen_running.extend(processes_under(scratch))

    err, left = interrupt_after(proc, scratch, half_up, timeout=180)
    assert proc.returncode == 130, err[-3000:]
    assert "interrupted" in err, err[-3000:]
    # what the signal interrupted: a cluster with etcd and an API server running
    assert any("/etcd --name=local" in line for line in seen_running), seen_running
    assert left == [], f"processes left behind: {left}"
    # and the temporary state directory is removed with them
    assert not any(scratch.glob("gpu-platform-sim-*")), os.listdir(scratch)
