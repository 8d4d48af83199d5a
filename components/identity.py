"""ClusterIdentity: who people are on an EKS cluster, so that the teams' RBAC groups have members.

The RoleBindings in every team namespace name groups (`teams[].groups`); on EKS a group exists only if
something puts people into it. Two ways, both from the spec (the plan decides, this translates):

- EKS access entries (one per IAM role ARN; `kubernetesGroups` are the RBAC groups the role's sessions are
  in, authorization stays with Kubernetes RBAC, so no access policy is associated): the platform admins'
  roles into `cluster.platformAdmins`, each team's roles into its own groups (the spec refuses a team
  mapping into a platform admin or system: group). EKS user guide, "Create an access entry using
  Kubernetes groups with the AWS CLI" (create-k8s-group-access-entry.html); pulumi-aws 7.x aws.eks.AccessEntry.
- an OIDC identity provider (EKS API AssociateIdentityProviderConfig; aws.eks.IdentityProviderConfig):
  people sign in with the company IdP and its groups claim becomes their groups.

Access entries need the cluster's authentication mode to be API or API_AND_CONFIG_MAP: a cluster created
here is API (node_pools.py); an attached one must already be (README).
"""

from __future__ import annotations

import hashlib
from typing import Any

import pulumi
import pulumi_aws as aws

from gpu_platform import conventions as cv
from gpu_platform.plan import Plan

# CreateAccessEntry.type: STANDARD is the type for people and CI roles (the EC2/FARGATE types are for nodes
# and take no groups).
ACCESS_ENTRY_TYPE = "STANDARD"


def entry_name(arn: str) -> str:
    """A stable logical name per principal: the role's name and a short hash of the full ARN (two accounts may
    hold roles of one name)."""
    digest = hashlib.sha256(arn.encode()).hexdigest()[:8]
    return f"access-{arn.rsplit('/', 1)[-1].lower()}-{digest}"


class ClusterIdentity(pulumi.ComponentResource):
    def __init__(self, name: str, plan: Plan, cluster_name: pulumi.Input[str],
                 depends_on: list[pulumi.Resource] | None = None, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:identity:ClusterIdentity", name, None, opts)
        self.plan = plan
        child = pulumi.ResourceOptions(parent=self, depends_on=depends_on or None)
        self.entries: dict[str, aws.eks.AccessEntry] = {}
        for arn, groups, owner in plan.cluster.access_entries:
            self.entries[arn] = aws.eks.AccessEntry(
                entry_name(arn),
                cluster_name=cluster_name,
                principal_arn=arn,
                kubernetes_groups=list(groups),
                type=ACCESS_ENTRY_TYPE,
                tags={**plan.platform_tags, cv.TAG_ACCESS_OWNER: owner},
                opts=child,
            )
        self.oidc: aws.eks.IdentityProviderConfig | None = None
        o = plan.cluster.oidc
        if o is not None:
            self.oidc = aws.eks.IdentityProviderConfig(
                f"oidc-{o.name}",
                cluster_name=cluster_name,
                oidc=aws.eks.IdentityProviderConfigOidcArgs(
                    identity_provider_config_name=o.name,
                    issuer_url=o.issuer_url,
                    client_id=o.client_id,
                    username_claim=o.username_claim,
                    username_prefix=o.username_prefix,
                    groups_claim=o.groups_claim,
                    groups_prefix=o.groups_prefix,
                    required_claims=dict(o.required_claims) if o.required_claims else None,
                ),
                tags=plan.platform_tags,
                opts=child,
            )
        self.register_outputs({})

    def exports(self) -> dict[str, Any]:
        c = self.plan.cluster
        return {"identity": {
            "accessEntries": {arn: list(groups) for arn, groups, _ in c.access_entries},
            "oidcProvider": c.oidc.name if c.oidc is not None else None,
        }}
