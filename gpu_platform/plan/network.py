"""The VPC plan of a cluster created in a fresh account (cluster.vpc): each zone's subnets and their blocks.

The layout is decided here, once, from the VPC's block: the private subnets (nodes, pods, the control plane's
network interfaces) take the large blocks, since the VPC CNI gives every pod a VPC address; the public subnets
(NAT gateways, internet-facing load balancers) take small blocks from what is left. With the VPC split into
2^k equal blocks (the smallest k with more blocks than zones), zone i's private subnet is block i and the last
block is split eight ways for the public subnets: a /16 with two or three zones gives /18 private subnets
(16,384 addresses each) and /21 public ones (2,048).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

# The last block is cut into this many public subnets (2^3), enough for the spec's most zones (6).
PUBLIC_SPLIT_BITS = 3


@dataclass(frozen=True, slots=True)
class SubnetPlan:
    zone: str
    private_cidr: str
    public_cidr: str


@dataclass(frozen=True, slots=True)
class VpcPlan:
    name: str
    cidr: str
    subnets: tuple[SubnetPlan, ...]
    # per-zone: one NAT gateway in each zone's public subnet; else one, in the first zone's.
    nat_per_zone: bool

    @property
    def zones(self) -> tuple[str, ...]:
        return tuple(s.zone for s in self.subnets)


def subnet_layout(cidr: str, zones: tuple[str, ...]) -> tuple[SubnetPlan, ...]:
    """Each zone's private and public block (see the module docstring)."""
    net = ipaddress.IPv4Network(cidr)
    bits = 1
    while 2 ** bits <= len(zones):
        bits += 1
    blocks = list(net.subnets(prefixlen_diff=bits))
    public = list(blocks[-1].subnets(prefixlen_diff=PUBLIC_SPLIT_BITS))
    return tuple(SubnetPlan(zone, str(blocks[i]), str(public[i])) for i, zone in enumerate(zones))


def plan_vpc(name: str, cidr: str, zones: tuple[str, ...], nat_per_zone: bool) -> VpcPlan:
    return VpcPlan(name=name, cidr=cidr, subnets=subnet_layout(cidr, zones), nat_per_zone=nat_per_zone)
