"""Taints and tolerations as Kubernetes matches them, and the platform's GPU and workload taints."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpu_platform import conventions as cv

from .values import mapping, sequence


def normalize_effect(effect: Any) -> str:
    """EKS spells taint effects NO_SCHEDULE / NO_EXECUTE / PREFER_NO_SCHEDULE; Kubernetes NoSchedule etc."""
    if not isinstance(effect, str):
        return ""
    if "_" in effect or effect.isupper():
        return "".join(part.capitalize() for part in effect.lower().split("_"))
    return effect


@dataclass(frozen=True, slots=True)
class TaintRef:
    key: str
    value: str
    effect: str

    def __str__(self) -> str:
        return f"{self.key}={self.value}:{self.effect}"


def taints_of(items: Any) -> list[TaintRef]:
    out = []
    for t in sequence(items):
        t = mapping(t)
        out.append(TaintRef(str(t.get("key") or ""), str(t.get("value") or ""), normalize_effect(t.get("effect"))))
    return out


def tolerates(toleration: Mapping[str, Any], taint: TaintRef) -> bool:
    """Kubernetes toleration matching (kubernetes.io/docs/concepts/scheduling-eviction/taint-and-toleration)."""
    effect = normalize_effect(toleration.get("effect"))
    if effect and effect != taint.effect:
        return False
    key = toleration.get("key") or ""
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return key == "" or key == taint.key
    return key == taint.key and (toleration.get("value") or "") == taint.value


def tolerated(tolerations: Any, taint: TaintRef) -> bool:
    return any(tolerates(mapping(t), taint) for t in sequence(tolerations))


def gpu_taint() -> TaintRef:
    return TaintRef(cv.GPU_TAINT_KEY, cv.GPU_TAINT_VALUE, cv.TAINT_EFFECT)


def workload_taint(workload: str) -> TaintRef:
    return TaintRef(cv.WORKLOAD_TAINT_KEY, cv.workload_taint_value(workload), cv.TAINT_EFFECT)
