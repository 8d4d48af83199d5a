"""Which part of a split environment a stack deploys, and the plan that part is built from.

The plan is always built from the whole spec (every team's quota reach depends on its whole cohort tree),
then narrowed: a tenant stack keeps only its teams, whose namespace objects are then all it deploys. What
lands in which stack (docs/architecture.md, "Split stacks"):

  platform  everything cluster-wide: pools, add-ons, priorities, Kueue flavors, Topology, cohorts, every
            team's ClusterQueue (capacity sums and cohort reach are checked in one stack), admission
            policies, the platform's cluster roles, monitoring (its per-team rules too)
  tenants   per team of its group, per namespace: Namespace, ResourceQuota, LimitRange, NetworkPolicies,
            RoleBindings, LocalQueue
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from .errors import Problem, SpecError
from .plan import Plan
from .spec import Platform
from .spec.stack_split import assign_teams

Role = Literal["whole", "platform", "tenants"]
WHOLE: Role = "whole"
PLATFORM: Role = "platform"
TENANTS: Role = "tenants"


@dataclass(frozen=True, slots=True)
class StackPart:
    role: Role
    stack: str
    # tenants: the teams whose namespaces the stack deploys; platform and whole: every team.
    teams: tuple[str, ...]
    # tenants: the platform stack as a StackReference names it (organization/project/stack).
    platform_stack: str | None = None

    @property
    def namespaces(self) -> bool:
        """The stack deploys team namespaces."""
        return self.role != PLATFORM

    @property
    def cluster_wide(self) -> bool:
        """The stack deploys the cluster-wide objects."""
        return self.role != TENANTS


def stack_part(spec: Platform, stack: str, project: str) -> StackPart:
    """The part `stack` deploys. With `stackSplit` set, a stack it does not name is refused, naming the valid
    stacks: a third stack deploying the same objects would fight the split stacks over them."""
    teams = tuple(t.name for t in spec.teams)
    split = spec.stackSplit
    if split is None:
        return StackPart(WHOLE, stack, teams)
    if stack == split.platformStack:
        return StackPart(PLATFORM, stack, teams)
    tenant_stacks = [s.stack for s in split.tenantStacks]
    if stack not in tenant_stacks:
        valid = ", ".join([f"{split.platformStack} (platform)", *(f"{s} (tenants)" for s in tenant_stacks)])
        raise SpecError([Problem("stackSplit", f"stack {stack!r} is not a part of this split; valid stacks: {valid}")])
    assigned = assign_teams(split, {t.name: t.cohort for t in spec.teams}, {c.name: c.parent for c in spec.cohorts})
    return StackPart(TENANTS, stack, tuple(t for t in teams if assigned.get(t) == stack),
                     f"{split.organization}/{project}/{split.platformStack}")


def plan_for(plan: Plan, part: StackPart) -> Plan:
    """The plan a part's components are built from: a tenant stack sees only its own teams."""
    if part.role != TENANTS:
        return plan
    keep = set(part.teams)
    return replace(plan, teams=tuple(t for t in plan.teams if t.name in keep))
