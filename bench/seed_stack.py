"""The seed-scale stack: about 1,000 GPU nodes (8,000 GPUs) and 100 teams, the size the platform's users run
("most organisations cap a cluster at 500-1,000 GPU nodes").

Built on bench/synth.py (same team and cohort tree, same quota pattern) with the fleet fixed instead of grown
to fit the quotas: five 8-GPU pools, one per kind of work, each at min = max so the live cluster registers
every node (gpu_platform/nodes.py registered_nodes) and no autoscaler is involved in a measurement.
"""

from __future__ import annotations

import argparse
from typing import Any

from bench.synth import stack_config

TEAMS = 100
# One shape per kind of work, all 8-GPU instance types (gpu_platform/catalog.py); units_per_node is the
# pool's schedulable units per node: GPUs x MIG slices (1g.10gb: 7 per A100) or x time-slicing replicas.
SEED_SHAPES: tuple[dict[str, Any], ...] = (
    {"accelerator": "h100-80gb", "instanceType": "p5.48xlarge", "fabric": "efa", "workload": "training",
     "sharing": {"mode": "full"}, "units_per_node": 8, "capacity": {"type": "on-demand"}},
    {"accelerator": "h200-141gb", "instanceType": "p5en.48xlarge", "fabric": "efa", "workload": "training",
     "sharing": {"mode": "full"}, "units_per_node": 8, "capacity": {"type": "on-demand"}},
    {"accelerator": "a100-80gb", "instanceType": "p4de.24xlarge", "fabric": "ethernet", "workload": "batch",
     "sharing": {"mode": "mig", "profile": "1g.10gb"}, "units_per_node": 56, "capacity": {"type": "on-demand"}},
    {"accelerator": "l40s-48gb", "instanceType": "g6e.48xlarge", "fabric": "ethernet", "workload": "inference",
     "sharing": {"mode": "time-slicing", "replicas": 2}, "units_per_node": 16, "capacity": {"type": "on-demand"}},
    {"accelerator": "l4-24gb", "instanceType": "g6.48xlarge", "fabric": "ethernet", "workload": "interactive",
     "sharing": {"mode": "time-slicing", "replicas": 4}, "units_per_node": 32, "capacity": {"type": "spot"}},
)
# Nodes per pool, in SEED_SHAPES order: 300 H100 + 200 H200 training, 150 A100 MIG, 200 L40S inference,
# 150 L4 interactive = 1,000 nodes, 8,000 GPUs.
SEED_NODES: tuple[int, ...] = (300, 200, 150, 200, 150)
GPUS_PER_NODE = 8


def seed_config(teams: int = TEAMS, nodes: tuple[int, ...] = SEED_NODES, scale: float = 1.0,
                **overrides: Any) -> dict[str, Any]:
    """The stack config (Pulumi.<stack>.yaml's `config:`); `scale` shrinks every pool (at least one node
    each) for a smaller cluster of the same shape."""
    sized = tuple(max(1, round(n * scale)) for n in nodes)
    return stack_config(teams, shapes=SEED_SHAPES, pool_nodes=sized, **overrides)


def main() -> None:
    ap = argparse.ArgumentParser(description="print the seed-scale Pulumi.<stack>.yaml (1,000 GPU nodes, 100 teams)")
    ap.add_argument("--teams", type=int, default=TEAMS)
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every pool's node count (default 1)")
    args = ap.parse_args()
    import yaml

    print(yaml.safe_dump({"config": seed_config(args.teams, scale=args.scale)}, sort_keys=False))


if __name__ == "__main__":
    main()
