"""Synthetic platform specs shaped like real ones: N teams over M pools in a two-level cohort tree.

Pools cycle through the accelerator mixes of the prod stack (EFA training, time-sliced inference,
MIG batch, time-sliced interactive); every team holds quota on two pools, with borrowing and lending
on some; pool sizes grow with N so nominal quotas always fit.
"""

from __future__ import annotations

import argparse
import json
import math
from typing import Any, Sequence

POOL_SHAPES: tuple[dict[str, Any], ...] = (
    {"accelerator": "h100-80gb", "instanceType": "p5.48xlarge", "fabric": "efa", "workload": "training",
     "sharing": {"mode": "full"}, "units_per_node": 8, "capacity": {"type": "on-demand"}},
    {"accelerator": "l40s-48gb", "instanceType": "g6e.12xlarge", "fabric": "ethernet", "workload": "inference",
     "sharing": {"mode": "time-slicing", "replicas": 2}, "units_per_node": 8, "capacity": {"type": "on-demand"}},
    {"accelerator": "a100-80gb", "instanceType": "p4de.24xlarge", "fabric": "ethernet", "workload": "batch",
     "sharing": {"mode": "mig", "profile": "1g.10gb"}, "units_per_node": 56, "capacity": {"type": "on-demand"}},
    {"accelerator": "l4-24gb", "instanceType": "g6.12xlarge", "fabric": "ethernet", "workload": "interactive",
     "sharing": {"mode": "time-slicing", "replicas": 4}, "units_per_node": 16, "capacity": {"type": "spot"}},
    {"accelerator": "h200-141gb", "instanceType": "p5en.48xlarge", "fabric": "efa", "workload": "training",
     "sharing": {"mode": "full"}, "units_per_node": 8, "capacity": {"type": "on-demand"}},
)
QUOTA_UNITS = 8


def pool_count(teams: int) -> int:
    return max(len(POOL_SHAPES), math.ceil(teams / 20))


def platform(teams: int, pools: int | None = None, provider: str = "existing",
             shapes: Sequence[dict[str, Any]] = POOL_SHAPES,
             pool_nodes: Sequence[int] | None = None) -> dict[str, Any]:
    """The `gpu-platform:platform` value for a synthetic platform.

    `pool_nodes` fixes each pool's size (min = max, so the live cluster registers them all) instead of
    growing pools to fit QUOTA_UNITS per team: each team's nominal quota on a pool is then its even share
    of the pool (rounded down), so the quotas still fit and together hold most of the fleet."""
    m = len(pool_nodes) if pool_nodes is not None else (pools or pool_count(teams))
    per_pool: list[int] = [0] * m
    pairs = [tuple(dict.fromkeys((i % m, (i * 7 + 3) % m))) for i in range(teams)]
    share = [QUOTA_UNITS] * m
    if pool_nodes is not None:
        holders = [sum(k in pair for pair in pairs) for k in range(m)]
        share = [max(1, pool_nodes[k] * shapes[k % len(shapes)]["units_per_node"] // max(1, holders[k]))
                 for k in range(m)]
    team_list = []
    groups = max(2, round(math.sqrt(teams)))
    for i in range(teams):
        name = f"team-{i:04d}"
        quotas = {}
        for j, k in enumerate(pairs[i]):
            units = share[k]
            q: dict[str, Any] = {"units": units}
            if (i + j) % 3 == 0:
                q["borrowingLimit"] = units
            elif (i + j) % 3 == 1:
                q["lendingLimit"] = units // 2
            quotas[f"pool-{k:03d}"] = q
            per_pool[k] += units
        team_list.append({
            "name": name,
            "costCenter": f"cc-{1000 + i}",
            "cohort": f"group-{i % groups:03d}",
            "groups": {"admin": [f"{name}-leads"], "member": [f"{name}-engineers"], "viewer": [f"{name}-viewers"]},
            "podSecurity": "restricted" if i % 4 == 0 else "baseline",
            "quotas": quotas,
        })
    pool_list = []
    for k in range(m):
        shape = shapes[k % len(shapes)]
        nodes = max(1, math.ceil(per_pool[k] / shape["units_per_node"]))
        pool = {key: v for key, v in shape.items() if key != "units_per_node"}
        pool = json.loads(json.dumps(pool))
        pool["name"] = f"pool-{k:03d}"
        if pool_nodes is not None:
            # at least one unit per quota holder: a pool smaller than its holders grows to hold them
            nodes = max(pool_nodes[k], nodes)
            pool["capacity"].update({"min": nodes, "max": nodes})
        else:
            pool["capacity"].update({"min": 0, "max": nodes})
        if provider == "eks" and shape["fabric"] == "efa":
            pool["availabilityZone"] = "us-east-1a"
        pool_list.append(pool)
    return {
        "environment": "staging",
        "cluster": {"name": "bench", "provider": provider, "kubernetesVersion": "1.33",
                    **({"subnetIds": ["subnet-0a1", "subnet-0b2"]} if provider == "eks" else {})},
        "addons": {"gpuOperator": {"install": True}, "kueue": {"install": True}, "monitoring": {"install": True}},
        "pools": pool_list,
        "cohorts": [{"name": "org"}] + [{"name": f"group-{g:03d}", "parent": "org"} for g in range(groups)],
        "teams": team_list,
    }


def stack_config(teams: int, provider: str = "existing", shapes: Sequence[dict[str, Any]] = POOL_SHAPES,
                 pool_nodes: Sequence[int] | None = None, **overrides: Any) -> dict[str, Any]:
    """A whole stack config (as Pulumi.<stack>.yaml's `config:`) for the synthetic platform."""
    p = platform(teams, provider=provider, shapes=shapes, pool_nodes=pool_nodes)
    p.update(overrides)
    return {"aws:region": "us-east-1", "gpu-platform:platform": p}


def main() -> None:
    ap = argparse.ArgumentParser(description="print a synthetic Pulumi.<stack>.yaml")
    ap.add_argument("--teams", type=int, default=100)
    ap.add_argument("--provider", choices=["existing", "eks"], default="existing")
    args = ap.parse_args()
    import yaml

    print(yaml.safe_dump({"config": stack_config(args.teams, args.provider)}, sort_keys=False))


if __name__ == "__main__":
    main()
