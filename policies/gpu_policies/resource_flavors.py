"""ResourceFlavors against the pools they name: each GPU flavor names one real pool (all pool labels,
tolerating the GPU and workload taints, and matching a node group of the stack when there are any) and one
workload; the CPU-only flavor stays away from GPUs; a ClusterQueue's flavors exist and quote the GPU resource
their pool advertises. Also the flavors as the other Kueue rules read them (flavors, quota_entries)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpu_platform import conventions as cv

from . import objects as o
from . import stackindex as ix
from .framework import Config, Resource, StackReport, guarded, quoted
from .settings import POOL_LABELS


def spec_of(r: Resource) -> Mapping[str, Any]:
    return o.mapping(r.props.get("spec"))


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
                spec = spec_of(r)
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


def quota_entries(cq: Resource) -> list[tuple[str, str, Any]]:
    """(flavor, resource, nominalQuota) for every flavor resource of a ClusterQueue."""
    out = []
    for group in o.sequence(spec_of(cq).get("resourceGroups")):
        for fl in map(o.mapping, o.sequence(o.mapping(group).get("flavors"))):
            for res in map(o.mapping, o.sequence(fl.get("resources"))):
                out.append((str(fl.get("name")), str(res.get("name")), res.get("nominalQuota")))
    return out


def check_cluster_queue_flavors(resources: Sequence[Resource], cfg: Config, report: StackReport) -> None:
    known = flavors(resources, report)
    for r in resources:
        if not o.is_kind(r.type, "ClusterQueue", o.KUEUE_GROUP):
            continue
        entries = guarded(report, r, lambda r=r: quota_entries(r))
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
        entries = guarded(report, r, lambda r=r: quota_entries(r))
        granted = sorted({res for fl, res, nominal in entries or ()
                          if fl == cv.CPU_FLAVOR and cv.is_gpu_resource(res) and o.whole_units(nominal) != 0})
        if granted:
            report(r, f"ClusterQueue grants GPU resource(s) {quoted(granted)} on the CPU-only flavor "
                   f"{cv.CPU_FLAVOR!r}: GPU work admitted there would get no GPU node")
