"""The security groups of a stack that creates its cluster are made in the cluster's VPC: the EFA group every EFA
interface carries and a Lustre file system's group. EC2 makes a group without a VPC id in the account's default
VPC, where the nodes' interfaces and the file system cannot use it.

Worlds, under mocks whose created EKS cluster answers its vpcConfig as EKS does (harness/render.py: the VPC of its
subnets, and the cluster security group EKS makes): the fresh-account example (examples/fresh-account, VPC made
here) with a Lustre file system added, rendered by the render worker; and staging with cluster.create true
(tests/unit/components/stack_variants.py), whose subnets are given by id and so sit in the mocks' one existing
VPC, vpc-00000000."""

from __future__ import annotations

from typing import Any

from tests.conftest import background_render
from tests.unit.components.stack_variants import switched_staging, variant  # noqa: F401 (read: runs with its readers)
from tests.unit.foundation.sandbox import sandbox_config

SECURITY_GROUP = "aws:ec2/securityGroup:SecurityGroup"
CLUSTER = "aws:eks/cluster:Cluster"
INGRESS = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"


@background_render()
def sandbox_with_lustre() -> tuple[str, dict[str, Any]]:
    """The fresh-account example with the data path on and a SCRATCH_2 Lustre file system in the EFA pool's zone."""
    config = sandbox_config()
    config["gpu-platform:platform"]["data"] = {
        "enabled": True, "bucketPrefix": "example-org-sandbox",
        "fileSystems": [{"name": "shared", "pool": "l4-train", "team": "ml", "storageCapacityGiB": 1200}],
    }
    return "sandbox", config


def test_a_made_vpc_holds_the_created_clusters_efa_and_lustre_groups() -> None:
    r = sandbox_with_lustre()
    vpc_ids = {g.name: g.inputs.get("vpcId") for g in r.by_type(SECURITY_GROUP)}
    # net-vpc-id: the mock id of the VPC the stack makes (net-vpc); EKS reports its subnets' VPC.
    assert vpc_ids == {"np-efa": "net-vpc-id", "storage-fsx-shared": "net-vpc-id"}
    assert r.one(CLUSTER, "np-cluster").inputs["vpcConfig"]["subnetIds"] == [
        "net-private-us-east-1a-id", "net-private-us-east-1b-id"]


def test_the_lustre_group_admits_the_created_clusters_nodes_by_the_group_eks_made() -> None:
    r = sandbox_with_lustre()
    # The mocks' ids: the Lustre group's (EC2's sg- form, from its resource name) and the cluster group EKS made
    # for gpu-sandbox (from its cluster name).
    lustre, nodes = "sg-6de2aaac83e38a8bc", "sg-a4527ad82460c82b1"
    assert r.one(SECURITY_GROUP, "storage-fsx-shared").inputs["name"] == "gpu-sandbox-fsx-shared"
    rules = {(x.inputs["securityGroupId"], x.inputs["referencedSecurityGroupId"], x.inputs["fromPort"])
             for x in r.by_type(INGRESS) if x.name.startswith("storage-fsx-shared-")}
    assert rules == {(lustre, lustre, 988), (lustre, lustre, 1018), (lustre, nodes, 988), (lustre, nodes, 1018),
                     (nodes, lustre, 988), (nodes, lustre, 1018)}


def test_given_subnets_put_the_created_clusters_efa_group_in_their_vpc() -> None:
    r, _ = variant()
    (efa,) = [g for g in r.by_type(SECURITY_GROUP) if g.name == "np-efa"]
    assert (efa.inputs["name"], efa.inputs["vpcId"]) == ("ml-staging-efa", "vpc-00000000")
