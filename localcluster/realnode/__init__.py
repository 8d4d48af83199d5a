"""The live local cluster's real node: one kubelet, with containerd, runc and CNI bridge networking, beside the
KWOK nodes, registered with one pool's labels and taints, so that pods of that pool run as processes (signals,
exit codes, grace periods, cgroup limits, allocatable memory) while every other node stays simulated.

The local cluster's driver runs its three processes (containerd, the kubelet and the GPU device plugin,
localcluster/deviceplugin) as it runs every other component, with pid files (`processes`), and this package
decides the rest:

- `node`: which pool it joins (LOCAL_CLUSTER_REAL_NODE), what its kubelet reserves, its labels and taints, and
  where its state lives (Layout).
- `machine` and `prepare`: the checks of the machine (root, the runtime and CNI plugins, one real node per
  machine, the pod network's routes), then what the processes are given under <state>/real-node: containerd's
  configuration (its own root, state, socket and runc root, never the system's), the CNI bridge network, the
  KubeletConfiguration and its flags (`config`), the device plugin's flags, the ClusterRoleBinding the API
  server's kubelet client needs (`kubectl logs`, `exec`); and the bridge itself, with the node's address, which
  the kubelet needs before any pod exists.
- `leftovers`: what a stopped or crashed node leaves behind and the kernel keeps, removed after every stop and
  before every start; `orphans`: what nodes of other state directories left when none of them runs (a cluster
  killed whole whose directory is gone), removed before every start.

The network: a Linux bridge with the node's address (the kubelet serves there and the API server reaches it),
pods on a /24 with no default route, no masquerade and no route off the machine (the pod network reaches only the
bridge's own addresses). The kubelet: cgroupfs driver under a cgroup root of its own, reserves from the plan's
node_reserve functions (kubelet_reserves), the pool's GPU resource from the device plugin.
"""

from __future__ import annotations

from .leftovers import DEVICE_CHECKPOINT, cgroup_pids, cgroup_roots, cleanup, mountpoints, release
from .config import cni_config, containerd_config, kubelet_config
from .machine import preflight
from .node import (
    DEVICE_PLUGIN_DIR, Names, NODE_KIND_LABEL, NODE_KIND_REAL, OFF, Layout, RealNodeError, Reserves, choose_pool, fit_problem,
    kubelet_reserves, node_labels, node_name, node_taints, stale_nodes,
)
from .prepare import NodeFiles, write_files

__all__ = [
    "DEVICE_CHECKPOINT", "DEVICE_PLUGIN_DIR", "cgroup_pids", "cgroup_roots", "mountpoints", "NODE_KIND_LABEL", "NODE_KIND_REAL", "OFF", "Layout", "Names", "NodeFiles", "RealNodeError", "Reserves", "choose_pool",
    "cleanup", "cni_config", "containerd_config", "fit_problem", "kubelet_config", "kubelet_reserves", "node_labels",
    "node_name", "node_taints", "preflight", "release", "stale_nodes", "write_files",
]
