"""GpuNodePool: one pool as an EKS managed node group on its own launch template (and placement group)."""

from __future__ import annotations

from typing import Any, Sequence

import pulumi
import pulumi_aws as aws

from gpu_platform import conventions as cv
from gpu_platform.plan import ClusterPlan, Plan, PoolPlan

from .aws_names import (
    DATA_VOLUME_DEVICE, EKS_CAPACITY_TYPE, EKS_TAINT_EFFECT, IMDS_HOP_LIMIT, TAGGED_RESOURCE_TYPES,
)
from .cluster import ClusterAccess
from .network_interfaces import efa_interfaces
from .node_health import node_repair_config
from .user_data import user_data


def _one_zone_subnets(cluster: ClusterPlan, pool: PoolPlan, opts: pulumi.InvokeOutputOptions) -> pulumi.Output[list[str]]:
    """The cluster's subnets in the pool's zone, looked up (cluster.subnetIds). EFA traffic and reservations do not
    cross zones, so a single-zone pool must not be given subnets elsewhere (a capacity block's node group must name
    only subnets in the reservation's zone: EKS user guide, Capacity Blocks for ML)."""
    found = aws.ec2.get_subnets_output(
        filters=[
            aws.ec2.GetSubnetsFilterArgs(name="subnet-id", values=list(cluster.subnet_ids)),
            aws.ec2.GetSubnetsFilterArgs(name="availability-zone", values=[pool.availability_zone]),
        ],
        opts=opts,
    )

    def check(ids: Sequence[str] | None) -> list[str]:
        if not ids:
            raise ValueError(
                f"pool {pool.name!r}: none of cluster.subnetIds ({', '.join(cluster.subnet_ids)}) is in "
                f"availabilityZone {pool.availability_zone!r}; add a subnet in that zone to cluster.subnetIds"
            )
        return sorted(ids)

    return found.ids.apply(check)


def _zone_subnets(cluster: ClusterAccess, plan: Plan, pool: PoolPlan, opts: pulumi.InvokeOutputOptions,
                  ) -> pulumi.Input[Sequence[pulumi.Input[str]]]:
    """A single-zone pool's subnets: the zone's own subnet of a VPC made here (components/foundation), else the
    given subnets in that zone."""
    if cluster.zone_subnets is not None:
        return [cluster.zone_subnets[pool.availability_zone]]  # type: ignore[index]
    return _one_zone_subnets(plan.cluster, pool, opts)


def _autoscaling_group_name(resources: Sequence[aws.eks.outputs.NodeGroupResource] | None) -> str:
    """The node group's one Auto Scaling group (EKS DescribeNodegroup resources.autoScalingGroups[0].name)."""
    groups = resources[0].autoscaling_groups if resources else None
    if not groups or not groups[0].name:
        raise ValueError("the node group reports no Auto Scaling group")
    return groups[0].name


class GpuNodePool(pulumi.ComponentResource):
    """One pool: an EKS managed node group on its own launch template, in a cluster placement group when the
    plan says so. Replacing a pool's instance type replaces its template and with it the node group."""

    def __init__(
        self,
        name: str,
        plan: Plan,
        pool: PoolPlan,
        cluster: ClusterAccess,
        node_role_arn: pulumi.Input[str],
        ready: Sequence[pulumi.Resource],
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("gpu-platform:node_pools:GpuNodePool", name, None, opts)
        self.pool = pool
        c = plan.cluster
        tags = plan.pool_tags(pool)
        child = pulumi.ResourceOptions(parent=self)

        self.placement_group: aws.ec2.PlacementGroup | None = None
        placement = None
        if pool.placement_group:
            self.placement_group = aws.ec2.PlacementGroup(
                name,
                name=cv.placement_group_name(c.name, pool.name),
                strategy="cluster",
                tags=tags,
                opts=child,
            )
            placement = aws.ec2.LaunchTemplatePlacementArgs(group_name=self.placement_group.name)

        market = reservation = None
        if pool.capacity_type == "capacity-block":
            # EKS rejects a CAPACITY_BLOCK node group unless its template has this market type, the block's
            # reservation id and the instance type (EKS user guide, Capacity Blocks for ML).
            market = aws.ec2.LaunchTemplateInstanceMarketOptionsArgs(market_type="capacity-block")
        if pool.reservation_id:
            reservation = aws.ec2.LaunchTemplateCapacityReservationSpecificationArgs(
                capacity_reservation_target=aws.ec2.LaunchTemplateCapacityReservationSpecificationCapacityReservationTargetArgs(
                    capacity_reservation_id=pool.reservation_id,
                ),
            )

        self.launch_template = aws.ec2.LaunchTemplate(
            name,
            name_prefix=cv.launch_template_prefix(c.name, pool.name),
            description=f"gpu-platform pool {pool.name}: {pool.instance_type}, {pool.fabric}, {pool.capacity_type}",
            # The instance type lives in the template for every pool: capacity blocks require it there, and
            # the EFA layout above is specific to it. EKS then takes no instance types on the node group.
            instance_type=pool.instance_type,
            block_device_mappings=[aws.ec2.LaunchTemplateBlockDeviceMappingArgs(
                device_name=DATA_VOLUME_DEVICE[pool.ami_type],
                ebs=aws.ec2.LaunchTemplateBlockDeviceMappingEbsArgs(
                    volume_size=pool.root_volume_gib,
                    volume_type="gp3",
                    encrypted="true",
                    delete_on_termination="true",
                ),
            )],
            metadata_options=aws.ec2.LaunchTemplateMetadataOptionsArgs(
                http_endpoint="enabled",
                http_tokens="required",
                http_put_response_hop_limit=IMDS_HOP_LIMIT,
            ),
            network_interfaces=efa_interfaces(pool, cluster.security_group_id, cluster.efa_security_group_id),
            placement=placement,
            instance_market_options=market,
            capacity_reservation_specification=reservation,
            user_data=user_data(pool),
            tag_specifications=[
                aws.ec2.LaunchTemplateTagSpecificationArgs(resource_type=kind, tags=tags)
                for kind in TAGGED_RESOURCE_TYPES
            ],
            tags=tags,
            update_default_version=True,
            opts=pulumi.ResourceOptions(parent=self, replace_on_changes=["instanceType"]),
        )

        subnets: pulumi.Input[Sequence[pulumi.Input[str]]] = (
            _zone_subnets(cluster, plan, pool, pulumi.InvokeOutputOptions(parent=self))
            if pool.availability_zone
            else list(cluster.subnet_ids)
        )
        self.node_group = aws.eks.NodeGroup(
            name,
            cluster_name=cluster.name,
            node_group_name=cv.node_group_name(c.name, pool.name),
            node_role_arn=node_role_arn,
            subnet_ids=subnets,
            ami_type=pool.ami_type,
            capacity_type=EKS_CAPACITY_TYPE[pool.capacity_type],
            version=c.kubernetes_version,
            # The plan's sizes (gpu_platform/plan/autoscaling.py): elastic groups min..max from their desired size,
            # a capacity reservation pinned at its size, a capacity block created at its size from min 0.
            scaling_config=aws.eks.NodeGroupScalingConfigArgs(
                min_size=pool.group_min,
                max_size=pool.max_nodes,
                desired_size=pool.desired_nodes,
            ),
            update_config=aws.eks.NodeGroupUpdateConfigArgs(
                max_unavailable=pool.node_update_max_unavailable,
                update_strategy=pool.node_update_strategy,
            ),
            # Replaced or rebooted when its GPU, kernel, network or kubelet fails (node_health.py).
            node_repair_config=node_repair_config(),
            labels=pool.group_labels,
            taints=[
                aws.eks.NodeGroupTaintArgs(key=t.key, value=t.value, effect=EKS_TAINT_EFFECT[t.effect])
                for t in pool.taints
            ],
            launch_template=aws.eks.NodeGroupLaunchTemplateArgs(
                id=self.launch_template.id,
                version=self.launch_template.latest_version.apply(lambda v: None if v is None else str(int(v))),
            ),
            tags=tags,
            opts=pulumi.ResourceOptions(
                parent=self,
                # The node role's policies and the CNI add-on: a node without either cannot serve pods.
                depends_on=list(ready),
                # desiredSize is set at creation and then belongs to whoever scales the group: the Cluster
                # Autoscaler (elastic groups), EKS (a capacity block's scale-down before its end), or a person
                # (aws eks update-nodegroup-config); a deploy must not undo it. Only a capacity reservation's
                # size is the stack's: it is pinned at min = max = desired.
                ignore_changes=[] if pool.desired_size_managed else ["scalingConfig.desiredSize"],
                protect=plan.environment == "prod",
                # A new template (new instance type) is a new node group; EKS names are unique per cluster,
                # so the old group goes first.
                replace_on_changes=["launchTemplate.id"],
                delete_before_replace=True,
            ),
        )
        # An elastic group is the Cluster Autoscaler's through tags on its Auto Scaling group, which EKS makes
        # and names (the node group's own tags never reach it): the platform's discovery tag, and the node it would
        # add from zero. Only the tags the platform adds (PoolPlan.autoscaler_tags): the two standard discovery
        # tags are EKS's, and a Tag resource of ours would delete them with it.
        self.autoscaling_group_name: pulumi.Output[str] = self.node_group.resources.apply(_autoscaling_group_name)
        self.asg_tags: list[aws.autoscaling.Tag] = []
        if pool.autoscaler_tags:
            asg_name = self.autoscaling_group_name
            self.asg_tags = [
                aws.autoscaling.Tag(
                    f"{name}-asg-{key}",
                    autoscaling_group_name=asg_name,
                    # Not on the instances: these describe the group to the autoscaler, the nodes carry the labels.
                    tag=aws.autoscaling.TagTagArgs(key=key, value=value, propagate_at_launch=False),
                    opts=pulumi.ResourceOptions(parent=self),
                )
                for key, value in sorted(pool.autoscaler_tags.items())
            ]
        self.register_outputs({
            "nodeGroupName": self.node_group.node_group_name,
            "launchTemplateId": self.launch_template.id,
        })

    def exports(self) -> dict[str, Any]:
        p = self.pool
        return {
            "nodeGroup": self.node_group.node_group_name,
            "instanceType": p.instance_type,
            "capacityType": p.capacity_type,
            "capacityGpus": p.capacity_gpus,
            "capacity": p.capacity_semantics,
            "scaledBy": p.scaler,
            "labels": p.group_labels,
            "taints": [t.to_k8s() for t in p.taints],
        }
