"""Every AWS name the stack renders fits the API that takes it, for every cluster name that validates.

Names start with cluster.name (node groups, Karpenter's roles, queue and EventBridge rules, the EFA security
group), so each shipped stack is rendered with the longest cluster name its spec accepts and every name
field of every AWS resource is measured against its limit. The limits are read from botocore's service
models (the data the AWS SDKs are generated from: shape `max`, or the member's documented "up to N
characters"), not from a table kept here; the one limit no model states (EKS node group names, 63 in the
EKS user guide) is written here, and a test says so, so that a model that starts stating it is read instead.
"""

from __future__ import annotations

import copy
import functools
import re
from typing import Any

import pytest
from botocore.loaders import Loader

from gpu_platform import conventions as cv
from gpu_platform.spec import SpecError, load_platform
from gpu_platform.spec import karpenter_checks, pool_checks
from gpu_platform.spec.limits import IAM_ROLE_NAME_MAX
from tests.conftest import KARPENTER_STACK, background_render, platform_raw, rendered, stack_doc

STACKS = ("prod", "staging", KARPENTER_STACK)

# Which API call takes each name the program sets: (Pulumi type token, input) -> (service, operation, member,
# with "." into a list member's structure). The limits come from the models; only the mapping is ours.
NAME_FIELDS: dict[tuple[str, str], tuple[str, str, str]] = {
    ("aws:eks/cluster:Cluster", "name"): ("eks", "CreateCluster", "name"),
    ("aws:eks/nodeGroup:NodeGroup", "nodeGroupName"): ("eks", "CreateNodegroup", "nodegroupName"),
    ("aws:iam/role:Role", "name"): ("iam", "CreateRole", "RoleName"),
    ("aws:iam/role:Role", "description"): ("iam", "CreateRole", "Description"),
    ("aws:iam/policy:Policy", "name"): ("iam", "CreatePolicy", "PolicyName"),
    ("aws:sqs/queue:Queue", "name"): ("sqs", "CreateQueue", "QueueName"),
    ("aws:cloudwatch/eventRule:EventRule", "name"): ("events", "PutRule", "Name"),
    ("aws:cloudwatch/eventTarget:EventTarget", "targetId"): ("events", "PutTargets", "Targets.Id"),
    ("aws:ec2/launchTemplate:LaunchTemplate", "namePrefix"): ("ec2", "CreateLaunchTemplate", "LaunchTemplateName"),
    ("aws:ec2/launchTemplate:LaunchTemplate", "description"): ("ec2", "CreateLaunchTemplateVersion", "VersionDescription"),
    ("aws:ec2/placementGroup:PlacementGroup", "name"): ("ec2", "CreatePlacementGroup", "GroupName"),
    ("aws:ec2/securityGroup:SecurityGroup", "name"): ("ec2", "CreateSecurityGroup", "GroupName"),
    ("aws:ec2/securityGroup:SecurityGroup", "description"): ("ec2", "CreateSecurityGroup", "Description"),
    ("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", "description"):
        ("ec2", "AuthorizeSecurityGroupIngress", "IpPermissions.UserIdGroupPairs.Description"),
    ("aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule", "description"):
        ("ec2", "AuthorizeSecurityGroupEgress", "IpPermissions.UserIdGroupPairs.Description"),
}
# Inputs that name something: every one the stacks render must be in NAME_FIELDS.
NAME_INPUTS = ("name", "namePrefix", "nodeGroupName", "targetId", "description")
# The node group name limit the eks model does not state (EKS user guide, create-managed-node-group.html: "The
# node group name can't be longer than 63 characters").
EKS_NODEGROUP_NAME_MAX = 63
# A name_prefix gets a unique suffix of 26 characters (hashicorp/terraform-plugin-sdk helper/id,
# UniqueIDSuffixLength, which the AWS provider's name generator uses).
PREFIX_SUFFIX = 26

_LOADER = Loader()


@functools.cache
def _model(service: str) -> dict[str, Any]:
    return _LOADER.load_service_model(service, "service-2")


def _member(service: str, operation: str, member: str) -> tuple[str, dict[str, Any]]:
    """The shape name and member entry of an operation's input member ("Targets.Id" walks into a list)."""
    model = _model(service)
    shape = model["shapes"][model["operations"][operation]["input"]["shape"]]
    entry: dict[str, Any] = {}
    name = ""
    for part in member.split("."):
        entry = shape["members"][part]
        name = entry["shape"]
        shape = model["shapes"][name]
        while shape["type"] == "list":
            name = shape["member"]["shape"]
            shape = model["shapes"][name]
    return name, entry


def model_limit(service: str, operation: str, member: str) -> int | None:
    """The member's maximum length as the model states it: its shape's `max`, else its documentation's
    "up to N characters", else the `max` of the shape named like the member (EC2 declares LaunchTemplateName
    but types CreateLaunchTemplate's member as a plain String). None when the model states none."""
    model = _model(service)
    shape_name, entry = _member(service, operation, member)
    shape = model["shapes"][shape_name]
    if "max" in shape:
        return int(shape["max"])
    found = re.search(r"[Uu]p to (\d+) (?:ASCII )?characters", entry.get("documentation", ""))
    if found:
        return int(found.group(1))
    named = model["shapes"].get(member.split(".")[-1])
    if named is not None and "max" in named:
        return int(named["max"])
    return None


def limit_of(key: tuple[str, str]) -> int:
    service, operation, member = NAME_FIELDS[key]
    found = model_limit(service, operation, member)
    if found is None:
        assert key == ("aws:eks/nodeGroup:NodeGroup", "nodeGroupName"), f"{service} {operation}.{member} states no limit"
        return EKS_NODEGROUP_NAME_MAX
    return found


# ---------------------------------------------------------------------------------------------------
# the spec's limits are the models'


def test_the_spec_checks_names_against_the_models_limits() -> None:
    assert IAM_ROLE_NAME_MAX == model_limit("iam", "CreateRole", "RoleName") == 64
    assert karpenter_checks.EVENTBRIDGE_RULE_NAME_MAX == model_limit("events", "PutRule", "Name") == 64
    assert karpenter_checks.SQS_QUEUE_NAME_MAX == model_limit("sqs", "CreateQueue", "QueueName") == 80


def test_eks_node_group_names_are_the_one_limit_no_model_states() -> None:
    """If botocore's eks model ever states one, read it from there (and this fails to say so)."""
    assert model_limit("eks", "CreateNodegroup", "nodegroupName") is None
    assert pool_checks.EKS_NODEGROUP_NAME_MAX == EKS_NODEGROUP_NAME_MAX


# ---------------------------------------------------------------------------------------------------
# every name at the longest cluster name that validates


@functools.cache
def longest_cluster_name(stack: str) -> str:
    raw = platform_raw(stack)
    region = stack_doc(stack)["config"].get("aws:region")
    for length in range(cv.MAX_LABEL_LENGTH, 0, -1):
        raw["cluster"]["name"] = "c" * length
        try:
            load_platform(raw, region)
        except SpecError:
            continue
        return raw["cluster"]["name"]
    raise AssertionError(f"{stack}: no cluster name validates")


@background_render(*STACKS)
def at_the_longest_cluster_name(stack: str) -> tuple[str, dict[str, Any]]:
    """The stack with the longest cluster name its spec accepts (rendered by the render worker)."""
    config = copy.deepcopy(stack_doc(stack)["config"])
    config[cv.CONFIG_KEY]["cluster"]["name"] = longest_cluster_name(stack)
    return stack, config


def too_long(resources) -> list[str]:
    out = []
    for r in resources:
        for (type_, field), _ in NAME_FIELDS.items():
            value = r.inputs.get(field) if r.type == type_ else None
            if not isinstance(value, str):
                continue
            length = len(value) + (PREFIX_SUFFIX if field == "namePrefix" else 0)
            limit = limit_of((type_, field))
            if length > limit:
                out.append(f"{r.type} {r.name}.{field} {value!r}: {length} > {limit}")
        if r.type == "aws:eks/nodeGroup:NodeGroup":
            # The node labels too (CreateNodegroup labels: labelsMap of labelKey to labelValue).
            shapes = _model("eks")["shapes"]
            keys, values = shapes["labelKey"]["max"], shapes["labelValue"]["max"]
            for k, v in (r.inputs.get("labels") or {}).items():
                if len(k) > keys or len(v) > values:
                    out.append(f"{r.type} {r.name} label {k}={v}: over {keys} / {values}")
    return out


@pytest.mark.parametrize("stack", STACKS)
def test_every_aws_name_fits_at_the_longest_cluster_name_that_validates(stack: str) -> None:
    name = longest_cluster_name(stack)
    assert len(name) >= 20, name  # the check does not forbid realistic names
    rendered_at_name = at_the_longest_cluster_name(stack)
    assert {r.inputs["clusterName"] for r in rendered_at_name.custom if "clusterName" in r.inputs} == {name}
    assert too_long(rendered_at_name.resources) == []


def test_karpenter_rule_names_decide_the_karpenter_stacks_longest_cluster_name() -> None:
    """The old rule names (`<cluster>-karpenter-capacity-reservation-interruption`) passed validation at 46
    characters and were 90; the rules now end in a short name and the spec stops one character before the
    longest one overruns PutRule's 64."""
    longest = "state-change"
    raw = platform_raw(KARPENTER_STACK)
    raw["cluster"]["name"] = "c" * 42
    with pytest.raises(SpecError) as err:
        load_platform(raw, "us-east-1")
    (problem,) = [str(p) for p in err.value.problems]
    assert problem.startswith("cluster.name:")
    assert f"EventBridge rule name '{'c' * 42}-karpenter-{longest}' would be 65 characters and AWS allows 64" in problem
    assert "use at most 41 characters" in problem
    assert len(longest_cluster_name(KARPENTER_STACK)) == 64 - len("-karpenter-") - len(longest) == 41
    assert max(cv.KARPENTER_INTERRUPTION_RULES, key=len) == longest


def test_every_name_the_stacks_render_is_measured() -> None:
    """A new AWS resource with a name must be added to NAME_FIELDS, or its name goes unchecked."""
    unmapped = {(r.type, k) for stack in STACKS for r in rendered(stack).resources
                if r.type.startswith("aws:") for k in NAME_INPUTS if k in r.inputs} - set(NAME_FIELDS)
    assert unmapped == set()
