"""The `gpu-platform.plan` group: the plan as static series (who owns which namespace and queue, which flavor is
which pool, each pool's units per node, capacity and GPUs per unit), so the other groups speak in teams and
pools without re-deriving anything."""

from __future__ import annotations

from typing import Mapping

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
    """The plan as series: who owns which namespace and queue, which flavor is which pool, and how many
    schedulable units each pool's nodes should advertise."""
    rules: list[Record] = []
    for team in plan.teams:
        for ns in team.namespaces:
            rules.append(_static(NAMESPACE_TEAM, 1, {"namespace": ns, "team": team.name}))
        rules.append(_static(CLUSTER_QUEUE_TEAM, 1, {"cluster_queue": team.cluster_queue, "team": team.name}))
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
