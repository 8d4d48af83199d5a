"""A start that fails half-way leaves nothing running: the next start, or another cluster, would otherwise
meet an etcd and an API server holding its ports and a state directory that claims a cluster."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.conftest import ROOT
from tests.realtools import CLUSTER_TOOLS, cluster_env, require, run

PORTS = ("30543", "21890")  # this test's own: every suite's cluster has its ports


def test_a_start_that_fails_after_its_first_processes_stops_them(tmp_path: Path) -> None:
    require(CLUSTER_TOOLS)
    crds = tmp_path / "crds" / "broken"
    crds.mkdir(parents=True)
    # A CRD the API server refuses (no versions): installing the reference CRDs fails once etcd, the API
    # server, the controller manager and the scheduler already run.
    (crds / "broken.yaml").write_text(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"
        "metadata: {name: widgets.example.com}\n"
        "spec: {group: example.com, names: {kind: Widget, plural: widgets}, scope: Namespaced, versions: []}\n")
    state = tmp_path / "cluster"
    env = {**cluster_env(state, *PORTS), "GPU_PLATFORM_CRDS": str(tmp_path / "crds")}
    out = run([str(ROOT / "scripts" / "local-cluster"), "start"], env, timeout=600, check=False)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "installing the CRDs (crds) failed" in out.stderr, out.stderr
    assert "stopped kube-apiserver" in out.stderr and "stopped etcd" in out.stderr, out.stderr
    left = subprocess.run(["pgrep", "-af", str(state)], capture_output=True, text=True).stdout
    assert left.strip() == "", f"processes left behind: {left}"
    status = run([str(ROOT / "scripts" / "local-cluster"), "status"], env, timeout=60, check=False)
    assert status.returncode == 3, status.stdout
