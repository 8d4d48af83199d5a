"""A pool read back from its resources: units and resource name from its sharing label, and what an EKS node
group or a Karpenter NodePool says about its nodes, read one way."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpu_platform import catalog, conventions as cv

from .kinds import NODE_GROUP, is_kind
from .taints import TaintRef, taints_of
from .values import as_int, known_or_none, mapping, sequence, text


def resource_name_for_sharing(sharing: str) -> str | None:
    """The schedulable resource a pool with this sharing label advertises (mixed MIG strategy,
    time-slicing with renameByDefault), or None for a sharing value conventions never makes."""
    parsed = cv.parse_sharing_value(sharing)
    return None if parsed is None else cv.sharing_resource_name(parsed[0], parsed[1])


def units_per_gpu(accelerator: str, sharing: str) -> int | None:
    """Schedulable units one GPU gives: 1, the MIG slices of the profile, or the time-slicing replicas."""
    parsed = cv.parse_sharing_value(sharing)
    return None if parsed is None else catalog.units_per_gpu(accelerator, *parsed)


# ---------------------------------------------------------------------------------------------------
# What a provisioner says about a pool's nodes: an EKS node group or a Karpenter NodePool, read one way

KARPENTER_GROUP = cv.KARPENTER_NODEPOOL_API_VERSION.split("/")[0]


def is_node_pool(resource_type: str) -> bool:
    """A Karpenter NodePool (karpenter.sh, any version: the forbidden-version rule judges the version)."""
    return is_kind(resource_type, "NodePool", KARPENTER_GROUP)


def is_node_class(resource_type: str) -> bool:
    return is_kind(resource_type, cv.KARPENTER_NODECLASS_KIND, cv.KARPENTER_NODECLASS_GROUP)


def provides_pool_nodes(resource_type: str) -> bool:
    return resource_type == NODE_GROUP or is_node_pool(resource_type)


@dataclass(frozen=True, slots=True)
class PoolNodes:
    """The labels, taints and instance types a pool's nodes get from their provisioner."""

    kind: str  # how messages name the provisioner's resource
    labels: Mapping[str, Any]
    taints: list[TaintRef]
    instance_types: list[str]


def _requirement_values(requirements: Any, key: str) -> list[str]:
    """The values of a NodePool requirement `key In [...]` (what Karpenter may pick for that label)."""
    out: list[str] = []
    for r in map(mapping, sequence(requirements)):
        if r.get("key") == key and r.get("operator") == "In":
            out += [v for v in sequence(r.get("values")) if isinstance(v, str)]
    return out


def node_pool_template(props: Mapping[str, Any]) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    """(template metadata, template spec) of a NodePool: what every node it launches carries."""
    template = mapping(mapping(props.get("spec")).get("template"))
    return mapping(template.get("metadata")), mapping(template.get("spec"))


def node_pool_limits(props: Mapping[str, Any]) -> Mapping[str, Any]:
    return mapping(mapping(props.get("spec")).get("limits"))


def pool_nodes(resource_type: str, props: Mapping[str, Any]) -> PoolNodes:
    """A node group's labels and taints, its instance types only as a hint (AWS computes them from the
    launch template when the program does not set them). A NodePool's template labels and taints and the
    instance types its requirements allow."""
    if is_node_pool(resource_type):
        meta, spec = node_pool_template(props)
        return PoolNodes("NodePool", mapping(meta.get("labels")), taints_of(spec.get("taints")),
                         _requirement_values(spec.get("requirements"), cv.INSTANCE_TYPE_LABEL))
    names = known_or_none(lambda: [text(t) or "" for t in sequence(props.get("instanceTypes"))]) or []
    return PoolNodes("node group", mapping(props.get("labels")), taints_of(props.get("taints")), names)


def pool_max_nodes(resource_type: str, props: Mapping[str, Any]) -> int | None:
    """A node group's max size, a NodePool's `nodes` limit: the most nodes the pool can have."""
    if is_node_pool(resource_type):
        return as_int(node_pool_limits(props).get("nodes"))
    return as_int(mapping(props.get("scalingConfig")).get("maxSize"))
