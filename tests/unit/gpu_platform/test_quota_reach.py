"""The most a team can ever hold on a pool (gpu_platform.quota_reach), as Kueue v0.19.2 computes a ClusterQueue's
potential available quota, and where the plan uses it: each quota's reach, the namespace caps, `plan`'s table."""

from __future__ import annotations

import json

import pytest

from gpu_platform.jobs import JobRequest, NeverAdmitted, check
from gpu_platform.plan import build_plan
from gpu_platform.quota_reach import CohortCycle, Limits, Member, QuotaTree, reaches_of_spec
from gpu_platform.spec import load_platform
from platform_cli.plan_report import format_plan
from tests.conftest import plan_of, platform_raw
from tests.spec_variants import without_cohorts


def reach_of(plan, team: str, pool: str) -> int:
    return next(q for t in plan.teams if t.name == team for q in t.quotas if q.pool == pool).reach.units


def test_a_siblings_lending_limit_bounds_what_a_team_can_borrow() -> None:
    """What a sibling lends bounds a borrower: vision 8 + borrowingLimit 8, but nlp lends at most 4 of its 8, so
    vision reaches 12, not 16."""
    plan = plan_of("local")
    assert reach_of(plan, "vision", "train") == 12
    # nlp may borrow 4 and vision lends all 8: its borrowingLimit binds.
    assert reach_of(plan, "nlp", "train") == 12
    r = next(q for t in plan.teams if t.name == "vision" for q in t.quotas if q.pool == "train").reach
    assert (r.nominal, r.borrowing, r.lendable, r.capacity, r.limited_by) == (8, 8, 4, 16, "cohort lending")
    assert r.arithmetic() == ("min(nominal 8 + borrowingLimit 8 = 16, nominal 8 + 4 lendable through cohort "
                              "'research' = 12, pool capacity 16) = 12; lenders: nlp lends 4 of its 8 (lendingLimit 4)")


def _tree(**cohort_limits: Limits) -> QuotaTree:
    """org <- research {a: 8, b: 8 lending 2}, org <- product {c: 16 lending 4}; cohort limits by name."""
    return QuotaTree(
        {"a": Member("research", Limits(8)), "b": Member("research", Limits(8, lending=2)),
         "c": Member("product", Limits(16, lending=4))},
        {"org": Member(None, cohort_limits.get("org", Limits())),
         "research": Member("org", cohort_limits.get("research", Limits())),
         "product": Member("org", cohort_limits.get("product", Limits()))})


def test_nested_cohorts_lend_across_the_tree() -> None:
    # a borrows b's 2 from its own cohort and c's 4 through org: 8 + 2 + 4.
    assert _tree().reach("a").units == 14
    # c borrows everything research passes up: a's 8 and b's 2.
    assert _tree().reach("c").units == 16 + 10


def test_nested_cohorts_from_the_spec() -> None:
    raw = platform_raw("local")
    raw["cohorts"] = [{"name": "org"}, {"name": "research", "parent": "org"}, {"name": "product", "parent": "org"}]
    vision, nlp, serving = raw["teams"]
    vision["quotas"]["train"] = {"gpus": 4}
    nlp["quotas"]["train"] = {"gpus": 4, "lendingLimit": 2}
    serving["cohort"] = "product"
    serving["quotas"]["train"] = {"gpus": 8, "lendingLimit": 3}
    reaches = reaches_of_spec(load_platform(raw))
    assert reaches[("vision", "train")].units == 4 + 2 + 3
    assert reaches[("serving", "train")].units == 8 + 4 + 2
    assert reaches[("vision", "train")].lenders == ("serving lends 3 of its 8 (lendingLimit 3)",
                                                    "nlp lends 2 of its 4 (lendingLimit 2)")


def test_a_cohorts_lending_limit_caps_what_its_subtree_passes_on() -> None:
    # product passes on 1 of c's 4: a gets 8 + 2 + 1.
    tree = _tree(product=Limits(lending=1))
    assert tree.reach("a").units == 11
    assert "cohort 'product' passes on at most 1 (lendingLimit)" in tree.reach("a").lenders


def test_a_cohorts_borrowing_limit_caps_what_its_members_borrow_from_above() -> None:
    # research may take 1 from org beyond its own 10: a holds 8 + 2 (b) + 1.
    tree = _tree(research=Limits(borrowing=1))
    assert tree.reach("a").units == 11
    assert tree.reach("a").lenders[-1] == "cohort 'research' borrows at most 1 from its parent (borrowingLimit)"


def test_a_cohorts_own_quota_is_lent_to_its_members() -> None:
    assert _tree(org=Limits(5)).reach("a").units == 14 + 5


def test_no_cohort_is_nominal_only() -> None:
    tree = QuotaTree({"solo": Member(None, Limits(8)), "other": Member(None, Limits(8))}, {})
    r = tree.reach("solo", capacity=16)
    assert (r.units, r.lendable, r.limited_by) == (8, 0, "no cohort")
    assert r.arithmetic() == "min(nominal 8 (no cohort: nothing to borrow), pool capacity 16) = 8"


def test_an_unset_borrowing_limit_is_bounded_by_the_lenders_and_the_pool() -> None:
    tree = QuotaTree({"a": Member("c", Limits(8)), "b": Member("c", Limits(16))}, {"c": Member(None)})
    assert tree.reach("a").units == 24
    r = tree.reach("a", capacity=20)
    assert (r.units, r.limited_by) == (20, "pool capacity")
    assert r.arithmetic().endswith("pool capacity 20) = 20 (no borrowingLimit); lenders: b lends all its 16")


def test_a_borrowing_limit_below_what_is_lendable_binds() -> None:
    tree = QuotaTree({"a": Member("c", Limits(8, borrowing=3)), "b": Member("c", Limits(16))}, {"c": Member(None)})
    assert (tree.reach("a").units, tree.reach("a").limited_by) == (11, "borrowingLimit")


def test_a_cohort_no_object_declares_is_an_implicit_root_without_quota() -> None:
    # Kueue makes an implicit Cohort for a cohortName without a Cohort object (hierarchy.getOrCreateCohort).
    tree = QuotaTree({"a": Member("ghost", Limits(8)), "b": Member("ghost", Limits(8, lending=5))}, {})
    assert tree.reach("a").units == 13


def test_cohort_parents_in_a_cycle_are_refused() -> None:
    tree = QuotaTree({"a": Member("x", Limits(8))}, {"x": Member("y"), "y": Member("x")})
    with pytest.raises(CohortCycle, match="x -> y -> x"):
        tree.reach("a")


def test_nothing_fits_a_team_that_can_hold_nothing() -> None:
    plan = plan_of("local")
    pool = plan.pools_by_name["train"]
    r = QuotaTree({"idle": Member(None, Limits(0))}, {}).reach("idle", pool.capacity_units)
    err = NeverAdmitted("idle", pool, 1, 1, r)
    assert str(err).endswith("nothing fits: team 'idle' can hold no nvidia.com/gpu on pool 'train'")


def test_the_template_accepts_exactly_the_reach() -> None:
    plan = plan_of("local")
    check(plan, JobRequest(team="vision", pool="train", gpus=6, nodes=2))  # 12: fits
    with pytest.raises(NeverAdmitted):
        check(plan, JobRequest(team="vision", pool="train", gpus=7, nodes=2))  # 14


def test_the_namespace_quota_caps_at_the_reach() -> None:
    """A team's namespaces may request what Kueue can admit it for, not nominal + borrowingLimit (was 16)."""
    vision = next(t for t in plan_of("local").teams if t.name == "vision")
    assert vision.namespace_quota["requests.nvidia.com/gpu"] == "12"


def test_a_team_without_cohort_gets_its_nominal_in_the_plan() -> None:
    plan = build_plan(load_platform(without_cohorts(platform_raw("local"))))
    assert reach_of(plan, "vision", "train") == 8
    assert reach_of(plan, "vision", "notebooks") == 28


def test_plan_shows_the_most_each_team_can_hold() -> None:
    lines = format_plan(plan_of("local"), "table", "local").splitlines()
    header = next(line for line in lines if line.startswith("team "))
    assert header.split() == ["team", "cohort", "pool", "nominal", "borrowing", "lending", "most", "held", "cpu",
                              "memory"]
    row = next(line for line in lines if line.split()[:3] == ["vision", "research", "train"])
    assert row.split()[3:8] == ["8", "8", "-", "12", "(cohort"]
    assert "12 (cohort lending)" in row
    nlp = next(line for line in lines if line.split()[:3] == ["nlp", "research", "train"])
    assert "12 (borrowingLimit)" in nlp
    data = json.loads(format_plan(plan_of("local"), "json", "local"))
    (q,) = [q for t in data["teams"] if t["name"] == "vision" for q in t["quotas"] if q["pool"] == "train"]
    assert q["mostHeld"]["units"] == 12 and q["mostHeld"]["lendable"] == 4
    assert q["mostHeld"]["limitedBy"] == "cohort lending"
