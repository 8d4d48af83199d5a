"""`stackSplit`: one environment's spec deployed as a platform stack and tenant stacks by team group.

Why a split exists at all: on a file or bucket backend `pulumi up` rewrites the whole state after every
step, so its cost grows with the square of the stack (docs/performance.md, "Seed scale"). A team's
namespace objects are most of a large platform's resources and depend on nothing of another team's, so
they can live in smaller stacks of their own; which team goes where is decided here, once, for every stack.
"""

from __future__ import annotations

import re

from pydantic import Field, field_validator

from ..errors import Problem
from .fields import Strict

# Pulumi stack names: letters, digits, '-', '_' and '.' (pulumi/pulumi sdk/go/common/tokens/names.go,
# stackNameRegexp / ValidateStackName: at most 100 characters).
STACK_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,100}$")
# The DIY (file, S3, GCS, Azure Blob) backend's fully qualified stack names are organization/project/stack
# with the organization spelled literally "organization" (Pulumi docs, automation fullyQualifiedStackName:
# "Non-legacy DIY backends do support the org/project/stack format, but org must be set to 'organization'").
DIY_ORGANIZATION = "organization"


def stack_name(value: str) -> str:
    if not STACK_NAME.match(value):
        raise ValueError(f"{value!r} is not a Pulumi stack name: 1-100 letters, digits, '-', '_' or '.'")
    return value


class TenantStack(Strict):
    stack: str = Field(
        description="the tenant stack's name (Pulumi stack name): it deploys its teams' namespaces and what is in them",
        examples=["prod-research"],
    )
    cohorts: list[str] = Field(
        default_factory=list,
        description=(
            "cohorts whose teams (their subtree, a nearer cohort of another tenant stack excepted) this stack "
            "holds"
        ),
        examples=[["research"]],
    )
    teams: list[str] = Field(
        default_factory=list,
        description="teams this stack holds by name, whatever their cohort",
        examples=[["vision"]],
    )

    _stack = field_validator("stack")(lambda v: stack_name(v))


class StackSplit(Strict):
    platformStack: str = Field(
        description=(
            "the stack that deploys everything cluster-wide (pools, add-ons, Kueue flavors, cohorts and every "
            "ClusterQueue, priorities, admission policies, cluster roles); tenant stacks read it by StackReference"
        ),
        examples=["prod-platform"],
    )
    tenantStacks: list[TenantStack] = Field(
        min_length=1,
        description=(
            "stacks that each deploy a group of teams' namespaces (Namespace, ResourceQuota, LimitRange, "
            "NetworkPolicies, RoleBindings, LocalQueue); every team in exactly one"
        ),
        examples=[[{"stack": "prod-research", "cohorts": ["research"]},
                   {"stack": "prod-product", "cohorts": ["product"]}]],
    )
    organization: str = Field(
        default=DIY_ORGANIZATION,
        description=(
            "the organization in the platform stack's reference organization/project/stack: 'organization' "
            "on a DIY (file or bucket) backend, the Pulumi Cloud organization otherwise"
        ),
        examples=["organization"],
    )

    _platform = field_validator("platformStack")(lambda v: stack_name(v))


def assign_teams(split: StackSplit, teams: dict[str, str | None], parents: dict[str, str | None]) -> dict[str, str]:
    """Team -> tenant stack: a team named by a stack, else the stack of its nearest listed cohort ancestor.
    Teams no stack holds are left out (check_stack_split reports them)."""
    by_team = {t: s.stack for s in split.tenantStacks for t in s.teams}
    by_cohort = {c: s.stack for s in split.tenantStacks for c in s.cohorts}
    out: dict[str, str] = {}
    for team, cohort in teams.items():
        if team in by_team:
            out[team] = by_team[team]
            continue
        seen: set[str] = set()
        while cohort is not None and cohort not in seen:
            if cohort in by_cohort:
                out[team] = by_cohort[cohort]
                break
            seen.add(cohort)
            cohort = parents.get(cohort)
    return out


def check_stack_split(split: StackSplit | None, teams: dict[str, str | None], parents: dict[str, str | None],
                      data_enabled: bool) -> list[Problem]:
    """Every team in exactly one tenant stack, every name a known one, stack names distinct."""
    if split is None:
        return []
    out: list[Problem] = []
    at = "stackSplit"
    stacks: dict[str, str] = {split.platformStack: f"{at}.platformStack"}
    claimed_teams: dict[str, str] = {}
    claimed_cohorts: dict[str, str] = {}
    for i, s in enumerate(split.tenantStacks):
        here = f"{at}.tenantStacks[{i}]"
        if s.stack in stacks:
            out.append(Problem(f"{here}.stack", f"stack {s.stack!r} is also {stacks[s.stack]}: each part is a stack of its own"))
        stacks.setdefault(s.stack, f"{here}.stack")
        for j, c in enumerate(s.cohorts):
            if c not in parents:
                out.append(Problem(f"{here}.cohorts[{j}]", f"unknown cohort {c!r}; defined cohorts: "
                                   f"{', '.join(sorted(parents)) or 'none'}"))
            elif c in claimed_cohorts:
                out.append(Problem(f"{here}.cohorts[{j}]", f"cohort {c!r} is also listed by {claimed_cohorts[c]}"))
            claimed_cohorts.setdefault(c, s.stack)
        for j, t in enumerate(s.teams):
            if t not in teams:
                out.append(Problem(f"{here}.teams[{j}]", f"unknown team {t!r}; teams: {', '.join(sorted(teams)) or 'none'}"))
            elif t in claimed_teams:
                out.append(Problem(f"{here}.teams[{j}]", f"team {t!r} is also listed by {claimed_teams[t]}"))
            claimed_teams.setdefault(t, s.stack)
    assigned = assign_teams(split, teams, parents)
    valid = ", ".join(s.stack for s in split.tenantStacks)
    for team in teams:
        if team not in assigned:
            out.append(Problem(f"{at}.tenantStacks", f"team {team!r} is in no tenant stack (its cohort "
                               f"{teams[team]!r} and its name are listed by none of: {valid}): list it or its cohort"))
    for i, s in enumerate(split.tenantStacks):
        if s.stack not in assigned.values():
            out.append(Problem(f"{at}.tenantStacks[{i}]", f"tenant stack {s.stack!r} holds no team"))
    if data_enabled:
        out.append(Problem(at, "the data path (data.enabled) puts claims in team namespaces from the platform stack; "
                           "a split stack does not support it yet: remove stackSplit or data.enabled"))
    return out
