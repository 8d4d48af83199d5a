"""An `eks` stack's AWS region (gpu_platform/spec/loading.py): the region the AWS provider deploys to is the stack's
aws:region, else AWS_REGION, else AWS_DEFAULT_REGION (pulumi-aws 7.51.1 sdk/python/pulumi_aws/config/vars.py
`region`). A stack document whose region is none of them is refused, naming aws:region, rather than planned with
IAM ARNs, S3 endpoints and a kubeconfig that name "None".
"""

from __future__ import annotations

import copy
import dataclasses
import json
from typing import Any, Iterator

import pytest

from gpu_platform.plan.autoscaling import cluster_autoscaler_policy
from gpu_platform.data import admin_policy, team_policy
from gpu_platform.plan import build_plan
from gpu_platform.spec import SpecError
from gpu_platform.spec import loading
from gpu_platform.spec.loading import load_stack_config
from tests.conftest import stack_doc

REGION_VARS = ("AWS_REGION", "AWS_DEFAULT_REGION")


@pytest.fixture
def no_region_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in REGION_VARS:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def without_region(stack: str) -> dict[str, Any]:
    doc = copy.deepcopy(stack_doc(stack))
    del doc["config"]["aws:region"]
    return doc


def strings(value: Any) -> Iterator[str]:
    """Every string in a plan (dataclasses, mappings, sequences), the way a render would spell them."""
    if isinstance(value, str):
        yield value
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from strings(getattr(value, f.name))
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from strings(k)
            yield from strings(v)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for v in value:
            yield from strings(v)


def test_an_eks_stack_without_a_region_is_refused_naming_aws_region(no_region_env: pytest.MonkeyPatch) -> None:
    with pytest.raises(SpecError) as err:
        load_stack_config(without_region("prod"), "Pulumi.prod.yaml")
    assert [(p.path, p.message) for p in err.value.problems] == [(
        "config.aws:region",
        "cluster.provider 'eks' deploys to an AWS region and none is set: set aws:region (pulumi config set "
        "aws:region us-east-1) or AWS_REGION / AWS_DEFAULT_REGION, which the AWS provider reads when it is unset; "
        "the IAM policies, S3 endpoints and kubeconfig name it",
    )]


def test_the_region_problem_comes_with_the_others(no_region_env: pytest.MonkeyPatch) -> None:
    """All-or-nothing: one refusal lists every problem, the region's too."""
    doc = without_region("prod")
    doc["config"]["gpu-platform:platform"]["pools"][0]["instanceType"] = "p9.huge"
    with pytest.raises(SpecError) as err:
        load_stack_config(doc)
    paths = [p.path for p in err.value.problems]
    assert paths[0] == "config.aws:region" and "pools[0].instanceType" in paths


def test_a_region_that_is_not_a_name_is_refused(no_region_env: pytest.MonkeyPatch) -> None:
    doc = copy.deepcopy(stack_doc("prod"))
    doc["config"]["aws:region"] = 1
    with pytest.raises(SpecError) as err:
        load_stack_config(doc)
    assert [(p.path, p.message) for p in err.value.problems] == [
        ("config.aws:region", "must be a region name such as us-east-1, got int")]


@pytest.mark.parametrize("variable", REGION_VARS)
def test_the_providers_environment_gives_the_region(no_region_env: pytest.MonkeyPatch, variable: str) -> None:
    """With AWS_REGION (or AWS_DEFAULT_REGION) set the provider knows the region, and so does the plan: no
    string of it, nor of the IAM documents made from it, names "None"."""
    no_region_env.setenv(variable, "us-east-1")
    spec, region = load_stack_config(without_region("prod"))
    assert region == "us-east-1"
    plan = build_plan(spec, region)
    assert plan.region == "us-east-1"
    assert plan.cluster_autoscaler is not None and plan.cluster_autoscaler.region == "us-east-1"
    documents = [cluster_autoscaler_policy(plan.cluster_autoscaler, "000000000000", ["eks-ml-prod-l40s-infer-x"]),
                 admin_policy(plan.data), *(team_policy(plan.data, t) for t in plan.data.teams)]
    rendered = [*strings(plan), *(json.dumps(d) for d in documents)]
    assert [s for s in rendered if "None" in s] == []
    arn = "arn:aws:autoscaling:us-east-1:000000000000:autoScalingGroup:*:autoScalingGroupName/eks-ml-prod-l40s-infer-x"
    assert arn in json.dumps(documents[0])


def test_aws_region_wins_then_aws_region_env_then_aws_default_region() -> None:
    env = {"AWS_REGION": "us-east-2", "AWS_DEFAULT_REGION": "us-west-2"}
    assert loading.provider_region("eu-west-1", env) == "eu-west-1"
    assert loading.provider_region(None, env) == "us-east-2"
    assert loading.provider_region(None, {"AWS_DEFAULT_REGION": "us-west-2"}) == "us-west-2"
    assert loading.provider_region("", {"AWS_REGION": ""}) is None


def test_an_existing_cluster_needs_no_region(no_region_env: pytest.MonkeyPatch) -> None:
    """Pulumi.local.yaml attaches to a cluster and makes nothing in AWS: no region, no refusal."""
    spec, region = load_stack_config(copy.deepcopy(stack_doc("local")))
    assert (spec.cluster.provider, region) == ("existing", None)


def test_the_autoscalers_arns_are_never_rendered_without_a_region() -> None:
    """A plan built without a region (build_plan(spec) with none) fails at the ARN instead of granting on
    arn:aws:autoscaling:None:..."""
    spec, _ = load_stack_config(stack_doc("prod"))
    ca = build_plan(spec, None).cluster_autoscaler
    assert ca is not None
    with pytest.raises(ValueError, match="the AWS region of cluster 'ml-prod' is unknown: set aws:region"):
        cluster_autoscaler_policy(ca, "000000000000", ["eks-ml-prod-l40s-infer-x"])
