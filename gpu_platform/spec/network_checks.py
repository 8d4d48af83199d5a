"""Checks of `cluster.vpc` and `cluster.ci` against the rest of the spec: which clusters may make their VPC and
CI roles, and that every pool's zone is one the VPC has subnets in."""

from __future__ import annotations

from ..errors import Problem
from .platform import Platform


def check_network(p: Platform, region: str | None) -> list[Problem]:
    c = p.cluster
    out: list[Problem] = []
    if c.provider == "eks" and not c.subnetIds and c.vpc is None:
        out.append(Problem("cluster.subnetIds", "provider 'eks' needs the subnets for node groups (subnetIds), or "
                                                "cluster.vpc with cluster.create: true to make them"))
    if c.ci is not None and c.provider != "eks":
        out.append(Problem("cluster.ci", f"CI roles and their access entries are made only for provider 'eks', not "
                                         f"{c.provider!r}"))
    if c.vpc is None:
        return out
    if c.provider != "eks":
        out.append(Problem("cluster.vpc", f"a VPC is made only for provider 'eks', not {c.provider!r}"))
    elif not c.create:
        out.append(Problem("cluster.vpc", "a VPC is made only for a cluster made here: set cluster.create: true, or "
                                          "give the existing cluster's subnets as cluster.subnetIds"))
    if c.subnetIds:
        out.append(Problem("cluster.subnetIds", "cluster.vpc makes the subnets: remove subnetIds (a stack either "
                                                "brings its subnets or makes them)"))
    zones = c.vpc.availabilityZones
    if region:
        for i, zone in enumerate(zones):
            if not zone.startswith(region):
                out.append(Problem(f"cluster.vpc.availabilityZones[{i}]", f"{zone!r} is not in region {region!r}"))
    for i, pool in enumerate(p.pools):
        if pool.availabilityZone and pool.availabilityZone not in zones:
            out.append(Problem(f"pools[{i}].availabilityZone",
                               f"{pool.availabilityZone!r} has no subnet: the VPC's zones are {', '.join(zones)} "
                               "(cluster.vpc.availabilityZones)"))
    return out
