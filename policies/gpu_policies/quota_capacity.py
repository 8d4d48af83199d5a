"""Nominal quotas against pool capacity: the GPU quotas of all ClusterQueues on a flavor fit its pool, whose
capacity is read back from the stack's node group (or NodePool) and launch template, else from the flavor's
FLAVOR_CAPACITY_ANNOTATION (an `existing` cluster's stack holds no node groups)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence

from gpu_platform import catalog, conventions as cv
from gpu_platform.pool_derivations import capacity_units

from . import objects as o
from . import stackindex as ix
from .framework import Config, Resource, StackReport, guarded, quoted
from .resource_flavors import Flavor, flavors, quota_entries


def _node_group_capacity(group: Resource, template: Resource | None, f: Flavor) -> int | None:
    """max nodes x GPUs per node x units per GPU, when the node group (or its pool's launch template) or the
    NodePool names a catalog instance type. A NodePool's max nodes is its `nodes` limit.

    Deliberately not the plan's PoolPlan.capacity_units: the pack judges the resources the stack declares, so
    that a plan bug cannot vouch for itself, and reads the three inputs back from them; the formula is the one
    definition, gpu_platform/pool_derivations.py capacity_units."""
    max_nodes = o.pool_max_nodes(group.type, group.props)
    nodes = o.pool_nodes(group.type, group.props)
    names = nodes.instance_types
    if not names and template is not None:
        names = [o.text(template.props.get("instanceType")) or ""]
    types = [catalog.INSTANCE_TYPES.get(n) for n in names]
    node_labels = nodes.labels
    accelerator = o.text(node_labels.get(cv.ACCELERATOR)) or o.text(f.node_labels.get(cv.ACCELERATOR)) or ""
    sharing = o.text(node_labels.get(cv.SHARING)) or o.text(f.node_labels.get(cv.SHARING)) or ""
    per_gpu = o.units_per_gpu(accelerator, sharing)
    if max_nodes is None or not types or None in types or per_gpu is None:
        return None
    gpus = min(t.gpus for t in types if t is not None)  # mixed instance types: the smallest node bounds it
    return capacity_units(max_nodes, gpus, per_gpu)


def check_quota_fits_capacity(resources: Sequence[Resource], cfg: Config, report: StackReport) -> None:
    known = flavors(resources, report)
    groups = ix.node_groups_by_pool(resources, report)
    templates = ix.launch_templates_by_pool(resources, report)
    totals: dict[str, int] = defaultdict(int)
    quoted_by: dict[str, list[str]] = defaultdict(list)
    for r in resources:
        if not o.is_kind(r.type, "ClusterQueue", o.KUEUE_GROUP):
            continue
        entries = guarded(report, r, lambda r=r: quota_entries(r))
        for fl, res, nominal in entries or ():
            if not cv.is_gpu_resource(res):
                continue
            units = o.whole_units(nominal)
            if units is None:
                report(r, f"nominalQuota {nominal!r} of {res} on flavor {fl!r} is not a whole number of units")
                continue
            totals[fl] += units
            quoted_by[fl].append(r.name)
    for fl, total in sorted(totals.items()):
        f = known.get(fl)
        if f is None or (fl == cv.CPU_FLAVOR and total == 0):
            continue  # cluster-queue-flavors reports a missing one; the CPU-only flavor holds no GPUs

        def check(f: Flavor = f, total: int = total) -> None:
            annotated_raw = o.annotations(f.resource.props).get(cv.FLAVOR_CAPACITY_ANNOTATION)
            annotated = o.whole_units(annotated_raw) if annotated_raw is not None else None
            if annotated_raw is not None and annotated is None:
                report(f.resource, f"annotation {cv.FLAVOR_CAPACITY_ANNOTATION}={annotated_raw!r} is not a whole number")
            pool = o.text(f.node_labels.get(cv.POOL)) or ""
            group = groups.get(pool)
            from_group = None
            if group is not None:  # an unknown size is reported against the node group that holds it
                from_group = guarded(report, group, lambda: _node_group_capacity(group, templates.get(pool), f))
            if from_group is not None and annotated is not None and from_group != annotated:
                report(f.resource, f"annotation {cv.FLAVOR_CAPACITY_ANNOTATION}={annotated} disagrees with "
                       f"{o.pool_nodes(group.type, group.props).kind} {group.name!r}, which holds {from_group} units "
                       "at its max size")
            capacity = from_group if from_group is not None else annotated
            if capacity is None:
                report(f.resource, f"the capacity of flavor {f.name!r} is unknown (no node group with a catalog instance "
                       f"type and max size, no {cv.FLAVOR_CAPACITY_ANNOTATION} annotation): nominal quotas summing to "
                       f"{total} cannot be checked")
            elif total > capacity:
                report(f.resource, f"nominal quotas on flavor {f.name!r} add up to {total} units "
                       f"(ClusterQueues {quoted(sorted(set(quoted_by[f.name])))}), more than its pool's capacity of {capacity}")
        guarded(report, f.resource, check)


def flavor_capacity(f: Flavor, groups: Mapping[str, Resource], templates: Mapping[str, Resource]) -> int | None:
    """The flavor's pool capacity in units: its node group's (or NodePool's) max size, else its annotation."""
    pool = o.text(f.node_labels.get(cv.POOL)) or ""
    group = groups.get(pool)
    if group is not None:
        from_group = _node_group_capacity(group, templates.get(pool), f)
        if from_group is not None:
            return from_group
    return o.whole_units(o.annotations(f.resource.props).get(cv.FLAVOR_CAPACITY_ANNOTATION))
