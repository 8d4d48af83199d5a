"""`cluster.vpc`: the network a cluster created in a fresh AWS account runs in, made by the stack.

Without it an `eks` stack attaches node groups (and a created control plane) to the subnets it is given
(`cluster.subnetIds`); with it the stack makes the VPC, one private and one public subnet per zone, an internet
gateway and NAT, and puts the control plane and every node group in the private subnets. The two are exclusive
(network_checks): a stack either brings its subnets or makes them, so no subnet is ever half the user's and half
the stack's.
"""

from __future__ import annotations

import ipaddress
from typing import Literal

from pydantic import Field, field_validator

from .fields import Strict

NatGateways = Literal["one", "per-zone"]

# EKS needs subnets in at least two availability zones for the control plane's network interfaces (EKS user
# guide, network-reqs.html, "VPC requirements": "subnets in at least two different Availability Zones").
MIN_ZONES = 2
# Up to six zones: the layout below gives each zone's private subnet an eighth of the VPC (at most 7 zones).
MAX_ZONES = 6
# A VPC's IPv4 block is /16 to /28 (VPC user guide, vpc-cidr-blocks.html); /20 or larger here, so that each
# zone's private subnet holds at least 512 addresses: the VPC CNI gives every pod a VPC address.
MIN_PREFIX, MAX_PREFIX = 16, 20


class Vpc(Strict):
    """The VPC the stack makes for a created cluster (`cluster.create: true`, `provider: eks`)."""

    cidr: str = Field(
        default="10.0.0.0/16",
        description=f"the VPC's IPv4 block: a private (RFC 1918) network of /{MIN_PREFIX} to /{MAX_PREFIX}",
        examples=["10.0.0.0/16"],
    )
    availabilityZones: list[str] = Field(
        min_length=MIN_ZONES,
        max_length=MAX_ZONES,
        description=(
            f"{MIN_ZONES} to {MAX_ZONES} zones of aws:region: one private subnet (nodes, control plane) and one public "
            "subnet (NAT, load balancers) each; every pool's availabilityZone must be one of them"
        ),
        examples=[["us-east-1a", "us-east-1b"]],
    )
    natGateways: NatGateways = Field(
        default="one",
        description=(
            "one: a single NAT gateway for every zone (cheapest; nodes lose the internet if its zone fails); "
            "per-zone: one per zone, each zone's nodes through their own"
        ),
        examples=["per-zone"],
    )

    @field_validator("cidr")
    @classmethod
    def _cidr(cls, v: str) -> str:
        try:
            net = ipaddress.ip_network(v, strict=True)
        except ValueError as err:
            raise ValueError(f"{v!r} is not an IPv4 network such as 10.0.0.0/16 ({err})") from None
        if not isinstance(net, ipaddress.IPv4Network) or not net.is_private:
            raise ValueError(f"{v!r} is not a private IPv4 network (10.0.0.0/8, 172.16.0.0/12 or 192.168.0.0/16)")
        if not MIN_PREFIX <= net.prefixlen <= MAX_PREFIX:
            raise ValueError(f"{v!r}: the prefix must be /{MIN_PREFIX} to /{MAX_PREFIX}, got /{net.prefixlen}")
        return v

    @field_validator("availabilityZones")
    @classmethod
    def _zones(cls, v: list[str]) -> list[str]:
        seen = [z for i, z in enumerate(v) if z in v[:i]]
        if seen:
            raise ValueError(f"zone {seen[0]!r} is listed twice")
        return v
