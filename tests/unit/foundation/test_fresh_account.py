"""The fresh-account example under mocks: the VPC, subnets, NAT and routes it makes, the created cluster and node
groups in them (an EFA pool only in its zone's subnet), and the CI roles with their access entries. Expectations are
AWS facts (cited in components/foundation) and the example's values."""

from __future__ import annotations

import json

from components.foundation.ci_roles import backend_policy, trust_policy
from gpu_platform.plan.ci import plan_ci
from tests.unit.foundation.sandbox import sandbox

SUBNET = "aws:ec2/subnet:Subnet"
ROUTE = "aws:ec2/route:Route"


def test_the_vpc_has_dns_on_and_the_example_block() -> None:
    vpc = sandbox().one("aws:ec2/vpc:Vpc", "net-vpc").inputs
    assert (vpc["cidrBlock"], vpc["enableDnsSupport"], vpc["enableDnsHostnames"]) == ("10.0.0.0/16", True, True)
    assert vpc["tags"]["Name"] == "gpu-sandbox-vpc"


def test_each_zone_has_a_private_and_a_public_subnet_tagged_for_load_balancers() -> None:
    subnets = {s.name: s.inputs for s in sandbox().by_type(SUBNET)}
    assert {n: (s["availabilityZone"], s["cidrBlock"]) for n, s in subnets.items()} == {
        "net-private-us-east-1a": ("us-east-1a", "10.0.0.0/18"),
        "net-private-us-east-1b": ("us-east-1b", "10.0.64.0/18"),
        "net-public-us-east-1a": ("us-east-1a", "10.0.192.0/21"),
        "net-public-us-east-1b": ("us-east-1b", "10.0.200.0/21"),
    }
    assert subnets["net-private-us-east-1a"]["tags"]["kubernetes.io/role/internal-elb"] == "1"
    assert subnets["net-public-us-east-1b"]["tags"]["kubernetes.io/role/elb"] == "1"
    assert subnets["net-private-us-east-1b"]["tags"]["Name"] == "gpu-sandbox-private-us-east-1b"


def test_one_nat_gateway_in_the_first_public_subnet_serves_both_private_route_tables() -> None:
    r = sandbox()
    [nat] = r.by_type("aws:ec2/natGateway:NatGateway")
    assert nat.name == "net-nat-us-east-1a" and nat.inputs["subnetId"] == "net-public-us-east-1a-id"
    assert nat.inputs["allocationId"] == "net-nat-us-east-1a-id"  # its Elastic IP
    assert "net-public-default" in nat.options["dependencies"]  # after the internet route
    routes = {x.name: x.inputs for x in r.by_type(ROUTE)}
    assert routes["net-public-default"] == {"routeTableId": "net-public-id", "destinationCidrBlock": "0.0.0.0/0",
                                            "gatewayId": "net-igw-id"}
    for zone in ("us-east-1a", "us-east-1b"):
        assert routes[f"net-private-{zone}-default"] == {
            "routeTableId": f"net-private-{zone}-id", "destinationCidrBlock": "0.0.0.0/0",
            "natGatewayId": "net-nat-us-east-1a-id"}


def test_the_cluster_and_node_groups_sit_in_the_private_subnets_and_wait_for_nat() -> None:
    r = sandbox()
    private = ["net-private-us-east-1a-id", "net-private-us-east-1b-id"]
    assert r.one("aws:eks/cluster:Cluster", "np-cluster").inputs["vpcConfig"]["subnetIds"] == private
    groups = {g.name: g for g in r.by_type("aws:eks/nodeGroup:NodeGroup")}
    assert groups["np-system"].inputs["subnetIds"] == private
    assert groups["np-l4-dev"].inputs["subnetIds"] == private
    # EFA: the pool's one zone, its subnet only (EC2 user guide, efa-start.html).
    assert groups["np-l4-train"].inputs["subnetIds"] == ["net-private-us-east-1a-id"]
    for group in groups.values():
        assert {"net-private-us-east-1a-default", "net-private-us-east-1b-default"} <= set(group.options["dependencies"])


def test_efa_pool_keeps_its_placement_group_and_the_efa_security_group() -> None:
    r = sandbox()
    assert r.one("aws:ec2/placementGroup:PlacementGroup", "np-l4-train").inputs["strategy"] == "cluster"
    sg = r.one("aws:ec2/securityGroup:SecurityGroup", "np-efa").inputs
    assert sg["name"] == "gpu-sandbox-efa"


def test_ci_roles_get_cluster_admin_and_admin_view_access_entries() -> None:
    r = sandbox()
    assert {x.name: x.inputs["name"] for x in r.by_type("aws:iam/role:Role") if x.name.startswith("ci-")} == {
        "ci-preview": "gpu-sandbox-ci-preview", "ci-deploy": "gpu-sandbox-ci-deploy"}
    provider = r.one("aws:iam/openIdConnectProvider:OpenIdConnectProvider", "ci-github").inputs
    assert (provider["url"], provider["clientIdLists"]) == ("https://token.actions.githubusercontent.com",
                                                            ["sts.amazonaws.com"])
    policies = {x.name: x.inputs for x in r.by_type("aws:eks/accessPolicyAssociation:AccessPolicyAssociation")}
    assert policies["ci-deploy"]["policyArn"] == "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
    assert policies["ci-preview"]["policyArn"] == "arn:aws:eks::aws:cluster-access-policy/AmazonEKSAdminViewPolicy"
    assert policies["ci-deploy"]["accessScope"] == {"type": "cluster"}
    attached = {x.name: x.inputs["policyArn"] for x in r.by_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
                if x.name.startswith("ci-")}
    assert attached == {"ci-preview-0": "arn:aws:iam::aws:policy/ReadOnlyAccess"}  # the example names no deploy policy


def test_the_trust_policy_pins_issuer_audience_and_subjects() -> None:
    arn = "arn:aws:iam::111122223333:oidc-provider/token.actions.githubusercontent.com"
    doc = json.loads(trust_policy(arn, ["repo:my-org/gpu-platform:ref:refs/heads/main"]))
    assert doc["Statement"] == [{
        "Effect": "Allow", "Principal": {"Federated": arn}, "Action": "sts:AssumeRoleWithWebIdentity",
        "Condition": {"StringEquals": {
            "token.actions.githubusercontent.com:aud": "sts.amazonaws.com",
            "token.actions.githubusercontent.com:sub": ["repo:my-org/gpu-platform:ref:refs/heads/main"]}},
    }]


def test_the_preview_role_reads_the_state_and_the_deploy_role_writes_it() -> None:
    ci = plan_ci("c", "us-east-1", "o/r", "main", (), True, (), "my-state", None, True)
    preview = json.loads(backend_policy(ci, "preview") or "{}")["Statement"]
    deploy = json.loads(backend_policy(ci, "deploy") or "{}")["Statement"]
    assert preview[1] == {"Sid": "StateObjects", "Effect": "Allow", "Action": ["s3:GetObject"],
                          "Resource": "arn:aws:s3:::my-state/*"}
    assert deploy[1]["Action"] == ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"]
    assert backend_policy(plan_ci("c", None, "o/r", "main", (), True, (), None, None, True), "deploy") is None


def test_single_zone_pools_and_karpenter_take_the_made_subnets_without_a_lookup() -> None:
    """No render: the functions the node groups and Karpenter's EC2NodeClass use, given a VPC made here."""
    import pulumi

    from components.karpenter import node_class
    from components.node_pools.cluster import ClusterAccess
    from components.node_pools.gpu_node_pool import _zone_subnets
    from tests.conftest import plan_of

    access = ClusterAccess(name="c", endpoint=None, ca_data=None, security_group_id=None,  # type: ignore[arg-type]
                           subnet_ids=["subnet-a", "subnet-b"], zone_subnets={"us-east-1a": "subnet-a"})
    plan = plan_of("prod")
    (h100,) = [p for p in plan.pools if p.name == "h100-train"]
    assert _zone_subnets(access, plan, h100, pulumi.InvokeOutputOptions()) == ["subnet-a"]
    karpenter = plan_of("staging-karpenter")
    pool = next(p for p in karpenter.pools if p.karpenter is not None)
    spec = node_class(karpenter, pool, "role", "sg-1", subnet_ids=list(access.subnet_ids))["spec"]
    assert spec["subnetSelectorTerms"] == [{"id": "subnet-a"}, {"id": "subnet-b"}]
