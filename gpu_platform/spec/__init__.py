"""The config contract (`gpu-platform:platform` in Pulumi.<stack>.yaml) as strict pydantic models.

Validation is all-or-nothing and happens before any resource is registered: `load_platform` either
returns a fully checked `Platform` or raises `SpecError` listing every problem with its config path
(`teams[2].quotas.h100-train.units`), the offending value and what would be valid.

One module per part of the config (addons, cluster, pools, security, tenancy, platform), the shared
vocabulary in fields, outside limits in limits, pydantic errors as Problems in problems, the cross-field
checks in checks and parsing in loading; this package re-exports what the other layers use.
"""

from __future__ import annotations

from ..conventions import CONFIG_KEY
from ..errors import Problem, SpecError
from .addons import (
    AddonClusterAutoscaler, AddonEfaDevicePlugin, AddonGpuOperator, AddonJobSet, AddonKarpenter, AddonKubeRay, AddonKueue,
    AddonLeaderWorkerSet, AddonMonitoring, AddonTrainer, AddonVpcCni, Addons,
)
from .cluster import Cluster, SystemPool
from .limits import KARPENTER_CAPACITY_TYPES
from .loading import load_platform, load_stack_config
from .checks import validate
from .platform import MultiKueue, MultiKueueWorker, Platform
from .pools import Capacity, KarpenterPool, Pool, Sharing
from .security import (
    JOB_MAX_TTL_SECONDS_DEFAULT, JOB_TERMINATION_GRACE_SECONDS_DEFAULT, JOB_TTL_SECONDS_DEFAULT, AccessEntry, Identity, Images, Jobs, OidcProvider,
)
from .tenancy import Cohort, Egress, Groups, NamespaceLimits, Preemption, Priority, Quota, Team

__all__ = [
    "CONFIG_KEY", "JOB_MAX_TTL_SECONDS_DEFAULT", "JOB_TERMINATION_GRACE_SECONDS_DEFAULT", "JOB_TTL_SECONDS_DEFAULT", "KARPENTER_CAPACITY_TYPES",
    "AccessEntry", "AddonClusterAutoscaler", "AddonEfaDevicePlugin", "AddonGpuOperator", "AddonJobSet", "AddonKarpenter", "AddonKubeRay",
    "AddonKueue", "AddonLeaderWorkerSet", "AddonMonitoring", "AddonTrainer", "AddonVpcCni", "Addons", "Capacity", "Cluster", "Cohort", "Egress", "Groups", "Identity", "Images", "Jobs",
    "KarpenterPool", "MultiKueue", "MultiKueueWorker", "NamespaceLimits", "OidcProvider", "Platform", "Pool",
    "Preemption", "Priority", "Problem", "Quota", "Sharing", "SpecError", "SystemPool", "Team",
    "load_platform", "load_stack_config", "validate",
]
