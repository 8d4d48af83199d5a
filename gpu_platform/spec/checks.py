"""Cross-field checks: everything the models cannot see on their own (names, capacity, quotas, security).

`validate` runs them all, each subject in a module of its own: pools and the system pool (pool_checks),
cohorts, teams and quotas (tenancy_checks), identity and audit (security_checks), Karpenter pools
(karpenter_checks), elastic capacity and the autoscaler (capacity_checks), the workload controllers
(workload_controller_checks), the data path (data_checks), the stack split (stack_split) and the subnets
or the VPC made for them (network_checks); what is left here is the platform-wide rest (pricing, priorities,
MultiKueue workers)."""

from __future__ import annotations

from .. import catalog
from ..errors import Problem
from .capacity_checks import check_elastic_capacity
from .data_checks import check_data
from .monitoring_checks import check_monitoring
from .network_checks import check_network
from .karpenter_checks import check_karpenter
from .platform import Platform
from .pool_checks import check_mig_layouts, check_pools, check_system_pool
from .security_checks import check_security
from .stack_split import check_stack_split
from .tenancy_checks import check_cohorts, check_teams
from .workload_controller_checks import check_workload_controllers


def _check_platform(p: Platform, region: str | None) -> list[Problem]:
    out: list[Problem] = check_system_pool(p)
    out += check_network(p, region)
    for itype in p.pricing:
        if itype not in catalog.INSTANCE_TYPES:
            out.append(Problem(f"pricing.{itype}", f"unknown instance type; valid: {', '.join(sorted(catalog.INSTANCE_TYPES))}"))
    prio: dict[str, int] = {}
    for i, pr in enumerate(p.priorities):
        if pr.name in prio:
            out.append(Problem(f"priorities[{i}].name", f"duplicate priority {pr.name!r}"))
        prio.setdefault(pr.name, i)
        if not -2147483648 <= pr.value <= 1000000000:
            out.append(Problem(f"priorities[{i}].value", f"{pr.value} is outside the user range of PriorityClass values (up to 1000000000)"))
    for i, t in enumerate(p.teams):
        for j, name in enumerate(t.priorities or ()):
            if name not in prio:
                out.append(Problem(
                    f"teams[{i}].priorities[{j}]",
                    f"unknown priority {name!r}; priorities: {', '.join(prio) or 'none'}",
                ))
    if p.multiKueue:
        seen: set[str] = set()
        for i, w in enumerate(p.multiKueue.workers):
            if w.name in seen:
                out.append(Problem(f"multiKueue.workers[{i}].name", f"duplicate worker {w.name!r}"))
            seen.add(w.name)
    return out


def validate(platform: Platform, region: str | None = None) -> list[Problem]:
    return (check_pools(platform, region) + check_mig_layouts(platform) + check_cohorts(platform)
            + check_teams(platform) + _check_platform(platform, region) + check_security(platform)
            + check_karpenter(platform) + check_elastic_capacity(platform) + check_data(platform)
            + check_workload_controllers(platform) + check_monitoring(platform)
            + check_stack_split(platform.stackSplit, {t.name: t.cohort for t in platform.teams},
                                {c.name: c.parent for c in platform.cohorts}, platform.data.enabled))
