"""`prepare`: check the machine and the pool, then write every file the real node's processes read under
<state>/real-node and bring up what the kubelet needs before any pod exists (the bridge with the node's address,
its cgroup root)."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import yaml

from .config import cni_config, containerd_config, kubelet_config
from .machine import can_lower_oom_score, cgroup_mounts, cni_dir, ip, machine_capacity, preflight
from .node import (
    NODE_KIND_LABEL, NODE_KIND_REAL, POD_SUBNET, Layout, RealNodeError, Reserves, choose_pool, fit_problem,
    kubelet_reserves, node_labels, node_name,
)

if TYPE_CHECKING:
    from gpu_platform.plan import Plan, PoolPlan


@dataclass(frozen=True)
class NodeFiles:
    name: str
    pool: PoolPlan
    reserves: Reserves
    capacity: tuple[int, int]
    allocatable: tuple[int, int]
    fit: str | None


def write_files(plan: Plan, requested: str, layout: Layout, ports: tuple[int, int], pki: Path,
                pause_image: str) -> NodeFiles:
    """Check the machine and the pool, then write every file the node's processes read; the node's facts. PORTS:
    the kubelet's server and healthz ports (localcluster/ports.py decides them)."""
    pool = choose_pool(plan, requested)
    problems = preflight(layout)
    if problems:
        raise RealNodeError("the real node cannot start on this machine:\n  " + "\n  ".join(problems))
    vcpus, memory_mib = machine_capacity()
    reserves = kubelet_reserves(pool, vcpus)
    allocatable = reserves.allocatable(vcpus * 1000, memory_mib)
    name = node_name(pool)
    d = layout.dir
    for sub in ("cni", "cni-state", "kubelet-volume-plugins", "pod-logs"):
        (d / sub).mkdir(parents=True, exist_ok=True)
    runc = shutil.which("runc")
    assert runc is not None  # preflight
    lower_oom_score = can_lower_oom_score()
    (d / "containerd.toml").write_text(containerd_config(layout, runc, cni_dir(), pause_image, lower_oom_score))
    (d / "cni" / "10-gpu-platform.conflist").write_text(json.dumps(cni_config(layout), indent=1))
    (d / "kubelet.yaml").write_text(yaml.safe_dump(
        kubelet_config(layout, plan, pool, reserves, *ports, pki / "ca.crt", lower_oom_score), sort_keys=False))
    labels = ",".join(f"{k}={v}" for k, v in node_labels(plan, pool).items())
    _lines(d / "containerd.args", ["--config", str(d / "containerd.toml"), "--log-level", "warn"])
    _lines(d / "kubelet.args", [
        f"--config={d / 'kubelet.yaml'}", f"--kubeconfig={d / 'kubelet.kubeconfig'}", f"--root-dir={d / 'kubelet'}",
        f"--hostname-override={name}", f"--node-ip={layout.node_ip}", f"--node-labels={labels}",
        f"--pod-infra-container-image={pause_image}",
        # cAdvisor (in the kubelet) knows a container as containerd's only through containerd's socket, by default
        # the system's /run/containerd/containerd.sock (github.com/google/cadvisor container/containerd factory.go,
        # flag "containerd"; k8s.io/kubernetes v1.33.13 cmd/kubelet/app/options/globalflags_linux.go keeps the flag,
        # deprecated). Without it /metrics/cadvisor has no pod or container labels for this node's pods, so no
        # network series of theirs (what acceptance step 6 reads, as on EKS, where the socket is the default).
        f"--containerd={layout.socket}",
    ])
    _lines(d / "gpu-device-plugin.args", [
        f"--resource={pool.resource_name}", f"--count={pool.units_per_node}", f"--device-prefix={name}-gpu",
        f"--socket-dir={layout.device_plugin_dir}", f"--socket={layout.plugin_socket}",
        f"--ready-file={d / 'gpu-device-plugin.ready'}",
    ])
    # The API server's kubelet client (CN kube-apiserver-kubelet-client) may read logs, exec and read stats:
    # the bootstrap role kubeadm binds it to (system:kubelet-api-admin).
    (d / "objects.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [{
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "local-cluster:kube-apiserver-kubelet-client"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:kubelet-api-admin"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "kube-apiserver-kubelet-client"}],
    }]}))
    env = {
        "REAL_NODE_NAME": name, "REAL_NODE_POOL": pool.name, "REAL_NODE_RESOURCE": pool.resource_name,
        "REAL_NODE_UNITS": str(pool.units_per_node), "REAL_NODE_SOCKET": str(layout.socket),
        "REAL_NODE_BRIDGE": layout.bridge, "REAL_NODE_IP": layout.node_ip,
        "REAL_NODE_KUBELET_PORT": str(ports[0]),
        "REAL_NODE_HEALTHZ": f"http://127.0.0.1:{ports[1]}/healthz",
        "REAL_NODE_READY_FILE": str(d / "gpu-device-plugin.ready"),
        "REAL_NODE_KIND_LABEL": NODE_KIND_LABEL, "REAL_NODE_KIND": NODE_KIND_REAL,
    }
    (d / "node.env").write_text("".join(f"{k}={shlex.quote(v)}\n" for k, v in env.items()))
    bridge_up(layout)
    cgroup_root_up(layout)
    return NodeFiles(name, pool, reserves, (vcpus * 1000, memory_mib), allocatable,
                     fit_problem(pool, *allocatable))


def bridge_up(layout: Layout) -> None:
    """The pod bridge with the node's address, up. The kubelet refuses a node IP that no interface holds
    (k8s.io/kubernetes v1.33.13 pkg/kubelet/kubelet_node_status.go validateNodeIP), and CNI's bridge plugin makes
    the bridge only for the first pod; it takes this one as it finds it (same name, its gateway address)."""
    address = f"{layout.node_ip}/{POD_SUBNET.prefixlen}"
    if ip("link", "show", layout.bridge).returncode != 0:
        _check(ip("link", "add", layout.bridge, "type", "bridge"), "creating the bridge")
    if address not in ip("-o", "-4", "addr", "show", "dev", layout.bridge).stdout:
        _check(ip("addr", "add", address, "dev", layout.bridge), f"giving the bridge {address}")
    _check(ip("link", "set", layout.bridge, "up"), "bringing the bridge up")


def cgroup_root_up(layout: Layout) -> None:
    """The kubelet's cgroup root in every mounted hierarchy: the kubelet checks it exists and makes its QoS cgroups
    below it (k8s.io/kubernetes v1.33.13 pkg/kubelet/cm/container_manager_linux.go NewContainerManager,
    cgroup_v1_manager_linux.go Validate). A v1 cpuset cgroup starts with no CPUs and no memory nodes, so it gets
    its parent's."""
    for mount in cgroup_mounts():
        root = mount / layout.cgroup_root.lstrip("/")
        root.mkdir(exist_ok=True)
        for name in ("cpuset.cpus", "cpuset.mems"):
            if (root / name).exists() and not (root / name).read_text().strip():
                (root / name).write_text((mount / name).read_text())


def _check(out: subprocess.CompletedProcess[str], what: str) -> None:
    if out.returncode != 0:
        raise RealNodeError(f"{what} ({' '.join(out.args)}): {out.stderr.strip()}")


def _lines(path: Path, args: Sequence[str]) -> None:
    path.write_text("".join(f"{a}\n" for a in args))
