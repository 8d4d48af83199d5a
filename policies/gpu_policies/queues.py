"""Kueue consistency: ClusterQueue scope, ResourceFlavors that match real pools, quotas that fit capacity.

The real pools are known from the stack's EKS node groups when there are any (`provider: eks`). For an
`existing` cluster the stack holds no node groups, so a flavor must at least name a complete pool (all
pool labels) with taints consistent with its workload, and carry its pool's capacity in the
`FLAVOR_CAPACITY_ANNOTATION` annotation so the quota check has a number to compare with.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpu_platform import catalog, conventions as cv
from gpu_platform.pool_derivations import capacity_units
from gpu_platform.quota_reach import CohortCycle, Limits, Member, QuotaTree

from . import objects as o
from . import stackindex as ix
from .framework import (
    ADVISORY,
    Config,
    GuardrailResourcePolicy,
    GuardrailStackPolicy,
    Report,
    Resource,
    StackReport,
    guarded,
    quoted,
)
from .settings import POOL_LABELS, SYSTEM_NAMESPACES


def _spec(r: Resource) -> Mapping[str, Any]:
    return o.mapping(r.props.get("spec"))


def check_namespace_selector(r: Resource, cfg: Config, report: Report) -> None:
    spec = _spec(r)
    selector = spec.get("namespaceSelector")
    if not isinstance(selector, Mapping):
        report("ClusterQueue has no namespaceSelector: Kueue treats that as selecting no namespace")
    elif o.selector_is_empty(selector):
        report("ClusterQueue has an empty namespaceSelector ({}): every namespace, system ones included, "
               "could submit to it; select the team's namespaces")


class _NamespaceLabelIndex:
    """Namespaces' selector labels, indexed by (key, value) and by key, so a selector is evaluated only
    against the namespaces its positive terms (matchLabels, In, Exists) allow."""

    def __init__(self, namespaces: Iterable[tuple[str, Mapping[str, Any]]]):
        self.labels: dict[str, Mapping[str, Any]] = {}
        self.by_pair: dict[tuple[str, Any], set[str]] = defaultdict(set)
        self.by_key: dict[str, set[str]] = defaultdict(set)
        for name, labels in namespaces:
            self.labels[name] = labels
            for k, v in labels.items():
                self.by_pair[(k, v)].add(name)
                self.by_key[k].add(name)

    def matching(self, selector: Mapping[str, Any]) -> list[str]:
        candidates: set[str] | None = None

        def narrow(found: set[str]) -> None:
            nonlocal candidates
            candidates = set(found) if candidates is None else candidates & found

        for k, v in o.mapping(selector.get("matchLabels")).items():
            narrow(self.by_pair.get((k, v), set()))
        for expr in map(o.mapping, o.sequence(selector.get("matchExpressions"))):
            if expr.get("operator") == "In":
                narrow(set().union(*(self.by_pair.get((expr.get("key"), v), set())
                                     for v in o.sequence(expr.get("values")))))
            elif expr.get("operator") == "Exists":
                narrow(self.by_key.get(expr.get("key"), set()))
        pool = self.labels.keys() if candidates is None else candidates
        return sorted(n for n in pool if o.selector_matches(selector, self.labels[n]))


def check_tenant_scope(resources: Sequence[Resource], cfg: Config, report: StackReport) -> None:
    system = cfg.strings(SYSTEM_NAMESPACES)
    namespaces = ix.namespaces(resources, report)
    entries = [(n, ns.selector_labels()) for n, ns in namespaces.items()]
    # System namespaces exist whether or not the stack declares them; their name label is certain.
    entries += [(n, {cv.NAMESPACE_NAME_LABEL: n}) for n in system if n not in namespaces]
    index = _NamespaceLabelIndex(entries)
    for r in resources:
        if not o.is_kind(r.type, "ClusterQueue", o.KUEUE_GROUP):
            continue

        def check(r: Resource = r) -> None:
            selector = _spec(r).get("namespaceSelector")
            if not isinstance(selector, Mapping) or o.selector_is_empty(selector):
                return  # cluster-queue-namespace-selector reports it
            matched = index.matching(selector)
            bad = [n for n in matched if n in system]
            if bad:
                report(r, f"ClusterQueue's namespaceSelector selects system namespace(s) {quoted(bad)}")
            teams = sorted({str(index.labels[n].get(cv.TEAM)) for n in matched
                            if n not in system and index.labels[n].get(cv.TEAM)})
            if len(teams) > 1:
                report(r, f"ClusterQueue's namespaceSelector selects namespaces of several teams {quoted(teams)}: "
                       "a team's quota would be spent by another; share capacity through cohorts instead")
        guarded(report, r, check)


# ---------------------------------------------------------------------------------------------------
# flavors and pools


@dataclass(slots=True)
class Flavor:
    name: str
    resource: Resource
    node_labels: Mapping[str, Any]
    tolerations: Sequence[Any]
    node_taints: list[o.TaintRef]

    def covers(self, taint: o.TaintRef) -> bool:
        """Admitted pods can sit on nodes with this taint: the flavor tolerates it (Kueue injects the
        flavor's tolerations) or lists it as a node taint (then workloads must tolerate it to be admitted)."""
        return o.tolerated(self.tolerations, taint) or taint in self.node_taints


def flavors(resources: Sequence[Resource], report: StackReport) -> dict[str, Flavor]:
    out: dict[str, Flavor] = {}
    for r in resources:
        if o.is_kind(r.type, "ResourceFlavor", o.KUEUE_GROUP):
            def read(r: Resource = r) -> Flavor:
                spec = _spec(r)
                return Flavor(
                    o.object_name(r.props, r.name), r,
                    o.mapping(spec.get("nodeLabels")),
                    o.sequence(spec.get("tolerations")),
                    o.taints_of(spec.get("nodeTaints")),
                )
            f = guarded(report, r, read)
            if f is not None:
                out[f.name] = f
    return out


def _blocking(taints: Iterable[o.TaintRef]) -> list[o.TaintRef]:
    return [t for t in taints if t.effect in ("NoSchedule", "NoExecute")]


def gpu_flavors(resources: Sequence[Resource], report: StackReport) -> dict[str, Flavor]:
    """Every flavor but the CPU-only one, which names no pool (check_cpu_only_flavor keeps it GPU-free)."""
    return {n: f for n, f in flavors(resources, report).items() if n != cv.CPU_FLAVOR}


def check_flavor_matches_pool(resources: Sequence[Resource], cfg: Config, report: StackReport) -> None:
    groups = ix.node_groups_by_pool(resources, report)
    required = cfg.strings(POOL_LABELS)
    for name, f in sorted(gpu_flavors(resources, report).items()):
        def check(f: Flavor = f) -> None:
            missing = [k for k in required if not o.text(f.node_labels.get(k))]
            if missing:
                report(f.resource, f"ResourceFlavor {f.name!r} lacks pool label(s) {quoted(missing)} in nodeLabels: "
                       "it does not name one real pool")
            gpu = o.gpu_taint()
            if not f.covers(gpu):
                report(f.resource, f"ResourceFlavor {f.name!r} does not tolerate the GPU taint {gpu}: admitted pods "
                       "could never schedule on the pool")
            workload = o.text(f.node_labels.get(cv.WORKLOAD))
            if workload and not f.covers(o.workload_taint(workload)):
                report(f.resource, f"ResourceFlavor {f.name!r} selects {cv.WORKLOAD}={workload!r} but does not "
                       f"tolerate its taint {o.workload_taint(workload)}")
            if not groups:
                return
            pool = o.text(f.node_labels.get(cv.POOL))
            group = groups.get(pool or "")
            if group is None:
                report(f.resource, f"ResourceFlavor {f.name!r} selects pool {pool!r}, but no node group of the stack "
                       f"carries {cv.POOL}={pool!r} (pools: {quoted(sorted(groups))})")
                return
            nodes = o.pool_nodes(group.type, group.props)
            wrong = [f"{k}={v!r}" for k, v in f.node_labels.items() if nodes.labels.get(k) != v]
            if wrong:
                report(f.resource, f"ResourceFlavor {f.name!r} selects {', '.join(wrong)}, which {nodes.kind} "
                       f"{group.name!r} of pool {pool!r} does not carry: no node would ever match")
            untolerated = [str(t) for t in _blocking(nodes.taints) if not f.covers(t)]
            if untolerated:
                report(f.resource, f"ResourceFlavor {f.name!r} does not tolerate taint(s) {quoted(untolerated)} of "
                       f"{nodes.kind} {group.name!r}")
        guarded(report, f.resource, check)


def check_flavor_single_workload(resources: Sequence[Resource], cfg: Config, report: StackReport) -> None:
    groups = ix.node_groups_by_pool(resources, report)
    group_labels = {pool: guarded(report, g, lambda g=g: o.pool_nodes(g.type, g.props).labels) or o.EMPTY
                    for pool, g in groups.items()}
    for name, f in sorted(gpu_flavors(resources, report).items()):
        def check(f: Flavor = f) -> None:
            workload = o.text(f.node_labels.get(cv.WORKLOAD))
            if not workload:
                report(f.resource, f"ResourceFlavor {f.name!r} does not select on {cv.WORKLOAD}: it spans pools of "
                       "every workload, training and inference alike")
            for t in map(o.mapping, f.tolerations):
                key = t.get("key") or ""
                if key not in ("", cv.WORKLOAD_TAINT_KEY):
                    continue
                if (t.get("operator") or "Equal") == "Exists":
                    report(f.resource, f"ResourceFlavor {f.name!r} tolerates every {cv.WORKLOAD_TAINT_KEY} taint "
                           "(operator Exists): its pods could run on training and inference nodes alike")
                elif key and t.get("value") != workload:
                    report(f.resource, f"ResourceFlavor {f.name!r} selects {cv.WORKLOAD}={workload!r} but tolerates "
                           f"{cv.WORKLOAD_TAINT_KEY}={t.get('value')!r}")
            if not group_labels:
                return
            # The node groups this flavor's selector matches: by pool when it names one, else every one.
            pool = o.text(f.node_labels.get(cv.POOL))
            candidates = [pool] if pool in group_labels else ([] if pool else list(group_labels))
            matched = [p for p in candidates
                       if all(group_labels[p].get(k) == v for k, v in f.node_labels.items())]
            workloads = sorted({str(group_labels[p].get(cv.WORKLOAD)) for p in matched})
            if len(workloads) > 1:
                report(f.resource, f"ResourceFlavor {f.name!r} matches node groups of workloads {quoted(workloads)} "
                       f"(pools {quoted(matched)})")
        guarded(report, f.resource, check)


def _quota_entries(cq: Resource) -> list[tuple[str, str, Any]]:
    """(flavor, resource, nominalQuota) for every flavor resource of a ClusterQueue."""
    out = []
    for group in o.sequence(_spec(cq).get("resourceGroups")):
        for fl in map(o.mapping, o.sequence(o.mapping(group).get("flavors"))):
            for res in map(o.mapping, o.sequence(fl.get("resources"))):
                out.append((str(fl.get("name")), str(res.get("name")), res.get("nominalQuota")))
    return out


def check_cluster_queue_flavors(resources: Sequence[Resource], cfg: Config, report: StackReport) -> None:
    known = flavors(resources, report)
    for r in resources:
        if not o.is_kind(r.type, "ClusterQueue", o.KUEUE_GROUP):
            continue
        entries = guarded(report, r, lambda r=r: _quota_entries(r))
        if entries is None:
            continue
        missing = sorted({fl for fl, _, _ in entries if fl not in known})
        if missing:
            report(r, f"ClusterQueue uses ResourceFlavor(s) {quoted(missing)} that are not in the stack")
        wrong: set[str] = set()
        for fl, res, nominal in entries:
            f = known.get(fl)
            # A zero quota for another pool's resource is how one resource group covers several GPU kinds.
            if f is None or not cv.is_gpu_resource(res) or o.whole_units(nominal) == 0:
                continue
            sharing = o.text(f.node_labels.get(cv.SHARING))
            advertised = o.resource_name_for_sharing(sharing) if sharing else None
            if advertised and res != advertised:
                wrong.add(f"{res} on flavor {fl!r} (its pool advertises {advertised})")
        if wrong:
            report(r, f"ClusterQueue quotes GPU resource(s) its flavors' pools do not advertise: {'; '.join(sorted(wrong))}")


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
        entries = guarded(report, r, lambda r=r: _quota_entries(r))
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


def check_cpu_only_flavor(resources: Sequence[Resource], cfg: Config, report: StackReport) -> None:
    """The CPU-only flavor is where Kueue puts work without GPUs (it comes first in every ClusterQueue): it
    must lead nowhere near a GPU pool and grant no GPU, or CPU-only work would sit on GPU nodes."""
    f = flavors(resources, report).get(cv.CPU_FLAVOR)
    if f is not None:
        def check(f: Flavor = f) -> None:
            pool_keys = [k for k in cv.POOL_LABEL_KEYS if k in f.node_labels]
            if pool_keys:
                report(f.resource, f"ResourceFlavor {f.name!r} is for CPU-only work but selects GPU pool label(s) "
                       f"{quoted(pool_keys)}")
            if f.covers(o.gpu_taint()):
                report(f.resource, f"ResourceFlavor {f.name!r} is for CPU-only work but tolerates the GPU taint "
                       f"{o.gpu_taint()}: its pods could occupy GPU nodes")
        guarded(report, f.resource, check)
    for r in resources:
        if not o.is_kind(r.type, "ClusterQueue", o.KUEUE_GROUP):
            continue
        entries = guarded(report, r, lambda r=r: _quota_entries(r))
        granted = sorted({res for fl, res, nominal in entries or ()
                          if fl == cv.CPU_FLAVOR and cv.is_gpu_resource(res) and o.whole_units(nominal) != 0})
        if granted:
            report(r, f"ClusterQueue grants GPU resource(s) {quoted(granted)} on the CPU-only flavor "
                   f"{cv.CPU_FLAVOR!r}: GPU work admitted there would get no GPU node")


# ---------------------------------------------------------------------------------------------------
# what a team can ever hold, against what its namespaces let it run


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


def _flavor_capacity(f: Flavor, groups: Mapping[str, Resource], templates: Mapping[str, Resource]) -> int | None:
    """The flavor's pool capacity in units: its node group's (or NodePool's) max size, else its annotation."""
    pool = o.text(f.node_labels.get(cv.POOL)) or ""
    group = groups.get(pool)
    if group is not None:
        from_group = _node_group_capacity(group, templates.get(pool), f)
        if from_group is not None:
            return from_group
    return o.whole_units(o.annotations(f.resource.props).get(cv.FLAVOR_CAPACITY_ANNOTATION))


def check_namespace_quota_covers_queue(resources: Sequence[Resource], cfg: Config, report: StackReport) -> None:
    """A namespace's GPU cap below what its ClusterQueue can be admitted for: Kueue admits a job whose pods the
    ResourceQuota then refuses, and the job holds its quota without running. The reach is the plan's
    computation (gpu_platform.quota_reach) on the stack's own ClusterQueues and Cohorts."""
    queues = ix.by_name(resources, "ClusterQueue", o.KUEUE_GROUP, report)
    cohort_objs = ix.by_name(resources, "Cohort", o.KUEUE_GROUP, report)
    def node(r: Resource, parent_field: str) -> tuple[str | None, dict[tuple[str, str], Limits]]:
        """(its cohort or parent, its GPU limits); nothing for a value unknown in preview (reported)."""
        read = lambda: (o.text(_spec(r).get(parent_field)) or None, _gpu_limits(_spec(r)))  # noqa: E731
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
                                                      lambda f=f: _flavor_capacity(f, groups, templates))
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


POLICIES = [
    GuardrailResourcePolicy(
        "cluster-queue-namespace-selector",
        "ClusterQueues have a namespaceSelector that is neither absent nor empty.",
        check_namespace_selector,
        lambda t: o.is_kind(t, "ClusterQueue", o.KUEUE_GROUP),
        remediation=f"Select the team's namespaces, e.g. matchLabels {{{cv.TEAM}: <team>}}.",
    ),
    GuardrailStackPolicy(
        "cluster-queue-tenant-scope",
        "A ClusterQueue's namespaceSelector selects no system namespace and the namespaces of one team only.",
        check_tenant_scope,
        settings=(SYSTEM_NAMESPACES,),
    ),
    GuardrailStackPolicy(
        "resource-flavor-matches-pool",
        "Every ResourceFlavor names one real pool: all pool labels, tolerating the GPU and workload taints, and "
        "(with node groups in the stack) labels and taints that a node group of that pool carries.",
        check_flavor_matches_pool,
        settings=(POOL_LABELS,),
    ),
    GuardrailStackPolicy(
        "flavor-single-workload",
        "A ResourceFlavor never spans pools of different workloads (training and inference).",
        check_flavor_single_workload,
    ),
    GuardrailStackPolicy(
        "cpu-only-flavor",
        f"The CPU-only flavor ({cv.CPU_FLAVOR!r}) selects no GPU pool, tolerates no GPU taint and carries no GPU quota.",
        check_cpu_only_flavor,
    ),
    GuardrailStackPolicy(
        "cluster-queue-flavors",
        "ClusterQueue flavors exist in the stack, and the GPU resources quoted on a flavor are the one its pool advertises.",
        check_cluster_queue_flavors,
    ),
    GuardrailStackPolicy(
        "nominal-quota-fits-capacity",
        "The nominal GPU quotas of all ClusterQueues on a flavor add up to no more than its pool's capacity.",
        check_quota_fits_capacity,
        remediation=f"Lower the teams' quotas or raise the pool's max size; for `existing` clusters set "
                    f"{cv.FLAVOR_CAPACITY_ANNOTATION} on each ResourceFlavor.",
    ),
    GuardrailStackPolicy(
        "namespace-quota-covers-queue",
        "A tenant namespace's ResourceQuota lets its pods request every GPU unit its ClusterQueue can ever be "
        "admitted for (the queue's reach through its cohort tree, capped at the pool's capacity).",
        check_namespace_quota_covers_queue,
        level=ADVISORY,
        settings=(SYSTEM_NAMESPACES,),
        remediation="Cap requests.<gpu> at the team's reach (`python -m platform_cli plan`, column 'most held'), "
                    "as the platform's own ResourceQuota does.",
    ),
]
