"""AWS: the names of what the stack makes (node groups, launch templates, placement and security groups),
its tags and the IAM role ARN format."""

from __future__ import annotations

import re

from .labels import ENVIRONMENT, PREFIX, SYSTEM_POOL_NAME


# ==== AWS: names of what the stack makes, tags, IAM =========================================================
# AWS tags: the pool labels become cost-allocation tags under the same keys.
TAG_PLATFORM = f"{PREFIX}/platform"
TAG_ENVIRONMENT = ENVIRONMENT
TAG_CLUSTER = f"{PREFIX}/cluster"
# AWS tag on an EKS access entry: the team (or "platform") whose spec entry made it.
TAG_ACCESS_OWNER = f"{PREFIX}/access-owner"
# An IAM role ARN (IAM API reference, CreateRole: RoleName [\w+=,.@-]{1,64}, Path "/" or "/.../"; ARN
# partitions aws, aws-cn, aws-us-gov; account ids are 12 digits).
IAM_ROLE_ARN = re.compile(r"^arn:aws(?:-cn|-us-gov)?:iam::\d{12}:role/(?:[\w+=,.@-]+/)*[\w+=,.@-]{1,64}$")


def node_group_name(cluster: str, pool: str) -> str:
    return f"{cluster}-{pool}"


def system_node_group_name(cluster: str) -> str:
    """The system pool's node group: named like a GPU pool called `system`, which is why no GPU pool may
    take that name when there is a system pool."""
    return node_group_name(cluster, SYSTEM_POOL_NAME)


def launch_template_prefix(cluster: str, pool: str) -> str:
    """A prefix, not a name: a pool's launch template is replaced when its instance type changes, and the
    new one must exist before the old one goes (AWS adds a unique suffix)."""
    return f"{node_group_name(cluster, pool)}-"


def placement_group_name(cluster: str, pool: str) -> str:
    return node_group_name(cluster, pool)


def efa_security_group_name(cluster: str) -> str:
    """The security group every EFA interface of the cluster carries besides the cluster's own: all traffic
    to and from itself, which EFA's traffic needs (components/node_pools/cluster.py, efa_security_group)."""
    return f"{cluster}-efa"
