"""Observability under mocks: the monitoring stack prod installs (mode in-cluster: kube-prometheus-stack) and the
managed one (Amazon Managed Service for Prometheus), each checked against what the platform's rules, dashboards
and report read, and the chart values against the charts' pinned default values (unknown keys refused).

Expectations are literals, the charts' default values (kube-prometheus-stack 88.5.3, kube-state-metrics 8.4.0)
and the objects the platform renders for the stack to select, not the component's own helpers.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any


from components import alerts
from components.monitoring import DCGM_FIELDS
from gpu_platform import useful_work as uw
from gpu_platform.plan.monitoring import KSM_METRIC_LABELS_ALLOWLIST
from gpu_platform.plan.monitoring_sizing import DCGM_SERIES_PER_DEVICE
from harness.render import Rendered
from tests.chart_values import unknown_keys
from tests.conftest import background_render, load_yaml, plan_of, rendered, stack_doc
from tests.reference_data import ROOT, values_file
from tests.unit.components.iam_lint import parliament_findings

RELEASE = "kubernetes:helm.sh/v3:Release"
RULE = "kubernetes:monitoring.coreos.com/v1:PrometheusRule"
SERVICE_MONITOR = "kubernetes:monitoring.coreos.com/v1:ServiceMonitor"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
KPS_VALUES = "kube-prometheus-stack-88.5.3-chart-values.yaml"
KSM_VALUES = "kube-state-metrics-8.4.0-chart-values.yaml"


def reference_values(name: str) -> dict[str, Any]:
    """A chart's pinned default values through tests/reference_data.py; until scripts/tools/reference.sh fetches
    these two charts' values into the tool cache, from its documented offline fallback (../shared/reference)."""
    try:
        path = values_file(name)
    except FileNotFoundError:
        path = ROOT.parent / "shared" / "reference" / name
        if not path.is_file():
            raise
    return load_yaml(Path(path).read_text())


KPS_DEFAULTS = reference_values(KPS_VALUES)
KSM_DEFAULTS = reference_values(KSM_VALUES)
SLACK = {"name": "gpu-alerts", "type": "slack", "secret": {"name": "alert-slack", "key": "url"}, "channel": "#gpu",
         "severities": ["critical", "warning"]}
PAGERDUTY = {"name": "oncall", "type": "pagerduty", "secret": {"name": "pagerduty", "key": "routingKey"},
             "severities": ["critical"]}
SNS = {"name": "oncall", "type": "sns", "topicArn": "arn:aws:sns:us-east-1:123456789012:gpu-alerts",
       "severities": ["critical"]}


@background_render()
def prod_with_receivers() -> tuple[str, dict[str, Any]]:
    config = copy.deepcopy(stack_doc("prod")["config"])
    config["gpu-platform:platform"]["addons"]["monitoring"]["receivers"] = [SLACK, PAGERDUTY]
    return "prod", config


@background_render()
def prod_managed() -> tuple[str, dict[str, Any]]:
    config = copy.deepcopy(stack_doc("prod")["config"])
    config["gpu-platform:platform"]["addons"]["monitoring"] = {"install": True, "mode": "managed",
                                                               "retentionDays": 90, "receivers": [SNS]}
    return "prod", config


def kps(r: Rendered) -> Any:
    found = [x for x in r.by_type(RELEASE) if x.inputs.get("chart") == "kube-prometheus-stack"]
    assert len(found) == 1, f"{len(found)} kube-prometheus-stack releases"
    return found[0]


def values() -> dict[str, Any]:
    return kps(rendered("prod")).inputs["values"]


# ---------------------------------------------------------------------------------------------------
# in-cluster: the release


def test_prod_installs_the_pinned_chart_in_the_monitoring_namespace() -> None:
    rel = kps(rendered("prod"))
    assert rel.inputs["version"] == "88.5.3"
    assert rel.inputs["repositoryOpts"]["repo"] == "https://prometheus-community.github.io/helm-charts"
    assert (rel.inputs["name"], rel.inputs["namespace"], rel.inputs["createNamespace"]) == (
        "kube-prometheus-stack", "monitoring", False)
    assert rel.options["dependencies"] == ["ns-monitoring"]


def test_the_platforms_rules_and_monitors_wait_for_the_charts_crds() -> None:
    r = rendered("prod")
    for x in [*r.by_type(RULE), *r.by_type(SERVICE_MONITOR)]:
        assert "kube-prometheus-stack" in x.options["dependencies"], x.name


def test_every_values_key_exists_in_the_pinned_defaults() -> None:
    for r in (rendered("prod"), prod_with_receivers()):
        v = copy.deepcopy(kps(r).inputs["values"])
        ksm = v.pop("kube-state-metrics")
        assert unknown_keys(v, KPS_DEFAULTS) == []
        # the subchart's own defaults, with the parent chart's settings for it
        assert unknown_keys(ksm, {**KSM_DEFAULTS, **KPS_DEFAULTS["kube-state-metrics"]}) == []


def test_the_key_check_refuses_a_misspelt_or_foreign_key() -> None:
    assert unknown_keys({"prometheus": {"prometheusSpec": {"retentionSizes": "1GiB"}}}, KPS_DEFAULTS) == [
        "prometheus.prometheusSpec.retentionSizes"]
    assert unknown_keys({"grafana": {"sidecar": {"dashboards": {"labelValues": "1"}}}}, KPS_DEFAULTS) == [
        "grafana.sidecar.dashboards.labelValues"]
    assert unknown_keys({"metricLabelAllowlist": []}, KSM_DEFAULTS) == ["metricLabelAllowlist"]


def test_prometheus_keeps_its_retention_on_a_sized_gp3_volume() -> None:
    spec = values()["prometheus"]["prometheusSpec"]
    assert spec["retention"] == "15d"
    # prod at capacity.max: 272,759 series / 30 s = 9,092 samples/s; x 15 d x 86,400 s x 2 B = 23,566,464,000 B;
    # / 0.85 = 25.82 GiB -> 26; retentionSize floor(26 x 0.85 = 22.1) = 22
    assert spec["storageSpec"] == {"volumeClaimTemplate": {"spec": {
        "storageClassName": "gp3", "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "26Gi"}}}}}
    assert spec["retentionSize"] == "22GiB"
    # 272,759 x 3000 B x 2 = 1.52 GiB -> 2
    assert spec["resources"] == {"requests": {"memory": "2Gi"}, "limits": {"memory": "2Gi"}}
    classes = [o for o in rendered("prod").kubernetes_objects() if o["kind"] == "StorageClass"]
    assert [c["metadata"]["name"] for c in classes] == ["gp3"]
    assert classes[0]["parameters"]["type"] == "gp3"


def test_prometheus_selects_the_platforms_rules_and_monitors_by_their_labels() -> None:
    spec = values()["prometheus"]["prometheusSpec"]
    objects = rendered("prod").kubernetes_objects()

    def selected(selector: dict[str, Any], labels: dict[str, str]) -> bool:
        return all(labels.get(k) == v for k, v in selector["matchLabels"].items())

    rules = [o for o in objects if o["kind"] == "PrometheusRule"]
    monitors = [o for o in objects if o["kind"] == "ServiceMonitor"]
    assert [o["metadata"]["name"] for o in rules] == ["gpu-platform-gpu"]
    assert [o["metadata"]["name"] for o in monitors] == ["kueue"]
    assert all(selected(spec["ruleSelector"], o["metadata"]["labels"]) for o in rules)
    assert all(selected(spec["serviceMonitorSelector"], o["metadata"]["labels"]) for o in monitors)
    # in every namespace: the GPU Operator makes dcgm-exporter's monitor in its own, with these labels
    assert spec["ruleNamespaceSelector"] == {} and spec["serviceMonitorNamespaceSelector"] == {}
    dcgm = [x for x in rendered("prod").by_type(RELEASE) if x.inputs.get("chart") == "gpu-operator"][0]
    monitor = dcgm.inputs["values"]["dcgmExporter"]["serviceMonitor"]
    assert monitor["enabled"] is True and selected(spec["serviceMonitorSelector"], monitor["additionalLabels"])
    # kube-state-metrics' own monitor carries the release label (the chart's default) with honor labels
    assert KPS_DEFAULTS["kube-state-metrics"]["releaseLabel"] is True
    assert KPS_DEFAULTS["kube-state-metrics"]["prometheus"]["monitor"]["http"]["honorLabels"] is True


def test_kube_state_metrics_exports_the_allowlist_and_the_workload_states() -> None:
    ksm = values()["kube-state-metrics"]
    assert ksm["metricLabelsAllowlist"] == ["nodes=[gpu-platform.io/pool]",
                                            "pods=[gpu-platform.io/team,kueue.x-k8s.io/queue-name]"]
    # the rules' and the report's own spelling of it
    assert tuple(ksm["metricLabelsAllowlist"]) == alerts.KSM_METRIC_LABELS_ALLOWLIST == KSM_METRIC_LABELS_ALLOWLIST
    crs = ksm["customResourceState"]
    assert crs["enabled"] is True
    assert crs["config"] == uw.KSM_WORKLOAD_CONDITIONS
    resource = crs["config"]["spec"]["resources"][0]
    assert resource["groupVersionKind"] == {"group": "kueue.x-k8s.io", "version": "v1beta2", "kind": "Workload"}
    # kube-state-metrics names it metricNamePrefix + "_" + name (docs/metrics/extend/customresourcestate-metrics.md)
    assert f"{resource['metricNamePrefix']}_{resource['metrics'][0]['name']}" == "kube_kueue_workload_status_condition"
    assert ksm["rbac"]["extraRules"] == [{"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads"],
                                          "verbs": ["list", "watch"]}]


def test_grafana_loads_the_platforms_dashboards_with_prometheus_as_data_source() -> None:
    sidecar = values()["grafana"]["sidecar"]
    maps = [o for o in rendered("prod").kubernetes_objects()
            if o["kind"] == "ConfigMap" and o["metadata"]["name"].startswith("gpu-platform-")
            and o["metadata"]["namespace"] == "monitoring"]
    assert sorted(m["metadata"]["name"] for m in maps) == ["gpu-platform-fleet", "gpu-platform-gpu-health",
                                                           "gpu-platform-queues"]
    for m in maps:
        assert m["metadata"]["labels"][sidecar["dashboards"]["label"]] == sidecar["dashboards"]["labelValue"]
        assert m["metadata"]["namespace"] == sidecar["dashboards"]["searchNamespace"]
        dashboard = json.loads(next(iter(m["data"].values())))
        variables = {v["name"]: v for v in dashboard["templating"]["list"]}
        assert variables["datasource"]["query"] == "prometheus"
    assert sidecar["dashboards"]["enabled"] is True
    assert sidecar["datasources"] == {"enabled": True, "defaultDatasourceEnabled": True, "isDefaultDatasource": True}


def test_alertmanager_routes_by_severity_to_the_receivers_from_the_spec() -> None:
    am = kps(prod_with_receivers()).inputs["values"]["alertmanager"]
    assert am["alertmanagerSpec"]["secrets"] == ["alert-slack", "pagerduty"]
    assert am["config"]["receivers"] == [
        {"name": "null"},
        {"name": "gpu-alerts", "slack_configs": [{"api_url_file": "/etc/alertmanager/secrets/alert-slack/url",
                                                  "send_resolved": True, "channel": "#gpu"}]},
        {"name": "oncall", "pagerduty_configs": [
            {"routing_key_file": "/etc/alertmanager/secrets/pagerduty/routingKey", "send_resolved": True}]},
    ]
    assert am["config"]["route"] == {"receiver": "null", "group_by": ["alertname", "team", "pool"], "routes": [
        {"receiver": "gpu-alerts", "matchers": ['severity=~"critical|warning"'], "continue": True},
        {"receiver": "oncall", "matchers": ['severity=~"critical"'], "continue": True}]}
    # every alert the platform raises has a severity a route can match
    assert {a.severity for a in alerts.alerts(plan_of("prod"))} <= {"critical", "warning", "info"}


# ---------------------------------------------------------------------------------------------------
# managed


def managed(type_: str, name: str) -> Any:
    return prod_managed().one(type_, name)


def test_managed_makes_no_prometheus_operator_objects() -> None:
    r = prod_managed()
    assert r.by_type(RULE) == [] and r.by_type(SERVICE_MONITOR) == []
    assert [x for x in r.by_type(RELEASE) if x.inputs.get("chart") == "kube-prometheus-stack"] == []
    operator = [x for x in r.by_type(RELEASE) if x.inputs.get("chart") == "gpu-operator"][0]
    assert operator.inputs["values"]["dcgmExporter"]["serviceMonitor"]["enabled"] is False


def test_managed_workspace_keeps_the_retention() -> None:
    assert managed("aws:amp/workspace:Workspace", "monitoring-workspace").inputs["alias"] == "ml-prod-metrics"
    conf = managed("aws:amp/workspaceConfiguration:WorkspaceConfiguration", "monitoring-workspace")
    assert conf.inputs["retentionPeriodInDays"] == 90


def test_the_collector_scrapes_the_cluster_into_the_workspace() -> None:
    s = managed("aws:amp/scraper:Scraper", "monitoring-collector").inputs
    assert s["source"]["eks"]["clusterArn"] == "arn:aws:eks:us-east-1:000000000000:cluster/ml-prod"
    assert s["source"]["eks"]["subnetIds"] == ["subnet-0a1", "subnet-0b2"]
    assert s["destination"]["amp"]["workspaceArn"] == "arn:aws:aps:us-east-1:000000000000:workspace/monitoring-workspace-id"
    # the service-linked role, no cross-account role configuration: the service makes its EKS access entry
    assert "roleConfiguration" not in s
    config = load_yaml(s["scrapeConfiguration"])
    assert set(config) == {"global", "scrape_configs"} and config["global"] == {"scrape_interval": "30s"}
    jobs = {j["job_name"]: j for j in config["scrape_configs"]}
    assert list(jobs) == ["nvidia-dcgm-exporter", "kube-state-metrics", "kueue-controller-manager-metrics-service",
                          "kubelet"]
    # only the sections a managed collector takes (AMP-collector-how-to.html, "Scraper configuration")
    for job in jobs.values():
        assert set(job) <= {"job_name", "honor_labels", "kubernetes_sd_configs", "relabel_configs", "scheme",
                            "authorization", "tls_config", "metric_relabel_configs"}
    assert {name: [sd["role"] for sd in job["kubernetes_sd_configs"]] for name, job in jobs.items()} == {
        "nvidia-dcgm-exporter": ["endpoints"], "kube-state-metrics": ["endpoints"],
        "kueue-controller-manager-metrics-service": ["endpoints"], "kubelet": ["node"]}


def test_the_collector_scrapes_the_pods_network_and_block_io_from_cadvisor() -> None:
    """Acceptance step 6 reads a job's network and block I/O series from cAdvisor; a managed collector scrapes it
    as the AMP user guide's sample configuration does (AMP-collector-how-to.html, "Scraper configuration", job
    `cadvisor`: node discovery, the API server's address, the node proxy's path, the collector's token), keeping
    the four byte counters the platform reads, the series of pods (but a host-network pod's on CNI interfaces, as
    kube-prometheus-stack's kubelet job drops them), and the labels that tell them apart."""
    config = load_yaml(managed("aws:amp/scraper:Scraper", "monitoring-collector").inputs["scrapeConfiguration"])
    (cadvisor,) = [j for j in config["scrape_configs"] if j["job_name"] == "kubelet"]
    assert cadvisor == {
        "job_name": "kubelet",
        "scheme": "https",
        "authorization": {"type": "Bearer", "credentials_file": "/var/run/secrets/kubernetes.io/serviceaccount/token"},
        "kubernetes_sd_configs": [{"role": "node"}],
        "relabel_configs": [
            {"target_label": "__address__", "replacement": "kubernetes.default.svc:443"},
            {"source_labels": ["__meta_kubernetes_node_name"], "regex": "(.+)", "target_label": "__metrics_path__",
             "replacement": "/api/v1/nodes/$1/proxy/metrics/cadvisor"},
            {"source_labels": ["__meta_kubernetes_node_name"], "target_label": "node"},
            {"target_label": "metrics_path", "replacement": "/metrics/cadvisor"},
        ],
        "metric_relabel_configs": [
            {"source_labels": ["__name__"], "action": "keep",
             "regex": "container_network_receive_bytes_total|container_network_transmit_bytes_total|"
                      "container_fs_reads_bytes_total|container_fs_writes_bytes_total"},
            {"source_labels": ["__name__", "interface"], "action": "drop",
             "regex": "container_network_.*;(cali|cilium|cni|lxc|nodelocaldns|tunl).*"},
            {"source_labels": ["id", "pod"], "action": "drop", "regex": ".+;"},
            {"action": "labelkeep",
             "regex": "__name__|job|instance|node|metrics_path|namespace|pod|container|interface|device"},
        ],
    }


def test_the_collectors_jobs_keep_what_the_reports_joins_need() -> None:
    config = load_yaml(managed("aws:amp/scraper:Scraper", "monitoring-collector").inputs["scrapeConfiguration"])
    jobs = {j["job_name"]: j for j in config["scrape_configs"]}
    dcgm, ksm, kueue = (jobs["nvidia-dcgm-exporter"], jobs["kube-state-metrics"],
                        jobs["kueue-controller-manager-metrics-service"])
    # a GPU keeps the namespace and pod of the workload using it, as the ServiceMonitor's honorLabels does
    assert dcgm["honor_labels"] is True and ksm["honor_labels"] is True
    assert "honor_labels" not in kueue
    assert dcgm["kubernetes_sd_configs"][0]["namespaces"] == {"names": ["gpu-operator"]}
    assert {"action": "keep", "source_labels": ["__meta_kubernetes_service_name", "__meta_kubernetes_endpoint_port_name"],
            "regex": "nvidia-dcgm-exporter;gpu-metrics"} in dcgm["relabel_configs"]
    assert {"source_labels": ["__meta_kubernetes_pod_node_name"], "target_label": "node", "action": "replace"} in dcgm[
        "relabel_configs"]
    # only dcgm-exporter's targets get `node`, as only its ServiceMonitor relabels it
    assert [r for r in ksm["relabel_configs"] + kueue["relabel_configs"] if r.get("target_label") == "node"] == []
    assert {"action": "keep", "source_labels": ["__meta_kubernetes_service_name", "__meta_kubernetes_endpoint_port_name"],
            "regex": "kube-state-metrics;http"} in ksm["relabel_configs"]
    assert ksm["kubernetes_sd_configs"][0]["namespaces"] == {"names": ["monitoring"]}
    assert (kueue["scheme"], kueue["authorization"], kueue["tls_config"]) == (
        "https", {"type": "Bearer", "credentials_file": "/var/run/secrets/kubernetes.io/serviceaccount/token"},
        {"insecure_skip_verify": True})
    assert kueue["kubernetes_sd_configs"][0]["namespaces"] == {"names": ["kueue-system"]}
    # the job names the rules and the live cluster use
    assert alerts.DCGM_JOB == "nvidia-dcgm-exporter"


def test_the_workspace_evaluates_the_platforms_rule_groups() -> None:
    ns = managed("aws:amp/ruleGroupNamespace:RuleGroupNamespace", "monitoring-rules").inputs
    assert ns["name"] == "gpu-platform-gpu"
    groups = load_yaml(ns["data"])["groups"]
    in_cluster = [o for o in rendered("prod").kubernetes_objects() if o["kind"] == "PrometheusRule"][0]["spec"]["groups"]
    assert groups == in_cluster
    assert "gpu-platform.useful-work" in [g["name"] for g in groups]


def test_the_workspace_alerts_go_to_the_sns_receiver() -> None:
    doc = load_yaml(managed("aws:amp/alertManagerDefinition:AlertManagerDefinition",
                                 "monitoring-alert-manager").inputs["definition"])
    config = load_yaml(doc["alertmanager_config"])
    assert config["receivers"] == [{"name": "null"}, {"name": "oncall", "sns_configs": [
        {"topic_arn": "arn:aws:sns:us-east-1:123456789012:gpu-alerts", "sigv4": {"region": "us-east-1"},
         "send_resolved": True}]}]
    assert config["route"]["routes"] == [{"receiver": "oncall", "matchers": ['severity=~"critical"'], "continue": True}]


def test_the_reports_reader_may_query_this_workspace_only() -> None:
    p = managed("aws:iam/policy:Policy", "monitoring-reader").inputs
    assert p["name"] == "ml-prod-metrics-reader"
    doc = json.loads(p["policy"])
    assert doc["Statement"] == [{"Effect": "Allow", "Action": ["aps:GetLabels", "aps:GetMetricMetadata",
                                                               "aps:GetSeries", "aps:QueryMetrics"],
                                 "Resource": "arn:aws:aps:us-east-1:000000000000:workspace/monitoring-workspace-id"}]
    assert parliament_findings(doc) == []


def test_managed_installs_kube_state_metrics_from_its_own_pinned_chart() -> None:
    rel = [x for x in prod_managed().by_type(RELEASE) if x.inputs.get("chart") == "kube-state-metrics"]
    assert len(rel) == 1
    inputs = rel[0].inputs
    assert (inputs["version"], inputs["name"], inputs["namespace"]) == ("8.4.0", "kube-state-metrics", "monitoring")
    assert rel[0].options["dependencies"] == ["ns-monitoring"]
    v = inputs["values"]
    assert unknown_keys(v, KSM_DEFAULTS) == []
    assert v["fullnameOverride"] == "kube-state-metrics"   # the Service the collector's job keeps
    assert v["metricLabelsAllowlist"] == list(KSM_METRIC_LABELS_ALLOWLIST)
    assert v["customResourceState"] == {"enabled": True, "config": uw.KSM_WORKLOAD_CONDITIONS}


def test_the_field_count_the_sizing_uses_is_the_platforms_field_list() -> None:
    assert DCGM_SERIES_PER_DEVICE == len([f for f in DCGM_FIELDS if f.kind != "label"]) == 37


# ---------------------------------------------------------------------------------------------------
# TLS: certificates are verified everywhere but on Kueue's metrics endpoint

INSECURE_KEYS = ("insecure_skip_verify", "insecureSkipVerify")
REMOTE_WRITE_KEYS = ("remote_write", "remoteWrite", "additionalRemoteWrite")


def set_keys(doc: Any, keys: tuple[str, ...], path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """The path of every key of `keys` with a non-empty value in a document (a list item with a job_name is named by
    it)."""
    found: list[tuple[str, ...]] = []
    if isinstance(doc, dict):
        for k, v in doc.items():
            if k in keys and v not in (None, False, [], {}, ""):
                found.append((*path, k))
            found += set_keys(v, keys, (*path, str(k)))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            found += set_keys(v, keys, (*path, v.get("job_name", str(i)) if isinstance(v, dict) else str(i)))
    return found


def everything(r: Rendered) -> dict[str, Any]:
    """Every resource's inputs by type and name, the managed collector's scrape configuration (YAML text) parsed."""
    out: dict[str, Any] = {f"{x.type} {x.name}": x.inputs for x in r.custom}
    for x in r.by_type("aws:amp/scraper:Scraper"):
        out[f"{x.type} {x.name}"] = {**x.inputs, "scrapeConfiguration": load_yaml(x.inputs["scrapeConfiguration"])}
    return out


def test_only_kueues_metrics_endpoint_is_scraped_without_verifying_its_certificate() -> None:
    """Prometheus verifies a target's certificate unless told not to (<tls_config> insecure_skip_verify, default
    false: prometheus/prometheus docs/configuration/configuration.md). The stack tells it so for Kueue's self-signed
    metrics endpoint alone, as Kueue v0.19.2's own chart does (values.yaml metrics.serviceMonitor.tlsConfig), in
    either mode; nothing it renders writes to Amazon Managed Service for Prometheus (the collector sends to its
    workspace itself: no remote_write anywhere)."""
    assert set_keys(everything(rendered("prod")), INSECURE_KEYS) == [
        ("kubernetes:monitoring.coreos.com/v1:ServiceMonitor monitoring-kueue", "spec", "endpoints", "0", "tlsConfig",
         "insecureSkipVerify")]
    assert set_keys(everything(prod_managed()), INSECURE_KEYS) == [
        ("aws:amp/scraper:Scraper monitoring-collector", "scrapeConfiguration", "scrape_configs",
         "kueue-controller-manager-metrics-service", "tls_config", "insecure_skip_verify")]
    assert set_keys(everything(rendered("prod")), REMOTE_WRITE_KEYS) == []
    assert set_keys(everything(prod_managed()), REMOTE_WRITE_KEYS) == []


def test_in_cluster_prometheus_scrapes_cadvisor_with_the_charts_own_kubelet_job() -> None:
    """Mode in-cluster needs no cAdvisor job of the platform's: kube-prometheus-stack 88.5.3 scrapes every kubelet's
    /metrics/cadvisor by default (values.yaml kubelet.enabled, kubelet.serviceMonitor.enabled and
    kubelet.serviceMonitor.cAdvisor: true), its cAdvisorMetricRelabelings drop none of the four byte counters step 6
    reads, and the platform's values leave `kubelet` as the chart has it. Only the managed collector gets a job."""
    kubelet = KPS_DEFAULTS["kubelet"]
    assert (kubelet["enabled"], kubelet["serviceMonitor"]["enabled"], kubelet["serviceMonitor"]["cAdvisor"]) == (
        True, True, True)
    assert "kubelet" not in values()
    by_name = [r["regex"] for r in kubelet["serviceMonitor"]["cAdvisorMetricRelabelings"]
               if r["sourceLabels"] == ["__name__"] and r["action"] == "drop"]
    assert len(by_name) == 5
    for name in ("container_network_receive_bytes_total", "container_network_transmit_bytes_total",
                 "container_fs_reads_bytes_total", "container_fs_writes_bytes_total"):
        assert [regex for regex in by_name if re.fullmatch(regex, name)] == [], name
    assert rendered("prod").by_type("aws:amp/scraper:Scraper") == []


def test_the_kubelet_and_cadvisor_jobs_stay_the_charts_own() -> None:
    """kube-prometheus-stack scrapes the kubelets (and cAdvisor through them) over https without verifying their
    self-signed serving certificates by default (88.5.3 values.yaml kubelet.serviceMonitor.insecureSkipVerify: true);
    the platform leaves that job to the chart and sets no TLS option of the chart's."""
    assert KPS_DEFAULTS["kubelet"]["serviceMonitor"]["https"] is True
    assert KPS_DEFAULTS["kubelet"]["serviceMonitor"]["insecureSkipVerify"] is True
    assert "kubelet" not in values()
    assert set_keys(values(), INSECURE_KEYS + ("tlsConfig", "tls_config")) == []
