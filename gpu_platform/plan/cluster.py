"""The cluster's plan: the EKS cluster or the attached one, the VPC made for a created one, its system node
group, managed EKS add-ons and access entries."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from .ci import CiPlan
from .network import VpcPlan


@dataclass(frozen=True, slots=True)
class OidcProviderPlan:
    """The OIDC identity provider EKS associates with the cluster (cluster.identity.oidc), as the
    IdentityProviderConfig takes it: people arrive with the IdP's groups claim as their Kubernetes groups."""

    name: str
    issuer_url: str
    client_id: str
    groups_claim: str
    username_claim: str | None = None
    username_prefix: str | None = None
    groups_prefix: str | None = None
    required_claims: Mapping[str, str] | None = None


@dataclass(frozen=True, slots=True)
class SystemPoolPlan:
    """The untainted CPU node group (cluster.systemPool) the platform's add-ons run on."""

    node_group_name: str
    instance_type: str
    min_nodes: int
    max_nodes: int
    desired_nodes: int
    ami_type: str
    disk_gib: int
    labels: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class ClusterPlan:
    name: str
    provider: str
    kubernetes_version: str
    subnet_ids: tuple[str, ...]
    create: bool
    node_role_arn: str | None
    platform_admins: tuple[str, ...]
    system_pool: SystemPoolPlan | None = None
    # eks: the vpc-cni EKS add-on is managed here with its network policy agent on (addons.vpcCni).
    manage_vpc_cni: bool = False
    vpc_cni_version: str | None = None
    # eks: the node monitoring agent add-on, whose node conditions node repair acts on (addons.nodeMonitoringAgent).
    manage_node_monitoring_agent: bool = False
    node_monitoring_agent_version: str | None = None
    # eks, created cluster: control-plane log types (audit.py decides the required ones).
    control_plane_logs: tuple[str, ...] = ()
    # eks, created cluster: the API server is reachable inside the VPC too (nodes and in-VPC clients take the
    # private endpoint; the managed Prometheus collector requires it: AMP user guide AMP-collector-how-to.html,
    # prerequisites) and stays public for whoever runs `pulumi up` from a laptop or a CI runner (EKS's default,
    # endpointPublicAccess true: EKS user guide cluster-endpoint.html).
    endpoint_private_access: bool = True
    endpoint_public_access: bool = True
    # eks: every access entry the stack makes: (IAM role ARN, Kubernetes groups, owner: a team or "platform").
    access_entries: tuple[tuple[str, tuple[str, ...], str], ...] = ()
    # eks: the OIDC identity provider, if any.
    oidc: OidcProviderPlan | None = None
    # eks, created cluster in a VPC made here (cluster.vpc): its subnets; None: the cluster uses subnet_ids.
    vpc: VpcPlan | None = None
    # eks: the GitHub Actions roles and their access entries (cluster.ci).
    ci: CiPlan | None = None
