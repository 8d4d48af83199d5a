"""EksCluster: the component that puts the EKS cluster together, in the order AWS needs it.

Control plane (created, in the given subnets or the VPC components/foundation made, or looked up), node role, vpc-cni add-on, system node group, the EFA security group
when a pool uses EFA, one GpuNodePool per managed-node-group pool, and the cluster's identity (access
entries, OIDC).
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_aws as aws

from gpu_platform import conventions as cv
from gpu_platform.plan import Plan

from ..foundation.vpc import ClusterNetwork
from ..identity import ClusterIdentity
from .cluster import create_cluster, efa_security_group, kubeconfig_for, look_up_cluster, node_role, vpc_cni_addon
from .gpu_node_pool import GpuNodePool
from .node_health import node_monitoring_agent_addon
from .system_pool import system_node_group


class EksCluster(pulumi.ComponentResource):
    """The EKS side of the platform: the control plane (looked up, or created when `cluster.create`), the
    node IAM role (unless `cluster.nodeRoleArn`), its add-ons, the system node group and one GpuNodePool per
    pool."""

    # The type token (and the resource name `node-pools` GpuPlatform gives it) is the one this component was
    # first registered under, when it was called NodePools: a component's URN is its type and name, and its
    # children's URNs include its type, so a new token would replace every node group of an existing stack
    # unless the old one were given as an alias (pulumi.com/docs/iac/concepts/resources/options/aliases/).
    TYPE = "gpu-platform:node_pools:NodePools"

    kubeconfig: pulumi.Output[str] | None

    def __init__(self, name: str, plan: Plan, opts: pulumi.ResourceOptions | None = None,
                 network: ClusterNetwork | None = None):
        super().__init__(self.TYPE, name, None, opts)
        self.plan = plan
        c = plan.cluster
        child = pulumi.ResourceOptions(parent=self)

        self.cluster: aws.eks.Cluster | None = None
        if c.create and network is not None:
            # In the VPC made here (cluster.vpc): its private subnets, a single-zone pool's known by zone.
            self.cluster, access = create_cluster(plan, self, network.private_subnet_ids, network.zone_subnets)
        elif c.create:
            self.cluster, access = create_cluster(plan, self, list(c.subnet_ids))
        else:
            access = look_up_cluster(plan, self)
        # Nodes in the VPC made here boot only once their subnet routes to the NAT gateway (else they cannot pull
        # images or reach the endpoint and never join): every node group waits for the routes.
        egress: list[pulumi.Resource] = list(network.egress) if network is not None else []
        role_ready: list[pulumi.Resource] = []
        self.node_role: aws.iam.Role | None = None
        if c.node_role_arn:
            node_role_arn: pulumi.Input[str] = c.node_role_arn
        else:
            self.node_role, role_ready = node_role(plan, self)
            node_role_arn = self.node_role.arn

        # Nodes come up with the CNI configured: every node group waits for the add-on (before_compute in
        # terraform-aws-eks terms), so no node ever runs an aws-node without the network policy agent.
        self.vpc_cni: aws.eks.Addon | None = None
        if c.manage_vpc_cni:
            self.vpc_cni = vpc_cni_addon(plan, access, self.cluster, self)
        ready = [*egress, *role_ready, *([self.vpc_cni] if self.vpc_cni else [])]
        # The agent whose node conditions node repair acts on (node_health.py); nodes do not wait for it.
        self.node_monitoring_agent: aws.eks.Addon | None = None
        if c.manage_node_monitoring_agent:
            self.node_monitoring_agent = node_monitoring_agent_addon(plan, access.name, self.cluster, self)

        self.system_pool: aws.eks.NodeGroup | None = None
        if c.system_pool is not None:
            self.system_pool = system_node_group(plan, c.system_pool, access, node_role_arn, ready, self)

        # EFA interfaces (of either provisioner's pools) carry a security group of their own besides the cluster's.
        self.efa_security_group: aws.ec2.SecurityGroup | None = None
        if plan.efa_pools:
            self.efa_security_group, access = efa_security_group(plan, access, self)

        # Karpenter pools get their nodes from Karpenter NodePools (components/karpenter.py), which need this access.
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
        if self.node_monitoring_agent is not None:
            out["nodeMonitoringAgent"] = {"addon": cv.NODE_MONITORING_AGENT_ADDON,
                                          "version": self.plan.cluster.node_monitoring_agent_version}
        out.update(self.identity.exports())
        return out
