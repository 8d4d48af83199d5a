"""The derived plan: every number and name the components need, computed once from a validated spec.

Split along its seams (quantities, node_reserve, the dataclasses in pools/teams/cluster/addons/model,
builders, warnings); the names below are the package's public ones, so `from gpu_platform.plan import X` works for all.
"""

from .addons import (
    AddonsPlan, EfaDevicePluginAddonPlan, GpuOperatorAddonPlan, KueueAddonPlan, MonitoringAddonPlan,
    MultiKueueWorkerPlan,
)
from .builders import build_plan
from .cluster import ClusterPlan, OidcProviderPlan, SystemPoolPlan
from .model import Plan
from .ci import CiPlan
from .network import SubnetPlan, VpcPlan
from .node_reserve import (
    DAEMONSET_CPU_MILLIS, DAEMONSET_MEMORY_MIB, EVICTION_MEMORY_MIB, MAX_PODS_PER_NODE, reserved_cpu_millis,
    reserved_memory_mib,
)
from .pools import CHECKPOINT_DESTINATIONS, NODE_UPDATE_MAX_UNAVAILABLE, PoolPlan, Taint
from .quantities import cpu_quantity, memory_quantity
from .teams import (
    CONTAINER_DEFAULT_LIMIT, CONTAINER_DEFAULT_REQUEST, CohortPlan, EgressPlan, PreemptionPlan, PriorityPlan, QuotaPlan,
    TeamPlan,
)

__all__ = [
    "AddonsPlan", "EfaDevicePluginAddonPlan", "GpuOperatorAddonPlan", "KueueAddonPlan", "MonitoringAddonPlan",
    "CiPlan", "MultiKueueWorkerPlan", "OidcProviderPlan",
    "CHECKPOINT_DESTINATIONS", "CONTAINER_DEFAULT_LIMIT", "CONTAINER_DEFAULT_REQUEST", "DAEMONSET_CPU_MILLIS",
    "DAEMONSET_MEMORY_MIB", "EVICTION_MEMORY_MIB", "MAX_PODS_PER_NODE", "NODE_UPDATE_MAX_UNAVAILABLE", "ClusterPlan",
    "CohortPlan", "EgressPlan", "Plan", "PoolPlan", "PreemptionPlan", "PriorityPlan", "QuotaPlan", "SystemPoolPlan",
    "SubnetPlan", "Taint", "TeamPlan", "VpcPlan", "build_plan", "cpu_quantity", "memory_quantity",
    "reserved_cpu_millis", "reserved_memory_mib",
]
