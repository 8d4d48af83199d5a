"""The VPC a created cluster runs in (cluster.vpc): the names and tags of what the stack makes; the GitHub Actions
OIDC issuer the CI roles (cluster.ci) trust, and their names."""

from __future__ import annotations

from .labels import PREFIX

# Subnet role tags: the AWS Load Balancer Controller (and the in-tree service controller) put internet-facing
# load balancers in subnets tagged kubernetes.io/role/elb=1 and internal ones in kubernetes.io/role/internal-elb=1
# (EKS user guide, network-load-balancing.html, "Subnet tagging"; kubernetes-sigs/aws-load-balancer-controller
# docs/deploy/subnet_discovery.md).
SUBNET_ROLE_PUBLIC_TAG = "kubernetes.io/role/elb"
SUBNET_ROLE_PRIVATE_TAG = "kubernetes.io/role/internal-elb"
SUBNET_ROLE_TAG_VALUE = "1"
# The tier of a subnet the stack makes, as a tag of its own (gpu-platform.io/subnet-tier).
SUBNET_TIER_TAG = f"{PREFIX}/subnet-tier"
SUBNET_TIER_PRIVATE = "private"
SUBNET_TIER_PUBLIC = "public"

# GitHub Actions' OIDC issuer and the audience the aws-actions/configure-aws-credentials action asks for
# (GitHub docs, "Configuring OpenID Connect in Amazon Web Services": provider URL
# https://token.actions.githubusercontent.com, audience sts.amazonaws.com).
GITHUB_OIDC_HOST = "token.actions.githubusercontent.com"
GITHUB_OIDC_AUDIENCE = "sts.amazonaws.com"


# The two CI roles (cluster.ci): pull-request previews and deploys.
CI_PREVIEW = "preview"
CI_DEPLOY = "deploy"


def ci_role_name(cluster: str, kind: str) -> str:
    """`<cluster>-ci-deploy`: the IAM role GitHub Actions assumes for one kind of run."""
    return f"{cluster}-ci-{kind}"


def vpc_name(cluster: str) -> str:
    return f"{cluster}-vpc"


def subnet_name(cluster: str, tier: str, zone: str) -> str:
    """`<cluster>-private-us-east-1a`: the Name tag of a zone's subnet of one tier."""
    return f"{cluster}-{tier}-{zone}"
