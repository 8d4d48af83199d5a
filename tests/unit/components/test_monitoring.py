"""Monitoring under mocks: DCGM metrics list, PrometheusRule, Kueue ServiceMonitor, Grafana dashboards.

The alert semantics (which series fire which alert) are tested by promtool in tests/promtool; here: the
objects are valid against the Prometheus Operator CRDs, reach the right Prometheus, and every metric a
rule or dashboard reads is one that is collected or recorded.
"""

from __future__ import annotations

import csv
import io
import json
import re
from typing import Any

import yaml

from components import alerts, dashboards
from harness.render import run_program
from gpu_platform import conventions as cv
from gpu_platform.plan import build_plan
from gpu_platform.spec import load_platform
from tests.conftest import plan_of, platform_raw, rendered, spec_of
from tests.crd_schema import validate
from tests.reference_data import values_file

RULE = "kubernetes:monitoring.coreos.com/v1:PrometheusRule"
SERVICE_MONITOR = "kubernetes:monitoring.coreos.com/v1:ServiceMonitor"
NAMESPACE = "kubernetes:core/v1:Namespace"
RECORDING_NAME = re.compile(r"\bgpu_platform:[a-z0-9_:]+")
DCGM_NAME = re.compile(r"\bDCGM_(?:FI|EXP)_[A-Z0-9_]+")

# What the issue asks dcgm-exporter to collect (DCGM field identifiers, docs.nvidia.com/datacenter/dcgm).
REQUIRED_DCGM_FIELDS = {
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_DRAM_ACTIVE", "DCGM_FI_DEV_GPU_UTIL",
    "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_TEMP",
    "DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "DCGM_FI_DEV_XID_ERRORS",
    "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
    "DCGM_FI_DEV_ROW_REMAP_FAILURE", "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
    "DCGM_FI_PROF_PCIE_TX_BYTES", "DCGM_FI_PROF_PCIE_RX_BYTES", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
}



def objects(stack: str, kind: str) -> list[dict[str, Any]]:
    return [o for o in rendered(stack).kubernetes_objects() if o["kind"] == kind]


def dcgm_csv(stack: str) -> list[list[str]]:
    cm = next(o for o in objects(stack, "ConfigMap") if o["metadata"]["name"] == cv.DCGM_METRICS_CONFIGMAP)
    assert cm["metadata"]["namespace"] == cv.GPU_OPERATOR_NAMESPACE  # the operator reads it from its namespace
    text = cm["data"]["dcgm-metrics.csv"]
    rows = [r for r in csv.reader(io.StringIO(text)) if r and not r[0].startswith("#")]
    return [[c.strip() for c in r] for r in rows]


def rule_groups(stack: str) -> list[dict[str, Any]]:
    (rule,) = objects(stack, "PrometheusRule")
    return rule["spec"]["groups"]


def all_rules(stack: str) -> list[dict[str, Any]]:
    return [r for g in rule_groups(stack) for r in g["rules"]]


def render_parts(raw: dict[str, Any]):
    """Only GpuOperator and Monitoring for a modified config (much faster than the whole program)."""
    from components.gpu_operator import GpuOperator
    from components.monitoring import Monitoring

    plan = build_plan(load_platform(raw))

    def program() -> None:
        Monitoring("monitoring", plan, GpuOperator("gpu-operator", plan))

    return run_program(program, "test", {})


# ---------------------------------------------------------------------------------------------------
# DCGM metrics


def test_dcgm_metrics_file_is_valid_csv_with_the_required_fields() -> None:
    rows = dcgm_csv("prod")
    assert all(len(r) == 3 for r in rows), "each line: DCGM field, type, help (no commas in help)"
    assert all(kind in ("gauge", "counter", "label") for _, kind, _ in rows)
    names = [name for name, _, _ in rows]
    assert len(names) == len(set(names))
    assert REQUIRED_DCGM_FIELDS <= set(names), REQUIRED_DCGM_FIELDS - set(names)


def test_every_dcgm_metric_read_by_rules_or_dashboards_is_collected() -> None:
    """A custom metrics list replaces dcgm-exporter's default one: a field read but not listed is never
    exported, and its alert can never fire."""
    collected = {name for name, _, _ in dcgm_csv("prod")}
    used = set()
    for rule in all_rules("prod"):
        used |= set(DCGM_NAME.findall(rule["expr"]))
    for d in dashboards.dashboards(plan_of("prod")):
        for expr in d.expressions:
            used |= set(DCGM_NAME.findall(expr))
    assert used and used - collected == set()


# ---------------------------------------------------------------------------------------------------
# PrometheusRule


def test_prometheus_rule_is_valid_and_reaches_prometheus() -> None:
    (rule,) = objects("prod", "PrometheusRule")
    assert validate(rule) == []
    meta = rule["metadata"]
    assert meta["namespace"] == cv.MONITORING_NAMESPACE
    release = spec_of("prod").addons.monitoring.prometheusRelease
    assert meta["labels"][cv.PROMETHEUS_RELEASE_LABEL] == release
    assert meta["labels"][cv.MANAGED_BY] == cv.MANAGED_BY_VALUE


def test_every_alert_says_how_bad_it_is_and_what_to_do() -> None:
    rules = [r for r in all_rules("prod") if "alert" in r]
    names = [r["alert"] for r in rules]
    assert len(names) == len(set(names))
    for r in rules:
        assert r["labels"]["severity"] in alerts.SEVERITIES, r["alert"]
        for key in ("summary", "description", "runbook"):
            assert len(r["annotations"][key]) > 20, (r["alert"], key)


def test_the_issue_s_alerts_are_all_there() -> None:
    names = {r["alert"] for r in all_rules("prod") if "alert" in r}
    for xid in (48, 63, 64, 74, 79, 94, 95):
        assert any(n.startswith(f"GpuXid{xid}") for n in names), xid
    for expected in ("GpuDoubleBitEccErrors", "GpuRowRemapFailure", "GpuThermalThrottling", "GpuPowerThrottling",
                     "GpuNvlinkErrors", "GpuNodeMissingGpus", "DcgmExporterDown", "GpuAllocatedIdle",
                     "KueueWorkloadsPendingTooLong", "KueueClusterQueueAtQuota"):
        assert expected in names


def test_every_recorded_series_that_is_read_is_recorded() -> None:
    recorded = {r["record"] for r in all_rules("prod") if "record" in r}
    used = set()
    for r in all_rules("prod"):
        used |= set(RECORDING_NAME.findall(r["expr"]))
    for d in dashboards.dashboards(plan_of("prod")):
        for expr in d.expressions:
            used |= set(RECORDING_NAME.findall(expr))
    assert used - recorded == set()


def test_plan_series_follow_the_plan() -> None:
    """Static series carry the plan: each team namespace maps to its team, each pool's units per node is
    its instance type's GPUs times MIG slices or replicas."""
    from gpu_platform import catalog

    static = [r for r in all_rules("prod") if r.get("expr", "").startswith("vector(")]
    ns_team = {(r["labels"]["namespace"], r["labels"]["team"]) for r in static if r["record"] == alerts.NAMESPACE_TEAM}
    expected = set()
    for t in platform_raw("prod")["teams"]:
        for ns in t.get("namespaces") or [t["name"]]:
            expected.add((ns, t["name"]))
    assert ns_team == expected
    units = {r["labels"]["pool"]: int(r["expr"][len("vector("):-1]) for r in static if r["record"] == alerts.POOL_UNITS_PER_NODE}
    for p in platform_raw("prod")["pools"]:
        gpus = catalog.INSTANCE_TYPES[p["instanceType"]].gpus
        sharing = p["sharing"]
        per_gpu = (catalog.ACCELERATORS[p["accelerator"]].mig_profiles[sharing["profile"]].slices_per_gpu
                   if sharing["mode"] == "mig" else sharing.get("replicas", 1))
        assert units[p["name"]] == gpus * per_gpu, p["name"]


def test_a_namespace_and_a_clusterqueue_carry_their_teams_cost_center() -> None:
    """The deployed info series of prod's data-science (costCenter cc-4001, namespaces data-science and
    ds-notebooks in Pulumi.prod.yaml): its team and cost center, so a series joined on namespace or cluster_queue
    is attributed to both (acceptance step 6)."""
    owners = [(r["record"], r["expr"], r["labels"]) for g in rule_groups("prod") for r in g["rules"]
              if r.get("record") in (alerts.NAMESPACE_TEAM, alerts.CLUSTER_QUEUE_TEAM)
              and r["labels"]["team"] == "data-science"]
    assert owners == [
        ("gpu_platform:namespace_team:info", "vector(1)",
         {"namespace": "data-science", "team": "data-science", "cost_center": "cc-4001"}),
        ("gpu_platform:namespace_team:info", "vector(1)",
         {"namespace": "ds-notebooks", "team": "data-science", "cost_center": "cc-4001"}),
        ("gpu_platform:cluster_queue_team:info", "vector(1)",
         {"cluster_queue": "data-science", "team": "data-science", "cost_center": "cc-4001"}),
    ]


def test_the_rules_copy_only_the_team_from_a_namespaces_or_clusterqueues_info_series() -> None:
    """Every rule joining those info series copies `team` alone, so the cost center on them changes no rule's
    output (the team's series keep their labels; a reader wanting the cost center joins it)."""
    exprs = [r["expr"] for g in rule_groups("prod") for r in g["rules"]]
    owner = r"(\S+ \([^)]*\)) gpu_platform:(?:namespace|cluster_queue)_team:info"
    joins = [m for e in exprs for m in re.findall(owner, e)]
    assert joins == ["group_left (team)"] * 7


# ---------------------------------------------------------------------------------------------------
# Kueue ServiceMonitor


def test_kueue_service_monitor_selects_the_kueue_metrics_service() -> None:
    (sm,) = objects("prod", "ServiceMonitor")
    assert validate(sm) == []
    assert sm["metadata"]["labels"][cv.PROMETHEUS_RELEASE_LABEL] == spec_of("prod").addons.monitoring.prometheusRelease
    spec = sm["spec"]
    assert spec["namespaceSelector"] == {"matchNames": [cv.KUEUE_NAMESPACE]}
    # Kueue chart 0.19.2 (templates/_helpers.tpl): the metrics Service is labelled with the chart name,
    # the release name and component metrics-service; other Kueue Services share the first two.
    assert spec["selector"]["matchLabels"] == {
        "app.kubernetes.io/name": "kueue",
        "app.kubernetes.io/instance": cv.KUEUE_RELEASE_NAME,
        "app.kubernetes.io/component": "metrics-service",
    }
    kueue_values = yaml.safe_load(values_file("kueue-v0.19.2-chart-values.yaml").read_text())
    ports = {p["name"] for p in kueue_values["metricsService"]["ports"]}
    (endpoint,) = spec["endpoints"]
    assert endpoint["port"] in ports and endpoint["scheme"] == "https"
    kueue = [r for r in rendered("prod").by_type("kubernetes:helm.sh/v3:Release") if "kueue" in r.inputs["chart"]]
    for r in kueue:  # when the Kueue release is rendered, it is where the monitor looks
        assert (r.inputs["name"], r.inputs["namespace"]) == (cv.KUEUE_RELEASE_NAME, cv.KUEUE_NAMESPACE)


def test_no_kueue_monitor_without_kueue_and_no_monitoring_objects_without_monitoring() -> None:
    raw = platform_raw("prod")
    raw["addons"]["kueue"]["install"] = False
    r = render_parts(raw)
    assert r.by_type(SERVICE_MONITOR) == []
    assert len(r.by_type(RULE)) == 1

    local = rendered("local")
    assert platform_raw("local")["addons"]["monitoring"]["install"] is False
    assert local.by_type(RULE) == [] and local.by_type(SERVICE_MONITOR) == []
    # Core objects are still made: the operator installed another way reads the metrics list, a Grafana
    # installed another way the dashboards.
    names = {o["metadata"]["name"] for o in objects("local", "ConfigMap")}
    assert cv.DCGM_METRICS_CONFIGMAP in names
    assert {d.uid for d in dashboards.dashboards(plan_of("local"))} <= names


# ---------------------------------------------------------------------------------------------------
# Dashboards and namespace


def dashboard_maps(stack: str) -> list[dict[str, Any]]:
    return [o for o in objects(stack, "ConfigMap") if cv.GRAFANA_DASHBOARD_LABEL in o["metadata"]["labels"]]


def test_dashboards_are_config_maps_the_grafana_sidecar_loads() -> None:
    maps = dashboard_maps("prod")
    assert len(maps) == 3
    for cm in maps:
        assert cm["metadata"]["namespace"] == cv.MONITORING_NAMESPACE
        assert cm["metadata"]["labels"][cv.GRAFANA_DASHBOARD_LABEL] == "1"
        ((key, body),) = cm["data"].items()
        board = json.loads(body)
        assert key == f"{board['uid']}.json" and board["title"]
        ids = [p["id"] for p in board["panels"]]
        assert len(ids) == len(set(ids))
        for panel in board["panels"]:
            refs = [t["refId"] for t in panel["targets"]]
            assert refs and len(refs) == len(set(refs)) and all(t["expr"] for t in panel["targets"])
        assert board["templating"]["list"][0]["type"] == "datasource"


def test_dashboards_cover_fleet_queues_and_health() -> None:
    boards = {json.loads(next(iter(cm["data"].values())))["uid"]: json.loads(next(iter(cm["data"].values())))
              for cm in dashboard_maps("prod")}
    text = {uid: json.dumps(b) for uid, b in boards.items()}
    fleet = next(t for uid, t in text.items() if "fleet" in uid)
    assert "by (team" in fleet or "team_pool" in fleet
    assert alerts.POOL_ALLOCATION_RATIO in fleet and alerts.TEAM_POOL_UTILIZATION in fleet
    queues = next(t for uid, t in text.items() if "queue" in uid)
    assert "kueue_admission_wait_time_seconds_bucket" in queues and "kueue_admitted_workloads_total" in queues
    health = next(t for uid, t in text.items() if "health" in uid)
    assert "DCGM_EXP_XID_ERRORS_COUNT" in health and "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL" in health


def test_monitoring_namespace_is_ours() -> None:
    ns = rendered("prod").one(NAMESPACE, f"ns-{cv.MONITORING_NAMESPACE}").inputs["metadata"]
    assert ns["name"] == cv.MONITORING_NAMESPACE
    assert ns["labels"][cv.MANAGED_BY] == cv.MANAGED_BY_VALUE
    assert ns["labels"][cv.PSA_ENFORCE] in cv.PSA_LEVELS


def test_every_monitoring_object_is_named_and_managed() -> None:
    for r in rendered("prod").custom:
        if r.parent != "monitoring" or "metadata" not in r.inputs:
            continue
        assert r.inputs["metadata"].get("name"), r.name
        assert r.inputs["metadata"]["labels"][cv.MANAGED_BY] == cv.MANAGED_BY_VALUE, r.name


def test_gpu_series_are_attributed_from_kube_state_metrics_in_every_exporter_mode() -> None:
    """With KUBERNETES_VIRTUAL_GPUS (any time-sliced pool) dcgm-exporter copies no pod label, so the team
    and queue labels must come from kube_pod_labels; the labels joined are the very ones the exporter's
    allowlist names (for the non-virtual mode) and kube-state-metrics must be told to export."""
    from components.gpu_operator import dcgm_exporter_env, pod_label_allowlist

    plan = plan_of("prod")
    env = {e["name"]: e["value"] for e in dcgm_exporter_env(plan)}
    assert env.get("KUBERNETES_VIRTUAL_GPUS") == "true", "prod has time-sliced pools: the exporter runs in virtual mode"
    rules = {r.record: r.expr for r in alerts.recording_rules(plan).rules}
    assert alerts.ATTRIBUTION_LABELS == ("gpu_platform_io_team", "kueue_x_k8s_io_queue_name")
    attribution = rules[alerts.POD_ATTRIBUTION]
    for key, name in zip(cv.GPU_METRIC_POD_LABELS, alerts.ATTRIBUTION_LABELS):
        assert f"label_{name}" in attribution and name in attribution
        assert any(re.search(p, key) for p in pod_label_allowlist()), key
        assert key in alerts.KSM_METRIC_LABELS_ALLOWLIST[1], "kube-state-metrics must export the pod label"
    assert alerts.POD_ATTRIBUTION in rules[alerts.GPU_ACTIVE]
    # Recorded before it is read, in the same group (rules of a group run in order).
    order = list(rules)
    assert order.index(alerts.POD_ATTRIBUTION) < order.index(alerts.GPU_ACTIVE)


def test_dashboards_count_a_shared_gpu_once() -> None:
    """With virtual GPUs a time-sliced GPU's series come once per pod using it: a per-node or per-pool sum or
    average of raw DCGM series collapses them per device first. The per-team memory panel is the one place a
    shared GPU counts for each of its teams, on purpose (its description says so)."""
    per_team = dashboards.framebuffer_by_team('{team=~"$team"}')
    for d in dashboards.dashboards(plan_of("prod")):
        for expr in d.expressions:
            if "DCGM_" not in expr or not re.search(r"\b(sum|avg) by \((node|pool)", expr):
                continue
            assert f"max by ({dashboards.DEVICE}" in expr, f"{d.uid}: {expr}"
    assert any(per_team in e for d in dashboards.dashboards(plan_of("prod")) for e in d.expressions)
