"""The real node's decisions (localcluster/realnode): which pool it joins, what its kubelet reserves, what its
network, runtime and kubelet are given, what images it has; and that cleanup of a node that left nothing is a no-op.
The processes themselves run in tests/live/test_real_node.py."""

from __future__ import annotations

import ipaddress
import os
import subprocess
import time
import tomllib
from pathlib import Path

import pytest

from gpu_platform import images
from gpu_platform.jobs import DEFAULT_IMAGE
from gpu_platform.plan import Plan
from gpu_platform.stack_files import load_plan
from localcluster import realnode
from localcluster.realnode import Layout, RealNodeError, Reserves
from localcluster.realnode.node import disk_problem

ROOT = Path(__file__).resolve().parents[3]
SMALL_STACK = ROOT / "tests" / "live" / "real_node_stack.yaml"


@pytest.fixture(scope="module")
def local() -> Plan:
    return load_plan("local", None)[1]


@pytest.fixture(scope="module")
def small() -> Plan:
    return load_plan(str(SMALL_STACK), None)[1]


def test_the_default_pool_is_the_stacks_first_whole_gpu_pool_and_any_other_is_named(local: Plan) -> None:
    assert realnode.choose_pool(local, "1").name == "train"
    assert realnode.choose_pool(local, "infer").name == "infer"
    assert realnode.node_name(realnode.choose_pool(local, "infer")) == "infer-real"


def test_a_pool_the_stack_lacks_is_refused_naming_the_setting_and_the_pools(local: Plan) -> None:
    with pytest.raises(RealNodeError) as err:
        realnode.choose_pool(local, "gpu")
    assert str(err.value) == ("LOCAL_CLUSTER_REAL_NODE='gpu' is not a pool of the stack; pools: train, infer, notebooks "
                              "(or 1 for the first whole-GPU pool, none for no real node)")


def test_the_kubelet_reserves_what_the_plan_reserves_on_the_pools_instance_type(small: Plan, local: Plan) -> None:
    # g6.xlarge: ENI max pods 4 x (15 - 1) + 2 = 58, kube-reserved memory 11 x 58 + 255 = 893 MiB; a 2-core node's
    # kube-reserved CPU 60m + 10m; the daemonset budget 1 vCPU and 2 GiB; eviction at 100 MiB.
    reserves = realnode.kubelet_reserves(small.pools_by_name["small"], 2)
    assert reserves == Reserves(kube_cpu_millis=70, kube_memory_mib=893, system_cpu_millis=1000,
                                system_memory_mib=2048, eviction_memory_mib=100, max_pods=110)
    assert reserves.allocatable(2000, 24105) == (930, 21064)
    # p5.48xlarge: 2 ENIs x (50 - 1) + 2 = 100 pods, 11 x 100 + 255 = 1,355 MiB
    assert realnode.kubelet_reserves(local.pools_by_name["train"], 2).kube_memory_mib == 1355


def test_a_pool_whose_one_unit_pod_cannot_fit_the_node_is_said_so(small: Plan, local: Plan) -> None:
    assert realnode.fit_problem(small.pools_by_name["small"], 930, 21064) is None   # 730m, 3,028 Mi a unit
    assert realnode.fit_problem(local.pools_by_name["train"], 930, 21064) == (
        "a one-unit pod of pool 'train' asks 23806m CPU and 242045Mi; this machine's node offers 930m and 21064Mi, so "
        "the pool's pods run on its simulated nodes only")


def test_the_node_carries_the_pools_labels_and_taints_and_says_it_is_real(small: Plan) -> None:
    pool = small.pools_by_name["small"]
    assert realnode.node_labels(small, pool) == {
        "node.kubernetes.io/instance-type": "g6.xlarge",
        "topology.kubernetes.io/zone": "local-a",
        "gpu-platform.io/pool": "small",
        "gpu-platform.io/accelerator": "l4-24gb",
        "gpu-platform.io/topology": "1gpu-pcie",
        "gpu-platform.io/fabric": "ethernet",
        "gpu-platform.io/workload": "inference",
        "gpu-platform.io/sharing": "time-sliced-4",
        "nvidia.com/device-plugin.config": "pool-small",
        "gpu-platform.io/node-kind": "real",
    }
    assert realnode.node_taints(small, pool) == [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
        {"key": "gpu-platform.io/workload", "value": "inference", "effect": "NoSchedule"},
    ]


def test_the_kubelet_runs_cgroupfs_with_the_reserves_and_registers_tainted(small: Plan, tmp_path: Path) -> None:
    pool = small.pools_by_name["small"]
    layout = Layout(tmp_path)
    config = realnode.kubelet_config(layout, small, pool, realnode.kubelet_reserves(pool, 2), 30465, 30466,
                                     tmp_path / "ca.crt")
    assert {k: config[k] for k in ("address", "port", "healthzBindAddress", "healthzPort", "cgroupDriver",
                                   "kubeReserved", "systemReserved", "evictionHard", "mergeDefaultEvictionSettings",
                                   "maxPods", "readOnlyPort", "authorization", "containerRuntimeEndpoint")} == {
        "address": "10.244.0.1", "port": 30465, "healthzBindAddress": "127.0.0.1", "healthzPort": 30466,
        "cgroupDriver": "cgroupfs",
        "kubeReserved": {"cpu": "70m", "memory": "893Mi"},
        "systemReserved": {"cpu": "1000m", "memory": "2048Mi"},
        "evictionHard": {"memory.available": "100Mi"}, "mergeDefaultEvictionSettings": True,
        "maxPods": 110, "readOnlyPort": 0, "authorization": {"mode": "Webhook"},
        "containerRuntimeEndpoint": f"unix://{tmp_path}/real-node/containerd.sock",
    }
    assert config["authentication"]["anonymous"] == {"enabled": False}
    assert config["registerWithTaints"] == realnode.node_taints(small, pool)
    assert config["cgroupRoot"].startswith("/gpu-platform-real-node-")
    assert config["podLogsDir"] == f"{tmp_path}/real-node/pod-logs"


def test_pods_get_a_private_subnet_with_no_default_route_and_no_masquerade(tmp_path: Path) -> None:
    layout = Layout(tmp_path)
    bridge, portmap = realnode.cni_config(layout)["plugins"]
    assert bridge["type"] == "bridge" and portmap["type"] == "portmap"
    assert (bridge["isGateway"], bridge["isDefaultGateway"], bridge["ipMasq"]) == (True, False, False)
    assert bridge["ipam"]["ranges"] == [[{"subnet": "10.244.0.0/24", "gateway": "10.244.0.1"}]]
    assert "routes" not in bridge["ipam"]
    assert ipaddress.ip_network("10.244.0.0/24").is_private
    assert bridge["ipam"]["dataDir"] == f"{tmp_path}/real-node/cni-state/ipam"
    assert len(layout.bridge) <= 15 and layout.bridge != Layout(tmp_path / "other").bridge


def test_containerd_keeps_its_root_state_and_socket_under_the_nodes_directory(tmp_path: Path) -> None:
    layout = Layout(tmp_path)
    config = tomllib.loads(realnode.containerd_config(layout, "/usr/sbin/runc", Path("/usr/lib/cni"),
                                                      "registry.k8s.io/pause:3.10"))
    node = f"{tmp_path}/real-node"
    assert (config["root"], config["state"], config["grpc"]["address"]) == (
        f"{node}/containerd/root", f"{node}/containerd/state", f"{node}/containerd.sock")
    cri = config["plugins"]["io.containerd.grpc.v1.cri"]
    assert cri["sandbox_image"] == "registry.k8s.io/pause:3.10"
    assert cri["netns_mounts_under_state_dir"] is True
    assert cri["containerd"]["runtimes"]["runc"]["options"] == {
        "BinaryName": "/usr/sbin/runc", "Root": f"{node}/runc", "SystemdCgroup": False}
    assert cri["cni"] == {"bin_dir": "/usr/lib/cni", "conf_dir": f"{node}/cni"}


def test_the_images_are_named_as_the_template_and_the_kubelet_name_them() -> None:
    out = subprocess.run([str(ROOT / "scripts" / "tools" / "node-images.sh"), "--names"], capture_output=True,
                         text=True, check=True).stdout
    names = dict(line.split() for line in out.splitlines())
    assert names == {"busybox.oci.tar": "docker.io/library/busybox:1.37", "pause.oci.tar": "registry.k8s.io/pause:3.10"}
    # what the image allowlist makes of the job template's default image
    assert names["busybox.oci.tar"] == images.normalize(DEFAULT_IMAGE)


def test_only_real_nodes_other_than_the_running_one_are_stale() -> None:
    nodes = {"items": [
        {"metadata": {"name": "train-real", "labels": {"gpu-platform.io/node-kind": "real"}}},
        {"metadata": {"name": "small-real", "labels": {"gpu-platform.io/node-kind": "real"}}},
        {"metadata": {"name": "train-0", "labels": {"gpu-platform.io/pool": "train"}}},
    ]}
    assert realnode.stale_nodes(nodes, "small-real") == ["train-real"]
    assert realnode.stale_nodes(nodes, "") == ["train-real", "small-real"]


@pytest.mark.skipif(os.geteuid() != 0, reason="cleanup reads cgroups and links as root")
def test_cleanup_of_a_node_that_left_nothing_does_nothing(tmp_path: Path) -> None:
    (tmp_path / "real-node").mkdir()
    (tmp_path / "device-plugins").mkdir()
    assert realnode.cleanup(Layout(tmp_path, tmp_path / "device-plugins")) == []
    assert (tmp_path / "real-node").is_dir()


def test_a_node_whose_state_directory_is_gone_is_still_known_by_its_bridge_and_cgroup_names() -> None:
    # What an orphan leaves the kernel (localcluster/realnode/orphans.py): the names a start looks for.
    gone = realnode.Names("07229ab2")
    assert (gone.bridge, gone.cgroup_root, gone.plugin_socket) == (
        "gprn07229ab2", "/gpu-platform-real-node-07229ab2", "gpu-platform-07229ab2.sock")
    layout = Layout(Path("/var/tmp/some-cluster"))
    assert layout.names == realnode.Names(layout.tag) and layout.bridge == f"gprn{layout.tag}"


def test_a_path_names_a_crashed_nodes_state_directory_only_where_the_nodes_files_are(tmp_path: Path) -> None:
    from localcluster.realnode.orphans import state_of

    mount = f"{tmp_path}/real-node/kubelet/pods/x/volumes"
    assert state_of(mount) is None            # someone else's directory called real-node: never touched
    (tmp_path / "real-node").mkdir()
    (tmp_path / "real-node" / "containerd.args").write_text("--config\n")
    assert state_of(mount) == tmp_path
    assert state_of(f"{tmp_path}/other/kubelet") is None
    # A shim's -address names the node's socket even when its directory is gone.
    assert state_of("/gone/cluster/real-node/containerd.sock") == Path("/gone/cluster")


def test_a_state_directory_too_long_for_the_kubelets_sockets_is_refused_before_anything_starts() -> None:
    # The kubelet binds its pod-resources socket at <state>/real-node/kubelet/pod-resources/<up to 10 digits>
    # first: 113 characters here, and it exited with "bind: invalid argument" (tests/live at 3394714).
    state = Path("/tmp/pytest-of-root/pytest-227/test_a_start_in_another_direct0/cluster")
    problems = [p for p in realnode.preflight(Layout(state)) if "socket" in p]
    assert problems == [
        f"the node's sockets under {state}/real-node would be longer than a Unix socket path may be (113 characters, "
        f"at most 107: {state}/real-node/kubelet/pod-resources/9999999999): use a LOCAL_CLUSTER_DIR at least 6 "
        "characters shorter"]
    assert [p for p in realnode.preflight(Layout(Path("/tmp/pytest-of-root/pytest-227/other0/cluster")))
            if "socket" in p] == []


def test_another_directorys_node_process_is_a_running_node_and_a_system_containerd_is_not(tmp_path: Path) -> None:
    # Real processes named as the node's binaries (a shell under the name): what the machine check and the orphan
    # search see in /proc (localcluster/realnode/machine.py other_real_node).
    from localcluster.realnode.machine import other_real_node

    containerd = tmp_path / "bin" / "containerd"
    containerd.parent.mkdir()
    containerd.symlink_to("/bin/sh")
    mine = Layout(tmp_path / "mine")

    def running(*args: str) -> str | None:
        proc = subprocess.Popen([str(containerd), "-c", "sleep 5; :", *args])
        try:
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and not Path(f"/proc/{proc.pid}/cmdline").read_bytes().count(b"\0") > 2:
                time.sleep(0.01)
            return other_real_node(mine, among=[proc.pid])   # not a real node of another run beside
        finally:
            proc.kill()
            proc.wait()

    other = f"--config={tmp_path}/other/real-node/containerd.toml"
    assert running(other) == f"{containerd} -c sleep 5; : {other}"
    assert running("--config=/etc/containerd/config.toml") is None            # the system's: no node
    assert running(f"--config={mine.dir}/containerd.toml") is None           # this directory's own


def test_a_file_system_under_the_kubelets_free_space_thresholds_is_refused_naming_the_taint() -> None:
    """Under 15% free (imagefs.available, on the same file system as nodefs here) the kubelet reports DiskPressure
    at once and the node is tainted node.kubernetes.io/disk-pressure, so no pod ever runs on it: every real-node
    test failed that way in a CI run at 9% free. The start refuses first, saying so."""
    gib = 2**30
    assert disk_problem(Path("/var/lib/x"), 38 * gib, 252 * gib) is None  # 15.1% free
    assert disk_problem(Path("/var/lib/x"), 23 * gib, 252 * gib) == (
        "the file system of /var/lib/x has 23.0 GiB free of 252 GiB (9%), under the kubelet's hard eviction "
        "thresholds (nodefs.available 10%, imagefs.available 15%): the node would report DiskPressure and be "
        "tainted node.kubernetes.io/disk-pressure, so no pod would run on it; free space on it first")
