"""What the real node is: the pool it joins, what its kubelet reserves, its labels and taints, and where its state
lives (Layout: every path and name derived from the cluster's state directory, so a second cluster gets others)."""

from __future__ import annotations

import hashlib
import ipaddress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpu_platform import conventions as cv
from gpu_platform.errors import InputError

if TYPE_CHECKING:  # the plan's modules load when a node is decided, not when the driver only stops or asks
    from gpu_platform.plan import Plan, PoolPlan

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
# The kubelet's device-plugin directory: a constant of the kubelet, not a setting (k8s.io/kubelet v0.33.13
# pkg/apis/deviceplugin/v1beta1/constants.go DevicePluginPath; k8s.io/kubernetes v1.33.13
# pkg/kubelet/cm/devicemanager/manager.go NewManagerImpl), so one real node per machine.
DEVICE_PLUGIN_DIR = Path("/var/lib/kubelet/device-plugins")


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
    from gpu_platform.plan.node_reserve import (
        DAEMONSET_CPU_MILLIS, DAEMONSET_MEMORY_MIB, EVICTION_MEMORY_MIB, MAX_PODS_PER_NODE, instance_allocatable,
        kube_reserved_cpu_millis, kube_reserved_memory_mib,
    )

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
    from gpu_platform.nodes import spare_nodes

    labels = dict(spare_nodes(plan, {pool.name: 1})[0]["metadata"]["labels"])
    for own in ("kubernetes.io/hostname", "kubernetes.io/os", "kubernetes.io/arch"):
        labels.pop(own, None)
    labels[NODE_KIND_LABEL] = NODE_KIND_REAL
    return labels


def node_taints(plan: Plan, pool: PoolPlan) -> list[dict[str, str]]:
    from gpu_platform.nodes import spare_nodes

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


# The kubelet's default hard eviction thresholds for free space, which the real node keeps
# (k8s.io/kubernetes v1.33.13 pkg/kubelet/eviction/defaults_linux.go: nodefs.available 10%, imagefs.available 15%).
# imagefs.available is observed from the runtime's image file system whether or not it is a dedicated one
# (helpers.go makeSignalObservations) and means DiskPressure; containerd's image store is on the node's own file
# system here, so the stricter 15% holds.
FREE_SPACE_MIN = 0.15


def disk_problem(path: Path, free_bytes: int, total_bytes: int) -> str | None:
    """Why the node would be tainted node.kubernetes.io/disk-pressure at once (so that no pod ever runs on it),
    or None: the file system of PATH has less free space than the kubelet's hard eviction threshold."""
    if total_bytes <= 0 or free_bytes / total_bytes >= FREE_SPACE_MIN:
        return None
    return (f"the file system of {path} has {free_bytes / 2**30:.1f} GiB free of {total_bytes / 2**30:.0f} GiB "
            f"({free_bytes / total_bytes:.0%}), under the kubelet's hard eviction thresholds (nodefs.available 10%, "
            f"imagefs.available 15%): the node would report DiskPressure and be tainted "
            f"node.kubernetes.io/disk-pressure, so no pod would run on it; free space on it first")


# ---------------------------------------------------------------------------------------------------------
# where its state lives


# What the machine knows a node by, from its tag (TAG_LENGTH hex digits of its state directory's hash). A link
# name has at most 15 characters (IFNAMSIZ), so the bridge is BRIDGE_PREFIX and the tag: 12.
TAG_LENGTH = 8
BRIDGE_PREFIX = "gprn"
CGROUP_PREFIX = "gpu-platform-real-node-"


@dataclass(frozen=True)
class Names:
    """A node's names on the machine (its bridge, cgroup root, CNI network, device-plugin socket): derived from its
    tag alone, so the leftovers of a node whose state directory is gone can still be found by them (orphans)."""

    tag: str

    @property
    def bridge(self) -> str:
        return f"{BRIDGE_PREFIX}{self.tag}"

    @property
    def cgroup_root(self) -> str:
        return f"/{CGROUP_PREFIX}{self.tag}"

    @property
    def network(self) -> str:
        return f"{CGROUP_PREFIX}{self.tag}"

    @property
    def plugin_socket(self) -> str:
        return f"gpu-platform-{self.tag}.sock"


def state_tag(state: Path) -> str:
    return hashlib.sha256(str(state.resolve()).encode()).hexdigest()[:TAG_LENGTH]


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
        return state_tag(self.state)

    @property
    def names(self) -> Names:
        return Names(self.tag)

    @property
    def socket(self) -> Path:
        return self.dir / "containerd.sock"

    @property
    def socket_paths(self) -> tuple[str, ...]:
        """The longest path each process binds a socket at: containerd's ttrpc socket (its socket's path and
        ".ttrpc"), the kubelet's pod-resources socket, which it binds at a temporary name first (os.CreateTemp's up
        to 10 digits: k8s.io/cri-client v0.33.13 pkg/util/util_unix.go CreateListener) in
        <root-dir>/pod-resources (k8s.io/kubernetes v1.33.13 pkg/kubelet/config/defaults.go)."""
        return (f"{self.socket}.ttrpc", str(self.dir / "kubelet" / "pod-resources" / ("9" * 10)))

    @property
    def bridge(self) -> str:
        return self.names.bridge

    @property
    def cgroup_root(self) -> str:
        return self.names.cgroup_root

    @property
    def network(self) -> str:
        return self.names.network

    @property
    def plugin_socket(self) -> str:
        return self.names.plugin_socket

    @property
    def node_ip(self) -> str:
        return str(next(POD_SUBNET.hosts()))

    # what cleanup empties (the configuration files stay: the next `files` rewrites them)
    @property
    def runtime_dirs(self) -> tuple[Path, ...]:
        return tuple(self.dir / d for d in ("containerd", "runc", "kubelet", "pod-logs", "cni-state", "opt"))
