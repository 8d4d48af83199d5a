"""The data path's cross-field checks: what no single data model can see (gpu_platform/spec/data.py holds the
models); the provider, the pools and teams a file system names, and the AWS names built from the cluster, prefix
and team names."""

from __future__ import annotations

from .. import conventions as cv
from ..errors import Problem
from .data import bucket_name_problem, quantity_bytes, team_data_role_name
from .limits import IAM_ROLE_NAME_MAX
from .platform import Platform


def check_data(p: Platform) -> list[Problem]:
    """What no single data model can see: the provider, the pools and teams named, and the AWS names built
    from the cluster, prefix and team names (each refused with the field that makes it too long)."""
    d = p.data
    out: list[Problem] = []
    if not d.enabled:
        return out
    if p.cluster.provider != "eks":
        out.append(Problem("data.enabled", "the data path needs cluster.provider 'eks' (S3 buckets reached through EKS "
                                           "Pod Identity, EKS add-ons)"))
    for i, team in enumerate(p.teams):
        name = cv.team_bucket_name(str(d.bucketPrefix), team.name)
        problem = bucket_name_problem(name)
        if problem:
            out.append(Problem("data.bucketPrefix", f"team {team.name!r} (teams[{i}]): {problem}"))
        role = team_data_role_name(p.cluster.name, team.name)
        if len(role) > IAM_ROLE_NAME_MAX:
            out.append(Problem(f"teams[{i}].name", f"the team's data role {role!r} would be {len(role)} characters; IAM "
                                                   f"allows {IAM_ROLE_NAME_MAX} (shorten the team or cluster.name)"))
        try:
            quantity_bytes(team.limits.storage)
        except ValueError as err:
            out.append(Problem(f"teams[{i}].limits.storage", f"{err}: the data path adds its claims to it"))
    pools = {pool.name: pool for pool in p.pools}
    teams = {t.name: t for t in p.teams}
    seen: dict[str, int] = {}
    for i, fs in enumerate(d.fileSystems):
        at = f"data.fileSystems[{i}]"
        if fs.name in seen:
            out.append(Problem(f"{at}.name", f"duplicate file system name {fs.name!r} (also data.fileSystems[{seen[fs.name]}])"))
        seen.setdefault(fs.name, i)
        pool = pools.get(fs.pool)
        if pool is None:
            out.append(Problem(f"{at}.pool", f"unknown pool {fs.pool!r}; pools: {', '.join(pools)}"))
        elif not pool.availabilityZone:
            out.append(Problem(f"{at}.pool", f"pool {fs.pool!r} has no availabilityZone: a Lustre file system lives in "
                                             "one zone, so its pool must name the zone its nodes run in"))
        team = teams.get(fs.team)
        if team is None:
            out.append(Problem(f"{at}.team", f"unknown team {fs.team!r}; teams: {', '.join(teams) or 'none'}"))
            continue
        if fs.pool not in team.quotas and pool is not None:
            out.append(Problem(f"{at}.team", f"team {fs.team!r} has no quota on pool {fs.pool!r}: its jobs could never "
                                             "run next to the file system"))
        if fs.namespace is not None and fs.namespace not in team.namespace_names:
            out.append(Problem(f"{at}.namespace", f"{fs.namespace!r} is not a namespace of team {fs.team!r}; its "
                                                  f"namespaces: {', '.join(team.namespace_names)}"))
    return out
