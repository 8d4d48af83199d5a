"""An object's metadata: labels, annotations, name, namespace, and label selectors matched against labels."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .values import mapping, sequence, text


def metadata(props: Mapping[str, Any]) -> Mapping[str, Any]:
    return mapping(props.get("metadata"))


def labels(props: Mapping[str, Any]) -> Mapping[str, Any]:
    return mapping(metadata(props).get("labels"))


def annotations(props: Mapping[str, Any]) -> Mapping[str, Any]:
    return mapping(metadata(props).get("annotations"))


def object_name(props: Mapping[str, Any], fallback: str) -> str:
    """metadata.name, or the Pulumi name when it is absent (auto-naming)."""
    return text(metadata(props).get("name")) or fallback


def object_namespace(props: Mapping[str, Any]) -> str:
    """metadata.namespace of a namespaced object; Kubernetes puts an object without one in `default`."""
    return text(metadata(props).get("namespace")) or "default"


def selector_is_empty(selector: Mapping[str, Any]) -> bool:
    return not mapping(selector.get("matchLabels")) and not sequence(selector.get("matchExpressions"))


def selector_matches(selector: Mapping[str, Any], target: Mapping[str, Any]) -> bool:
    """Kubernetes label selector semantics (matchLabels AND every matchExpression)."""
    for key, value in mapping(selector.get("matchLabels")).items():
        if target.get(key) != value:
            return False
    for expr in sequence(selector.get("matchExpressions")):
        expr = mapping(expr)
        key, op = expr.get("key"), expr.get("operator")
        values = list(sequence(expr.get("values")))
        present = key in target
        if op == "In" and not (present and target[key] in values):
            return False
        if op == "NotIn" and present and target[key] in values:
            return False
        if op == "Exists" and not present:
            return False
        if op == "DoesNotExist" and present:
            return False
        if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            return False
    return True
