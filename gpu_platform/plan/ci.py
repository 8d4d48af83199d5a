"""The CI roles' plan (cluster.ci): which GitHub token subjects each role trusts and what it may reach.

The subjects are GitHub's (GitHub docs, "About security hardening with OpenID Connect", "Example subject
claims"): `repo:<owner>/<name>:pull_request` for a pull request's runs, `repo:<owner>/<name>:ref:refs/heads/<branch>`
for a branch's (pushes, and scheduled runs on the default branch), `repo:<owner>/<name>:environment:<name>` for a
job that names an environment, whatever its branch. The repository's deploy workflow runs `up` in jobs that name
the environments `staging` and `prod`, and its drift check on a schedule with the preview role and no environment.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import conventions as cv


@dataclass(frozen=True, slots=True)
class CiPlan:
    repository: str
    preview_role_name: str
    deploy_role_name: str
    # The token subjects each role trusts (sts:AssumeRoleWithWebIdentity with StringEquals on :sub).
    preview_subjects: tuple[str, ...]
    deploy_subjects: tuple[str, ...]
    create_oidc_provider: bool
    deploy_policy_arns: tuple[str, ...]
    state_bucket: str | None
    secrets_key_arn: str | None
    cluster_access: bool
    # The ARN partition of the region (aws, aws-cn, aws-us-gov): the OIDC provider's and policies' ARNs name it.
    partition: str


def partition_of(region: str | None) -> str:
    """The partition a region is in (AWS General Reference, "Amazon Resource Names": aws-cn for cn-*,
    aws-us-gov for us-gov-*)."""
    if region and region.startswith("cn-"):
        return "aws-cn"
    if region and region.startswith("us-gov-"):
        return "aws-us-gov"
    return "aws"


def plan_ci(cluster: str, region: str | None, repository: str, branch: str, environments: tuple[str, ...],
            create_oidc_provider: bool, deploy_policy_arns: tuple[str, ...], state_bucket: str | None,
            secrets_key_arn: str | None, cluster_access: bool) -> CiPlan:
    repo = f"repo:{repository}"
    return CiPlan(
        repository=repository,
        preview_role_name=cv.ci_role_name(cluster, cv.CI_PREVIEW),
        deploy_role_name=cv.ci_role_name(cluster, cv.CI_DEPLOY),
        # Pull requests' previews, and the deploy workflow's scheduled drift check on the branch (a read-only
        # `preview --refresh`, no environment).
        preview_subjects=(f"{repo}:pull_request", f"{repo}:ref:refs/heads/{branch}"),
        deploy_subjects=(f"{repo}:ref:refs/heads/{branch}", *(f"{repo}:environment:{e}" for e in environments)),
        create_oidc_provider=create_oidc_provider,
        deploy_policy_arns=deploy_policy_arns,
        state_bucket=state_bucket,
        secrets_key_arn=secrets_key_arn,
        cluster_access=cluster_access,
        partition=partition_of(region),
    )
