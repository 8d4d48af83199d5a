"""The `gpu-platform.plan` group: the plan as static series (who owns which namespace and queue and the owner's
cost center, which flavor is which pool, each pool's units per node, capacity and GPUs per unit), so the other
groups speak in teams and pools without re-deriving anything.

The cost center rides on the namespace's and the ClusterQueue's info series beside `team` (the team's own value),
so any series carrying a namespace or a cluster_queue label is attributed to a cost center by the join that gives
it its team; the rules' own joins copy `team` only (`group_left (team)`), so their outputs are unchanged, and a
reader that needs the cost center joins it (acceptance step 6, platform_cli/acceptance_labels.py)."""

from __future__ import annotations

from typing import Mapping

from gpu_platform import conventions as cv
from gpu_platform.plan import Plan

from .record_names import (
    CLUSTER_QUEUE_TEAM, FLAVOR_POOL, NAMESPACE_TEAM, POOL_CAPACITY_UNITS, POOL_GPUS_PER_UNIT, POOL_UNITS_PER_NODE,
    TEAM_POOL_NOMINAL_UNITS,
)
from .rules import Group, Record
from .sources import ksm_resource


def _static(record: str, value: float, labels: Mapping[str, str]) -> Record:
    """A constant series from the plan: `vector(value)` with the plan's labels."""
    return Record(record, f"vector({value})", labels)



def plan_rules(plan: Plan) -> Group:
    """The plan as series: who owns which namespace and queue (with the team's cost center), which flavor is which
    pool, and how many schedulable units each pool's nodes should advertise."""
    rules: list[Record] = []
    for team in plan.teams:
        owner = {"team": team.name, cv.COST_CENTER_SERIES_LABEL: team.cost_center}
        for ns in team.namespaces:
            rules.append(_static(NAMESPACE_TEAM, 1, {"namespace": ns, **owner}))
        rules.append(_static(CLUSTER_QUEUE_TEAM, 1, {"cluster_queue": team.cluster_queue, **owner}))
        for q in team.quotas:
            rules.append(_static(TEAM_POOL_NOMINAL_UNITS, q.nominal,
                                 {"team": team.name, "pool": q.pool, "resource": q.resource_name}))
    for pool in plan.pools:
        rules.append(_static(FLAVOR_POOL, 1, {"flavor": pool.flavor, "pool": pool.name}))
        rules.append(_static(POOL_UNITS_PER_NODE, pool.units_per_node,
                             {"pool": pool.name, "resource": ksm_resource(pool.resource_name)}))
        rules.append(_static(POOL_CAPACITY_UNITS, pool.capacity_units,
                             {"pool": pool.name, "resource": pool.resource_name}))
        rules.append(_static(POOL_GPUS_PER_UNIT, 1 / pool.units_per_gpu, {"pool": pool.name}))
    return Group("gpu-platform.plan", tuple(rules))
