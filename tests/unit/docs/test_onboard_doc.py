"""docs/tasks/onboard-a-team.md against the spec and prod's plan (world: the spec models, prod's plan, the page).

A new team's fields were spread over four pages, and nothing told the platform team that four of prod's five
pools are fully allocated, so that a new team's quota must be taken from another team or be borrow-only. The
page's field table must name every field a team has, and its allocation table must be prod's plan.
"""

from __future__ import annotations

import copy
import re

import yaml

from gpu_platform.plan import build_plan
from gpu_platform.spec import load_stack_config
from gpu_platform.spec.tenancy import Team
from tests.conftest import ROOT, plan_of, stack_doc

PAGE = ROOT / "docs" / "tasks" / "onboard-a-team.md"


def test_the_page_names_every_field_of_a_team_once() -> None:
    text = PAGE.read_text()
    start = text.index("| field | what it gives the team |")
    rows = re.findall(r"(?m)^\| `([A-Za-z]+)` \|", text[start:text.index("\n\n", start)])
    assert sorted(rows) == sorted(Team.model_fields) and len(rows) == len(set(rows)) == 14


def test_the_allocation_table_is_prods_plan_and_four_pools_are_full() -> None:
    plan = plan_of("prod")
    nominal = {p.name: 0 for p in plan.pools}
    for team in plan.teams:
        for q in team.quotas:
            nominal[q.pool] += q.nominal
    rows = {pool: (int(n), int(cap)) for pool, n, cap in
            re.findall(r"(?m)^([a-z0-9-]+)\s+(\d+) / (\d+)\s+\d+%$", PAGE.read_text())}
    assert rows == {p.name: (nominal[p.name], p.capacity_units) for p in plan.pools}
    full = [p for p, (n, cap) in rows.items() if n == cap]
    assert len(full) == 4 and "four of the five pools are fully allocated" in " ".join(PAGE.read_text().split())


def test_the_borrow_only_example_is_a_quota_of_zero_units_with_a_borrowing_limit() -> None:
    text = PAGE.read_text()
    assert "h100-train: {units: 0, borrowingLimit: 16}" in text
    assert re.search(r"robotics\s+research\s+h100-train\s+0\s+16\s+-\s+16 \(borrowingLimit\)", text)


def test_the_pages_entry_added_to_prod_validates_and_borrows_only() -> None:
    """The entry a reader copies into prod's `teams` is a valid team (fields, groups, access entry) and gives
    robotics no nominal GPUs on h100-train but a borrowing limit of 16 in cohort research."""
    text = PAGE.read_text()
    block = text[text.index("```yaml\n      - name: robotics") + len("```yaml\n"):]
    entry = yaml.safe_load(block[:block.index("```")])
    doc = copy.deepcopy(stack_doc("prod"))
    doc["config"]["gpu-platform:platform"]["teams"] += entry
    plan = build_plan(*load_stack_config(doc))
    (robotics,) = [t for t in plan.teams if t.name == "robotics"]
    (quota,) = robotics.quotas
    assert (robotics.cohort, quota.pool, quota.nominal, quota.borrowing) == ("research", "h100-train", 0, 16)
