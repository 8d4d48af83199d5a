"""GPU node pools on EKS: one `GpuNodePool` (managed node group, launch template, placement group) per pool.

Only used when `cluster.provider: eks` (GpuPlatform skips it for `existing`). Every number, label, taint and
capacity setting comes from the plan; this module only knows how AWS spells them. Facts about the AWS APIs
cite the page they come from.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any, Sequence

import pulumi
import pulumi_aws as aws
import yaml

from gpu_platform import conventions as cv
from gpu_platform.audit import REQUIRED_EKS_LOG_TYPES
from gpu_platform.plan import NODE_UPDATE_MAX_UNAVAILABLE, ClusterPlan, Plan, PoolPlan, SystemPoolPlan

from .identity import ClusterIdentity

# --- How AWS spells what the plan decided -------------------------------------------------------------

# EKS CreateNodegroup capacityType. A capacity reservation is on-demand capacity that instances land in
# through the launch template's reservation target; a capacity block has its own type (EKS user guide,
# "Create a managed node group with Capacity Blocks for ML").
EKS_CAPACITY_TYPE: dict[str, str] = {
    "on-demand": "ON_DEMAND",
    "spot": "SPOT",
    "capacity-reservation": "ON_DEMAND",
    "capacity-block": "CAPACITY_BLOCK",
}

# Kubernetes taint effects as the EKS API spells them (EKS API reference, Taint.effect).
EKS_TAINT_EFFECT: dict[str, str] = {
    "NoSchedule": "NO_SCHEDULE",
    "NoExecute": "NO_EXECUTE",
    "PreferNoSchedule": "PREFER_NO_SCHEDULE",
}

# The block device that holds images and pod data. AL2023 has one root volume; Bottlerocket boots from a
# small OS volume (/dev/xvda) and keeps containers on its data volume (/dev/xvdb) (Bottlerocket README,
# "Storage").
DATA_VOLUME_DEVICE: dict[str, str] = {
    "AL2023_x86_64_NVIDIA": "/dev/xvda",
    "BOTTLEROCKET_x86_64_NVIDIA": "/dev/xvdb",
}

# Containers that call IMDSv2 sit one network hop behind the node, so the PUT response needs a hop limit
# of 2 (EKS user guide, "Customize managed nodes with launch templates").
IMDS_HOP_LIMIT = 2

# Launched instances, their volumes and network interfaces carry the cost tags (EKS user guide, "Tagging
# Amazon EC2 instances" via the launch template's TagSpecification).
TAGGED_RESOURCE_TYPES: tuple[str, ...] = ("instance", "volume", "network-interface")

# Node role policies (EKS user guide, "Amazon EKS node IAM role").
NODE_ROLE_POLICIES: dict[str, str] = {
    "worker": aws.iam.ManagedPolicy.AMAZON_EKS_WORKER_NODE_POLICY,
    "cni": aws.iam.ManagedPolicy.AMAZON_EK_S_CN_I_POLICY,
    "ecr-read": aws.iam.ManagedPolicy.AMAZON_EC2_CONTAINER_REGISTRY_READ_ONLY,
}
CLUSTER_ROLE_POLICY = aws.iam.ManagedPolicy.AMAZON_EKS_CLUSTER_POLICY

MIME_BOUNDARY = "==GPU-PLATFORM=="

# CreateAddon/UpdateAddon resolveConflicts. A cluster created here starts with a self-managed aws-node
# (EKS API reference, CreateCluster.bootstrapSelfManagedAddons, default true: the unmanaged vpc-cni,
# kube-proxy and CoreDNS are installed at creation); OVERWRITE lets the managed add-on take its fields
# over, and keeps the platform's configuration authoritative on later updates (CreateAddon.resolveConflicts).
ADDON_RESOLVE_CONFLICTS = "OVERWRITE"


def vpc_cni_configuration() -> str:
    """The vpc-cni add-on's configurationValues: the network policy agent on, nothing else changed."""
    return json.dumps({cv.VPC_CNI_NETWORK_POLICY_KEY: "true"}, sort_keys=True)


def warn_missing_logs(cluster: str, enabled: Sequence[str] | None) -> None:
    missing = [t for t in REQUIRED_EKS_LOG_TYPES if t not in (enabled or ())]
    if missing:
        pulumi.log.warn(
            f"EKS cluster {cluster!r} does not send its {', '.join(missing)} control-plane logs to CloudWatch: job "
            "submissions, secret reads, exec and admin operations leave no audit trail (aws eks "
            f"update-cluster-config --name {cluster} --logging, README Security)"
        )


def _trust_policy(service: str) -> str:
    return json.dumps({
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"Service": service}, "Action": "sts:AssumeRole"}],
    })


def nodeadm_user_data(pool: PoolPlan) -> str | None:
    """AL2023: a MIME multi-part document with a nodeadm NodeConfig that stripes the instance store into
    RAID0 and puts containerd, kubelet and pod logs on it. EKS merges it with the NodeConfig that joins the
    node to the cluster, so nothing else belongs here (EKS user guide, "Amazon Linux 2023 user data";
    nodeadm API reference, LocalStorageOptions.strategy: RAID0 | RAID10 | Mount)."""
    if not pool.local_nvme:
        return None
    node_config = {
        "apiVersion": "node.eks.aws/v1alpha1",
        "kind": "NodeConfig",
        "spec": {"instance": {"localStorage": {"strategy": "RAID0"}}},
    }
    return (
        "MIME-Version: 1.0\n"
        f'Content-Type: multipart/mixed; boundary="{MIME_BOUNDARY}"\n'
        "\n"
        f"--{MIME_BOUNDARY}\n"
        "Content-Type: application/node.eks.aws\n"
        "\n"
        "---\n"
        f"{yaml.safe_dump(node_config, sort_keys=False)}"
        "\n"
        f"--{MIME_BOUNDARY}--\n"
    )


def bottlerocket_user_data(pool: PoolPlan) -> str | None:
    """Bottlerocket: TOML settings merged with EKS's. A bootstrap command initialises the instance store
    (one RAID0 array over all disks) and binds the container directories onto it (bottlerocket.dev,
    "Bootstrap Commands", use case "Configure ephemeral disks")."""
    if not pool.local_nvme:
        return None
    commands = [
        ["apiclient", "ephemeral-storage", "init"],
        ["apiclient", "ephemeral-storage", "bind", "--dirs", "/var/lib/containerd", "/var/lib/kubelet", "/var/log/pods"],
    ]
    return (
        "[settings.bootstrap-commands.k8s-ephemeral-storage]\n"
        f"commands = {json.dumps(commands)}\n"
        "essential = true\n"
        'mode = "always"\n'
    )


def user_data(pool: PoolPlan) -> str | None:
    """The launch template's user data in the format the pool's AMI family reads, base64 as EC2 wants it."""
    text = bottlerocket_user_data(pool) if pool.ami_type.startswith("BOTTLEROCKET") else nodeadm_user_data(pool)
    return base64.b64encode(text.encode()).decode() if text is not None else None


# EC2 launch template NetworkInterfaces[].InterfaceType values.
ENA = "interface"
EFA_WITH_ENA = "efa"
EFA_ONLY = "efa-only"


def efa_interface_layout(pool: PoolPlan) -> list[tuple[int, int, str]]:
    """(network card, device index, interface type) of every interface of an EFA pool's node.

    Follows the EC2 user guide, "Maximize network bandwidth on Amazon EC2 instances with multiple network
    cards" (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-acc-inst-types.html), as it reads
    now: the primary interface (card 0, device 0) is a plain ENA interface, because an EFA-only interface
    cannot be primary; card 0 gets an EFA-only interface at device 1; every further card an EFA-only
    interface at device 0. That is the page's P5/P5e and P6-B200 "use case 1" (all EFA bandwidth, one
    private IP per node): EFA-only interfaces take no subnet IPs. Each card carries exactly one EFA
    device, so a node has PoolPlan.efa_interfaces (= network cards) of them. An instance type without
    EFA-only support (none in the catalog today) keeps the page's earlier layout: EFA with ENA as the
    primary, EFA with ENA at device 1 of every further card."""
    cards = pool.efa_interfaces
    if cards == 0:
        return []
    if pool.efa_only_interfaces:
        return [(0, 0, ENA), (0, 1, EFA_ONLY), *((card, 0, EFA_ONLY) for card in range(1, cards))]
    return [(0, 0, EFA_WITH_ENA), *((card, 1, EFA_WITH_ENA) for card in range(1, cards))]


def efa_interfaces(pool: PoolPlan, security_group_id: pulumi.Input[str]) -> list[aws.ec2.LaunchTemplateNetworkInterfaceArgs] | None:
    """The launch template's interfaces for `efa_interface_layout`. Interfaces in a launch template must
    not name a subnet (EKS picks it), and carry the cluster security group, which EKS no longer adds once
    the template sets security groups; it admits all traffic from itself, as EFA requires (EKS user guide,
    "Customize managed nodes with launch templates" and "View Amazon EKS security group requirements")."""
    layout = efa_interface_layout(pool)
    if not layout:
        return None
    return [
        aws.ec2.LaunchTemplateNetworkInterfaceArgs(
            network_card_index=card,
            device_index=device,
            interface_type=kind,
            security_groups=[security_group_id],
            delete_on_termination="true",
        )
        for card, device, kind in layout
    ]


def kubeconfig_for(name: str, endpoint: str, ca_data: str, region: str | None) -> str:
    """A kubeconfig that authenticates with `aws eks get-token`, as `aws eks update-kubeconfig` writes it
    (EKS user guide, "Connect kubectl to an EKS cluster by creating a kubeconfig file"): no credential is
    stored, so it is not a secret."""
    args = ["eks", "get-token", "--cluster-name", name, "--output", "json"]
    if region:
        args = ["--region", region, *args]
    return json.dumps({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": endpoint, "certificate-authority-data": ca_data}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
        "current-context": name,
        "users": [{"name": name, "user": {"exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": "aws",
            "args": args,
            "interactiveMode": "Never",
        }}}],
    }, indent=2)


@dataclass(frozen=True)
class ClusterAccess:
    """What node groups need from the control plane, whether it was created here or looked up."""

    name: pulumi.Input[str]
    endpoint: pulumi.Output[Any]
    ca_data: pulumi.Output[Any]
    security_group_id: pulumi.Output[Any]


def _one_zone_subnets(cluster: ClusterPlan, pool: PoolPlan, opts: pulumi.InvokeOutputOptions) -> pulumi.Output[list[str]]:
    """The cluster's subnets in the pool's zone. EFA traffic and reservations do not cross zones, so a
    single-zone pool must not be given subnets elsewhere (a capacity block's node group must name only
    subnets in the reservation's zone: EKS user guide, Capacity Blocks for ML)."""
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
            network_interfaces=efa_interfaces(pool, cluster.security_group_id),
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

        subnets: pulumi.Input[Sequence[str]] = (
            _one_zone_subnets(c, pool, pulumi.InvokeOutputOptions(parent=self))
            if pool.availability_zone
            else list(c.subnet_ids)
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
            scaling_config=aws.eks.NodeGroupScalingConfigArgs(
                min_size=pool.min_nodes,
                max_size=pool.max_nodes,
                desired_size=pool.desired_nodes,
            ),
            update_config=aws.eks.NodeGroupUpdateConfigArgs(
                max_unavailable=pool.node_update_max_unavailable,
                update_strategy=pool.node_update_strategy,
            ),
            node_repair_config=aws.eks.NodeGroupNodeRepairConfigArgs(enabled=True),
            labels=dict(pool.node_labels),
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
                # The cluster autoscaler owns the node count once the group exists.
                ignore_changes=["scalingConfig.desiredSize"],
                protect=plan.environment == "prod",
                # A new template (new instance type) is a new node group; EKS names are unique per cluster,
                # so the old group goes first.
                replace_on_changes=["launchTemplate.id"],
                delete_before_replace=True,
            ),
        )
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
            "labels": dict(p.node_labels),
            "taints": [t.to_k8s() for t in p.taints],
        }


class NodePools(pulumi.ComponentResource):
    """The EKS side of the platform: the control plane (looked up, or created when `cluster.create`), the
    node IAM role (unless `cluster.nodeRoleArn`), and one GpuNodePool per pool."""

    kubeconfig: pulumi.Output[str] | None

    def __init__(self, name: str, plan: Plan, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:node_pools:NodePools", name, None, opts)
        self.plan = plan
        c = plan.cluster
        prod = plan.environment == "prod"
        child = pulumi.ResourceOptions(parent=self)

        self.cluster: aws.eks.Cluster | None = None
        if c.create:
            cluster_role = aws.iam.Role(
                "np-cluster-role",
                assume_role_policy=_trust_policy("eks.amazonaws.com"),
                description=f"EKS control plane of {c.name}",
                tags=plan.platform_tags,
                opts=child,
            )
            cluster_policy = aws.iam.RolePolicyAttachment(
                "np-cluster-role-eks", role=cluster_role.name, policy_arn=CLUSTER_ROLE_POLICY, opts=child,
            )
            self.cluster = aws.eks.Cluster(
                "np-cluster",
                name=c.name,
                role_arn=cluster_role.arn,
                version=c.kubernetes_version,
                vpc_config=aws.eks.ClusterVpcConfigArgs(subnet_ids=list(c.subnet_ids)),
                # Access entries instead of the aws-auth ConfigMap; managed node groups add their node role's
                # entry themselves, and whoever runs `pulumi up` administers the new cluster.
                access_config=aws.eks.ClusterAccessConfigArgs(
                    authentication_mode="API",
                    bootstrap_cluster_creator_admin_permissions=True,
                ),
                # The audit trail (gpu_platform/audit.py decides which types; audit and authenticator always).
                enabled_cluster_log_types=list(c.control_plane_logs),
                tags=plan.platform_tags,
                opts=pulumi.ResourceOptions(parent=self, depends_on=[cluster_policy], protect=prod),
            )
            access = ClusterAccess(
                name=self.cluster.name,
                endpoint=self.cluster.endpoint,
                ca_data=self.cluster.certificate_authority.apply(lambda ca: ca.data if ca else None),
                security_group_id=self.cluster.vpc_config.apply(
                    lambda v: v.cluster_security_group_id if v else None
                ),
            )
        else:
            found = aws.eks.get_cluster_output(name=c.name, opts=pulumi.InvokeOutputOptions(parent=self))
            # An attached cluster's logging is its owner's: say so on every deploy where the audit trail is off.
            found.enabled_cluster_log_types.apply(lambda types: warn_missing_logs(c.name, types))
            access = ClusterAccess(
                name=c.name,
                endpoint=found.endpoint,
                ca_data=found.certificate_authorities.apply(lambda cas: cas[0].data if cas else None),
                security_group_id=found.vpc_config.apply(lambda v: v.cluster_security_group_id if v else None),
            )
        role_ready: list[pulumi.Resource] = []
        self.node_role: aws.iam.Role | None = None
        if c.node_role_arn:
            node_role_arn: pulumi.Input[str] = c.node_role_arn
        else:
            self.node_role = aws.iam.Role(
                "np-node-role",
                assume_role_policy=_trust_policy("ec2.amazonaws.com"),
                description=f"GPU nodes of {c.name}",
                tags=plan.platform_tags,
                opts=child,
            )
            node_role_arn = self.node_role.arn
            # Node groups wait for the policies: a node without them cannot join (and EKS rejects the group).
            role_ready = [
                aws.iam.RolePolicyAttachment(
                    f"np-node-role-{key}", role=self.node_role.name, policy_arn=arn, opts=child,
                )
                for key, arn in NODE_ROLE_POLICIES.items()
            ]

        # Nodes come up with the CNI configured: every node group waits for the add-on (before_compute in
        # terraform-aws-eks terms), so no node ever runs an aws-node without the network policy agent.
        self.vpc_cni: aws.eks.Addon | None = None
        if c.manage_vpc_cni:
            self.vpc_cni = aws.eks.Addon(
                "np-vpc-cni",
                cluster_name=access.name,
                addon_name=cv.VPC_CNI_ADDON,
                addon_version=c.vpc_cni_version,
                configuration_values=vpc_cni_configuration(),
                resolve_conflicts_on_create=ADDON_RESOLVE_CONFLICTS,
                resolve_conflicts_on_update=ADDON_RESOLVE_CONFLICTS,
                tags=plan.platform_tags,
                opts=pulumi.ResourceOptions(parent=self, depends_on=[self.cluster] if self.cluster else None),
            )
        ready = [*role_ready, *([self.vpc_cni] if self.vpc_cni else [])]

        self.system_pool: aws.eks.NodeGroup | None = None
        if c.system_pool is not None:
            self.system_pool = system_node_group(plan, c.system_pool, access, node_role_arn, ready, self)

        # Karpenter pools get their nodes from NodePools (components/karpenter.py), which need this access.
        self.access = access
        self.cluster_ready: list[pulumi.Resource] = [r for r in (self.cluster, self.vpc_cni) if r is not None]
        self.pools: dict[str, GpuNodePool] = {
            pool.name: GpuNodePool(
                f"np-{pool.name}", plan, pool, access, node_role_arn, ready, opts=child,
            )
            for pool in plan.managed_node_group_pools
        }
        self.identity = ClusterIdentity(
            "np-identity", plan, access.name, depends_on=[self.cluster] if self.cluster else None, opts=child,
        )
        kube_ready = [self.system_pool.arn] if self.system_pool is not None and self.cluster is not None else []
        # On a cluster created here nothing Kubernetes-side can become ready before a node that takes
        # untainted pods exists: the provider's kubeconfig waits for the system node group.
        self.kubeconfig = pulumi.Output.all(access.name, access.endpoint, access.ca_data, *kube_ready).apply(
            lambda a: kubeconfig_for(a[0], a[1], a[2], plan.region)
        )
        self.register_outputs({"nodeGroups": {n: p.node_group.node_group_name for n, p in self.pools.items()}})

    def exports(self) -> dict[str, Any]:
        out: dict[str, Any] = {"nodePools": {n: p.exports() for n, p in self.pools.items()}}
        sp = self.plan.cluster.system_pool
        if sp is not None:
            out["systemPool"] = {"nodeGroup": sp.node_group_name, "instanceType": sp.instance_type,
                                 "labels": dict(sp.labels), "taints": []}
        if self.vpc_cni is not None:
            out["vpcCni"] = {"addon": cv.VPC_CNI_ADDON, cv.VPC_CNI_NETWORK_POLICY_KEY: True}
        out.update(self.identity.exports())
        return out


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
        subnet_ids=list(c.subnet_ids),
        ami_type=sp.ami_type,
        instance_types=[sp.instance_type],
        capacity_type=EKS_CAPACITY_TYPE["on-demand"],
        disk_size=sp.disk_gib,
        version=c.kubernetes_version,
        scaling_config=aws.eks.NodeGroupScalingConfigArgs(
            min_size=sp.min_nodes, max_size=sp.max_nodes, desired_size=sp.desired_nodes,
        ),
        update_config=aws.eks.NodeGroupUpdateConfigArgs(max_unavailable=NODE_UPDATE_MAX_UNAVAILABLE),
        node_repair_config=aws.eks.NodeGroupNodeRepairConfigArgs(enabled=True),
        labels=dict(sp.labels),
        tags={**plan.platform_tags, cv.NODE_ROLE: cv.SYSTEM_NODE_ROLE},
        opts=pulumi.ResourceOptions(
            parent=parent,
            depends_on=list(ready),
            ignore_changes=["scalingConfig.desiredSize"],
            protect=plan.environment == "prod",
        ),
    )
