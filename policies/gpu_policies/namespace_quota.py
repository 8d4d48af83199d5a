"""What a team can ever hold, against what its namespaces let it run: a tenant namespace's ResourceQuota
covers every GPU unit its ClusterQueue can be admitted for (the queue's reach through its cohort tree, the
plan's own computation in gpu_platform.quota_reach, on the stack's ClusterQueues and Cohorts)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from gpu_platform import conventions as cv
from gpu_platform.quota_reach import CohortCycle, Limits, Member, QuotaTree

from . import objects as o
from . import stackindex as ix
from .framework import Config, Resource, StackReport, guarded
from .quota_capacity import flavor_capacity
from .resource_flavors import flavors, spec_of
from .settings import SYSTEM_NAMESPACES


def _gpu_limits(spec: Mapping[str, Any]) -> dict[tuple[str, str], Limits]:
    """(flavor, GPU resource) -> nominal/borrowing/lending of a ClusterQueue's or Cohort's resourceGroups, in
    whole units (a value that is not whole is left out: cluster-queue-flavors and the quota rules report it)."""
    out: dict[tuple[str, str], Limits] = {}
    for group in o.sequence(spec.get("resourceGroups")):
        for fl in map(o.mapping, o.sequence(o.mapping(group).get("flavors"))):
            for res in map(o.mapping, o.sequence(fl.get("resources"))):
                name = str(res.get("name"))
                nominal = o.whole_units(res.get("nominalQuota"))
                if not cv.is_gpu_resource(name) or nominal is None:
                    continue
                borrowing, lending = (None if res.get(k) is None else o.whole_units(res.get(k))
                                      for k in ("borrowingLimit", "lendingLimit"))
                out[(str(fl.get("name")), name)] = Limits(nominal, borrowing, lending)
    return out


def check_namespace_quota_covers_queue(resources: Sequence[Resource], cfg: Config, report: StackReport) -> None:
    """A namespace's GPU cap below what its ClusterQueue can be admitted for: Kueue admits a job whose pods the
    ResourceQuota then refuses, and the job holds its quota without running. The reach is the plan's
    computation (gpu_platform.quota_reach) on the stack's own ClusterQueues and Cohorts."""
    queues = ix.by_name(resources, "ClusterQueue", o.KUEUE_GROUP, report)
    cohort_objs = ix.by_name(resources, "Cohort", o.KUEUE_GROUP, report)
    def node(r: Resource, parent_field: str) -> tuple[str | None, dict[tuple[str, str], Limits]]:
        """(its cohort or parent, its GPU limits); nothing for a value unknown in preview (reported)."""
        read = lambda: (o.text(spec_of(r).get(parent_field)) or None, _gpu_limits(spec_of(r)))  # noqa: E731
        return guarded(report, r, read) or (None, {})

    members = {name: node(r, "cohortName") for name, r in queues.items()}
    cohorts = {name: node(r, "parentName") for name, r in cohort_objs.items()}
    known = flavors(resources, report)
    groups = ix.node_groups_by_pool(resources, report)
    templates = ix.launch_templates_by_pool(resources, report)
    trees: dict[tuple[str, str], QuotaTree] = {}

    def tree(fr: tuple[str, str]) -> QuotaTree:
        if fr not in trees:
            trees[fr] = QuotaTree(
                {q: Member(parent, limits[fr]) for q, (parent, limits) in members.items() if fr in limits},
                {c: Member(parent, limits.get(fr, Limits())) for c, (parent, limits) in cohorts.items()})
        return trees[fr]

    held_by: dict[str, dict[str, list[tuple[str, int, str]]]] = {}

    def reaches(queue: str) -> dict[str, list[tuple[str, int, str]]]:
        """GPU resource -> (flavor, units, arithmetic) of every flavor the queue holds it on."""
        if queue in held_by:
            return held_by[queue]
        out: dict[str, list[tuple[str, int, str]]] = held_by.setdefault(queue, defaultdict(list))
        for fr in sorted(members[queue][1]):
            f = known.get(fr[0])
            capacity = None if f is None else guarded(report, f.resource,
                                                      lambda f=f: flavor_capacity(f, groups, templates))
            r = tree(fr).reach(queue, capacity)
            if r.units:
                out[fr[1]].append((fr[0], r.units, r.arithmetic()))
        return out

    tenants = ix.tenant_namespaces(resources, cfg.strings(SYSTEM_NAMESPACES), report)
    objs = ix.namespaced(resources, {"LocalQueue": o.KUEUE_GROUP, "ResourceQuota": ""}, report)
    for ns in sorted(tenants):
        for lq in objs.get(ns, "LocalQueue"):
            target = guarded(report, lq, lambda lq=lq: o.text(o.mapping(lq.props.get("spec")).get("clusterQueue")))
            if target not in members:
                continue  # namespace-local-queue reports a LocalQueue without its ClusterQueue
            try:
                held = reaches(target)
            except CohortCycle as err:
                report(queues[target], f"ClusterQueue {target!r}: {err}; Kueue admits nothing in that tree")
                continue
            for rq in objs.get(ns, "ResourceQuota"):
                def check(rq: Resource = rq) -> None:
                    spec = o.mapping(rq.props.get("spec"))
                    if o.sequence(spec.get("scopes")) or o.mapping(spec.get("scopeSelector")):
                        return  # a scoped quota caps only pods in its scope
                    hard = o.mapping(spec.get("hard"))
                    for resource, per_flavor in sorted(held.items()):
                        cap = o.whole_units(hard.get(f"requests.{resource}"))
                        need = sum(units for _, units, _ in per_flavor)
                        if cap is not None and cap < need:
                            how = "; ".join(f"flavor {fl!r}: {why}" for fl, _, why in per_flavor)
                            report(rq, f"ResourceQuota in {ns!r} caps requests.{resource} at {cap}, but ClusterQueue "
                                   f"{target!r} can be admitted for up to {need} ({how}): Kueue would admit a job whose "
                                   "pods this quota then refuses, and the job would hold its quota without running")
                guarded(report, rq, check)
