"""How the replay's report rounds its figures: hours to three decimals, everything else to three decimals,
and a figure that could not be computed (None) stays None. Shared by every section of the report."""

from __future__ import annotations


def in_hours(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds / 3600, 3)


def rounded(x: float | None) -> float | None:
    return None if x is None else round(x, 3)
