"""The EKS cluster (`EksCluster`: control plane, node role, add-ons, system node group, access) and its GPU node
pools: one `GpuNodePool` (managed node group, launch template, placement group) per pool.

Only used when `cluster.provider: eks` (GpuPlatform skips it for `existing`). Every number, label, taint and
capacity setting comes from the plan; these modules only know how AWS spells them (aws_names), and cite the
page each AWS fact comes from. One module per part: user_data, network_interfaces, cluster, gpu_node_pool,
system_pool, and the component that wires them.
"""

from __future__ import annotations

import pulumi  # noqa: F401  (the module warn_missing_logs logs through)

from .aws_names import IMDS_HOP_LIMIT, NODE_ROLE_POLICIES
from .cluster import ClusterAccess, kubeconfig_for, vpc_cni_configuration, warn_missing_logs
from .component import EksCluster
from .gpu_node_pool import GpuNodePool
from .network_interfaces import efa_interface_layout, efa_interfaces
from .system_pool import system_node_group
from .user_data import bottlerocket_user_data, nodeadm_user_data, user_data

__all__ = [
    "IMDS_HOP_LIMIT", "NODE_ROLE_POLICIES", "ClusterAccess", "EksCluster", "GpuNodePool", "bottlerocket_user_data",
    "efa_interface_layout", "efa_interfaces", "kubeconfig_for", "nodeadm_user_data", "system_node_group",
    "user_data", "vpc_cni_configuration", "warn_missing_logs",
]
