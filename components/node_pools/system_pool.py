"""The system node group: untainted CPU nodes for the add-ons, since every GPU pool is tainted."""

from __future__ import annotations

from typing import Sequence

import pulumi
import pulumi_aws as aws

from gpu_platform import conventions as cv
from gpu_platform.plan import NODE_UPDATE_MAX_UNAVAILABLE, Plan, SystemPoolPlan

from .aws_names import EKS_CAPACITY_TYPE
from .cluster import ClusterAccess
from .node_health import node_repair_config


def system_node_group(
    plan: Plan,
    sp: SystemPoolPlan,
    cluster: ClusterAccess,
    node_role_arn: pulumi.Input[str],
    ready: Sequence[pulumi.Resource],
    parent: pulumi.Resource,
) -> aws.eks.NodeGroup:
    """The system pool: a plain managed node group (EKS's own launch template: no EFA, no instance store to
    set up), untainted so CoreDNS, Kueue, the GPU Operator controller and monitoring schedule without any
    toleration, across all of the cluster's subnets."""
    c = plan.cluster
    return aws.eks.NodeGroup(
        "np-system",
        cluster_name=cluster.name,
        node_group_name=sp.node_group_name,
        node_role_arn=node_role_arn,
        subnet_ids=list(cluster.subnet_ids),
        ami_type=sp.ami_type,
        instance_types=[sp.instance_type],
        capacity_type=EKS_CAPACITY_TYPE["on-demand"],
        disk_size=sp.disk_gib,
        version=c.kubernetes_version,
        scaling_config=aws.eks.NodeGroupScalingConfigArgs(
            min_size=sp.min_nodes, max_size=sp.max_nodes, desired_size=sp.desired_nodes,
        ),
        update_config=aws.eks.NodeGroupUpdateConfigArgs(max_unavailable=NODE_UPDATE_MAX_UNAVAILABLE),
        node_repair_config=node_repair_config(),
        labels=dict(sp.labels),
        tags={**plan.platform_tags, cv.NODE_ROLE: cv.SYSTEM_NODE_ROLE},
        opts=pulumi.ResourceOptions(
            parent=parent,
            depends_on=list(ready),
            ignore_changes=["scalingConfig.desiredSize"],
            protect=plan.environment == "prod",
        ),
    )
