"""What a spec pool implies that both the cross-field checks and the plan need: its units and node labels.

Computed here once: `spec.checks` validates with them (label lengths, quotas against capacity) and `plan`
builds every PoolPlan from them, so a check can never judge a number the plan computes differently.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import catalog, conventions as cv

if TYPE_CHECKING:
    from .spec.pools import Pool


def pool_units_per_gpu(pool: Pool) -> int:
    """Schedulable units one of the pool's GPUs gives: 1, its MIG profile's slices or its time-slicing replicas.

    KeyError for a MIG profile the accelerator lacks: the checks report that pool and skip it."""
    units = catalog.units_per_gpu(pool.accelerator, pool.sharing.mode, pool.sharing.profile, pool.sharing.replicas)
    if units is None:
        raise KeyError(pool.sharing.profile)
    return units


def pool_capacity_units(pool: Pool) -> int:
    """Units the pool offers at capacity.max."""
    return pool.capacity.max * catalog.INSTANCE_TYPES[pool.instanceType].gpus * pool_units_per_gpu(pool)


def pool_resource_name(pool: Pool) -> str:
    """The extended resource the pool's nodes advertise its units as."""
    return cv.sharing_resource_name(pool.sharing.mode, pool.sharing.profile)


def pool_labels(pool: Pool) -> dict[str, str]:
    """The six pool labels every node, flavor and cost tag of the pool carries (validated for length in checks)."""
    it = catalog.INSTANCE_TYPES[pool.instanceType]
    acc = catalog.ACCELERATORS[pool.accelerator]
    return {
        cv.POOL: pool.name,
        cv.ACCELERATOR: pool.accelerator,
        cv.TOPOLOGY: cv.topology_value(it.gpus, acc.form_factor, it.interconnect),
        cv.FABRIC: pool.fabric,
        cv.WORKLOAD: pool.workload,
        cv.SHARING: cv.sharing_value(pool.sharing.mode, pool.sharing.profile, pool.sharing.replicas),
    }
