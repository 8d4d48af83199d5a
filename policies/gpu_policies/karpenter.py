"""Karpenter pools: a NodePool may launch exactly the capacity its pool's flavor tells Kueue, and an
EC2NodeClass names an AMI release.

Kueue admits work up to the quotas, which fit the flavor's capacity (`capacity.max` nodes' worth of units);
Karpenter launches nodes for what Kueue admitted, up to the NodePool's limits. Limits above that capacity
let pods Kueue never admitted (anything tolerating the taints) grow the pool past what anyone budgeted;
limits below it leave admitted work waiting for nodes Karpenter will not launch.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpu_platform import catalog, conventions as cv

from . import objects as o
from .framework import ADVISORY, Config, GuardrailResourcePolicy, GuardrailStackPolicy, Report, Resource, StackReport, guarded
from .resource_flavors import flavors
from .labeling import is_gpu_pool_nodes

LATEST = "latest"


def check_node_pool_limits(resources: Sequence[Resource], cfg: Config, report: StackReport) -> None:
    by_pool = {o.text(f.node_labels.get(cv.POOL)): f for f in flavors(resources, report).values()
               if f.name != cv.CPU_FLAVOR}
    for r in resources:
        if not o.is_node_pool(r.type):
            continue

        def check(r: Resource = r) -> None:
            if not is_gpu_pool_nodes(r.type, r.props):
                return
            limits = o.node_pool_limits(r.props)
            nodes = o.pool_nodes(r.type, r.props)
            max_nodes = o.as_int(limits.get("nodes"))
            gpu_limit = o.whole_units(limits.get(cv.GPU_RESOURCE)) if cv.GPU_RESOURCE in limits else None
            if max_nodes is None or gpu_limit is None:
                report(r, f"NodePool has no whole `nodes` and {cv.GPU_RESOURCE} limits: Karpenter could grow the pool "
                       "without bound (set them to the pool's capacity.max nodes and their GPUs)")
                return
            types = [catalog.INSTANCE_TYPES.get(n) for n in nodes.instance_types]
            if len(types) != 1 or types[0] is None:
                report(r, f"NodePool requirements allow instance types {nodes.instance_types}, not one catalog GPU "
                       f"type ({cv.INSTANCE_TYPE_LABEL} In [...]): its capacity cannot be known")
                return
            it = types[0]
            if gpu_limit != max_nodes * it.gpus:
                report(r, f"NodePool limits {cv.GPU_RESOURCE}={gpu_limit} but {max_nodes} {it.name} nodes hold "
                       f"{max_nodes * it.gpus} GPUs: the two limits must describe the same capacity")
            pool = o.text(nodes.labels.get(cv.POOL)) or ""
            f = by_pool.get(pool)
            if f is None:
                return  # resource-flavor-matches-pool is about flavors; a pool without one has no quota to meet
            raw = o.annotations(f.resource.props).get(cv.FLAVOR_CAPACITY_ANNOTATION)
            told = o.whole_units(raw) if raw is not None else None
            per_gpu = o.units_per_gpu(o.text(nodes.labels.get(cv.ACCELERATOR)) or it.accelerator,
                                      o.text(nodes.labels.get(cv.SHARING)) or "")
            if told is None or per_gpu is None:
                return  # nominal-quota-fits-capacity reports a flavor without a capacity
            can = min(max_nodes, gpu_limit // it.gpus) * it.gpus * per_gpu
            if can > told:
                report(r, f"NodePool limits let Karpenter launch {can} units of pool {pool!r}, more than the {told} its "
                       f"flavor {f.name!r} tells Kueue ({cv.FLAVOR_CAPACITY_ANNOTATION}): the pool would outgrow "
                       "every quota")
            elif can < told:
                report(r, f"NodePool limits let Karpenter launch only {can} units of pool {pool!r}, fewer than the "
                       f"{told} its flavor {f.name!r} tells Kueue: admitted work would wait for nodes that never come")
        guarded(report, r, check)


def check_ami_pinned(r: Resource, cfg: Config, report: Report) -> None:
    for term in map(o.mapping, o.sequence(o.mapping(r.props.get("spec")).get("amiSelectorTerms"))):
        alias = o.text(term.get("alias"))
        if alias is not None and alias.rsplit("@", 1)[-1] == LATEST:
            report(f"EC2NodeClass selects AMI alias {alias!r}: every AMI release AWS publishes drifts (replaces) the "
                   "pool's nodes; pin a release (pools[].karpenter.amiVersion)")


POLICIES = [
    GuardrailStackPolicy(
        "karpenter-nodepool-limits",
        "GPU NodePools have `nodes` and GPU limits that describe the same capacity, and that capacity is what "
        "their pool's flavor tells Kueue.",
        check_node_pool_limits,
        remediation="Build NodePools from the plan (gpu_platform/karpenter.py limits at capacity.max).",
    ),
    GuardrailResourcePolicy(
        "karpenter-ami-pinned",
        "EC2NodeClasses select an AMI release, not `@latest`.",
        check_ami_pinned,
        o.is_node_class,
        level=ADVISORY,
        remediation="Set pools[].karpenter.amiVersion to an EKS optimized AMI release.",
    ),
]
