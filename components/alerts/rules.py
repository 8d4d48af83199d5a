"""A rule as data: a recording rule, an alert (what a user meets: when it fires, how bad it is, what to do) and a
group of them, each rendered as the PrometheusRule's and promtool's YAML shape."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

SEVERITIES = ("critical", "warning", "info")


@dataclass(frozen=True, slots=True)
class Record:
    record: str
    expr: str
    labels: Mapping[str, str] = field(default_factory=dict)

    def to_rule(self) -> dict[str, Any]:
        out: dict[str, Any] = {"record": self.record, "expr": self.expr}
        if self.labels:
            out["labels"] = dict(self.labels)
        return out


@dataclass(frozen=True, slots=True)
class Alert:
    """An alert as a user meets it: a name, when it fires, how bad it is, and what to do about it."""

    alert: str
    expr: str
    severity: str
    summary: str
    description: str
    runbook: str
    for_: str = "0m"

    def to_rule(self) -> dict[str, Any]:
        return {
            "alert": self.alert,
            "expr": self.expr,
            "for": self.for_,
            "labels": {"severity": self.severity},
            "annotations": {"summary": self.summary, "description": self.description, "runbook": self.runbook},
        }


@dataclass(frozen=True, slots=True)
class Group:
    name: str
    rules: tuple[Record | Alert, ...]

    def to_group(self) -> dict[str, Any]:
        return {"name": self.name, "rules": [r.to_rule() for r in self.rules]}
