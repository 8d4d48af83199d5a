"""The groups in their order, rendered once for both consumers: the PrometheusRule's `spec.groups` and a promtool
rule file (with or without annotations), and the alerts they hold."""

from __future__ import annotations

from typing import Any

from gpu_platform.plan import Plan

from .gpu_health import gpu_health_alerts
from .nodes import node_alerts
from .plan_series import plan_rules
from .queues import queue_alerts
from .recording import recording_rules
from .requeues import requeue_rules
from .rules import Alert, Group
from .useful_work import useful_work_rules
from .waste import waste_alerts


def groups(plan: Plan) -> tuple[Group, ...]:
    return tuple(g for g in (
        plan_rules(plan),
        recording_rules(plan),
        useful_work_rules(plan),
        gpu_health_alerts(),
        node_alerts(),
        waste_alerts(),
        queue_alerts(plan),
        requeue_rules(),
    ) if g.rules)


def rule_groups(plan: Plan) -> list[dict[str, Any]]:
    """`spec.groups` of the PrometheusRule, and the `groups` of a promtool rule file."""
    return [g.to_group() for g in groups(plan)]


def rule_file(plan: Plan) -> dict[str, Any]:
    return {"groups": rule_groups(plan)}


def without_annotations(groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same groups minus annotations, for `promtool test rules`: it compares annotations verbatim, and
    the unit tests are about when an alert fires and with which labels (annotation templates are checked
    by `promtool check rules` on the full groups)."""
    return [
        {**g, "rules": [{k: v for k, v in r.items() if k != "annotations"} for r in g["rules"]]}
        for g in groups
    ]


def alerts(plan: Plan) -> list[Alert]:
    return [r for g in groups(plan) for r in g.rules if isinstance(r, Alert)]
