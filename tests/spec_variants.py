"""Variants of a checked-in stack's raw spec (tests.conftest.platform_raw) that several tests build."""

from __future__ import annotations

from typing import Any


def without_cohorts(raw: dict[str, Any]) -> dict[str, Any]:
    """RAW with every team out of its cohort and no borrowing or lending limit left (they need a cohort):
    each team then reaches its nominal quota only. Changes RAW; returns it."""
    for team in raw["teams"]:
        team.pop("cohort", None)
        for q in team["quotas"].values():
            q.pop("borrowingLimit", None)
            q.pop("lendingLimit", None)
    return raw
