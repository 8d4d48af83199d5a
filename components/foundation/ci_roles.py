"""CiRoles: the IAM roles GitHub Actions previews and deploys the stack with, and their EKS access entries.

- Trust: GitHub's OIDC issuer, audience sts.amazonaws.com, and the token subjects the plan lists
  (gpu_platform/plan/ci.py), matched with StringEquals: no wildcard, so no other repository, branch or event can
  assume a role (GitHub docs, "Configuring OpenID Connect in Amazon Web Services", "Configuring the role and trust
  policy"; IAM user guide, id_roles_create_for-idp_oidc.html).
- The account's IAM OIDC provider for the issuer, unless it already has one (createOidcProvider false). Its
  thumbprint is optional: IAM trusts the issuer's certificate through its own root CAs for GitHub (IAM user guide,
  id_roles_providers_create_oidc.html) and pulumi-aws 7 makes thumbprintLists optional.
- Preview role: the AWS managed policy ReadOnlyAccess (a preview reads; the DIY backend takes no lock for a
  preview: pulumi/pulumi pkg/backend/diy/backend.go), the state bucket's objects to read, the secrets key to
  decrypt; in the cluster the EKS access policy AmazonEKSAdminViewPolicy (reads every object, cluster-scoped ones
  included: EKS user guide, access-policy-permissions.html).
- Deploy role: the managed policies given (the deployer policy made from `platform_cli deployer-policy`), the state
  bucket to read and write, the key to encrypt and decrypt; in the cluster AmazonEKSClusterAdminPolicy.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

import pulumi
import pulumi_aws as aws

from gpu_platform import conventions as cv
from gpu_platform.plan import CiPlan, Plan

# CreateAccessEntry.type for people and CI roles (EKS API reference).
ACCESS_ENTRY_TYPE = "STANDARD"
# EKS access policies (EKS user guide, access-policy-permissions.html), by the role that gets them.
ACCESS_POLICY = {cv.CI_DEPLOY: "AmazonEKSClusterAdminPolicy", cv.CI_PREVIEW: "AmazonEKSAdminViewPolicy"}
# The AWS managed policy a preview reads AWS with (AWS managed policy reference, ReadOnlyAccess).
READ_ONLY_POLICY = "ReadOnlyAccess"


def trust_policy(provider_arn: str, subjects: Sequence[str]) -> str:
    """Who may assume a CI role: a token of GitHub's issuer, for STS, with one of the subjects."""
    host = cv.GITHUB_OIDC_HOST
    return json.dumps({"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow",
        "Principal": {"Federated": provider_arn},
        "Action": "sts:AssumeRoleWithWebIdentity",
        "Condition": {"StringEquals": {f"{host}:aud": cv.GITHUB_OIDC_AUDIENCE, f"{host}:sub": list(subjects)}},
    }]}, sort_keys=True)


def backend_policy(ci: CiPlan, kind: str) -> str | None:
    """The state bucket (read; the deploy role writes too) and the secrets key (decrypt; deploy encrypts too)."""
    statements: list[dict[str, Any]] = []
    writes = kind == cv.CI_DEPLOY
    if ci.state_bucket:
        bucket = f"arn:{ci.partition}:s3:::{ci.state_bucket}"
        statements.append({"Sid": "StateBucket", "Effect": "Allow", "Action": ["s3:ListBucket", "s3:GetBucketLocation"],
                           "Resource": bucket})
        statements.append({"Sid": "StateObjects", "Effect": "Allow",
                           "Action": ["s3:GetObject", *(["s3:PutObject", "s3:DeleteObject"] if writes else [])],
                           "Resource": f"{bucket}/*"})
    if ci.secrets_key_arn:
        statements.append({"Sid": "SecretsKey", "Effect": "Allow",
                           "Action": ["kms:Decrypt", *(["kms:Encrypt", "kms:GenerateDataKey"] if writes else [])],
                           "Resource": ci.secrets_key_arn})
    if not statements:
        return None
    return json.dumps({"Version": "2012-10-17", "Statement": statements}, sort_keys=True)


class CiRoles(pulumi.ComponentResource):
    """The OIDC provider (optional), the preview and deploy roles, their policies and access entries."""

    TYPE = "gpu-platform:foundation:CiRoles"

    def __init__(self, name: str, plan: Plan, ci: CiPlan, cluster_name: pulumi.Input[str],
                 cluster_ready: Sequence[pulumi.Resource] = (), opts: pulumi.ResourceOptions | None = None):
        super().__init__(self.TYPE, name, None, opts)
        self.ci = ci
        child = pulumi.ResourceOptions(parent=self)
        tags = plan.platform_tags
        self.oidc_provider: aws.iam.OpenIdConnectProvider | None = None
        provider_arn: pulumi.Input[str]
        if ci.create_oidc_provider:
            self.oidc_provider = aws.iam.OpenIdConnectProvider(
                "ci-github", url=f"https://{cv.GITHUB_OIDC_HOST}", client_id_lists=[cv.GITHUB_OIDC_AUDIENCE],
                tags=tags, opts=child)
            provider_arn = self.oidc_provider.arn
        else:
            account = aws.get_caller_identity_output(opts=pulumi.InvokeOutputOptions(parent=self)).account_id
            provider_arn = account.apply(
                lambda a: f"arn:{ci.partition}:iam::{a}:oidc-provider/{cv.GITHUB_OIDC_HOST}")
        self.roles: dict[str, aws.iam.Role] = {}
        for kind, role_name, subjects in ((cv.CI_PREVIEW, ci.preview_role_name, ci.preview_subjects),
                                          (cv.CI_DEPLOY, ci.deploy_role_name, ci.deploy_subjects)):
            role = aws.iam.Role(
                f"ci-{kind}", name=role_name,
                assume_role_policy=pulumi.Output.from_input(provider_arn).apply(
                    lambda arn, s=subjects: trust_policy(arn, s)),
                description=f"GitHub Actions ({ci.repository}): {kind} of {plan.cluster.name}",
                tags=tags, opts=child)
            self.roles[kind] = role
            policies = ([f"arn:{ci.partition}:iam::aws:policy/{READ_ONLY_POLICY}"] if kind == cv.CI_PREVIEW
                        else list(ci.deploy_policy_arns))
            for i, arn in enumerate(policies):
                aws.iam.RolePolicyAttachment(f"ci-{kind}-{i}", role=role.name, policy_arn=arn, opts=child)
            backend = backend_policy(ci, kind)
            if backend is not None:
                aws.iam.RolePolicy(f"ci-{kind}-backend", role=role.name, policy=backend, opts=child)
            if ci.cluster_access:
                after = pulumi.ResourceOptions(parent=self, depends_on=list(cluster_ready))
                entry = aws.eks.AccessEntry(
                    f"ci-{kind}", cluster_name=cluster_name, principal_arn=role.arn, type=ACCESS_ENTRY_TYPE,
                    tags={**tags, cv.TAG_ACCESS_OWNER: "platform"}, opts=after)
                aws.eks.AccessPolicyAssociation(
                    f"ci-{kind}", cluster_name=cluster_name, principal_arn=role.arn,
                    policy_arn=f"arn:{ci.partition}:eks::aws:cluster-access-policy/{ACCESS_POLICY[kind]}",
                    access_scope=aws.eks.AccessPolicyAssociationAccessScopeArgs(type="cluster"),
                    opts=pulumi.ResourceOptions(parent=self, depends_on=[entry]))
        self.register_outputs({})

    def exports(self) -> dict[str, Any]:
        return {"ci": {
            "repository": self.ci.repository,
            "previewRoleArn": self.roles[cv.CI_PREVIEW].arn,
            "deployRoleArn": self.roles[cv.CI_DEPLOY].arn,
            "previewSubjects": list(self.ci.preview_subjects),
            "deploySubjects": list(self.ci.deploy_subjects),
        }}
