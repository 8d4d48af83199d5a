"""The Karpenter controller's IAM statements and its interruption queue's policy, each whole: its effect, actions and resource written out for the
staging-karpenter stack's cluster (ml-staging, us-east-1, account 111122223333). A statement that lost its
Resource is refused by IAM when the policy is created; one whose resource widened or narrowed lets the
controller do more, or fails its calls at the first node it launches. World: pure function, no render."""

from __future__ import annotations

from typing import Any

import json

from components.karpenter import controller_policies, queue_policy
from tests.conftest import KARPENTER_STACK, plan_of

ACCOUNT = "111122223333"
NODE_ROLE = f"arn:aws:iam::{ACCOUNT}:role/KarpenterNodeRole-ml-staging"
QUEUE = f"arn:aws:sqs:us-east-1:{ACCOUNT}:ml-staging-karpenter"
EC2 = "arn:aws:ec2:us-east-1"
PROFILE = f"arn:aws:iam::{ACCOUNT}:instance-profile/*"
LAUNCHED = [f"{EC2}:*:fleet/*", f"{EC2}:*:instance/*", f"{EC2}:*:volume/*", f"{EC2}:*:network-interface/*",
            f"{EC2}:*:launch-template/*", f"{EC2}:*:spot-instances-request/*"]

# policy -> Sid -> (Effect, Action, Resource, the Condition's operators)
EXPECTED: dict[str, dict[str, tuple[str, Any, Any, list[str]]]] = {
    "node-lifecycle": {
        "AllowScopedEC2InstanceAccessActions": (
            "Allow", ["ec2:RunInstances", "ec2:CreateFleet"],
            [f"{EC2}::image/*", f"{EC2}::snapshot/*", f"{EC2}:*:security-group/*", f"{EC2}:*:subnet/*",
             f"{EC2}:*:capacity-reservation/*", f"{EC2}:*:placement-group/*"], []),
        "AllowScopedEC2LaunchTemplateAccessActions": (
            "Allow", ["ec2:RunInstances", "ec2:CreateFleet"], f"{EC2}:*:launch-template/*", ["StringEquals", "StringLike"]),
        "AllowScopedEC2InstanceActionsWithTags": (
            "Allow", ["ec2:RunInstances", "ec2:CreateFleet", "ec2:CreateLaunchTemplate"], LAUNCHED,
            ["StringEquals", "StringLike"]),
        "AllowScopedResourceCreationTagging": ("Allow", "ec2:CreateTags", LAUNCHED, ["StringEquals", "StringLike"]),
        "AllowScopedResourceTagging": (
            "Allow", "ec2:CreateTags", f"{EC2}:*:instance/*",
            ["ForAllValues:StringEquals", "StringEquals", "StringEqualsIfExists", "StringLike"]),
        "AllowScopedDeletion": (
            "Allow", ["ec2:TerminateInstances", "ec2:DeleteLaunchTemplate"],
            [f"{EC2}:*:instance/*", f"{EC2}:*:launch-template/*"], ["StringEquals", "StringLike"]),
    },
    "iam-integration": {
        "AllowPassingInstanceRole": ("Allow", "iam:PassRole", NODE_ROLE, ["StringEquals"]),
        "AllowScopedInstanceProfileCreationActions": (
            "Allow", ["iam:CreateInstanceProfile"], PROFILE, ["StringEquals", "StringLike"]),
        "AllowScopedInstanceProfileTagActions": ("Allow", ["iam:TagInstanceProfile"], PROFILE, ["StringEquals", "StringLike"]),
        "AllowScopedInstanceProfileActions": (
            "Allow", ["iam:AddRoleToInstanceProfile", "iam:RemoveRoleFromInstanceProfile", "iam:DeleteInstanceProfile"],
            PROFILE, ["StringEquals", "StringLike"]),
    },
    "eks-integration": {
        "AllowAPIServerEndpointDiscovery": (
            "Allow", "eks:DescribeCluster", f"arn:aws:eks:us-east-1:{ACCOUNT}:cluster/ml-staging", []),
    },
    "resource-discovery": {
        "AllowRegionalReadActions": (
            "Allow", ["ec2:DescribeCapacityReservations", "ec2:DescribeImages", "ec2:DescribeInstances",
                      "ec2:DescribeInstanceStatus", "ec2:DescribeInstanceTypeOfferings", "ec2:DescribeInstanceTypes",
                      "ec2:DescribeLaunchTemplates", "ec2:DescribePlacementGroups", "ec2:DescribeSecurityGroups",
                      "ec2:DescribeSpotPriceHistory", "ec2:DescribeSubnets"], "*", ["StringEquals"]),
        "AllowSSMReadActions": ("Allow", "ssm:GetParameter", "arn:aws:ssm:us-east-1::parameter/aws/service/*", []),
        "AllowPricingReadActions": ("Allow", "pricing:GetProducts", "*", []),
        "AllowUnscopedInstanceProfileListAction": ("Allow", "iam:ListInstanceProfiles", "*", []),
        "AllowInstanceProfileReadActions": ("Allow", "iam:GetInstanceProfile", PROFILE, []),
    },
    "interruption": {
        "AllowInterruptionQueueActions": (
            "Allow", ["sqs:DeleteMessage", "sqs:GetQueueUrl", "sqs:ReceiveMessage"], QUEUE, []),
    },
}


def test_every_controller_statement_has_its_effect_actions_and_resource() -> None:
    docs = controller_policies(plan_of(KARPENTER_STACK).karpenter, "ml-staging", "us-east-1", ACCOUNT, NODE_ROLE, QUEUE)
    got = {name: {s["Sid"]: (s.get("Effect"), s.get("Action"), s.get("Resource"), sorted(s.get("Condition", {})))
                  for s in doc["Statement"]}
           for name, doc in docs.items()}
    assert got == EXPECTED
    assert {doc["Version"] for doc in docs.values()} == {"2012-10-17"}


def test_the_interruption_queue_takes_events_from_eventbridge_and_sqs_and_nothing_without_tls() -> None:
    assert json.loads(queue_policy(QUEUE)) == {"Id": "EC2InterruptionPolicy", "Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"Service": ["events.amazonaws.com", "sqs.amazonaws.com"]},
         "Action": "sqs:SendMessage", "Resource": QUEUE},
        {"Sid": "DenyHTTP", "Effect": "Deny", "Action": "sqs:*", "Resource": QUEUE,
         "Condition": {"Bool": {"aws:SecureTransport": "false"}}, "Principal": "*"},
    ]}
