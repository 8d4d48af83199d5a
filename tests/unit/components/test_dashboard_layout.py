"""The dashboards' panels tile Grafana's 24-column grid two to a row, 12 columns by 8 rows each, in the order
they are listed: nothing overlaps, nothing is cut off at the right edge; each is a numbered time series panel
(a panel without a type is "Panel plugin not found" in Grafana). World: pure function on the prod plan."""

from __future__ import annotations

from components import dashboards
from tests.conftest import plan_of


def test_panels_sit_two_to_a_row_of_the_24_column_grid() -> None:
    for d in dashboards.dashboards(plan_of("prod")):
        grid = [p["gridPos"] for p in d.to_json()["panels"]]
        assert grid == [{"x": 0 if i % 2 == 0 else 12, "y": 8 * (i // 2), "w": 12, "h": 8} for i in range(len(grid))], d.uid
        assert len(grid) >= 6, d.uid


def test_every_panel_is_a_numbered_time_series_with_a_title_and_its_queries() -> None:
    counts = {}
    for d in dashboards.dashboards(plan_of("prod")):
        panels = d.to_json()["panels"]
        counts[d.uid] = len(panels)
        assert [(p["id"], p["type"]) for p in panels] == [(i + 1, "timeseries") for i in range(len(panels))], d.uid
        assert all(p["title"] and p["targets"] for p in panels), d.uid
    assert counts == {"gpu-platform-fleet": 8, "gpu-platform-queues": 6, "gpu-platform-gpu-health": 12}
