"""A cohort or team listed by two tenant stacks of a split is refused at the second listing, naming the stack
that listed it first: each team's namespaces must be deployed by exactly one stack. World: bench.synth's 4-team
spec (cohorts org > group-000, group-001), loaded in-process."""

from __future__ import annotations

import pytest

from bench.synth import stack_config
from gpu_platform.errors import SpecError
from gpu_platform.spec import load_platform

NO_ADDONS = {"gpuOperator": {"install": False}, "kueue": {"install": False}, "monitoring": {"install": False}}


def problems(split: dict) -> list[str]:
    raw = stack_config(4, addons=NO_ADDONS)["gpu-platform:platform"]
    raw["stackSplit"] = split
    with pytest.raises(SpecError) as err:
        load_platform(raw, "us-east-1")
    return [str(p) for p in err.value.problems]


def test_a_cohort_or_team_listed_twice_is_refused_at_its_second_listing_naming_the_first() -> None:
    assert problems({"platformStack": "p", "tenantStacks": [
        {"stack": "a", "cohorts": ["group-000"]},
        {"stack": "b", "cohorts": ["group-001", "group-000"]},
    ]}) == ["stackSplit.tenantStacks[1].cohorts[1]: cohort 'group-000' is also listed by a",
            "stackSplit.tenantStacks[0]: tenant stack 'a' holds no team"]  # the later listing took the cohort
    assert problems({"platformStack": "p", "tenantStacks": [
        {"stack": "a", "cohorts": ["group-000"], "teams": ["team-0001"]},
        {"stack": "b", "cohorts": ["group-001"], "teams": ["team-0001"]},
    ]}) == ["stackSplit.tenantStacks[1].teams[0]: team 'team-0001' is also listed by a"]
