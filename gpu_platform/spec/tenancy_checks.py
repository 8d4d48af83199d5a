"""Cross-field checks of cohorts and teams: unique names, a cohort tree without cycles, namespaces no two
teams (and no system) share, quotas on known pools within their limits, and nominal quotas that fit each
pool's capacity."""

from __future__ import annotations

from .. import catalog, conventions as cv
from ..errors import Problem
from ..pool_derivations import pool_capacity_units, pool_nominal_units, pool_units_per_gpu
from .platform import Platform


def check_cohorts(p: Platform) -> list[Problem]:
    out: list[Problem] = []
    names: dict[str, int] = {}
    for i, c in enumerate(p.cohorts):
        if c.name in names:
            out.append(Problem(f"cohorts[{i}].name", f"duplicate cohort name {c.name!r} (also cohorts[{names[c.name]}])"))
        names.setdefault(c.name, i)
    for i, c in enumerate(p.cohorts):
        if c.parent is not None and c.parent not in names:
            out.append(Problem(
                f"cohorts[{i}].parent",
                f"unknown cohort {c.parent!r}; defined cohorts: {', '.join(names) or 'none'}",
            ))
    parent = {c.name: c.parent for c in p.cohorts}
    reported: set[str] = set()
    for i, c in enumerate(p.cohorts):
        seen = [c.name]
        cur = parent.get(c.name)
        while cur is not None and cur in parent:
            if cur in seen:
                cycle = seen[seen.index(cur):] + [cur]
                key = min(cycle)
                if key not in reported:
                    reported.add(key)
                    out.append(Problem(f"cohorts[{i}].parent", f"cohort parents form a cycle: {' -> '.join(cycle)}"))
                break
            seen.append(cur)
            cur = parent.get(cur)
    return out


def check_teams(p: Platform) -> list[Problem]:
    out: list[Problem] = []
    pools = {pool.name: pool for pool in p.pools}
    cohorts = {c.name for c in p.cohorts}
    team_names: dict[str, int] = {}
    ns_owner: dict[str, str] = {}
    contributors: dict[str, list[str]] = {name: [] for name in pools}
    for i, t in enumerate(p.teams):
        at = f"teams[{i}]"
        if t.name in team_names:
            out.append(Problem(f"{at}.name", f"duplicate team name {t.name!r} (also teams[{team_names[t.name]}])"))
        team_names.setdefault(t.name, i)
        for j, ns in enumerate(t.namespace_names):
            ns_at = f"{at}.namespaces[{j}]" if t.namespaces else f"{at}.name"
            if ns in cv.RESERVED_NAMESPACES:
                out.append(Problem(ns_at, f"namespace {ns!r} is reserved; reserved: {', '.join(cv.RESERVED_NAMESPACES)}"))
            elif ns in ns_owner and ns_owner[ns] != f"teams[{i}]":
                out.append(Problem(ns_at, f"duplicate namespace {ns!r} (also used by {ns_owner[ns]})"))
            elif ns in ns_owner:
                out.append(Problem(ns_at, f"namespace {ns!r} is listed twice"))
            ns_owner.setdefault(ns, f"teams[{i}]")
        if t.cohort is not None and t.cohort not in cohorts:
            out.append(Problem(f"{at}.cohort", f"unknown cohort {t.cohort!r}; defined cohorts: {', '.join(sorted(cohorts)) or 'none'}"))
        for pool_name, q in t.quotas.items():
            q_at = f"{at}.quotas.{pool_name}"
            if pool_name not in pools:
                out.append(Problem(q_at, f"unknown pool {pool_name!r}; pools: {', '.join(pools)}"))
                continue
            contributors[pool_name].append(f"{t.name}={q.units}")
            if t.cohort is None:
                for limit in ("borrowingLimit", "lendingLimit"):
                    if getattr(q, limit) is not None:
                        out.append(Problem(f"{q_at}.{limit}", f"{limit} needs the team to be in a cohort (set teams[{i}].cohort)"))
            if q.lendingLimit is not None and q.lendingLimit > q.units:
                out.append(Problem(f"{q_at}.lendingLimit",
                                   f"lendingLimit {q.lendingLimit} is above the nominal quota {q.units_key}={q.units}"))
    nominal_sum = pool_nominal_units(p.teams)
    for i, pool in enumerate(p.pools):
        if pool.name not in nominal_sum:
            continue
        try:
            cap = pool_capacity_units(pool)
        except KeyError:
            continue  # the pool itself is invalid and already reported
        if nominal_sum[pool.name] > cap:
            it = catalog.INSTANCE_TYPES[pool.instanceType]
            per = pool_units_per_gpu(pool)
            how = f"{pool.capacity.max} nodes x {it.gpus} GPUs" + (f" x {per}" if per > 1 else "")
            first = next(j for j, t in enumerate(p.teams) if pool.name in t.quotas)
            out.append(Problem(
                f"teams[{first}].quotas.{pool.name}.{p.teams[first].quotas[pool.name].units_key}",
                f"nominal quotas on pool {pool.name!r} add up to {nominal_sum[pool.name]} "
                f"({', '.join(contributors[pool.name])}) but the pool has {cap} units ({how})",
            ))
    return out
