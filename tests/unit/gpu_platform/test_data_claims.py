"""The platform's claims in a team's namespace quota (docs/data-path.md, "quota"): the data and checkpoints claims
are made in every namespace of the team, a file system's claim only in the namespace that holds it, and each
namespace's ResourceQuota adds exactly the claims made in it on top of the team's own allowance
(teams[].limits.persistentVolumeClaims 50, storage 2Ti: the defaults prod's llm-pretrain has)."""

from __future__ import annotations

import functools

import pytest

from gpu_platform.plan import build_plan
from gpu_platform.plan.teams import TeamPlan
from gpu_platform.spec import load_platform
from tests.conftest import platform_raw

TEAM = "llm-pretrain"


@functools.cache
def two_namespace_plan():
    """prod with llm-pretrain in two namespaces, its Lustre file system `pretrain` in the second (not the team's
    first, the file system's default namespace)."""
    raw = platform_raw("prod")
    team = next(t for t in raw["teams"] if t["name"] == TEAM)
    team["namespaces"] = ["llm-pretrain", "llm-eval"]
    fs = next(f for f in raw["data"]["fileSystems"] if f["name"] == "pretrain")
    fs["namespace"] = "llm-eval"
    return build_plan(load_platform(raw, "us-east-1"), "us-east-1")


def team_plan() -> TeamPlan:
    return next(t for t in two_namespace_plan().teams if t.name == TEAM)


def test_a_file_systems_claim_is_counted_only_in_the_namespace_quota_holding_it() -> None:
    team = team_plan()
    pvcs_storage = {ns: (team.quota_of(ns)["persistentvolumeclaims"], team.quota_of(ns)["requests.storage"])
                    for ns in team.namespaces}
    # llm-pretrain: team-data and team-checkpoints, 50 + 2 claims, 2Ti + 2 x 1Gi.
    # llm-eval: those two and fsx-pretrain, 50 + 3 claims, 2Ti + 3 x 1Gi.
    assert pvcs_storage == {"llm-pretrain": ("52", "2050Gi"), "llm-eval": ("53", "2051Gi")}


def test_the_namespaces_quotas_differ_only_in_the_platforms_claims() -> None:
    team = team_plan()
    first, second = (dict(team.quota_of(ns)) for ns in team.namespaces)
    assert first.keys() == second.keys()
    assert {k for k in first if first[k] != second[k]} == {"persistentvolumeclaims", "requests.storage"}


def test_the_data_plans_claims_are_per_namespace() -> None:
    data = two_namespace_plan().data
    assert data.claims(TEAM, "llm-pretrain") == ("team-data", "team-checkpoints")
    assert data.claims(TEAM, "llm-eval") == ("team-data", "team-checkpoints", "fsx-pretrain")


def test_a_namespace_not_of_the_team_is_refused_naming_the_teams_namespaces() -> None:
    plan = two_namespace_plan()
    with pytest.raises(ValueError, match=r"namespace 'vision' is not one of team 'llm-pretrain''s; "
                                         r"its namespaces: llm-pretrain, llm-eval"):
        team_plan().quota_of("vision")
    with pytest.raises(ValueError, match=r"namespace 'vision' is not one of team 'llm-pretrain''s; "
                                         r"its namespaces: llm-pretrain, llm-eval"):
        plan.data.claims(TEAM, "vision")
