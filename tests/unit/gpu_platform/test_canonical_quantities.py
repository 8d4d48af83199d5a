"""CPU and memory quantities in the canonical form the API server stores, so a ClusterQueue the stack sends
reads back the same (no diff on every preview): whole cores without `m`, thousands of cores as `k`, memory in
the largest binary suffix that keeps it whole. World: pure functions."""

from __future__ import annotations

from gpu_platform.plan.quantities import cpu_quantity, memory_quantity


def test_cpu_is_millicores_whole_cores_or_thousands_of_cores() -> None:
    assert [cpu_quantity(m) for m in (500, 1000, 4000, 95224, 999_000, 1_000_000, 2_000_000, 1_500_000)] == [
        "500m", "1", "4", "95224m", "999", "1k", "2k", "1500"]


def test_memory_is_the_largest_whole_binary_suffix() -> None:
    assert [memory_quantity(m) for m in (0, 512, 1024, 1536, 16384, 1_048_576, 3_145_728, 1_049_600)] == [
        "0Mi", "512Mi", "1Gi", "1536Mi", "16Gi", "1Ti", "3Ti", "1025Gi"]
