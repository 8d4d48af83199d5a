"""The Cluster Autoscaler on an `eks` cluster: its Helm release on the system pool, its IAM role through EKS Pod
Identity, and the ProvisioningRequest CRD it and Kueue's ProvisioningRequest check work on.

What it scales and how is the plan's (gpu_platform/plan/autoscaling.py): the elastic managed node groups carry the
platform's discovery tag and its node-template tags (components/node_pools/gpu_node_pool.py; the two standard
discovery tags are EKS's own), reserved groups and Karpenter's pools carry none. This module only knows how the
chart, AWS and the CRD spell that. Chart: cluster-autoscaler
from https://kubernetes.github.io/autoscaler (kubernetes/autoscaler, tag cluster-autoscaler-chart-9.51.0,
charts/cluster-autoscaler/values.yaml: every key written here is a key there, and templates/deployment.yaml
turns them into the flags docs/deploying.md lists). Neither the chart repository nor the autoscaler's Go
module is reachable offline, so tests/unit/components/test_autoscaler.py asserts these values as written.
"""

from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from gpu_platform import conventions as cv
from gpu_platform.plan.autoscaling import ClusterAutoscalerPlan, cluster_autoscaler_policy, pod_identity_trust_policy
from gpu_platform.plan import Plan

from .node_pools.aws_names import ADDON_RESOLVE_CONFLICTS
from .node_pools.cluster import ClusterAccess

CHART = "cluster-autoscaler"
CHART_REPO = "https://kubernetes.github.io/autoscaler"
# What the autoscaler needs for ProvisioningRequests beyond the chart 9.51.0 ClusterRole (FAQ.md at tag
# cluster-autoscaler-1.33.6, "Enabling ProvisioningRequest Support", step 4): ProvisioningRequests and their
# status, and the PodTemplates they point at. The chart's own role has them from 9.57.0 on (kubernetes/autoscaler
# 91080c84cf, "Update CA helm chart for ProvisioningRequest (#9525)"), which ships a 1.35 autoscaler; these are
# that commit's rules, passed as rbac.additionalRules, plus `delete`, which that commit leaves out and the
# FAQ's role has: the autoscaler deletes a request 7 days after it was Provisioned or Failed
# (processors/provreq/processor.go DeleteOldProvReqs, defaultTerminalProvReqTTL; provisioningrequest/provreqclient/
# client.go DeleteProvisioningRequest). It creates none (only its tests do), so not the FAQ's `create`.
PROVISIONING_REQUEST_RULES: list[dict[str, list[str]]] = [
    {"apiGroups": [""], "resources": ["podtemplates"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["autoscaling.x-k8s.io"], "resources": ["provisioningrequests", "provisioningrequests/status"],
     "verbs": ["get", "list", "watch", "update", "patch", "delete"]},
]


def chart_values(ca: ClusterAutoscalerPlan) -> dict[str, Any]:
    """The chart's values. Auto-discovery of the elastic groups (autoDiscovery.tags, joined into
    --node-group-auto-discovery=asg:tag=... by templates/deployment.yaml), the plan's image and flags
    (extraArgs: `--<key>=<value>` each, merged with the chart's logging defaults), and the system pool: no
    toleration, so never a GPU node (all are tainted), and the system nodes when the cluster has them."""
    return {
        "cloudProvider": "aws",
        "awsRegion": ca.region or "",
        "autoDiscovery": {"clusterName": ca.cluster, "tags": list(ca.discovery_tags)},
        "image": {"tag": ca.image_tag},
        "fullnameOverride": ca.release,
        "rbac": {
            "serviceAccount": {"name": ca.service_account},
            "additionalRules": PROVISIONING_REQUEST_RULES if ca.provisioning_requests else [],
        },
        "extraArgs": dict(ca.args),
        "nodeSelector": dict(ca.node_selector),
        "tolerations": [],
    }


def provisioning_request_crd(ca: ClusterAutoscalerPlan, opts: pulumi.ResourceOptions) -> k8s.yaml.v2.ConfigFile:
    """The ProvisioningRequest CRD of the autoscaler's release, which neither the chart nor the autoscaler
    installs. Made before Kueue's controller, which sets up its ProvisioningRequest controller only if the
    CRD is served when it starts (kueue v0.19.2 cmd/kueue/main.go). The Kubernetes provider fetches the file
    at deploy time (yaml/v2 ConfigFile takes a URL)."""
    return k8s.yaml.v2.ConfigFile("provisioning-request-crd", file=ca.provisioning_request_crd, opts=opts)


class ClusterAutoscaler(pulumi.ComponentResource):
    """The autoscaler: IAM role and policy, Pod Identity association (and the agent add-on when the plan gives
    it this component), and the Helm release. AWS resources use the default AWS provider; the release the
    Kubernetes provider this component is given."""

    def __init__(self, name: str, plan: Plan, ca: ClusterAutoscalerPlan, cluster: ClusterAccess,
                 cluster_ready: Sequence[pulumi.Resource], autoscaling_groups: Mapping[str, pulumi.Input[str]],
                 after: Sequence[pulumi.Resource] = (), opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:autoscaler:ClusterAutoscaler", name, None, opts)
        self.plan, self.ca = plan, ca
        child = pulumi.ResourceOptions(parent=self)
        tags = plan.platform_tags
        account = aws.get_caller_identity_output(opts=pulumi.InvokeOutputOptions(parent=self)).account_id

        self.role = aws.iam.Role(
            "cluster-autoscaler-role", name=ca.role, assume_role_policy=json.dumps(pod_identity_trust_policy()),
            description=f"Cluster Autoscaler of {ca.cluster} (EKS Pod Identity)", tags=tags, opts=child,
        )
        groups = [autoscaling_groups[g] for g in ca.node_groups]
        document = pulumi.Output.all(account, *groups).apply(
            lambda a: json.dumps(cluster_autoscaler_policy(ca, a[0], a[1:])))
        self.policy = aws.iam.Policy("cluster-autoscaler", name=ca.role, policy=document, tags=tags, opts=child)
        attachment = aws.iam.RolePolicyAttachment("cluster-autoscaler", role=self.role.name,
                                                  policy_arn=self.policy.arn, opts=child)
        after_cluster = pulumi.ResourceOptions(parent=self, depends_on=list(cluster_ready))
        self.pod_identity_agent: aws.eks.Addon | None = None
        if ca.manage_pod_identity_agent:
            self.pod_identity_agent = aws.eks.Addon(
                "cluster-autoscaler-pod-identity-agent", cluster_name=cluster.name,
                addon_name=cv.POD_IDENTITY_AGENT_ADDON, resolve_conflicts_on_create=ADDON_RESOLVE_CONFLICTS,
                resolve_conflicts_on_update=ADDON_RESOLVE_CONFLICTS, tags=tags, opts=after_cluster,
            )
        self.pod_identity = aws.eks.PodIdentityAssociation(
            "cluster-autoscaler", cluster_name=cluster.name, namespace=ca.namespace,
            service_account=ca.service_account, role_arn=self.role.arn, tags=tags, opts=after_cluster,
        )
        self.values = chart_values(ca)
        ready = [attachment, self.pod_identity, *([self.pod_identity_agent] if self.pod_identity_agent else []), *after]
        self.release = k8s.helm.v3.Release(
            ca.release, name=ca.release, chart=CHART, version=ca.chart_version,
            repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=CHART_REPO), namespace=ca.namespace,
            create_namespace=False, values=self.values,
            opts=pulumi.ResourceOptions(parent=self, depends_on=ready),
        )
        self.register_outputs({})

    def exports(self) -> dict[str, Any]:
        ca = self.ca
        return {
            "clusterAutoscaler": {
                "chartVersion": ca.chart_version,
                "image": ca.image_tag,
                "namespace": ca.namespace,
                "role": ca.role,
                "nodeGroups": list(ca.node_groups),
                "provisioningRequests": ca.provisioning_requests,
            }
        }
