"""Metric names are spelled once: every exporter or Prometheus series a dashboard or a report query reads is a name
gpu_platform/conventions/monitoring.py defines (cv.METRIC_NAMES), and none of the modules that configure or read
them (the dcgm-exporter metrics list, the rules, the dashboards, the report, --check, the Workloads' kube-state-metrics
configuration) spells one in its code. A name spelled in a query by hand drifts from the one the conventions, the
rules and the local telemetry use, and its panel, alert or figure silently reads nothing.

Besides the conventions' names a query may read the platform's own recording rules (components/alerts/
record_names.py)."""

from __future__ import annotations

import ast
import re

from components import dashboards
from components.monitoring import DCGM_FIELDS
from gpu_platform import conventions as cv, useful_work as uw
from platform_cli import report_check, usage_report
from tests.conftest import ROOT, plan_of
from tests.metric_sources import KUEUE_SERIES, metric_names, recorded_names, used_names

STACKS = ("local", "prod")
# The modules that configure or read exporter series, each of which takes their names from the conventions.
MODULES = ("components/dashboards.py", "platform_cli/usage_report.py", "components/monitoring.py",
           *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "components" / "alerts").glob("*.py")),
           "platform_cli/report_check.py", "gpu_platform/useful_work.py")
# A Grafana query variable's metric: label_values(<metric>, <label>).
LABEL_VALUES = re.compile(r"^label_values\(([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,")
# How the exporters' series are spelled: DCGM fields and the exporter's own, kube-state-metrics', Kueue's, and
# Prometheus' `up` in a selector. A kueue_ word counts when Kueue serves it (a query's key such as "kueue_resources"
# is no metric name).
METRIC_LITERAL = re.compile(r"\b(DCGM_(?:FI|EXP)_[A-Z0-9_]+|kube_[a-z0-9_]+|kueue_[a-z0-9_]+|up(?=\{))")


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
    return recorded_names(plan_of(stack))


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
            for m in METRIC_LITERAL.finditer(node.value)
            if not m.group(1).startswith("kueue_") or m.group(1) in KUEUE_SERIES]


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
    assert cv.DCGM_CLOCKS_EVENT_REASONS == "DCGM_FI_DEV_CLOCKS_EVENT_REASONS"
    assert cv.DCGM_TOTAL_ENERGY == "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"
    assert cv.KSM_WORKLOAD_CONDITION == "kube_kueue_workload_status_condition"
    assert cv.SCRAPE_UP == "up"
    assert len(cv.METRIC_NAMES) == 52


def test_the_workload_series_is_the_one_the_kube_state_metrics_configuration_makes() -> None:
    """kube-state-metrics names a custom resource state series metricNamePrefix + "_" + the metric's name."""
    resource = uw.KSM_WORKLOAD_CONDITIONS["spec"]["resources"][0]
    assert (resource["metricNamePrefix"], resource["metrics"][0]["name"]) == ("kube_kueue_workload", "status_condition")
    assert uw.WORKLOAD_CONDITION_METRIC == cv.KSM_WORKLOAD_CONDITION


def test_the_exporter_collects_only_conventions_names() -> None:
    """Every DCGM field on the metrics list is a conventions name: a series (METRIC_NAMES), or the driver version,
    which dcgm-exporter puts in a label of the other series."""
    assert {f.name for f in DCGM_FIELDS if f.kind != "label"} <= cv.METRIC_NAMES
    assert [f.name for f in DCGM_FIELDS if f.kind == "label"] == [cv.DCGM_DRIVER_VERSION]


def test_every_conventions_name_is_read_or_collected() -> None:
    """A name nothing reads or collects any more is dead: the rules, the dashboards, the report or --check read
    each one, or dcgm-exporter's metrics list collects it for a user's own dashboards."""
    plan = plan_of("prod")
    read = set(used_names(plan)) | set().union(*(metric_names(e) for e in report_check.queries(plan).values()))
    assert sorted(cv.METRIC_NAMES - read - {f.name for f in DCGM_FIELDS}) == []


def test_no_module_that_configures_or_reads_a_series_spells_its_name() -> None:
    """Each module with a name spelled in its code is named, with the line and the name."""
    assert {"components/alerts/gpu_health.py", "components/alerts/recording.py"} <= set(MODULES)
    spelled = {path: spelled_metric_names((ROOT / path).read_text()) for path in MODULES}
    assert {path: found for path, found in spelled.items() if found} == {}


def test_a_metric_name_spelled_in_code_is_found_and_a_docstring_is_not() -> None:
    source = ('def f(sel):\n'
              '    """Reads DCGM_FI_DEV_GPU_TEMP."""\n'
              '    return f"max by (node) (DCGM_FI_DEV_POWER_USAGE{sel}) + kueue_pending_workloads"\n')
    assert spelled_metric_names(source) == [(3, "DCGM_FI_DEV_POWER_USAGE"), (3, "kueue_pending_workloads")]


def test_up_in_a_selector_is_a_metric_name_and_a_query_s_key_is_not() -> None:
    """`up{...}` is Prometheus' series; "pulumi up" is prose and "kueue_resources" a name --check gives its query."""
    source = ('Q = {"kueue_resources": "count(x)",\n'
              '     "dcgm_up": f\'max by (node) (up{{job="{JOB}"}})\',\n'
              '     "fix": "deploy this stack (pulumi up)"}\n')
    assert spelled_metric_names(source) == [(2, "up")]
