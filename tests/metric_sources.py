"""Where every series the platform's rules and dashboards read comes from, for the tests that hold them to it
(tests/unit/components/test_metric_sources.py against the sources' code, tests/live/test_report.py against the live
expositions).

Kueue's metric families at v0.19.2 are read from its source: sigs.k8s.io/kueue pkg/metrics/metrics.go
(InitMetricVectors and buildInfo: `Subsystem: constants.KueueName` ("kueue") or `constants.MultiKueueName`
("multikueue"), `Name: ...`); the histograms among them expose `_bucket`, `_sum` and `_count`.
"""

from __future__ import annotations

import re
from typing import Iterable

KUEUE_HISTOGRAMS: frozenset[str] = frozenset({
    "kueue_admission_attempt_duration_seconds", "kueue_quota_reserved_wait_time_seconds",
    "kueue_pods_ready_to_evicted_time_seconds", "kueue_local_queue_quota_reserved_wait_time_seconds",
    "kueue_admission_wait_time_seconds", "kueue_ready_wait_time_seconds", "kueue_admitted_until_ready_wait_time_seconds",
    "kueue_local_queue_admission_wait_time_seconds", "kueue_admission_checks_wait_time_seconds",
    "kueue_local_queue_admission_checks_wait_time_seconds", "kueue_local_queue_ready_wait_time_seconds",
    "kueue_local_queue_admitted_until_ready_wait_time_seconds", "kueue_workload_creation_latency_seconds",
    "kueue_pod_scheduling_gate_removal_seconds", "kueue_workload_eviction_latency_seconds",
})
KUEUE_FAMILIES: frozenset[str] = KUEUE_HISTOGRAMS | frozenset({
    "kueue_admission_attempts_total", "multikueue_workloads_dispatched_total", "multikueue_workloads_admitted_total",
    "kueue_admission_cycle_preemption_skips", "kueue_build_info", "kueue_pending_workloads",
    "kueue_local_queue_pending_workloads", "kueue_finished_workloads", "kueue_local_queue_finished_workloads",
    "kueue_quota_reserved_workloads_total", "kueue_local_queue_quota_reserved_workloads_total",
    "kueue_finished_workloads_total", "kueue_local_queue_finished_workloads_total", "kueue_admitted_workloads_total",
    "kueue_local_queue_admitted_workloads_total", "kueue_evicted_workloads_total", "kueue_replaced_workload_slices_total",
    "kueue_local_queue_evicted_workloads_total", "kueue_evicted_workloads_once_total", "kueue_preempted_workloads_total",
    "kueue_reserving_active_workloads", "kueue_local_queue_reserving_active_workloads", "kueue_admitted_active_workloads",
    "kueue_local_queue_admitted_active_workloads", "kueue_cluster_queue_status", "kueue_local_queue_status",
    "kueue_unadmitted_workloads", "kueue_local_queue_unadmitted_workloads", "kueue_cluster_queue_resource_reservation",
    "kueue_cluster_queue_resource_pending", "kueue_cluster_queue_resource_usage", "kueue_local_queue_resource_reservation",
    "kueue_local_queue_resource_usage", "kueue_local_queue_admission_fair_sharing_usage",
    "kueue_cluster_queue_nominal_quota", "kueue_cluster_queue_borrowing_limit", "kueue_cluster_queue_lending_limit",
    "kueue_cluster_queue_weighted_share", "kueue_cohort_weighted_share", "kueue_cohort_subtree_quota",
    "kueue_cohort_subtree_admitted_workloads_total", "kueue_cohort_subtree_resource_reservations",
    "kueue_cohort_subtree_admitted_active_workloads", "kueue_cohort_info", "kueue_cluster_queue_info",
})


def series_names(families: Iterable[str], histograms: Iterable[str] = ()) -> set[str]:
    """The sample names a set of families exposes (a histogram's _bucket, _sum and _count)."""
    hist = set(histograms)
    out = set()
    for f in families:
        out |= {f"{f}_bucket", f"{f}_sum", f"{f}_count"} if f in hist else {f}
    return out


KUEUE_SERIES: frozenset[str] = frozenset(series_names(KUEUE_FAMILIES, KUEUE_HISTOGRAMS))

# Prometheus' own series every scrape adds (prometheus.io/docs/concepts/jobs_instances).
SCRAPE_SERIES = frozenset({"up"})

_KEYWORDS = frozenset({"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless",
                       "bool", "offset", "inf", "nan"})
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_BRACES = re.compile(r"\{[^}]*\}")
_RANGE = re.compile(r"\[[^\]]*\]")
_IDENT = re.compile(r"(?<![\w:.])([a-zA-Z_:][a-zA-Z0-9_:]*)(?![\w:])(\s*\()?")


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression reads: identifiers that are not functions, keywords, label names
    in groupings or matchers, or durations."""
    e = _STRING.sub('""', expr.replace("$__rate_interval", "5m"))
    e = _GROUPING.sub(" ", e)
    e = _BRACES.sub(" ", e)
    e = _RANGE.sub(" ", e)
    return {m.group(1) for m in _IDENT.finditer(e) if not m.group(2) and m.group(1).lower() not in _KEYWORDS}


def used_names(plan) -> dict[str, str]:
    """Every metric name the stack's rules, its dashboards and the report read -> one place that reads it."""
    from components import alerts, dashboards
    from platform_cli import usage_report

    out: dict[str, str] = {}
    for g in alerts.rule_groups(plan):
        for r in g["rules"]:
            for name in metric_names(r["expr"]):
                out.setdefault(name, f"rule {r.get('record') or r.get('alert')}")
    for d in dashboards.dashboards(plan):
        for e in d.expressions:
            for name in metric_names(e):
                out.setdefault(name, f"dashboard {d.uid}")
    for q, e in usage_report.queries(plan).items():
        for name in metric_names(e):
            out.setdefault(name, f"report query {q}")
    return out


def recorded_names(plan) -> set[str]:
    from components import alerts

    return {r["record"] for g in alerts.rule_groups(plan) for r in g["rules"] if "record" in r}
