"""Pod specs wherever a workload object holds them, and the GPU resources their containers ask for."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pulumi_policy.proxy import UNKNOWN_ARRAY_VALUE, UNKNOWN_OBJECT_VALUE, UnknownValueError

from gpu_platform import conventions as cv

from .kinds import kube_kind
from .values import mapping, sequence


@dataclass(frozen=True, slots=True)
class PodSpec:
    path: str
    spec: Mapping[str, Any]
    template_labels: Mapping[str, Any]

    def containers(self) -> Iterator[tuple[str, Mapping[str, Any]]]:
        for field in ("initContainers", "containers", "ephemeralContainers"):
            for i, c in enumerate(sequence(self.spec.get(field))):
                yield f"{self.path}.{field}[{i}]", mapping(c)


# Kinds whose schema holds no pod template (API reference of each), so the pod spec walk can skip them:
# the bulk of a platform stack is these, one set per tenant namespace.
NO_POD_KINDS = frozenset({
    "Namespace", "ResourceQuota", "LimitRange", "NetworkPolicy", "ConfigMap", "Secret", "Service",
    "ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding", "PriorityClass",
    "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "ClusterQueue", "LocalQueue",
    "ResourceFlavor", "Cohort", "Topology", "WorkloadPriorityClass", "AdmissionCheck", "MultiKueueConfig",
    "MultiKueueCluster", "PrometheusRule", "ServiceMonitor", "PodMonitor",
})


def may_hold_pods(resource_type: str) -> bool:
    """A Kubernetes object whose kind can carry a pod spec (unknown kinds can: CRDs such as JobSet)."""
    k = kube_kind(resource_type)
    return k is not None and k.kind not in NO_POD_KINDS


def pod_specs(props: Mapping[str, Any]) -> list[PodSpec]:
    """Every pod spec in an object: a Pod's own spec, a Deployment's or Job's template, a JobSet's or
    PyTorchJob's nested templates. Found by shape (a mapping with a `containers` list), so any
    workload API, including ones Kueue integrates later, is covered without a list of kinds."""
    found: list[PodSpec] = []

    def walk(node: Mapping[str, Any], path: str, parent: Mapping[str, Any]) -> None:
        if sequence(node.get("containers")):
            found.append(PodSpec(path, node, mapping(mapping(parent.get("metadata")).get("labels"))))
            return
        for key, value in _known_items(node):
            if isinstance(value, Mapping):
                walk(value, f"{path}.{key}", node)
            else:
                for i, item in _known_elements(sequence(value)):
                    if isinstance(item, Mapping):
                        walk(item, f"{path}.{key}[{i}]", node)

    def _known_elements(items: Sequence[Any]) -> Iterator[tuple[int, Any]]:
        for i in range(len(items)):
            try:
                yield i, items[i]
            except UnknownValueError as err:
                if err.unknown_type_sentinel in (UNKNOWN_OBJECT_VALUE, UNKNOWN_ARRAY_VALUE):
                    raise

    def _known_items(node: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
        # An unknown string or number (an image from another resource's output) cannot hide a pod spec;
        # an unknown object or list can, so that one propagates and the rule fails closed.
        for key in node:
            try:
                yield key, node[key]
            except UnknownValueError as err:
                if err.unknown_type_sentinel in (UNKNOWN_OBJECT_VALUE, UNKNOWN_ARRAY_VALUE):
                    raise

    spec = props.get("spec")
    if isinstance(spec, Mapping):
        walk(spec, "spec", props)
    return found


def gpu_resources(container: Mapping[str, Any], field: str) -> dict[str, Any]:
    """GPU resources (whole, MIG slice, shared replica) a container sets under resources.<field>."""
    res = mapping(mapping(container.get("resources")).get(field))
    return {k: v for k, v in res.items() if cv.is_gpu_resource(k)}
