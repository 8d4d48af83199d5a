"""ClusterNetwork: the VPC a cluster created in a fresh AWS account runs in (plan.cluster.vpc).

What EKS and the pools need of it, and where each fact comes from:

- DNS support and DNS hostnames on: EKS requires both of a cluster's VPC (EKS user guide, network-reqs.html,
  "VPC requirements and considerations").
- Subnets in at least two zones for the control plane's network interfaces (same page); the spec asks for two or
  more zones, and the plan lays out one private and one public subnet in each (gpu_platform/plan/network.py).
- Nodes in private subnets that reach the internet through NAT: images, the EKS public endpoint and the AWS APIs
  the nodes and controllers call (EKS user guide, network-reqs.html, "Subnet requirements and considerations":
  nodes in private subnets need outbound access through a NAT gateway, or VPC endpoints). A NAT gateway sits in
  a public subnet, whose route table sends 0.0.0.0/0 to the internet gateway (VPC user guide,
  vpc-nat-gateway.html, "NAT gateway basics").
- EFA: a pool's nodes must sit in one zone, in a subnet of that zone, and carry a security group allowing all
  traffic to and from itself (EC2 user guide, efa-start.html). The zone subnet is this module's
  (`zone_subnets`, which the node groups take by the pool's availabilityZone); the security group is made with
  the cluster (components/node_pools/cluster.py efa_security_group), on this VPC.
- Subnet role tags for load balancers (conventions.network).
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_aws as aws

from gpu_platform import conventions as cv
from gpu_platform.plan import Plan, VpcPlan

# The route to everywhere (VPC user guide, "Route tables": destination 0.0.0.0/0).
ANY_IPV4 = "0.0.0.0/0"
# EIP.Domain for an address used in a VPC (EC2 API reference, AllocateAddress.Domain: vpc).
EIP_DOMAIN = "vpc"


class ClusterNetwork(pulumi.ComponentResource):
    """The VPC, an internet gateway, per zone a public subnet (NAT) and a private subnet (nodes, control plane),
    one NAT gateway or one per zone, and the route tables that tie them together."""

    TYPE = "gpu-platform:foundation:ClusterNetwork"

    def __init__(self, name: str, plan: Plan, vpc: VpcPlan, opts: pulumi.ResourceOptions | None = None):
        super().__init__(self.TYPE, name, None, opts)
        self.plan, self.vpc_plan = plan, vpc
        child = pulumi.ResourceOptions(parent=self)
        cluster = plan.cluster.name

        def tags(name: str, **extra: str) -> dict[str, str]:
            return {**plan.platform_tags, "Name": name, **extra}

        self.vpc = aws.ec2.Vpc(
            "net-vpc", cidr_block=vpc.cidr, enable_dns_support=True, enable_dns_hostnames=True,
            tags=tags(vpc.name), opts=child,
        )
        self.internet_gateway = aws.ec2.InternetGateway(
            "net-igw", vpc_id=self.vpc.id, tags=tags(vpc.name), opts=child,
        )
        public_routes = aws.ec2.RouteTable("net-public", vpc_id=self.vpc.id, tags=tags(f"{vpc.name}-public"), opts=child)
        to_internet = aws.ec2.Route(
            "net-public-default", route_table_id=public_routes.id, destination_cidr_block=ANY_IPV4,
            gateway_id=self.internet_gateway.id, opts=child,
        )
        self.public_subnets: dict[str, aws.ec2.Subnet] = {}
        self.private_subnets: dict[str, aws.ec2.Subnet] = {}
        self.nat_gateways: dict[str, aws.ec2.NatGateway] = {}
        for s in vpc.subnets:
            public = aws.ec2.Subnet(
                f"net-public-{s.zone}", vpc_id=self.vpc.id, cidr_block=s.public_cidr, availability_zone=s.zone,
                tags=tags(cv.subnet_name(cluster, cv.SUBNET_TIER_PUBLIC, s.zone),
                          **{cv.SUBNET_ROLE_PUBLIC_TAG: cv.SUBNET_ROLE_TAG_VALUE,
                             cv.SUBNET_TIER_TAG: cv.SUBNET_TIER_PUBLIC}),
                opts=child,
            )
            aws.ec2.RouteTableAssociation(
                f"net-public-{s.zone}", subnet_id=public.id, route_table_id=public_routes.id, opts=child,
            )
            self.public_subnets[s.zone] = public
            self.private_subnets[s.zone] = aws.ec2.Subnet(
                f"net-private-{s.zone}", vpc_id=self.vpc.id, cidr_block=s.private_cidr, availability_zone=s.zone,
                tags=tags(cv.subnet_name(cluster, cv.SUBNET_TIER_PRIVATE, s.zone),
                          **{cv.SUBNET_ROLE_PRIVATE_TAG: cv.SUBNET_ROLE_TAG_VALUE,
                             cv.SUBNET_TIER_TAG: cv.SUBNET_TIER_PRIVATE}),
                opts=child,
            )
        nat_zones = vpc.zones if vpc.nat_per_zone else vpc.zones[:1]
        for zone in nat_zones:
            address = aws.ec2.Eip(f"net-nat-{zone}", domain=EIP_DOMAIN, tags=tags(f"{vpc.name}-nat-{zone}"), opts=child)
            # The gateway needs the internet gateway attached and routed first (VPC user guide, vpc-nat-gateway.html).
            self.nat_gateways[zone] = aws.ec2.NatGateway(
                f"net-nat-{zone}", allocation_id=address.id, subnet_id=self.public_subnets[zone].id,
                tags=tags(f"{vpc.name}-nat-{zone}"),
                opts=pulumi.ResourceOptions(parent=self, depends_on=[to_internet]),
            )
        # Each zone's private subnets route to the internet through their own zone's NAT gateway, or the one.
        self.egress: list[pulumi.Resource] = []
        for zone, subnet in self.private_subnets.items():
            nat = self.nat_gateways.get(zone) or self.nat_gateways[nat_zones[0]]
            routes = aws.ec2.RouteTable(f"net-private-{zone}", vpc_id=self.vpc.id,
                                        tags=tags(f"{vpc.name}-private-{zone}"), opts=child)
            self.egress.append(aws.ec2.Route(
                f"net-private-{zone}-default", route_table_id=routes.id, destination_cidr_block=ANY_IPV4,
                nat_gateway_id=nat.id, opts=child,
            ))
            self.egress.append(aws.ec2.RouteTableAssociation(
                f"net-private-{zone}", subnet_id=subnet.id, route_table_id=routes.id, opts=child,
            ))
        self.register_outputs({})

    @property
    def private_subnet_ids(self) -> list[pulumi.Output[str]]:
        """The control plane's and node groups' subnets, in the plan's zone order."""
        return [self.private_subnets[z].id for z in self.vpc_plan.zones]

    @property
    def zone_subnets(self) -> dict[str, pulumi.Output[str]]:
        """A zone's private subnet: where a single-zone pool (EFA, capacity block, reservation) puts its nodes."""
        return {z: s.id for z, s in self.private_subnets.items()}

    def exports(self) -> dict[str, Any]:
        return {"network": {
            "vpcId": self.vpc.id,
            "cidr": self.vpc_plan.cidr,
            "privateSubnets": {z: s.id for z, s in self.private_subnets.items()},
            "publicSubnets": {z: s.id for z, s in self.public_subnets.items()},
            "natGateways": list(self.nat_gateways),
        }}
