"""The control plane node groups join: created here (`cluster.create`) or looked up, how to reach it and its
subnets.

Also what belongs to the cluster rather than to a pool: the IAM trust policies, the audit-log warning for
an attached cluster, the vpc-cni add-on's configuration and the kubeconfig the provider uses.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

import pulumi
import pulumi_aws as aws

from gpu_platform import conventions as cv
from gpu_platform.audit import REQUIRED_EKS_LOG_TYPES
from gpu_platform.plan import Plan

from .aws_names import ADDON_RESOLVE_CONFLICTS, ALL_PROTOCOLS, CLUSTER_ROLE_POLICY, NODE_ROLE_POLICIES


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


def trust_policy(service: str) -> str:
    return json.dumps({
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"Service": service}, "Action": "sts:AssumeRole"}],
    })


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
    vpc_id: pulumi.Output[Any] | None = None
    # The EFA security group (efa_security_group), once made: every EFA interface carries it.
    efa_security_group_id: pulumi.Output[Any] | None = None
    # The subnets of the control plane, node groups and the add-ons that take subnets: cluster.subnetIds, or the
    # private subnets of the VPC made here (components/foundation).
    subnet_ids: Sequence[pulumi.Input[str]] = ()
    # zone -> its private subnet, when the stack made them (no lookup needed); None: found by zone in subnet_ids.
    zone_subnets: Mapping[str, pulumi.Input[str]] | None = None


def service_role(name: str, service: str, description: str, plan: Plan, parent: pulumi.Resource) -> aws.iam.Role:
    """An IAM role that `service` assumes, tagged like the platform."""
    return aws.iam.Role(
        name,
        assume_role_policy=trust_policy(service),
        description=description,
        tags=plan.platform_tags,
        opts=pulumi.ResourceOptions(parent=parent),
    )


def create_cluster(plan: Plan, parent: pulumi.Resource, subnet_ids: Sequence[pulumi.Input[str]],
                   zone_subnets: Mapping[str, pulumi.Input[str]] | None = None,
                   ) -> tuple[aws.eks.Cluster, ClusterAccess]:
    """A new EKS control plane with its IAM role, on access entries, sending the audit trail to CloudWatch, in
    the given subnets (cluster.subnetIds, or the VPC made here)."""
    c = plan.cluster
    child = pulumi.ResourceOptions(parent=parent)
    cluster_role = service_role("np-cluster-role", "eks.amazonaws.com", f"EKS control plane of {c.name}", plan, parent)
    cluster_policy = aws.iam.RolePolicyAttachment(
        "np-cluster-role-eks", role=cluster_role.name, policy_arn=CLUSTER_ROLE_POLICY, opts=child,
    )
    cluster = aws.eks.Cluster(
        "np-cluster",
        name=c.name,
        role_arn=cluster_role.arn,
        version=c.kubernetes_version,
        vpc_config=aws.eks.ClusterVpcConfigArgs(subnet_ids=list(subnet_ids),
                                                endpoint_private_access=c.endpoint_private_access,
                                                endpoint_public_access=c.endpoint_public_access),
        # Access entries instead of the aws-auth ConfigMap; managed node groups add their node role's
        # entry themselves, and whoever runs `pulumi up` administers the new cluster.
        access_config=aws.eks.ClusterAccessConfigArgs(
            authentication_mode="API",
            bootstrap_cluster_creator_admin_permissions=True,
        ),
        # The audit trail (gpu_platform/audit.py decides which types; audit and authenticator always).
        enabled_cluster_log_types=list(c.control_plane_logs),
        tags=plan.platform_tags,
        opts=pulumi.ResourceOptions(parent=parent, depends_on=[cluster_policy], protect=plan.environment == "prod"),
    )
    access = ClusterAccess(
        name=cluster.name,
        endpoint=cluster.endpoint,
        ca_data=cluster.certificate_authority.apply(lambda ca: ca.data if ca else None),
        security_group_id=cluster.vpc_config.apply(
            lambda v: v.cluster_security_group_id if v else None
        ),
        vpc_id=cluster.vpc_config.apply(lambda v: v.vpc_id if v else None),
        subnet_ids=subnet_ids,
        zone_subnets=zone_subnets,
    )
    return cluster, access


def look_up_cluster(plan: Plan, parent: pulumi.Resource) -> ClusterAccess:
    """An existing EKS cluster by name; warns on every deploy where its audit trail is off."""
    c = plan.cluster
    found = aws.eks.get_cluster_output(name=c.name, opts=pulumi.InvokeOutputOptions(parent=parent))
    # An attached cluster's logging is its owner's: say so on every deploy where the audit trail is off.
    found.enabled_cluster_log_types.apply(lambda types: warn_missing_logs(c.name, types))
    return ClusterAccess(
        name=c.name,
        endpoint=found.endpoint,
        ca_data=found.certificate_authorities.apply(lambda cas: cas[0].data if cas else None),
        security_group_id=found.vpc_config.apply(lambda v: v.cluster_security_group_id if v else None),
        vpc_id=found.vpc_config.apply(lambda v: v.vpc_id if v else None),
        subnet_ids=list(c.subnet_ids),
    )


def node_role(plan: Plan, parent: pulumi.Resource) -> tuple[aws.iam.Role, list[pulumi.Resource]]:
    """The GPU nodes' IAM role and its policy attachments (what node groups must wait for)."""
    child = pulumi.ResourceOptions(parent=parent)
    role = service_role("np-node-role", "ec2.amazonaws.com", f"GPU nodes of {plan.cluster.name}", plan, parent)
    # Node groups wait for the policies: a node without them cannot join (and EKS rejects the group).
    attachments: list[pulumi.Resource] = [
        aws.iam.RolePolicyAttachment(
            f"np-node-role-{key}", role=role.name, policy_arn=arn, opts=child,
        )
        for key, arn in NODE_ROLE_POLICIES.items()
    ]
    return role, attachments


def vpc_cni_addon(
    plan: Plan, access: ClusterAccess, cluster: aws.eks.Cluster | None, parent: pulumi.Resource,
) -> aws.eks.Addon:
    """The managed vpc-cni add-on with its network policy agent on (else NetworkPolicies are not enforced)."""
    c = plan.cluster
    return aws.eks.Addon(
        "np-vpc-cni",
        cluster_name=access.name,
        addon_name=cv.VPC_CNI_ADDON,
        addon_version=c.vpc_cni_version,
        configuration_values=vpc_cni_configuration(),
        resolve_conflicts_on_create=ADDON_RESOLVE_CONFLICTS,
        resolve_conflicts_on_update=ADDON_RESOLVE_CONFLICTS,
        tags=plan.platform_tags,
        opts=pulumi.ResourceOptions(parent=parent, depends_on=[cluster] if cluster else None),
    )


def efa_security_group(plan: Plan, access: ClusterAccess, parent: pulumi.Resource) -> tuple[aws.ec2.SecurityGroup, ClusterAccess]:
    """A security group for the EFA interfaces, with all traffic allowed in from and out to itself.

    EFA needs both directions to and from its own group (EC2 user guide, efa-start.html, "Prepare an
    EFA-enabled security group"); the cluster's group lacks the self egress rule on older clusters and would
    collide on newer ones, so the EFA interfaces get a group of their own (see docs/architecture.md, "EFA
    interfaces get a security group of their own"). Its rules are separate resources (VPC security group rule
    API), so neither replaces the other."""
    c = plan.cluster
    child = pulumi.ResourceOptions(parent=parent)
    group = aws.ec2.SecurityGroup(
        "np-efa",
        name=cv.efa_security_group_name(c.name),
        description=f"EFA traffic between the GPU nodes of {c.name}: all traffic to and from itself",
        vpc_id=access.vpc_id,
        tags=plan.platform_tags,
        opts=child,
    )
    aws.vpc.SecurityGroupIngressRule(
        "np-efa-self-ingress", security_group_id=group.id, referenced_security_group_id=group.id,
        ip_protocol=ALL_PROTOCOLS, description="EFA: all traffic from itself", tags=plan.platform_tags, opts=child,
    )
    aws.vpc.SecurityGroupEgressRule(
        "np-efa-self-egress", security_group_id=group.id, referenced_security_group_id=group.id,
        ip_protocol=ALL_PROTOCOLS, description="EFA: all traffic to itself", tags=plan.platform_tags, opts=child,
    )
    return group, replace(access, efa_security_group_id=group.id)
