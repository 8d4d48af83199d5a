"""Where step 6's network and block I/O series come from: kube-prometheus-stack's kubelet job on EKS (mode
in-cluster), written out in gpu_platform/plan/scrape_jobs.py and held here to the chart's pinned values (88.5.3), and
the live local cluster's Prometheus running that job on its real node's kubelet; and the GPU telemetry giving the
real node's pods the DCGM series it gives the simulated nodes' pods.

World: none (the chart's default values file, configurations written to a temporary directory, a fake API client).
Relabeling is applied by `relabel` below, the subset of Prometheus' relabel semantics the jobs use (keep, drop,
replace; separator, anchored regex, ${1} or $1).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from gpu_platform.plan.scrape_jobs import (
    kubelet_discovery_labels, kubelet_jobs, kubelet_service, operator_relabeling,
)
from localcluster import prometheus
from localcluster.telemetry import Telemetry
from tests.conftest import plan_of
from tests.reference_data import ROOT, values_file

SERVICE = "kube-prometheus-stack-kubelet"
CERT = ("state/pki/apiserver-kubelet-client.crt", "state/pki/apiserver-kubelet-client.key")
KPS_VALUES = "kube-prometheus-stack-88.5.3-chart-values.yaml"


def chart_defaults() -> dict[str, Any]:
    """The chart's pinned default values (tests/reference_data.py, else its documented offline fallback, as
    tests/unit/components/test_observability.py reads them)."""
    try:
        path = Path(values_file(KPS_VALUES))
    except FileNotFoundError:
        path = ROOT.parent / "shared" / "reference" / KPS_VALUES
    return yaml.load(path.read_text(), Loader=yaml.CSafeLoader)  # 200 kB: libyaml reads it in a tenth of the time


def relabel(labels: dict[str, str], rules: list[dict[str, Any]]) -> dict[str, str] | None:
    """Prometheus relabeling (keep, drop, replace); None: dropped. Labels starting with __ go afterwards."""
    out = dict(labels)
    for r in rules:
        value = r.get("separator", ";").join(out.get(s, "") for s in r.get("source_labels", []))
        m = re.fullmatch(r.get("regex", "(.*)"), value)
        action = r.get("action", "replace")
        if action in ("keep", "drop"):
            if (action == "keep") != bool(m):
                return None
        elif m:
            result = re.sub(r"\$\{?(\d)\}?", lambda g: m.group(int(g.group(1))) or "", r.get("replacement", "$1"))
            if result:
                out[r["target_label"]] = result
            else:
                out.pop(r["target_label"], None)
    return {k: v for k, v in out.items() if not k.startswith("__")}


def test_the_kubelet_jobs_are_the_charts_service_monitor() -> None:
    """kube-prometheus-stack 88.5.3's kubelet ServiceMonitor with its default values: /metrics and /metrics/cadvisor
    (not /metrics/resource), honorLabels, https without verifying the kubelet, metrics_path, each endpoint's
    metricRelabelings as the chart gives them."""
    defaults = chart_defaults()
    sm = defaults["kubelet"]["serviceMonitor"]
    assert (sm["kubelet"], sm["cAdvisor"], sm["resource"], sm["https"]) == (True, True, False, True)
    jobs = kubelet_jobs(SERVICE)
    assert [(j["job_name"], j["metrics_path"]) for j in jobs] == [
        ("serviceMonitor/kube-system/kube-prometheus-stack-kubelet/0", "/metrics"),
        ("serviceMonitor/kube-system/kube-prometheus-stack-kubelet/1", "/metrics/cadvisor")]
    for job, relabelings in zip(jobs, (sm["metricRelabelings"], sm["cAdvisorMetricRelabelings"])):
        assert job["honor_labels"] is sm["honorLabels"]
        assert (job["scheme"], job["tls_config"]) == ("https", {"insecure_skip_verify": sm["insecureSkipVerify"]})
        assert job["authorization"] == {"type": "Bearer",
                                        "credentials_file": "/var/run/secrets/kubernetes.io/serviceaccount/token"}
        assert [operator_relabeling(r) for r in job["metric_relabel_configs"]] == relabelings
    assert operator_relabeling(jobs[1]["relabel_configs"][-1]) == sm["cAdvisorRelabelings"][0]
    assert operator_relabeling(jobs[0]["relabel_configs"][-1]) == sm["relabelings"][0]
    assert defaults["prometheusOperator"]["kubeletService"] == {
        "enabled": True, "namespace": "kube-system", "selector": "", "name": ""}
    assert kubelet_service("kube-prometheus-stack", "kube-prometheus-stack") == SERVICE
    assert kubelet_service("monitoring", "kube-prometheus-stack") == "monitoring-kube-prometheus-kubelet"


def test_a_kubelet_target_is_labelled_as_on_eks_and_cadvisor_keeps_only_pods_series() -> None:
    cadvisor = kubelet_jobs(SERVICE, token_file=None, client_cert=CERT)[1]
    assert "authorization" not in cadvisor
    assert cadvisor["tls_config"] == {"insecure_skip_verify": True, "cert_file": CERT[0], "key_file": CERT[1]}
    # the Operator's endpoints discovery of the kubelet Service on EKS, and the local static target's labels
    eks = {"__address__": "10.0.3.7:10250", "__meta_kubernetes_namespace": "kube-system",
           "__meta_kubernetes_service_name": SERVICE, "__meta_kubernetes_endpoint_port_name": "https-metrics",
           "__meta_kubernetes_service_label_k8s_app": "kubelet", "__metrics_path__": "/metrics/cadvisor",
           "__meta_kubernetes_endpoint_address_target_kind": "Node",
           "__meta_kubernetes_endpoint_address_target_name": "ip-10-0-3-7.ec2.internal"}
    assert relabel(eks, cadvisor["relabel_configs"]) == {
        "namespace": "kube-system", "service": SERVICE, "endpoint": "https-metrics", "node": "ip-10-0-3-7.ec2.internal",
        "job": "kubelet", "metrics_path": "/metrics/cadvisor"}
    local = {**kubelet_discovery_labels(SERVICE, "small-real"), "__metrics_path__": "/metrics/cadvisor"}
    assert relabel(local, cadvisor["relabel_configs"]) == {
        "namespace": "kube-system", "service": SERVICE, "endpoint": "https-metrics", "node": "small-real",
        "job": "kubelet", "metrics_path": "/metrics/cadvisor"}
    # a pod's network series is kept, a cgroup without a pod and a CNI interface are dropped
    pod = {"__name__": "container_network_receive_bytes_total", "id": "/kubepods/pod1", "pod": "acceptance-1-0",
           "namespace": "zeta", "interface": "eth0"}
    rules = cadvisor["metric_relabel_configs"]
    assert relabel(pod, rules) == {k: v for k, v in pod.items() if k != "__name__"}
    assert relabel({**pod, "pod": ""}, rules) is None
    assert relabel({**pod, "interface": "cni0"}, rules) is None
    assert relabel({**pod, "__name__": "container_fs_sector_reads_total"}, rules) is None


class FakeClient:
    """The API server as prometheus.write reads it: the scraper's token Secret, and the nodes by label."""

    def __init__(self) -> None:
        self.created: list[str] = []
        self.selectors: list[str] = []

    def create(self, path: str, obj: dict[str, Any]) -> Any:
        self.created.append(obj["kind"])

    def get(self, path: str, **query: str) -> Any:
        if path.endswith("/secrets/gpu-platform-prometheus-token"):
            return {"data": {"token": "dG9rZW4="}}
        assert path == "/api/v1/nodes"
        self.selectors.append(query["labelSelector"])
        return {"items": [{"metadata": {"name": "small-real"}, "status": {
            "addresses": [{"type": "InternalIP", "address": "10.244.0.1"}, {"type": "Hostname", "address": "small-real"}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 31665}}}}]}


def test_the_local_prometheus_scrapes_the_real_nodes_kubelet_with_the_api_servers_client_certificate(
        tmp_path: Path) -> None:
    (tmp_path / "pki").mkdir()
    for part in ("crt", "key"):
        (tmp_path / "pki" / f"apiserver-kubelet-client.{part}").write_text("x")
    client = FakeClient()
    paths = prometheus.write(plan_of("local"), tmp_path / "prometheus", kueue_metrics="127.0.0.1:1",
                             telemetry="127.0.0.1:2", prometheus="127.0.0.1:3", karpenter_metrics=None,
                             client=client)  # type: ignore[arg-type]
    assert client.selectors == ["gpu-platform.io/node-kind=real"]
    cfg = yaml.load(paths[0].read_text(), Loader=yaml.CSafeLoader)
    jobs = {j["job_name"]: j for j in cfg["scrape_configs"]}
    cadvisor = jobs["serviceMonitor/kube-system/kube-prometheus-stack-kubelet/1"]
    assert cadvisor["metrics_path"] == "/metrics/cadvisor"
    assert cadvisor["tls_config"] == {"insecure_skip_verify": True,
                                      "cert_file": str(tmp_path / "pki" / "apiserver-kubelet-client.crt"),
                                      "key_file": str(tmp_path / "pki" / "apiserver-kubelet-client.key")}
    (group,) = cadvisor["static_configs"]
    assert group["targets"] == ["10.244.0.1:31665"]
    assert relabel({**group["labels"], "__metrics_path__": "/metrics/cadvisor"}, cadvisor["relabel_configs"])["node"] == (
        "small-real")
    assert "serviceMonitor/kube-system/kube-prometheus-stack-kubelet/0" in jobs
    # without the certificate (no PKI beside the configuration) or without a real node, no kubelet job
    for kubelets, cert in (([prometheus.Kubelet("small-real", "10.244.0.1:31665")], None), ([], (tmp_path, tmp_path))):
        cfg = prometheus.config(kueue_metrics="127.0.0.1:1", telemetry="127.0.0.1:2", prometheus="127.0.0.1:3",
                                karpenter_metrics=None, token_file=tmp_path / "t", rule_file=tmp_path / "r",
                                kubelets=kubelets, kubelet_service_name=SERVICE, kubelet_client=cert)
        assert not any(j["job_name"].startswith("serviceMonitor/") for j in cfg["scrape_configs"])


def test_the_real_nodes_pods_get_the_gpu_series_the_simulated_nodes_pods_do() -> None:
    t = Telemetry(plan_of("local"))
    real = {"metadata": {"name": "infer-real", "labels": {"gpu-platform.io/pool": "infer",
                                                          "gpu-platform.io/node-kind": "real"}, "annotations": {}},
            "status": {"allocatable": {"nvidia.com/gpu.shared": "8"}}}
    other = {"metadata": {"name": "laptop", "labels": {"gpu-platform.io/pool": "infer"}, "annotations": {}},
             "status": {}}
    pod = {"metadata": {"name": "web-0", "namespace": "serving", "uid": "uid-web-0", "annotations": {},
                        "labels": {"gpu-platform.io/team": "serving", "kueue.x-k8s.io/queue-name": "default"}},
           "spec": {"nodeName": "infer-real", "containers": [{"name": "main", "resources": {
               "limits": {"nvidia.com/gpu.shared": "1"}}}]},
           "status": {"phase": "Running"}}
    t.update([real, other], [pod], [])
    assert [x["labels"]["__meta_kubernetes_pod_node_name"] for x in t.targets("127.0.0.1:9")] == ["infer-real"]
    text = t.dcgm("infer-real") or ""
    held = [line for line in text.splitlines() if line.startswith("DCGM_FI_DEV_FB_USED{") and 'pod="web-0"' in line]
    assert len(held) == 1 and 'gpu_platform_io_team="serving"' in held[0] and 'namespace="serving"' in held[0]
    assert t.dcgm("laptop") is None
