"""The live local cluster's real node: one kubelet, with containerd, runc and CNI bridge networking, beside the
KWOK nodes, registered with one pool's labels and taints, so that pods of that pool run as processes (signals,
exit codes, grace periods, cgroup limits, allocatable memory) while every other node stays simulated.

`scripts/local-cluster` owns the processes, as it owns every other component's: it launches containerd, the
kubelet and the GPU device plugin (localcluster/deviceplugin) with pid files, stops them, and asks this module
(`python -m localcluster.realnode`) for two things:

- `prepare`: what the three processes are given, under <state>/real-node: containerd's configuration (its own
  root, state, socket and runc root, never the system's), the CNI bridge network, the KubeletConfiguration and its
  flags, the device plugin's flags, and the ClusterRoleBinding the API server's kubelet client needs (`kubectl
  logs`, `exec`); and the bridge itself, with the node's address, which the kubelet needs before any pod exists.
  It first checks the machine (root, the runtime and CNI plugins, one real node per machine) and the pool, and
  refuses with the reason and the valid choices.
- `cleanup`: what a stopped or crashed node leaves behind and the kernel keeps: container processes (runc's
  containers outlive containerd by design), containerd's shims, the mounts under the node's directory (overlay
  root file systems, network namespaces, tmpfs volumes, the kubelet's shared root), the bridge, the pod cgroups,
  the container log links, the device manager's checkpoint; then the node's runtime state, so the next start begins from an empty node. `stop`
  runs it after stopping the processes, and so does `start` before it launches them (after a crash, `start`
  finds nothing running and has nothing to stop).

The network: a Linux bridge with the node's address (the kubelet serves there and the API server reaches it),
pods on a /24 with no default route, no masquerade and no route off the machine (the pod network reaches only the
bridge's own addresses). The kubelet: cgroupfs driver under a cgroup root of its own, reserves from the plan's
node_reserve functions (kubelet_reserves), the pool's GPU resource from the device plugin.
"""

from __future__ import annotations

import argparse
import ctypes
import hashlib
import ipaddress
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import yaml

from gpu_platform import conventions as cv
from gpu_platform.errors import InputError
from gpu_platform.nodes import spare_nodes
from gpu_platform.plan import Plan, PoolPlan
from gpu_platform.plan.node_reserve import (
    DAEMONSET_CPU_MILLIS, DAEMONSET_MEMORY_MIB, EVICTION_MEMORY_MIB, MAX_PODS_PER_NODE, instance_allocatable,
    kube_reserved_cpu_millis, kube_reserved_memory_mib,
)
from gpu_platform.stack_files import load_plan

# What `kubectl get nodes -L gpu-platform.io/node-kind` shows: "real" here (conventions).
NODE_KIND_LABEL = cv.NODE_KIND_LABEL
NODE_KIND_REAL = cv.NODE_KIND_REAL
# The node's directory under the cluster's state directory.
DIR_NAME = "real-node"
# LOCAL_CLUSTER_REAL_NODE: a pool name, DEFAULT_POOL for the stack's first whole-GPU pool, or OFF (the default).
OFF = ("", "none", "0", "no", "false")
DEFAULT_POOL = ("1", "yes", "true", "default")
# The pod network: private, inside no range the cluster uses (services 10.96.0.0/16, KWOK's pod addresses
# 10.128.0.0/12). The bridge has the first address; it is the node's InternalIP.
POD_SUBNET = ipaddress.ip_network("10.244.0.0/24")
# A Unix socket path is at most 107 bytes (sockaddr_un.sun_path); containerd adds ".ttrpc" to its socket's.
MAX_SOCKET_PATH = 100
# Where Debian's containernetworking-plugins puts the plugins, and upstream's default.
CNI_DIRS = (Path("/usr/lib/cni"), Path("/opt/cni/bin"))
CNI_PLUGINS = ("bridge", "host-local", "loopback", "portmap")
# The kubelet's device-plugin directory: a constant of the kubelet, not a setting (k8s.io/kubelet v0.33.13
# pkg/apis/deviceplugin/v1beta1/constants.go DevicePluginPath; k8s.io/kubernetes v1.33.13
# pkg/kubelet/cm/devicemanager/manager.go NewManagerImpl), so one real node per machine.
DEVICE_PLUGIN_DIR = Path("/var/lib/kubelet/device-plugins")
# The device manager's checkpoint there (pkg/kubelet/cm/devicemanager/types.go kubeletDeviceManagerCheckpoint): it
# restores the resources of the last node that ran, so a node of another pool would report the old pool's resource.
DEVICE_CHECKPOINT = "kubelet_internal_checkpoint"
# The kubelet links every container's log here whatever its podLogsDir (k8s.io/kubernetes v1.33.13
# pkg/kubelet/kubelet.go ContainerLogsDir); cleanup removes the links into this node's directory.
CONTAINER_LOGS_DIR = Path("/var/log/containers")
MNT_DETACH = 2


class RealNodeError(InputError):
    """The real node cannot start here (the machine or the choice of pool), with the reason."""


# ---------------------------------------------------------------------------------------------------------
# what the node is


@dataclass(frozen=True)
class Reserves:
    """What the kubelet keeps from pods, as the plan computes it (gpu_platform/plan/node_reserve.py)."""

    kube_cpu_millis: int
    kube_memory_mib: int
    system_cpu_millis: int
    system_memory_mib: int
    eviction_memory_mib: int
    max_pods: int

    def allocatable(self, cpu_millis: int, memory_mib: int) -> tuple[int, int]:
        """The kubelet's allocatable for a capacity: capacity - kube-reserved - system-reserved - hard eviction
        (kubernetes.io/docs/tasks/administer-cluster/reserve-compute-resources, "Node Allocatable")."""
        return (cpu_millis - self.kube_cpu_millis - self.system_cpu_millis,
                memory_mib - self.kube_memory_mib - self.system_memory_mib - self.eviction_memory_mib)


def kubelet_reserves(pool: PoolPlan, vcpus: int) -> Reserves:
    """The reserves of a node of POOL with VCPUS cores, from the plan's own functions: kube-reserved as the EKS AMI
    sets it (CPU from the node's cores, memory from the pool's instance type's ENI max pods, as nodeadm computes it
    on that instance type), its hard eviction threshold, and the platform's daemonset budget as system-reserved: no
    daemonset runs on this node, as none runs on the simulated ones (gpu_platform/nodes.py), so its pods get the
    room they would have beside the daemonsets on EKS."""
    return Reserves(
        kube_cpu_millis=kube_reserved_cpu_millis(vcpus),
        kube_memory_mib=kube_reserved_memory_mib(instance_allocatable(pool.instance_type).eni_max_pods),
        system_cpu_millis=DAEMONSET_CPU_MILLIS,
        system_memory_mib=DAEMONSET_MEMORY_MIB,
        eviction_memory_mib=EVICTION_MEMORY_MIB,
        max_pods=MAX_PODS_PER_NODE,
    )


def choose_pool(plan: Plan, requested: str) -> PoolPlan:
    """The pool LOCAL_CLUSTER_REAL_NODE names, or for DEFAULT_POOL the stack's first whole-GPU pool (its first pool
    when it has none)."""
    pools = {p.name: p for p in plan.pools}
    if not pools:
        raise RealNodeError("LOCAL_CLUSTER_REAL_NODE: the stack has no GPU pool for a real node to join")
    if requested.lower() in DEFAULT_POOL:
        return next((p for p in plan.pools if p.sharing_mode == "full"), plan.pools[0])
    if requested not in pools:
        raise RealNodeError(f"LOCAL_CLUSTER_REAL_NODE={requested!r} is not a pool of the stack; pools: "
                            f"{', '.join(pools)} (or 1 for the first whole-GPU pool, none for no real node)")
    return pools[requested]


def node_name(pool: PoolPlan) -> str:
    return f"{pool.name}-real"


def node_labels(plan: Plan, pool: PoolPlan) -> dict[str, str]:
    """The labels the pool's next simulated node carries (gpu_platform.nodes.spare_nodes: the pool's labels, its
    instance type, zone and topology levels), less those the kubelet sets itself, plus NODE_KIND_LABEL."""
    labels = dict(spare_nodes(plan, {pool.name: 1})[0]["metadata"]["labels"])
    for own in ("kubernetes.io/hostname", "kubernetes.io/os", "kubernetes.io/arch"):
        labels.pop(own, None)
    labels[NODE_KIND_LABEL] = NODE_KIND_REAL
    return labels


def node_taints(plan: Plan, pool: PoolPlan) -> list[dict[str, str]]:
    return list(spare_nodes(plan, {pool.name: 1})[0]["spec"]["taints"])


def stale_nodes(live_nodes: dict[str, Any], keep: str) -> list[str]:
    """Real nodes (NODE_KIND_LABEL) other than KEEP: registered by an earlier start with another pool, or none."""
    return [n["metadata"]["name"] for n in live_nodes.get("items", [])
            if n["metadata"].get("labels", {}).get(NODE_KIND_LABEL) == NODE_KIND_REAL and n["metadata"]["name"] != keep]


def fit_problem(pool: PoolPlan, allocatable_cpu_millis: int, allocatable_memory_mib: int) -> str | None:
    """Why a one-unit pod of POOL (the job template's requests) can never run on this node, or None."""
    if pool.cpu_millis_per_unit <= allocatable_cpu_millis and pool.memory_mib_per_unit <= allocatable_memory_mib:
        return None
    return (f"a one-unit pod of pool {pool.name!r} asks {pool.cpu_millis_per_unit}m CPU and "
            f"{pool.memory_mib_per_unit}Mi; this machine's node offers {allocatable_cpu_millis}m and "
            f"{allocatable_memory_mib}Mi, so the pool's pods run on its simulated nodes only")


# ---------------------------------------------------------------------------------------------------------
# where its state lives


@dataclass(frozen=True)
class Layout:
    """The node's paths and names, all derived from the cluster's state directory (a second cluster gets others)."""

    state: Path
    device_plugin_dir: Path = DEVICE_PLUGIN_DIR   # the machine's (tests give another)

    @property
    def dir(self) -> Path:
        return self.state / DIR_NAME

    @property
    def tag(self) -> str:
        return hashlib.sha256(str(self.state.resolve()).encode()).hexdigest()[:8]

    @property
    def socket(self) -> Path:
        return self.dir / "containerd.sock"

    @property
    def bridge(self) -> str:
        return f"gprn{self.tag}"          # 12 characters (a link name has at most 15)

    @property
    def cgroup_root(self) -> str:
        return f"/gpu-platform-real-node-{self.tag}"

    @property
    def network(self) -> str:
        return f"gpu-platform-real-node-{self.tag}"

    @property
    def plugin_socket(self) -> str:
        return f"gpu-platform-{self.tag}.sock"

    @property
    def node_ip(self) -> str:
        return str(next(POD_SUBNET.hosts()))

    # what cleanup empties (the configuration files stay: the next `files` rewrites them)
    @property
    def runtime_dirs(self) -> tuple[Path, ...]:
        return tuple(self.dir / d for d in ("containerd", "runc", "kubelet", "pod-logs", "cni-state", "opt"))


# ---------------------------------------------------------------------------------------------------------
# the machine


def _machine() -> tuple[int, int]:
    """(vCPUs, MemTotal in MiB): what the kubelet's cAdvisor reports as the node's capacity."""
    meminfo = Path("/proc/meminfo").read_text()
    m = re.search(r"^MemTotal:\s+(\d+) kB", meminfo, re.M)
    if not m:
        raise RealNodeError("/proc/meminfo has no MemTotal")
    return os.cpu_count() or 1, int(m.group(1)) // 1024


def cni_dir() -> Path:
    for d in CNI_DIRS:
        if all((d / p).is_file() for p in CNI_PLUGINS):
            return d
    raise RealNodeError(f"no directory of {', '.join(CNI_PLUGINS)} CNI plugins in {', '.join(map(str, CNI_DIRS))} "
                        "(scripts/tools/containerd.sh installs Debian's containernetworking-plugins)")


def _cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")[:-1]
    except OSError:
        return []


def _pids() -> Iterable[int]:
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            yield int(entry)


def other_real_node(layout: Layout) -> str | None:
    """The command line of a kubelet of another state directory: the device-plugin directory is the machine's."""
    for pid in _pids():
        argv = _cmdline(pid)
        if argv and Path(argv[0]).name == "kubelet" and not any(str(layout.dir) in a for a in argv):
            return " ".join(argv)[:200]
    return None


def preflight(layout: Layout) -> list[str]:
    """What stops a real node on this machine (empty: nothing)."""
    problems = []
    if os.geteuid() != 0:
        problems.append("the real node needs root (it mounts, makes cgroups and network links): run as root, or "
                        "LOCAL_CLUSTER_REAL_NODE=none")
    for binary in ("containerd", "containerd-shim-runc-v2", "runc", "ctr"):
        if shutil.which(binary) is None:
            problems.append(f"{binary} is not on PATH (scripts/tools/containerd.sh installs Debian's containerd and runc)")
    try:
        cni_dir()
    except RealNodeError as err:
        problems.append(str(err))
    if len(str(layout.socket)) > MAX_SOCKET_PATH:
        problems.append(f"containerd's socket {layout.socket} is longer than {MAX_SOCKET_PATH} characters: use a "
                        "shorter LOCAL_CLUSTER_DIR")
    other = other_real_node(layout)
    if other:
        problems.append(f"another real node's kubelet runs ({other}): the kubelet's device-plugin directory "
                        f"{DEVICE_PLUGIN_DIR} is the machine's, so one real node per machine")
    clash = _route_clash(layout)
    if clash:
        problems.append(f"the pod network {POD_SUBNET} overlaps a route of this machine ({clash})")
    return problems


def _route_clash(layout: Layout) -> str | None:
    try:
        out = subprocess.run(["ip", "-j", "route", "show", "table", "all"], capture_output=True, text=True,
                             check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    for route in json.loads(out or "[]"):
        dst, dev = route.get("dst", ""), route.get("dev", "")
        if dev == layout.bridge or dst in ("default", "") or route.get("type") in ("local", "broadcast"):
            continue
        try:
            net = ipaddress.ip_network(dst, strict=False)
        except ValueError:
            continue
        if net.version == 4 and net.overlaps(POD_SUBNET):
            return f"{dst} dev {dev}"
    return None


# ---------------------------------------------------------------------------------------------------------
# files


CAP_SYS_RESOURCE = 24  # linux/capability.h


def can_lower_oom_score() -> bool:
    """Whether this process may lower an oom_score_adj (CAP_SYS_RESOURCE; some sandboxes' bounding sets lack it)."""
    m = re.search(r"^CapEff:\s+([0-9a-f]+)", Path("/proc/self/status").read_text(), re.M)
    return bool(m and int(m.group(1), 16) >> CAP_SYS_RESOURCE & 1)


def containerd_config(layout: Layout, runc: str, cni: Path, pause_image: str, lower_oom_score: bool = True) -> str:
    """containerd 1.6's configuration (version 2): every path under the node's directory, the CRI plugin with
    runc under cgroupfs, the CNI network of `cni_config`, and the kubelet's sandbox image. Without LOWER_OOM_SCORE
    (no CAP_SYS_RESOURCE) runc cannot give a sandbox the kubelet's -998 and the pod never starts ("failed to update
    /proc/self/oom_score_adj: Permission denied"), so containerd keeps every score at its own or above
    (restrict_oom_score_adj, containerd v1.6.20 pkg/cri/config/config.go RestrictOOMScoreAdj: "useful when the
    containerd does not have permission to decrease OOMScoreAdj")."""
    d = layout.dir
    cri = '[plugins."io.containerd.grpc.v1.cri"]'
    return "\n".join([
        "version = 2",
        f'root = "{d / "containerd" / "root"}"',
        f'state = "{d / "containerd" / "state"}"',
        # Not containerd's: they would only log errors on this machine (no btrfs, zfs, devmapper or aufs).
        'disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", '
        '"io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs"]',
        "[grpc]",
        f'  address = "{layout.socket}"',
        '[plugins."io.containerd.internal.v1.opt"]',
        f'  path = "{d / "opt"}"',
        cri,
        # The kubelet's default sandbox image at its version (scripts/tools/node-images.sh), not containerd 1.6's
        # pause:3.6: the image the kubelet's image garbage collection keeps.
        f'  sandbox_image = "{pause_image}"',
        # Network namespaces are mounts under the state directory, not /var/run/netns: cleanup finds them there.
        "  netns_mounts_under_state_dir = true",
        # EKS's AMIs run no AppArmor; loading containerd's profile would need apparmor_parser and change the host.
        "  disable_apparmor = true",
        f"  restrict_oom_score_adj = {'false' if lower_oom_score else 'true'}",
        f"{cri[:-1]}.containerd]",
        '  snapshotter = "overlayfs"',
        '  default_runtime_name = "runc"',
        f'{cri[:-1]}.containerd.runtimes.runc]',
        '  runtime_type = "io.containerd.runc.v2"',
        f'{cri[:-1]}.containerd.runtimes.runc.options]',
        f'  BinaryName = "{runc}"',
        f'  Root = "{d / "runc"}"',
        "  SystemdCgroup = false",
        f"{cri[:-1]}.cni]",
        f'  bin_dir = "{cni}"',
        f'  conf_dir = "{d / "cni"}"',
        "",
    ])


def cni_config(layout: Layout) -> dict[str, Any]:
    """The bridge network: the bridge holds the gateway address (the node's), pods get an address of POD_SUBNET
    and no route but the subnet's own (isGateway without isDefaultGateway), nothing is masqueraded; host-local
    keeps its leases under the node's directory; portmap serves hostPort."""
    return {
        "cniVersion": "1.0.0",
        "name": layout.network,
        "plugins": [
            {"type": "bridge", "bridge": layout.bridge, "isGateway": True, "isDefaultGateway": False,
             "ipMasq": False, "hairpinMode": True,
             "ipam": {"type": "host-local", "ranges": [[{"subnet": str(POD_SUBNET), "gateway": layout.node_ip}]],
                      "dataDir": str(layout.dir / "cni-state" / "ipam")}},
            {"type": "portmap", "capabilities": {"portMappings": True}},
        ],
    }


def kubelet_config(layout: Layout, plan: Plan, pool: PoolPlan, reserves: Reserves, port: int, healthz_port: int,
                   ca_file: Path, lower_oom_score: bool = True) -> dict[str, Any]:
    """The KubeletConfiguration (kubelet.config.k8s.io/v1beta1 at v1.33). Without LOWER_OOM_SCORE the kubelet keeps
    its own oom_score_adj (0) instead of its default -999, which it could not set."""
    own = {} if lower_oom_score else {"oomScoreAdj": 0}
    return own | {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "address": layout.node_ip,
        "port": port,
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": healthz_port,
        # The API server's kubelet client authenticates with its certificate and is authorized by the API server.
        "authentication": {"anonymous": {"enabled": False}, "webhook": {"enabled": True},
                           "x509": {"clientCAFile": str(ca_file)}},
        "authorization": {"mode": "Webhook"},
        "containerRuntimeEndpoint": f"unix://{layout.socket}",
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": layout.cgroup_root,
        # cgroup v1 is in maintenance at 1.33 and still allowed (failCgroupV1 defaults to false: k8s.io/kubernetes
        # v1.33.13 pkg/kubelet/apis/config/v1beta1/defaults.go); said explicitly, as this machine kind runs v1.
        "failCgroupV1": False,
        "failSwapOn": True,
        "maxPods": reserves.max_pods,
        "kubeReserved": {"cpu": f"{reserves.kube_cpu_millis}m", "memory": f"{reserves.kube_memory_mib}Mi"},
        "systemReserved": {"cpu": f"{reserves.system_cpu_millis}m", "memory": f"{reserves.system_memory_mib}Mi"},
        "evictionHard": {"memory.available": f"{reserves.eviction_memory_mib}Mi"},
        # The other hard thresholds keep the kubelet's defaults (pkg/kubelet/apis/config/types.go
        # MergeDefaultEvictionSettings; without it a partial evictionHard drops them).
        "mergeDefaultEvictionSettings": True,
        "registerWithTaints": node_taints(plan, pool),
        "podLogsDir": str(layout.dir / "pod-logs"),
        "volumePluginDir": str(layout.dir / "kubelet-volume-plugins"),
        "shutdownGracePeriod": "0s",
        "rotateCertificates": False,
        "serverTLSBootstrap": False,
    }


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
    """PORTS: the kubelet's server and healthz ports (scripts/local-cluster decides them)."""
    """Check the machine and the pool, then write every file the node's processes read; the node's facts."""
    pool = choose_pool(plan, requested)
    problems = preflight(layout)
    if problems:
        raise RealNodeError("the real node cannot start on this machine:\n  " + "\n  ".join(problems))
    vcpus, memory_mib = _machine()
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
    if _ip("link", "show", layout.bridge).returncode != 0:
        _check(_ip("link", "add", layout.bridge, "type", "bridge"), "creating the bridge")
    if address not in _ip("-o", "-4", "addr", "show", "dev", layout.bridge).stdout:
        _check(_ip("addr", "add", address, "dev", layout.bridge), f"giving the bridge {address}")
    _check(_ip("link", "set", layout.bridge, "up"), "bringing the bridge up")


def cgroup_root_up(layout: Layout) -> None:
    """The kubelet's cgroup root in every mounted hierarchy: the kubelet checks it exists and makes its QoS cgroups
    below it (k8s.io/kubernetes v1.33.13 pkg/kubelet/cm/container_manager_linux.go NewContainerManager,
    cgroup_v1_manager_linux.go Validate). A v1 cpuset cgroup starts with no CPUs and no memory nodes, so it gets
    its parent's."""
    for mount in _cgroup_mounts():
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


# ---------------------------------------------------------------------------------------------------------
# cleanup


def _mountpoints() -> list[str]:
    """Every mount point of this mount namespace (mountinfo's fifth field, its octal escapes undone)."""
    points = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        field = line.split()[4]
        points.append(re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field))
    return points


def _under(path: str, root: Path) -> bool:
    return path == str(root) or path.startswith(f"{root}/")


def _unmount_all(root: Path) -> list[str]:
    """Detach every mount at or below ROOT, deepest first; the ones still there afterwards."""
    libc = ctypes.CDLL(None, use_errno=True)
    for _ in range(5):  # a mount stacked on another shows again once the top one is gone
        points = sorted({p for p in _mountpoints() if _under(p, root)}, key=lambda p: p.count("/"), reverse=True)
        if not points:
            return []
        for p in points:
            libc.umount2(p.encode(), MNT_DETACH)  # a failure shows as a mount that stays
    return sorted({p for p in _mountpoints() if _under(p, root)})


def _cgroup_mounts() -> list[Path]:
    """Every mounted cgroup hierarchy (v1 controllers and named ones, and v2)."""
    mounts = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        if right.split()[0] in ("cgroup", "cgroup2"):
            mounts.append(Path(left.split()[4]))
    return mounts


def _cgroup_roots(layout: Layout) -> list[Path]:
    """The node's cgroup root in every hierarchy where it exists."""
    return [r for m in _cgroup_mounts() if (r := m / layout.cgroup_root.lstrip("/")).is_dir()]


def _cgroup_pids(roots: Iterable[Path]) -> set[int]:
    pids: set[int] = set()
    for root in roots:
        for procs in root.rglob("cgroup.procs"):
            try:
                pids.update(int(p) for p in procs.read_text().split())
            except OSError:
                continue
    return pids


def _shim_pids(layout: Layout) -> set[int]:
    """containerd's shims of this node: their command line names its socket."""
    return {pid for pid in _pids() if (argv := _cmdline(pid)) and Path(argv[0]).name.startswith("containerd-shim")
            and any(str(layout.socket) in a for a in argv)}


def _kill_all(find: Callable[[], set[int]], timeout: float = 10) -> set[int]:
    """SIGKILL what FIND() returns until it returns nothing or TIMEOUT passes; what is left."""
    deadline = time.monotonic() + timeout
    while (pids := find() - {os.getpid()}) and time.monotonic() < deadline:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.1)
    return find() - {os.getpid()}


def _remove_cgroups(roots: Iterable[Path], timeout: float = 10) -> list[str]:
    """rmdir every cgroup below and at each root, children first (a cgroup empties a moment after its last
    process exits); those that stay."""
    left: list[str] = []
    deadline = time.monotonic() + timeout
    for root in roots:
        while root.exists():
            for d, _, _ in sorted(os.walk(root), key=lambda w: w[0].count("/"), reverse=True):
                try:
                    os.rmdir(d)
                except OSError:
                    pass
            if not root.exists() or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        if root.exists():
            left.append(str(root))
    return left


def _ip(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True)


def cleanup(layout: Layout) -> list[str]:
    """Undo what the node's processes leave (module docstring): the problems that remain (empty: none). Safe to
    run when nothing is left, and idempotent."""
    problems: list[str] = []
    roots = _cgroup_roots(layout)
    if left := _kill_all(lambda: _cgroup_pids(roots)):
        problems.append(f"container processes still running: {sorted(left)}")
    if left := _kill_all(lambda: _shim_pids(layout)):
        problems.append(f"containerd shims still running: {sorted(left)}")
    if layout.dir.exists() and (mounts := _unmount_all(layout.dir)):
        problems.append(f"still mounted: {', '.join(mounts)}")
    if _ip("link", "show", layout.bridge).returncode == 0:
        # A pod's veth goes with its network namespace (gone once unmounted and unused); one still on the bridge
        # is deleted with its peer, then the bridge.
        ports = json.loads(_ip("-j", "link", "show", "master", layout.bridge).stdout or "[]")
        for link in [p["ifname"] for p in ports] + [layout.bridge]:
            out = _ip("link", "delete", link)
            if out.returncode != 0 and _ip("link", "show", link).returncode == 0:
                problems.append(f"ip link delete {link}: {out.stderr.strip()}")
    if left := _remove_cgroups(roots):
        problems.append(f"cgroups not removed: {', '.join(left)}")
    if CONTAINER_LOGS_DIR.is_dir():
        for link in CONTAINER_LOGS_DIR.iterdir():
            if link.is_symlink() and _under(os.readlink(link), layout.dir):
                link.unlink(missing_ok=True)
    (layout.device_plugin_dir / layout.plugin_socket).unlink(missing_ok=True)
    if other_real_node(layout) is None:  # the kubelet's own socket and checkpoint there, when no kubelet runs
        for name in (DEVICE_CHECKPOINT, "kubelet.sock"):
            (layout.device_plugin_dir / name).unlink(missing_ok=True)
    # libcni's cache of the node's pods (github.com/containernetworking/cni libcni: /var/lib/cni/results,
    # CacheDir's default, which containerd 1.6 keeps).
    for cached in Path("/var/lib/cni/results").glob(f"{layout.network}-*"):
        cached.unlink(missing_ok=True)
    if not problems:
        # The runtime's and the kubelet's state of pods that no longer run: only once nothing is mounted below it.
        for d in layout.runtime_dirs:
            shutil.rmtree(d, ignore_errors=True)
        for stale in ("gpu-device-plugin.ready", "containerd.sock", "containerd.sock.ttrpc"):
            (layout.dir / stale).unlink(missing_ok=True)
    return problems


# ---------------------------------------------------------------------------------------------------------
# command line


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m localcluster.realnode", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    f = sub.add_parser("prepare", help="check the machine and the pool; write the node's files under STATE/real-node "
                                       "and bring its bridge up")
    f.add_argument("--stack", required=True, help="a stack name or the path of a stack file")
    f.add_argument("--pool", required=True, help="LOCAL_CLUSTER_REAL_NODE: a pool, or 1 for the first whole-GPU pool")
    f.add_argument("--state", required=True, type=Path)
    f.add_argument("--kubelet-port", required=True, type=int)
    f.add_argument("--healthz-port", required=True, type=int)
    f.add_argument("--pki", required=True, type=Path)
    f.add_argument("--pause-image", required=True)
    c = sub.add_parser("cleanup", help="kill, unmount and remove what the node left (after its processes stopped)")
    c.add_argument("--state", required=True, type=Path)
    n = sub.add_parser("node-name", help="the real node's name for a stack and LOCAL_CLUSTER_REAL_NODE")
    n.add_argument("--stack", required=True)
    n.add_argument("--pool", required=True)
    s = sub.add_parser("stale-nodes", help="real nodes other than --keep (kubectl get nodes -o json on stdin)")
    s.add_argument("--keep", default="")
    args = p.parse_args(argv)
    try:
        if args.command == "node-name":
            print(node_name(choose_pool(load_plan(args.stack, None)[1], args.pool)))
            return 0
        if args.command == "stale-nodes":
            print("".join(f"{name}\n" for name in stale_nodes(json.load(sys.stdin), args.keep)), end="")
            return 0
        layout = Layout(args.state.resolve())
        if args.command == "prepare":
            plan = load_plan(args.stack, None)[1]
            facts = write_files(plan, args.pool, layout, (args.kubelet_port, args.healthz_port), args.pki,
                                args.pause_image)
            print(f"real node {facts.name}: pool {facts.pool.name}, {facts.pool.units_per_node} x "
                  f"{facts.pool.resource_name}, allocatable {facts.allocatable[0]}m CPU and {facts.allocatable[1]}Mi "
                  f"of {facts.capacity[0]}m and {facts.capacity[1]}Mi", file=sys.stderr)
            if facts.fit:
                print(f"warning: {facts.fit}", file=sys.stderr)
            return 0
        problems = cleanup(layout)
        for problem in problems:
            print(f"error: real node cleanup: {problem}", file=sys.stderr)
        return 1 if problems else 0
    except InputError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
