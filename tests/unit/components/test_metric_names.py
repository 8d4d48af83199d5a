"""Metric names are spelled once: every exporter or Prometheus series a dashboard or a report query reads is a name
gpu_platform/conventions/monitoring.py defines (cv.METRIC_NAMES), and neither components/dashboards.py nor
platform_cli/usage_report.py spells one in its code. A name spelled in a query by hand drifts from the one the
conventions, the rules and the local telemetry use, and its panel or figure silently reads nothing.

Besides the conventions' names a query may read the platform's own recording rules (components/alerts/
record_names.py) and the Workloads' custom resource state series, named by the kube-state-metrics configuration
that makes it (gpu_platform/useful_work.py)."""

from __future__ import annotations

import ast
import re

from components import dashboards
from gpu_platform import conventions as cv, useful_work as uw
from platform_cli import report_check, usage_report
from tests.conftest import ROOT, plan_of
from tests.metric_sources import metric_names, recorded_names, used_names

STACKS = ("local", "prod")
MODULES = ("components/dashboards.py", "platform_cli/usage_report.py")
# A Grafana query variable's metric: label_values(<metric>, <label>).
LABEL_VALUES = re.compile(r"^label_values\(([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,")
# How the exporters' series are spelled: DCGM fields and the exporter's own, kube-state-metrics', Kueue's.
METRIC_LITERAL = re.compile(r"\b(DCGM_(?:FI|EXP)_[A-Z0-9_]+|kube_[a-z0-9_]+|kueue_[a-z0-9_]+)\b")


def queries(stack: str) -> dict[str, str]:
    """Every PromQL expression the dashboards and the report read for the stack, by where it is read."""
    plan = plan_of(stack)
    out = {f"report query {name}": expr for name, expr in usage_report.queries(plan).items()}
    for d in dashboards.dashboards(plan):
        out |= {f"dashboard {d.uid} panel {p.title!r} target {i}": t.expr
                for p in d.panels for i, t in enumerate(p.targets)}
        for name, query in d.variables:
            m = LABEL_VALUES.match(query)
            assert m, f"dashboard {d.uid} variable {name}: {query!r} is not label_values(<metric>, <label>)"
            out[f"dashboard {d.uid} variable {name}"] = m.group(1)
    return out


def undefined_names(exprs: dict[str, str], platform_series: set[str]) -> dict[str, str]:
    """Each name read that is neither a conventions name nor one of the platform's own series -> where it is read."""
    allowed = cv.METRIC_NAMES | platform_series
    return {name: where for where, expr in exprs.items() for name in sorted(metric_names(expr)) if name not in allowed}


def platform_series(stack: str) -> set[str]:
    return recorded_names(plan_of(stack)) | {uw.WORKLOAD_CONDITION_METRIC}


def spelled_metric_names(source: str) -> list[tuple[int, str]]:
    """(line, name) of each exporter metric name written in a string of the module's code (f-strings' literal parts
    included); docstrings are prose and do not count."""
    docstrings: set[int] = set()
    strings: list[ast.Constant] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body \
                and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant):
            docstrings.add(id(node.body[0].value))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            strings.append(node)
    return [(node.lineno, m.group(1)) for node in strings if id(node) not in docstrings
            for m in METRIC_LITERAL.finditer(node.value)]


# ---------------------------------------------------------------------------------------------------


def test_every_name_a_dashboard_or_the_report_reads_is_defined_by_the_conventions() -> None:
    for stack in STACKS:
        assert undefined_names(queries(stack), platform_series(stack)) == {}, stack


def test_a_name_the_conventions_do_not_define_is_named_with_where_it_is_read() -> None:
    """A misspelt field (DCGM_FI_DEV_GPU_TEMPERATURE for DCGM_FI_DEV_GPU_TEMP) is refused because the conventions
    do not define it, with the place that reads it."""
    exprs = {"dashboard x panel 'Temperature' target 0": 'max by (node, gpu) (DCGM_FI_DEV_GPU_TEMPERATURE{node=~"$node"})',
             "report query waits": "sum by (cluster_queue, le) (kueue_admission_wait_time_seconds_bucket)"}
    assert undefined_names(exprs, platform_series("prod")) == {
        "DCGM_FI_DEV_GPU_TEMPERATURE": "dashboard x panel 'Temperature' target 0"}


def test_the_report_reads_these_exporter_series() -> None:
    names = set().union(*(metric_names(e) for e in usage_report.queries(plan_of("prod")).values()))
    assert names - recorded_names(plan_of("prod")) == {
        "kube_pod_status_phase", "kube_pod_deletion_timestamp", "kube_node_labels",
        "kube_kueue_workload_status_condition", "kueue_admission_wait_time_seconds_bucket",
        "kueue_evicted_workloads_total", "kueue_admitted_workloads_total",
    }


def test_the_conventions_spell_the_upstream_names() -> None:
    """The names as their exporters serve them (NVIDIA/dcgm-exporter etc/default-counters.csv and
    dcp-metrics-included.csv, kube-state-metrics internal/store, kueue v0.19.2 pkg/metrics/metrics.go)."""
    assert (cv.BUSY_FIELD, cv.HELD_FIELD) == ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_DEV_FB_USED")
    assert cv.DCGM_GPU_TEMP == "DCGM_FI_DEV_GPU_TEMP"
    assert cv.DCGM_ECC_DBE_VOLATILE == "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"
    assert cv.DCGM_NVLINK_CRC_FLIT_ERRORS == "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL"
    assert cv.DCGM_XID_ERRORS_COUNT == "DCGM_EXP_XID_ERRORS_COUNT"
    assert cv.KSM_POD_STATUS_PHASE == "kube_pod_status_phase"
    assert cv.KUEUE_ADMISSION_WAIT_BUCKETS == "kueue_admission_wait_time_seconds_bucket"
    assert cv.SCRAPE_UP == "up"
    assert len(cv.METRIC_NAMES) == 39


def test_every_conventions_name_is_read_somewhere() -> None:
    """A name nothing reads any more is dead: the rules, the dashboards, the report or --check read each one."""
    plan = plan_of("prod")
    read = set(used_names(plan)) | set().union(*(metric_names(e) for e in report_check.queries(plan).values()))
    assert sorted(cv.METRIC_NAMES - read) == []


def test_the_dashboards_and_the_report_spell_no_metric_name() -> None:
    spelled = {path: spelled_metric_names((ROOT / path).read_text()) for path in MODULES}
    assert spelled == {path: [] for path in MODULES}


def test_a_metric_name_spelled_in_code_is_found_and_a_docstring_is_not() -> None:
    source = ('def f(sel):\n'
              '    """Reads DCGM_FI_DEV_GPU_TEMP."""\n'
              '    return f"max by (node) (DCGM_FI_DEV_POWER_USAGE{sel}) + kueue_pending_workloads"\n')
    assert spelled_metric_names(source) == [(3, "DCGM_FI_DEV_POWER_USAGE"), (3, "kueue_pending_workloads")]
