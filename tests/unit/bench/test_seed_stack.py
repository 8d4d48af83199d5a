"""The seed-scale stack (bench/seed_stack.py) is the fleet issue #28 asks for: 1,000 GPU nodes, 8,000 GPUs,
100 teams, and a spec the platform's loader accepts with every nominal quota inside its pool."""

from __future__ import annotations

from collections import Counter

from bench.seed_stack import seed_config
from gpu_platform import catalog
from gpu_platform import conventions as cv
from gpu_platform.nodes import fake_nodes
from gpu_platform.plan import build_plan
from gpu_platform.spec.loading import load_platform


def _plan():
    config = seed_config()
    return build_plan(load_platform(config["gpu-platform:platform"], config["aws:region"]), config["aws:region"])


def test_the_seed_stack_registers_1000_gpu_nodes_with_8000_gpus_for_100_teams() -> None:
    plan = _plan()
    gpu_nodes = [n for n in fake_nodes(plan)["items"] if n["spec"].get("taints")]
    types = Counter(n["metadata"]["labels"][cv.INSTANCE_TYPE_LABEL] for n in gpu_nodes)
    assert dict(types) == {"p5.48xlarge": 300, "p5en.48xlarge": 200, "p4de.24xlarge": 150,
                           "g6e.48xlarge": 200, "g6.48xlarge": 150}
    assert sum(catalog.INSTANCE_TYPES[t].gpus * n for t, n in types.items()) == 8000
    assert len(plan.teams) == 100
    assert len(plan.cohorts) == 11  # org and ten groups under it


def test_the_seed_stacks_nominal_quotas_fit_their_pools() -> None:
    raw = seed_config()["gpu-platform:platform"]
    units = {p["name"]: p["capacity"]["max"] * per for p, per in zip(raw["pools"], (8, 8, 56, 16, 32))}
    held = Counter()
    for team in raw["teams"]:
        for pool, quota in team["quotas"].items():
            held[pool] += quota["gpus"]
    assert all(held[p] <= units[p] for p in units), (held, units)
    assert held["pool-000"] == 2400  # 40 teams x 60 H100s: the pool's quotas hold all of it
