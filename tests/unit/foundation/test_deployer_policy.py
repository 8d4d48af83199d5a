"""The deployer's IAM policy derived from what a stack renders (platform_cli/deployer_policy.py) under mocks: the
actions the fresh-account example needs, the attached stacks' differences, the managed policy size limit, and a
resource type with no known actions refused by name."""

from __future__ import annotations

import pytest

from gpu_platform.errors import InputError
from platform_cli.deployer_policy import (
    MANAGED_POLICY_MAX_CHARS, actions_for, of_render, policy_document, policy_size, unmapped,
)
from platform_cli.iam_actions import INVOKE_ACTIONS, RESOURCE_ACTIONS, SERVICE_PAGES
from tests.conftest import KARPENTER_STACK, rendered
from tests.unit.foundation.sandbox import sandbox


def allowed(doc: dict) -> set[str]:
    return {a for s in doc["Statement"] for a in s["Action"]}


def test_the_fresh_account_needs_vpc_cluster_and_role_actions() -> None:
    doc = policy_document(*of_render(sandbox()))
    assert {"ec2:CreateVpc", "ec2:CreateSubnet", "ec2:CreateNatGateway", "ec2:AllocateAddress",
            "ec2:CreateInternetGateway", "ec2:CreateRoute", "eks:CreateCluster", "eks:CreateNodegroup",
            "eks:CreateAddon", "eks:CreateAccessEntry", "eks:AssociateAccessPolicy", "iam:CreateRole",
            "iam:PassRole", "iam:CreateServiceLinkedRole", "iam:CreateOpenIDConnectProvider",
            "sts:GetCallerIdentity"} <= allowed(doc)
    assert [s["Sid"] for s in doc["Statement"]] == ["Autoscaling", "Ec2", "Eks", "Iam", "Sts"]
    assert all(s["Effect"] == "Allow" and s["Resource"] == "*" for s in doc["Statement"])
    assert policy_size(doc) <= MANAGED_POLICY_MAX_CHARS  # fits one customer managed policy


def test_an_attached_stack_makes_no_vpc_and_reads_its_cluster() -> None:
    types, invokes = of_render(rendered("prod"))
    granted = allowed(policy_document(types, invokes))
    assert "ec2:CreateVpc" not in granted and "eks:CreateCluster" not in granted
    assert {"eks:DescribeCluster", "ec2:DescribeSubnets", "fsx:CreateFileSystem", "s3:CreateBucket"} <= granted
    assert "aws:eks/getCluster:getCluster" in invokes


@pytest.mark.parametrize("stack", ["prod", "staging", "local", KARPENTER_STACK])
def test_every_type_the_committed_stacks_use_has_its_actions(stack: str) -> None:
    assert unmapped(*of_render(rendered(stack))) == []


def test_a_type_with_no_known_actions_is_refused_by_name() -> None:
    with pytest.raises(InputError) as err:
        actions_for({"aws:ec2/vpc:Vpc", "aws:ec2/vpcEndpoint:VpcEndpoint"}, {"aws:ec2/getVpc:getVpc"})
    assert str(err.value).startswith("no IAM actions known for aws:ec2/getVpc:getVpc (data source), "
                                     "aws:ec2/vpcEndpoint:VpcEndpoint: add each to platform_cli/iam_actions.py")


def test_kubernetes_objects_and_components_need_no_aws_action() -> None:
    assert unmapped({"kubernetes:core/v1:Namespace", "gpu-platform:foundation:ClusterNetwork",
                     "pulumi:providers:kubernetes"}, ()) == []


def test_every_action_is_spelled_service_colon_action_of_a_known_service() -> None:
    for type_, entry in {**RESOURCE_ACTIONS, **INVOKE_ACTIONS}.items():
        assert entry.cite, type_
        for action in entry.actions:
            service, _, name = action.partition(":")
            assert service in SERVICE_PAGES and name[:1].isupper(), (type_, action)


def test_the_command_prints_the_document_and_refuses_an_unmapped_type(monkeypatch: pytest.MonkeyPatch,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """The CLI over the session's render of the example (the render itself is what `render` runs)."""
    import json

    from harness.render import Recorded, Rendered
    from platform_cli import stack_render
    from platform_cli.cli import EXIT_INVALID, EXIT_OK, main
    from tests.unit.foundation.sandbox import SANDBOX_FILE

    monkeypatch.setattr(stack_render, "render_stack", lambda stack: sandbox())
    assert main(["deployer-policy", "--stack", str(SANDBOX_FILE)]) == EXIT_OK
    doc = json.loads(capsys.readouterr().out)
    assert doc["Version"] == "2012-10-17" and "eks:CreateCluster" in allowed(doc)

    odd = Rendered(resources=[Recorded("aws:ec2/vpcEndpoint:VpcEndpoint", "endpoint", None, True, {})])
    monkeypatch.setattr(stack_render, "render_stack", lambda stack: odd)
    assert main(["deployer-policy", "--stack", str(SANDBOX_FILE)]) == EXIT_INVALID
    assert "no IAM actions known for aws:ec2/vpcEndpoint:VpcEndpoint" in capsys.readouterr().err
