"""The live local cluster's Prometheus scrapes the report's sources with the settings EKS gets: the same job names
and, per job, the same settings as the managed collector's configuration (gpu_platform/plan/monitoring.py) and
kube-prometheus-stack's ServiceMonitors; only how targets are found differs. A drift fails here."""

from __future__ import annotations

from pathlib import Path

import yaml

from gpu_platform.plan.monitoring import scrape_configuration
from localcluster import prometheus
from tests.conftest import plan_of

# What each source's job must carry on both sides, written out: honor labels for dcgm-exporter and
# kube-state-metrics (a GPU keeps its workload's namespace and pod), HTTPS with Kueue's self-signed certificate.
SHARED = {
    "nvidia-dcgm-exporter": {"honor_labels": True},
    "kube-state-metrics": {"honor_labels": True},
    "kueue-controller-manager-metrics-service": {"scheme": "https", "tls_config": {"insecure_skip_verify": True}},
}
DISCOVERY = {"job_name", "kubernetes_sd_configs", "relabel_configs", "http_sd_configs", "static_configs",
             "metrics_path", "authorization"}


def local_jobs() -> dict[str, dict]:
    cfg = prometheus.config(kueue_metrics="127.0.0.1:1", telemetry="127.0.0.1:2", prometheus="127.0.0.1:3",
                            karpenter_metrics=None, token_file=Path("token"), rule_file=Path("rules.yaml"))
    return {j["job_name"]: j for j in cfg["scrape_configs"]}


def managed_jobs() -> dict[str, dict]:
    return {j["job_name"]: j for j in scrape_configuration(plan_of("prod").addons.monitoring)["scrape_configs"]}


def test_both_scrape_the_sources_under_the_same_job_names() -> None:
    assert set(SHARED) <= set(local_jobs())
    assert set(managed_jobs()) == set(SHARED)


def test_each_job_carries_the_same_settings_on_both_sides() -> None:
    local, managed = local_jobs(), managed_jobs()
    for job, settings in SHARED.items():
        assert {k: v for k, v in local[job].items() if k not in DISCOVERY} == settings, job
        assert {k: v for k, v in managed[job].items() if k not in DISCOVERY} == settings, job


def test_both_send_kueue_a_bearer_token() -> None:
    assert "credentials_file" in local_jobs()["kueue-controller-manager-metrics-service"]["authorization"]
    assert managed_jobs()["kueue-controller-manager-metrics-service"]["authorization"]["type"] == "Bearer"


def test_the_local_rule_file_is_the_stacks_rule_groups(tmp_path: Path) -> None:
    from components import alerts

    prometheus.write(plan_of("local"), tmp_path, kueue_metrics="127.0.0.1:1", telemetry="127.0.0.1:2",
                     prometheus="127.0.0.1:3", karpenter_metrics=None, client=None)
    assert yaml.safe_load((tmp_path / prometheus.RULE_FILE).read_text()) == alerts.rule_file(plan_of("local"))
