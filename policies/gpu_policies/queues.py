"""Kueue consistency: ClusterQueue scope, ResourceFlavors that match real pools, quotas that fit capacity.

The real pools are known from the stack's EKS node groups when there are any (`provider: eks`). For an
`existing` cluster the stack holds no node groups, so a flavor must at least name a complete pool (all
pool labels) with taints consistent with its workload, and carry its pool's capacity in the
`FLAVOR_CAPACITY_ANNOTATION` annotation so the quota check has a number to compare with.

This module holds the queue rules (POLICIES) and the ClusterQueues' scope; the flavors' checks are in
resource_flavors.py, quotas against capacity in quota_capacity.py, namespaces' caps against a queue's reach in
namespace_quota.py.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from gpu_platform import conventions as cv

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
from .namespace_quota import check_namespace_quota_covers_queue
from .quota_capacity import check_quota_fits_capacity
from .resource_flavors import (
    check_cluster_queue_flavors, check_cpu_only_flavor, check_flavor_matches_pool, check_flavor_single_workload, spec_of,
)
from .settings import POOL_LABELS, SYSTEM_NAMESPACES


def check_namespace_selector(r: Resource, cfg: Config, report: Report) -> None:
    spec = spec_of(r)
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
            selector = spec_of(r).get("namespaceSelector")
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
