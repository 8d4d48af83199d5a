"""One-pass indexes over a stack's resources, so stack rules stay linear: index once, then look up."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpu_platform import conventions as cv

from . import objects as o
from .framework import Resource, StackReport, guarded


@dataclass(slots=True)
class Namespace:
    name: str
    resource: Resource
    labels: dict[str, Any]

    def selector_labels(self) -> dict[str, Any]:
        """The labels a namespaceSelector sees: ours plus the name label the API server sets on every namespace."""
        return {**self.labels, cv.NAMESPACE_NAME_LABEL: self.name}


def namespaces(resources: Sequence[Resource], report: StackReport) -> dict[str, Namespace]:
    """Every Namespace object in the stack by metadata.name."""
    out: dict[str, Namespace] = {}
    for r in resources:
        if o.is_kind(r.type, "Namespace", ""):
            ns = guarded(report, r, lambda r=r: Namespace(o.object_name(r.props, r.name), r, dict(o.labels(r.props))))
            if ns is not None:
                out[ns.name] = ns
    return out


def tenant_namespaces(
    resources: Sequence[Resource], system: tuple[str, ...], report: StackReport
) -> dict[str, Namespace]:
    return {name: ns for name, ns in namespaces(resources, report).items() if name not in system}


@dataclass(slots=True)
class Namespaced:
    """Objects of some kinds grouped by namespace (one pass)."""

    by_namespace: dict[tuple[str, str], list[Resource]] = field(default_factory=lambda: defaultdict(list))

    def get(self, namespace: str, kind: str) -> list[Resource]:
        return self.by_namespace.get((namespace, kind), [])


def namespaced(resources: Sequence[Resource], kinds: Mapping[str, str], report: StackReport) -> Namespaced:
    """Objects whose kind is a key of `kinds` (value: its API group), grouped by (namespace, kind)."""
    out = Namespaced()
    for r in resources:
        k = o.kube_kind(r.type)
        if k is None or kinds.get(k.kind) != k.group:
            continue
        ns = guarded(report, r, lambda r=r: o.object_namespace(r.props))
        if ns is not None:
            out.by_namespace[(ns, k.kind)].append(r)
    return out


def by_name(resources: Sequence[Resource], kind: str, group: str, report: StackReport) -> dict[str, Resource]:
    """Cluster-scoped objects of one kind by metadata.name."""
    out: dict[str, Resource] = {}
    for r in resources:
        if o.is_kind(r.type, kind, group):
            name = guarded(report, r, lambda r=r: o.object_name(r.props, r.name))
            if name is not None:
                out[name] = r
    return out


def node_groups_by_pool(resources: Sequence[Resource], report: StackReport) -> dict[str, Resource]:
    """The resource that makes each pool's nodes, by its pool label: a GPU node group or a Karpenter
    NodePool (o.pool_nodes reads either)."""
    out: dict[str, Resource] = {}
    for r in resources:
        if o.provides_pool_nodes(r.type):
            pool = guarded(report, r, lambda r=r: o.text(o.pool_nodes(r.type, r.props).labels.get(cv.POOL)))
            if pool:
                out[pool] = r
    return out


def launch_templates_by_pool(resources: Sequence[Resource], report: StackReport) -> dict[str, Resource]:
    """Launch templates by their pool cost tag. A node group refers to its launch template by id, which is
    unknown until the template exists; the pool tag is known in preview."""
    out: dict[str, Resource] = {}
    for r in resources:
        if r.type == o.LAUNCH_TEMPLATE:
            pool = guarded(report, r, lambda r=r: o.text(o.mapping(r.props.get("tags")).get(cv.POOL)))
            if pool:
                out[pool] = r
    return out


def gpu_resource_names(resources: Sequence[Resource], report: StackReport) -> set[str]:
    """Every GPU resource name the stack's pools advertise or its queues quote, plus whole GPUs."""
    names = {cv.GPU_RESOURCE}

    def from_labels(node_labels: Mapping[str, Any]) -> None:
        sharing = o.text(node_labels.get(cv.SHARING))
        resource = o.resource_name_for_sharing(sharing) if sharing else None
        if resource:
            names.add(resource)

    for r in resources:
        if o.provides_pool_nodes(r.type):
            guarded(report, r, lambda r=r: from_labels(o.pool_nodes(r.type, r.props).labels))
        elif o.is_kind(r.type, "ResourceFlavor", o.KUEUE_GROUP):
            guarded(report, r, lambda r=r: from_labels(o.mapping(o.mapping(r.props.get("spec")).get("nodeLabels"))))
        elif o.is_kind(r.type, "ClusterQueue", o.KUEUE_GROUP):
            def covered(r: Resource = r) -> None:
                for group in o.sequence(o.mapping(r.props.get("spec")).get("resourceGroups")):
                    for name in o.sequence(o.mapping(group).get("coveredResources")):
                        if isinstance(name, str) and cv.is_gpu_resource(name):
                            names.add(name)
            guarded(report, r, covered)
    return names
