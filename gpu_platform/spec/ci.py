"""`cluster.ci`: the roles GitHub Actions deploys the stack with, and their way into the cluster.

Two IAM roles that trust GitHub's OIDC issuer, each for one kind of run of one repository: the preview role for
pull requests (read-only in AWS, view-only in the cluster) and the deploy role for the branch (and GitHub
environments) that run `pulumi up`. Both get an EKS access entry. The deploy role's AWS permissions are the
policies named in deployPolicyArns: the document `python -m platform_cli deployer-policy` derives from the stack,
made into a managed policy once (docs/tasks/deploy-fresh-aws-account.md), so the role that deploys the stack
never holds rights the stack does not use.
"""

from __future__ import annotations

import re

from pydantic import Field, field_validator

from .fields import Strict

# owner/name as GitHub allows them: an owner of letters, digits and '-', a repository of those and '.', '_'.
REPOSITORY = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}$")
# A managed policy ARN, AWS's own (account "aws") or one of the account's.
POLICY_ARN = re.compile(r"^arn:aws(?:-cn|-us-gov)?:iam::(?:aws|\d{12}):policy/(?:[\w+=,.@-]+/)*[\w+=,.@-]{1,128}$")
KMS_KEY_ARN = re.compile(r"^arn:aws(?:-cn|-us-gov)?:kms:[a-z0-9-]+:\d{12}:(?:key|alias)/[\w/+=,.@-]+$")


class GithubCi(Strict):
    repository: str = Field(
        description="the GitHub repository (owner/name) whose workflows assume the roles",
        examples=["my-org/gpu-platform"],
    )
    deployBranch: str = Field(
        default="main",
        description=(
            "pushes to this branch may assume the deploy role, its scheduled runs the preview role (token subject "
            "repo:<repository>:ref:refs/heads/<branch>)"
        ),
        examples=["main"],
    )
    deployEnvironments: list[str] = Field(
        default_factory=list,
        description=(
            "GitHub environments whose jobs may assume the deploy role (subject repo:<repository>:environment:<name>; "
            "a job that names an environment carries that subject instead of the branch's: the repository's deploy "
            "workflow runs staging and prod in environments of those names)"
        ),
        examples=[["staging", "prod"]],
    )
    createOidcProvider: bool = Field(
        default=True,
        description=(
            "make the account's IAM OIDC provider for token.actions.githubusercontent.com; false when the account "
            "already has it (one per account and URL)"
        ),
        examples=[True],
    )
    deployPolicyArns: list[str] = Field(
        default_factory=list,
        description="managed policies of the deploy role: the one made from `platform_cli deployer-policy`",
        examples=[["arn:aws:iam::111122223333:policy/gpu-sandbox-deployer"]],
    )
    stateBucket: str | None = Field(
        default=None,
        description=(
            "the S3 bucket of the Pulumi state backend: both roles read it, only the deploy role writes it (a "
            "preview takes no lock on a DIY backend)"
        ),
        examples=["my-org-pulumi-state"],
    )
    secretsKeyArn: str | None = Field(
        default=None,
        description="the KMS key of the awskms secrets provider: both roles decrypt with it, the deploy role encrypts",
        examples=["arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"],
    )
    clusterAccess: bool = Field(
        default=True,
        description=(
            "make the roles' EKS access entries (deploy: cluster admin; preview: admin view); false when the deploy "
            "role created the cluster, whose creator already has an entry"
        ),
        examples=[True],
    )

    @field_validator("repository")
    @classmethod
    def _repository(cls, v: str) -> str:
        if not REPOSITORY.match(v):
            raise ValueError(f"{v!r} is not a GitHub repository: write owner/name")
        return v

    @field_validator("deployPolicyArns")
    @classmethod
    def _policies(cls, v: list[str]) -> list[str]:
        for arn in v:
            if not POLICY_ARN.match(arn):
                raise ValueError(f"{arn!r} is not a managed policy ARN: arn:aws:iam::<account or aws>:policy/<name>")
        return v

    @field_validator("secretsKeyArn")
    @classmethod
    def _key(cls, v: str | None) -> str | None:
        if v is not None and not KMS_KEY_ARN.match(v):
            raise ValueError(f"{v!r} is not a KMS key ARN: arn:aws:kms:<region>:<account>:key/<id>")
        return v


class Ci(Strict):
    github: GithubCi = Field(
        description="GitHub Actions, through its OIDC issuer (no long-lived AWS keys in the repository)",
        examples=[{"repository": "my-org/gpu-platform", "deployEnvironments": ["prod"]}],
    )
