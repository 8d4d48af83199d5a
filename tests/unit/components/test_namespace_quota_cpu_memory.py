"""A team namespace's CPU and memory quota, worked out by hand: every unit the team can reach times the pool's
per-unit share of a node (tests/unit/components/test_pinned_values.py's table), plus its CPU-only allowance
(the spec's defaults, 8 CPUs and 32 GiB). One MiB or millicore too few refuses the last pod Kueue admits.
World: the prod stack rendered under mocks (the shared render)."""

from __future__ import annotations

from tests.conftest import rendered


def test_search_serving_s_quota_is_its_reach_of_l40s_units_and_its_cpu_only_allowance() -> None:
    """search-serving reaches 80 time-sliced l40s-infer units (test_pinned_values: min(64 + 16, 64 + 24, 128));
    a g6e.12xlarge unit is 5851m and 44763 Mi: 80 x 5851 + 8000 = 476080m; 80 x 44763 + 32 x 1024 = 3613808 Mi."""
    (quota,) = [x.inputs for x in rendered("prod").by_type("kubernetes:core/v1:ResourceQuota")
                if x.inputs["metadata"]["namespace"] == "search-serving"]
    hard = quota["spec"]["hard"]
    assert (hard["requests.cpu"], hard["requests.memory"], hard["pods"]) == ("476080m", "3613808Mi", "200")
