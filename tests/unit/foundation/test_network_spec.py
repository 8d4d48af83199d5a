"""cluster.vpc and cluster.ci in the spec and the plan (no Pulumi): which stacks may make their VPC and CI roles,
what is refused and why (by field), and the subnet layout and token subjects the plan derives."""

from __future__ import annotations

from typing import Any, Callable

import pytest

from gpu_platform.plan import build_plan
from gpu_platform.spec import SpecError
from gpu_platform.spec.loading import load_stack_platform
from tests.unit.foundation.sandbox import sandbox_raw


def problems(raw: dict[str, Any], region: str | None = "us-east-1") -> list[str]:
    with pytest.raises(SpecError) as err:
        load_stack_platform(raw, region)
    return [str(p) for p in err.value.problems]


def test_the_example_validates_and_its_plan_lays_out_two_zones() -> None:
    spec, region = load_stack_platform(sandbox_raw(), "us-east-1")
    vpc = build_plan(spec, region).cluster.vpc
    assert vpc is not None and vpc.name == "gpu-sandbox-vpc" and vpc.cidr == "10.0.0.0/16" and not vpc.nat_per_zone
    # A /16 in 4 blocks: the first two are the zones' private subnets, the last is cut in 8 for the public ones.
    assert [(s.zone, s.private_cidr, s.public_cidr) for s in vpc.subnets] == [
        ("us-east-1a", "10.0.0.0/18", "10.0.192.0/21"),
        ("us-east-1b", "10.0.64.0/18", "10.0.200.0/21"),
    ]


def test_six_zones_of_a_slash_20_still_get_512_addresses_each() -> None:
    raw = sandbox_raw()
    zones = [f"us-east-1{z}" for z in "abcdef"]
    raw["cluster"]["vpc"] = {"cidr": "10.8.0.0/20", "availabilityZones": zones, "natGateways": "per-zone"}
    spec, region = load_stack_platform(raw, "us-east-1")
    vpc = build_plan(spec, region).cluster.vpc
    assert vpc is not None and vpc.nat_per_zone
    assert [s.private_cidr for s in vpc.subnets] == ["10.8.0.0/23", "10.8.2.0/23", "10.8.4.0/23", "10.8.6.0/23",
                                                     "10.8.8.0/23", "10.8.10.0/23"]
    assert [s.public_cidr for s in vpc.subnets] == ["10.8.14.0/26", "10.8.14.64/26", "10.8.14.128/26",
                                                    "10.8.14.192/26", "10.8.15.0/26", "10.8.15.64/26"]


def _vpc(**fields: Any) -> Callable[[dict], None]:
    def mutate(raw: dict) -> None:
        raw["cluster"]["vpc"].update(fields)
    return mutate


def _cluster(**fields: Any) -> Callable[[dict], None]:
    def mutate(raw: dict) -> None:
        for key, value in fields.items():
            if value is None:
                raw["cluster"].pop(key, None)
            else:
                raw["cluster"][key] = value
    return mutate


def _pool_zone(zone: str) -> Callable[[dict], None]:
    def mutate(raw: dict) -> None:
        raw["pools"][0]["availabilityZone"] = zone
    return mutate


@pytest.mark.parametrize("mutate, expected", [
    (_cluster(subnetIds=["subnet-0a1b2c3d"]), "cluster.subnetIds: cluster.vpc makes the subnets: remove subnetIds"),
    (_cluster(create=False), "cluster.vpc: a VPC is made only for a cluster made here: set cluster.create: true"),
    (_cluster(provider="existing", create=None),
     "cluster.vpc: a VPC is made only for provider 'eks', not 'existing'"),
    (_cluster(vpc=None), "cluster.subnetIds: provider 'eks' needs the subnets for node groups (subnetIds), or "
                         "cluster.vpc with cluster.create: true to make them"),
    (_pool_zone("us-east-1c"), "pools[0].availabilityZone: 'us-east-1c' has no subnet: the VPC's zones are "
                               "us-east-1a, us-east-1b (cluster.vpc.availabilityZones)"),
    (_vpc(availabilityZones=["us-east-1a", "us-west-2b"]),
     "cluster.vpc.availabilityZones[1]: 'us-west-2b' is not in region 'us-east-1'"),
    (_vpc(availabilityZones=["us-east-1a"]), "cluster.vpc.availabilityZones: List should have at least 2 items"),
    (_vpc(availabilityZones=["us-east-1a", "us-east-1a"]),
     "cluster.vpc.availabilityZones: zone 'us-east-1a' is listed twice"),
    (_vpc(cidr="8.8.0.0/16"), "cluster.vpc.cidr: '8.8.0.0/16' is not a private IPv4 network"),
    (_vpc(cidr="10.0.0.0/24"), "cluster.vpc.cidr: '10.0.0.0/24': the prefix must be /16 to /20, got /24"),
    (_vpc(cidr="10.0.0.1/16"), "cluster.vpc.cidr: '10.0.0.1/16' is not an IPv4 network such as 10.0.0.0/16"),
    (_vpc(natGateways="two"), "cluster.vpc.natGateways: Input should be 'one' or 'per-zone'"),
    (_vpc(cidrs="10.0.0.0/16"), "cluster.vpc.cidrs: unknown field 'cidrs'; valid fields here: cidr, "
                                "availabilityZones, natGateways"),
    (_cluster(ci={"github": {"repository": "gpu-platform"}}),
     "cluster.ci.github.repository: 'gpu-platform' is not a GitHub repository: write owner/name"),
    (_cluster(ci={"github": {"repository": "o/r", "deployPolicyArns": ["arn:aws:iam::1:policy/x"]}}),
     "cluster.ci.github.deployPolicyArns: 'arn:aws:iam::1:policy/x' is not a managed policy ARN"),
])
def test_a_bad_network_or_ci_section_is_refused_by_field(mutate: Callable[[dict], None], expected: str) -> None:
    raw = sandbox_raw()
    mutate(raw)
    found = problems(raw)
    assert any(p.startswith(expected) for p in found), found


def test_ci_roles_trust_pull_requests_for_preview_and_the_branch_and_environments_for_deploy() -> None:
    raw = sandbox_raw()
    raw["cluster"]["ci"]["github"].update(repository="my-org/gpu-platform", deployEnvironments=["prod"])
    spec, region = load_stack_platform(raw, "us-east-1")
    ci = build_plan(spec, region).cluster.ci
    assert ci is not None
    assert (ci.preview_role_name, ci.deploy_role_name) == ("gpu-sandbox-ci-preview", "gpu-sandbox-ci-deploy")
    assert ci.preview_subjects == ("repo:my-org/gpu-platform:pull_request",
                                   "repo:my-org/gpu-platform:ref:refs/heads/main")
    assert ci.deploy_subjects == ("repo:my-org/gpu-platform:ref:refs/heads/main",
                                  "repo:my-org/gpu-platform:environment:prod")
    assert ci.partition == "aws" and ci.create_oidc_provider and ci.state_bucket == "example-org-pulumi-state"


def test_an_attached_existing_cluster_gets_no_ci_roles() -> None:
    raw = sandbox_raw()
    raw["cluster"] = {"name": "kind", "provider": "existing", "ci": {"github": {"repository": "o/r"}}}
    assert "cluster.ci: CI roles and their access entries are made only for provider 'eks', not 'existing'" in \
        problems(raw)


def test_the_committed_stacks_still_attach_to_their_subnets() -> None:
    from tests.conftest import plan_of

    for stack in ("staging", "prod"):
        plan = plan_of(stack)
        assert plan.cluster.vpc is None and plan.cluster.ci is None and plan.cluster.subnet_ids
