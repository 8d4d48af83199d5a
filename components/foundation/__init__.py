"""What a fresh AWS account lacks before the platform can go on it: the VPC a created cluster runs in (vpc) and
the CI roles that deploy it from GitHub Actions (ci_roles).

Only used for `cluster.create` stacks with `cluster.vpc` (and `cluster.ci`); the control plane itself is made by
components/node_pools (create_cluster), in these subnets. Everything here comes from the plan.
"""

from .ci_roles import CiRoles
from .vpc import ClusterNetwork

__all__ = ["CiRoles", "ClusterNetwork"]
