"""What `make up` of the local stack checks and builds first (localcluster/prerequisites.py): only the tools the
chosen cluster runs, an official Pulumi CLI preferred to building one, and every missing prerequisite named with
what to do. A world of plain values: PATH lookups, the system and the user are given, nothing is built."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from localcluster import prerequisites as pre
from tests.conftest import ROOT

CONTROLLERS = ["jobset", "trainer", "lws", "kuberay"]


def test_the_default_local_cluster_builds_its_own_tools_and_no_test_data(tmp_path: Path) -> None:
    tools = pre.needed({"PATH": str(tmp_path)}, CONTROLLERS)
    assert tools == ["pulumi", "pulumi-language-python", "pulumi-resource-kubernetes", "etcd", "kube-apiserver", "kueue",
                     "kwok", "karpenter-kwok", "helm", "prometheus", "jobset", "trainer", "lws", "kuberay"]
    assert not {"reference", "promtool", "actionlint", "kubelet", "containerd"} & set(tools)


def test_an_official_pulumi_on_path_is_used_instead_of_a_build(tmp_path: Path) -> None:
    (tmp_path / "pulumi").write_text("#!/bin/sh\n")
    (tmp_path / "pulumi").chmod(0o755)
    env = {"PATH": str(tmp_path), "LOCAL_CLUSTER_PROMETHEUS": "0"}
    assert pre.needed(env, [])[:2] == ["etcd", "kube-apiserver"]
    assert pre.needed({**env, "GPU_PLATFORM_OFFLINE": "1"}, [])[0] == "pulumi"   # offline: the cache's own build
    assert pre.needed(env, [], cluster=False) == []                              # another cluster: nothing to build


def test_the_real_nodes_tools_only_with_a_real_node(tmp_path: Path) -> None:
    tools = pre.needed({"PATH": str(tmp_path), "LOCAL_CLUSTER_REAL_NODE": "1"}, [])
    assert tools[-4:] == ["containerd", "kubelet", "gpu-device-plugin", "node-images"]


def test_a_tool_is_cold_until_its_binary_is_in_the_cache(tmp_path: Path) -> None:
    (tmp_path / "kwok").write_text("")
    (tmp_path / "helm").symlink_to(tmp_path / "gone")   # a link to nothing is no tool
    assert pre.cold(["kwok", "helm", "kueue"], tmp_path) == ["helm", "kueue"]
    # 437 s + 510 s = 15.8 min measured: 90% of it 14.2, 115% 18.2
    assert pre.estimate(["kueue", "kube-apiserver"]) == "14 to 18 min on 2 cores"


def test_the_estimate_is_for_this_machines_cores() -> None:
    """`make up` says how long the build takes here: the measured 2-core figure, its low end scaled to more cores
    (the high end is not: linking does not scale), doubled on one core."""
    assert pre.estimate(["kueue", "kube-apiserver"], 8) == "about 4 to 18 min on this machine's 8 cores; 14 to 18 measured on 2"
    assert pre.estimate(["kueue", "kube-apiserver"], 1) == "about 28 to 36 min on 1 core; 14 to 18 measured on 2"


def test_the_local_stacks_cold_build_is_estimated_as_it_was_measured() -> None:
    """What a cold `make up` of the local stack builds, as measured on 2026-12-07 (docs/performance.md: 3,974 s of
    tool builds, 70 min in all with the virtualenv, the cluster's start and the up)."""
    tools = ["pulumi", "pulumi-language-python", "pulumi-resource-kubernetes", "kube-apiserver", "kueue", "kwok",
             "karpenter-kwok", "helm", "prometheus", "jobset", "trainer", "lws", "kuberay"]
    assert sum(pre.TOOLS[t].cold_seconds for t in tools) == 3974
    assert pre.estimate(tools) == "60 to 76 min on 2 cores"


def _which(*present: str):
    return lambda name: f"/usr/bin/{name}" if name in present else None


def test_a_ready_machine_has_no_problems() -> None:
    assert pre.problems({}, ["etcd", "kwok"], "Linux", 1000, _which("kubectl", "openssl", "etcd"), go=(1, 26)) == []


def test_each_missing_prerequisite_is_named_with_what_to_do() -> None:
    found = pre.problems({"LOCAL_CLUSTER_REAL_NODE": "train"}, ["etcd", "kueue", "containerd"], "Darwin", 1000,
                         _which("apt-get"), go=(1, 22))
    assert found == [
        "the local cluster runs etcd, the Kubernetes control plane and (for a real node) containerd as Linux host "
        "processes; this is Darwin: use a Linux machine or VM, or deploy onto another cluster with "
        "GPU_PLATFORM_KUBECONFIG=<kubeconfig> make up",
        "kubectl is not on PATH (the local cluster is set up and used with it): install it "
        "(kubernetes.io/docs/tasks/tools)",
        "openssl is not on PATH (the local cluster's certificates are made with it): install it (Debian and Ubuntu: "
        "apt-get install openssl)",
        "Go 1.26 or newer is not on PATH (found go1.22): it builds kueue into the tool cache (go.dev/doc/install)",
        "etcd is not on PATH: install it with sudo apt-get install etcd-server, or run make up as root",
        "containerd is not on PATH: install it with sudo apt-get install containerd runc containernetworking-plugins, "
        "or run make up as root",
        "LOCAL_CLUSTER_REAL_NODE needs root (the real node mounts, makes cgroups and network links): run make up as "
        "root, or LOCAL_CLUSTER_REAL_NODE=none",
    ]


def test_without_apt_get_etcd_must_be_installed_by_hand() -> None:
    assert pre.problems({}, ["etcd"], "Linux", 0, _which("kubectl", "openssl"), go=None) == [
        "etcd is not on PATH and there is no apt-get to install it: install etcd-server yourself"]


@pytest.mark.parametrize("text, version", [("go version go1.26.3 linux/amd64", (1, 26)), ("", None)])
def test_go_version(text: str, version: tuple[int, int] | None) -> None:
    assert pre.go_version(text) == version


def test_make_without_a_python_that_makes_virtualenvs_names_what_to_install(tmp_path: Path) -> None:
    """The virtualenv comes before every other check (they run in it): a python without venv/ensurepip (Debian's
    python3 without python3-venv) or older than 3.11 stops `make` first, naming the package, and makes nothing."""
    fake = tmp_path / "python3"
    fake.write_text("#!/bin/sh\nexit 1\n")   # answers the check as such a python does
    fake.chmod(0o755)
    out = subprocess.run(["make", "-s", "venv", f"VENV={tmp_path / 'venv'}", f"PYTHON={fake}"], cwd=ROOT,
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 2 and not (tmp_path / "venv").exists()
    assert "prerequisites: missing:" in out.stderr and "Python 3.11 or newer with venv" in out.stderr
    assert "apt-get install python3 python3-venv" in out.stderr
