"""One source for the scrape jobs: the live local cluster's Prometheus, the managed collector (mode managed) and the
ServiceMonitors kube-prometheus-stack's Prometheus selects (modes in-cluster and external) scrape dcgm-exporter,
kube-state-metrics and Kueue with the same job names, settings and relabelings (gpu_platform/plan/scrape_jobs.py),
so the live tests prove what EKS gets. A drift between any two fails here. The managed collector's cAdvisor job gives
a pod's network and block I/O series the labels kube-prometheus-stack's kubelet job gives them in-cluster.

World: none. Every rendering is a pure function of the plan (the prod stack's, or the local stack's for the local
Prometheus); no cluster, no Prometheus. Relabeling is applied by `relabel` below, the subset of Prometheus'
relabel semantics the jobs use (keep, drop, replace, labelkeep), to show which labels a target and a series end with
on each side.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

from components.gpu_operator import chart_values
from components.monitoring import kueue_service_monitor_spec
from components.observability import kube_prometheus_stack_values
from gpu_platform.plan.monitoring import scrape_configuration
from gpu_platform.plan.scrape_jobs import kubelet_discovery_labels, kubelet_jobs
from localcluster import prometheus as local_prometheus
from platform_cli.acceptance_labels import NETWORK_METRICS, STORAGE_METRICS
from tests.conftest import plan_of

DCGM, KSM, KUEUE = "nvidia-dcgm-exporter", "kube-state-metrics", "kueue-controller-manager-metrics-service"
KUBELET = "kubelet"
DISCOVERY = ("kubernetes_sd_configs", "static_configs", "http_sd_configs")
# What a ServiceMonitor's job labels every target with (prometheus-operator generateServiceMonitorConfig), then
# the source's own relabelings: written out, so a change to either side shows here.
SERVICE_MONITOR_LABELS = [
    {"source_labels": ["__meta_kubernetes_namespace"], "target_label": "namespace"},
    {"source_labels": ["__meta_kubernetes_service_name"], "target_label": "service"},
    {"source_labels": ["__meta_kubernetes_pod_name"], "target_label": "pod"},
    {"source_labels": ["__meta_kubernetes_pod_container_name"], "target_label": "container"},
]
NODE = {"source_labels": ["__meta_kubernetes_pod_node_name"], "target_label": "node", "action": "replace"}


def keep(service: str, port: str) -> dict[str, Any]:
    return {"action": "keep", "source_labels": ["__meta_kubernetes_service_name", "__meta_kubernetes_endpoint_port_name"],
            "regex": f"{service};{port}"}


EXPECTED_RELABELINGS = {
    DCGM: [keep(DCGM, "gpu-metrics"), *SERVICE_MONITOR_LABELS, {"target_label": "endpoint", "replacement": "gpu-metrics"},
           NODE],
    KSM: [keep(KSM, "http"), *SERVICE_MONITOR_LABELS, {"target_label": "endpoint", "replacement": "http"}],
    KUEUE: [keep(KUEUE, "https"), *SERVICE_MONITOR_LABELS, {"target_label": "endpoint", "replacement": "https"}],
}
EXPECTED_SETTINGS = {
    DCGM: {"honor_labels": True},
    KSM: {"honor_labels": True},
    KUEUE: {"scheme": "https", "tls_config": {"insecure_skip_verify": True}},
}


def managed_jobs() -> dict[str, dict[str, Any]]:
    return {j["job_name"]: j for j in scrape_configuration(plan_of("prod").addons.monitoring)["scrape_configs"]}


def local_jobs(tmp: Path = Path("state")) -> dict[str, dict[str, Any]]:
    cfg = local_prometheus.config(kueue_metrics="127.0.0.1:1", telemetry="127.0.0.1:2", prometheus="127.0.0.1:3",
                                  karpenter_metrics=None, token_file=tmp / "scrape.token", rule_file=tmp / "rules.yaml")
    return {j["job_name"]: j for j in cfg["scrape_configs"]}


def without_discovery(job: dict[str, Any]) -> dict[str, Any]:
    """The job as every scraper must run it: what finds its targets and where this scraper keeps its token aside."""
    out = {k: v for k, v in copy.deepcopy(job).items() if k not in DISCOVERY}
    if "authorization" in out:
        out["authorization"].pop("credentials_file")
    return out


def relabel(labels: dict[str, str], rules: list[dict[str, Any]], *, target: bool = True) -> dict[str, str] | None:
    """Prometheus relabeling for keep, drop, replace and labelkeep (regex anchored, default (.*), separator ;,
    replacement $1 or ${1}); None: dropped. For a target (TARGET), labels starting with __ are removed afterwards, as
    Prometheus does; a series' relabeling (metric_relabel_configs) keeps __name__."""
    out = dict(labels)
    for r in rules:
        action = r.get("action", "replace")
        if action == "labelkeep":
            out = {k: v for k, v in out.items() if re.fullmatch(r["regex"], k)}
            continue
        value = r.get("separator", ";").join(out.get(s, "") for s in r.get("source_labels", []))
        m = re.fullmatch(r.get("regex", "(.*)"), value)
        if action in ("keep", "drop"):
            if (action == "keep") != bool(m):
                return None
        elif action == "replace":
            if m:
                result = re.sub(r"\$\{?(\d)\}?", lambda g: m.group(int(g.group(1))) or "", r.get("replacement", "$1"))
                if result:
                    out[r["target_label"]] = result
                else:
                    out.pop(r["target_label"], None)
        else:
            raise AssertionError(f"relabel action {action} is not emulated here")
    return {k: v for k, v in out.items() if not (target and k.startswith("__"))}


# ---------------------------------------------------------------------------------------------------------------


def test_every_scraper_runs_the_three_jobs_under_the_names_the_rules_read() -> None:
    assert list(managed_jobs()) == [DCGM, KSM, KUEUE, KUBELET]
    assert [j for j in local_jobs() if j in (DCGM, KSM, KUEUE)] == [KUEUE, DCGM, KSM]
    # in-cluster, a ServiceMonitor without jobLabel names the job after the Service: Kueue's
    assert "jobLabel" not in kueue_service_monitor_spec()


def test_local_and_managed_jobs_differ_only_in_how_targets_are_found() -> None:
    local, managed = local_jobs(), managed_jobs()
    for job in (DCGM, KSM, KUEUE):
        assert without_discovery(local[job]) == without_discovery(managed[job]), job
        assert without_discovery(managed[job]) == {"job_name": job, **EXPECTED_SETTINGS[job],
                                                   **({"authorization": {"type": "Bearer"}} if job == KUEUE else {}),
                                                   "relabel_configs": EXPECTED_RELABELINGS[job]}, job
    assert managed[KUEUE]["authorization"]["credentials_file"] == "/var/run/secrets/kubernetes.io/serviceaccount/token"
    assert local[KUEUE]["authorization"]["credentials_file"] == "state/scrape.token"


def test_a_local_target_ends_with_the_labels_an_eks_target_does() -> None:
    """The same relabelings on what each scraper discovers: Kubernetes endpoints discovery on EKS, the static and
    HTTP discovery labels of the local processes."""
    eks_dcgm = {"__address__": "10.0.3.7:9400", "__meta_kubernetes_namespace": "gpu-operator",
                "__meta_kubernetes_service_name": DCGM, "__meta_kubernetes_endpoint_port_name": "gpu-metrics",
                "__meta_kubernetes_pod_name": "nvidia-dcgm-exporter-x7k2p",
                "__meta_kubernetes_pod_container_name": "nvidia-dcgm-exporter",
                "__meta_kubernetes_pod_node_name": "ip-10-0-3-7.ec2.internal"}
    assert relabel(eks_dcgm, managed_jobs()[DCGM]["relabel_configs"]) == {
        "namespace": "gpu-operator", "service": DCGM, "pod": "nvidia-dcgm-exporter-x7k2p",
        "container": "nvidia-dcgm-exporter", "endpoint": "gpu-metrics", "node": "ip-10-0-3-7.ec2.internal"}
    # the telemetry's HTTP discovery of one simulated GPU node (localcluster/telemetry.py, targets)
    from localcluster.telemetry import Telemetry

    t = Telemetry(plan_of("local"))
    t.update([{"metadata": {"name": "train-0", "labels": {"gpu-platform.io/pool": "train"},
                            "annotations": {"kwok.x-k8s.io/node": "fake"}},
               "status": {"allocatable": {"nvidia.com/gpu": "8"}}}], [], [])
    (target,) = t.targets("127.0.0.1:2")
    local = relabel(target["labels"], local_jobs()[DCGM]["relabel_configs"])
    assert local is not None and {k: v for k, v in local.items() if k != "pod"} == {
        "namespace": "gpu-operator", "service": DCGM, "container": "nvidia-dcgm-exporter", "endpoint": "gpu-metrics",
        "node": "train-0", "instance": "train-0:9400"}
    # Kueue and kube-state-metrics: host processes, labelled as their Services' endpoints (no pod, no node)
    for job, service_labels in ((KUEUE, {"namespace": "kueue-system", "service": KUEUE, "endpoint": "https"}),
                                (KSM, {"namespace": "monitoring", "service": KSM, "endpoint": "http"})):
        (group,) = local_jobs()[job]["static_configs"]
        assert relabel(group["labels"], local_jobs()[job]["relabel_configs"]) == service_labels, job
    # a target of another Service or port is not scraped by the job
    assert relabel({**eks_dcgm, "__meta_kubernetes_endpoint_port_name": "metrics"},
                   managed_jobs()[DCGM]["relabel_configs"]) is None


def test_the_in_cluster_service_monitors_carry_the_same_settings() -> None:
    plan = plan_of("prod")
    # Kueue's ServiceMonitor (components/monitoring.py)
    (ep,) = kueue_service_monitor_spec()["endpoints"]
    assert ep == {"port": "https", "path": "/metrics", "scheme": "https", "tlsConfig": {"insecureSkipVerify": True},
                  "bearerTokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token"}
    # dcgm-exporter's, the GPU Operator's (components/gpu_operator.py): honor labels and `node` from the pod's node
    sm = chart_values(plan)["dcgmExporter"]["serviceMonitor"]
    assert sm["honorLabels"] is EXPECTED_SETTINGS[DCGM]["honor_labels"]
    assert sm["relabelings"] == [{"sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": "node",
                                  "action": "replace"}]
    # kube-state-metrics', the chart's (in-cluster: kube-prometheus-stack's subchart)
    values = kube_prometheus_stack_values(plan.addons.monitoring, "grafana_dashboard", "1")
    assert values["kube-state-metrics"]["prometheus"]["monitor"]["http"]["honorLabels"] is True


# ---------------------------------------------------------------------------------------------------------------
# cAdvisor: kube-prometheus-stack's kubelet job in-cluster, the platform's own job on the managed collector

NODE_NAME = "ip-10-0-3-7.ec2.internal"
KUBELET_SERVICE = "kube-prometheus-stack-kubelet"
WORKER = "acceptance-1a2b3c-workers-0-0"
# Series as a kubelet serves them at /metrics/cadvisor (google/cadvisor v0.52.1 metrics/prometheus.go: `interface` on
# network series, `device` on block I/O; the kubelet's namespace, pod and container; an empty label is no label): a
# pod's network, a container's block I/O, a host-network pod's network on a CNI interface, the node's own cgroup, and
# a family the platform does not read.
POD_NETWORK = {"__name__": "container_network_receive_bytes_total", "id": "/kubepods/besteffort/pod1a2b",
               "namespace": "team-a", "pod": WORKER, "interface": "eth0"}
CONTAINER_READS = {"__name__": "container_fs_reads_bytes_total", "id": "/kubepods/besteffort/pod1a2b/0f1e",
                   "image": "registry.example/train:1", "name": "0f1e", "namespace": "team-a", "pod": WORKER,
                   "container": "trainer", "device": "/dev/nvme1n1"}
HOST_NETWORK_ON_CNI = {"__name__": "container_network_transmit_bytes_total", "id": "/kubepods/burstable/pod9f8e",
                       "namespace": "kube-system", "pod": "aws-node-x1k2p", "interface": "cni0"}
NODE_CGROUP = {"__name__": "container_network_receive_bytes_total", "id": "/", "interface": "ens5"}
CPU = {"__name__": "container_cpu_usage_seconds_total", "id": "/kubepods/besteffort/pod1a2b/0f1e",
       "namespace": "team-a", "pod": WORKER, "container": "trainer", "cpu": "total"}


def target(job: dict[str, Any], discovered: dict[str, str]) -> dict[str, str]:
    """A target's labels after the job's relabeling, its reserved ones kept: Prometheus starts from the job's name,
    scheme and metrics_path and the discovered labels, and labels `instance` with the address when none is set
    (prometheus/prometheus scrape/target.go, PopulateLabels)."""
    base = {"job": job["job_name"], "__scheme__": job.get("scheme", "http"),
            "__metrics_path__": job.get("metrics_path", "/metrics"), **discovered}
    out = relabel(base, job["relabel_configs"], target=False)
    assert out is not None
    return {"instance": out["__address__"], **out}


def series(job: dict[str, Any], discovered: dict[str, str], sample: dict[str, str]) -> dict[str, str] | None:
    """A sample's labels as stored: the target's (without the reserved ones) on it, the sample's winning with
    honor_labels and the target's otherwise (no label of cAdvisor's is a target label here), then the job's
    metric_relabel_configs."""
    labels = {k: v for k, v in target(job, discovered).items() if not k.startswith("__")}
    merged = {**labels, **sample} if job.get("honor_labels") else {**sample, **labels}
    return relabel(merged, job["metric_relabel_configs"], target=False)


def managed_cadvisor() -> dict[str, Any]:
    return managed_jobs()[KUBELET]


NODE_DISCOVERED = {"__address__": "10.0.3.7:10250", "__meta_kubernetes_node_name": NODE_NAME}


def test_the_managed_collector_reaches_each_nodes_cadvisor_through_the_api_server() -> None:
    """One target per node, all at the API server's address (the only host name a managed collector resolves), each
    on its node's proxy path (AMP-collector-how-to.html, "Scraper configuration"), labelled with the node."""
    t = target(managed_cadvisor(), NODE_DISCOVERED)
    assert (t["__address__"], t["__scheme__"], t["__metrics_path__"]) == (
        "kubernetes.default.svc:443", "https", "/api/v1/nodes/ip-10-0-3-7.ec2.internal/proxy/metrics/cadvisor")
    assert {k: v for k, v in t.items() if not k.startswith("__")} == {
        "job": "kubelet", "instance": "kubernetes.default.svc:443", "node": NODE_NAME, "metrics_path": "/metrics/cadvisor"}


def test_the_managed_collector_keeps_only_the_pods_byte_counters_and_their_labels() -> None:
    """What AMP ingests of a node's cAdvisor: the four byte counters of pods, with the labels that tell them apart;
    cAdvisor's id, image and name go; the node's cgroups, a host-network pod's CNI interfaces and every other family
    are dropped."""
    job = managed_cadvisor()
    common = {"job": "kubelet", "instance": "kubernetes.default.svc:443", "node": NODE_NAME,
              "metrics_path": "/metrics/cadvisor", "namespace": "team-a", "pod": WORKER}
    assert series(job, NODE_DISCOVERED, POD_NETWORK) == {
        "__name__": "container_network_receive_bytes_total", **common, "interface": "eth0"}
    assert series(job, NODE_DISCOVERED, CONTAINER_READS) == {
        "__name__": "container_fs_reads_bytes_total", **common, "container": "trainer", "device": "/dev/nvme1n1"}
    for dropped in (HOST_NETWORK_ON_CNI, NODE_CGROUP, CPU):
        assert series(job, NODE_DISCOVERED, dropped) is None, dropped
    # every name step 6 reads survives, under its own name
    for name in NETWORK_METRICS + STORAGE_METRICS:
        kept = series(job, NODE_DISCOVERED, {**CONTAINER_READS, "__name__": name})
        assert kept is not None and kept["__name__"] == name, name


def test_a_pods_cadvisor_series_carry_the_same_labels_in_cluster_and_managed() -> None:
    """kube-prometheus-stack's kubelet job (mode in-cluster, the chart's cAdvisor endpoint with honorLabels) and the
    managed collector's give a pod's network and block I/O series the same job, node, metrics_path, namespace, pod,
    container, interface and device, so step 6 and any query read them alike; only `instance` differs (the kubelet's
    address, the API server's)."""
    in_cluster_job = kubelet_jobs(KUBELET_SERVICE)[1]
    in_cluster_discovered = {**kubelet_discovery_labels(KUBELET_SERVICE, NODE_NAME), "__address__": "10.0.3.7:10250"}
    for sample in (POD_NETWORK, CONTAINER_READS):
        managed = series(managed_cadvisor(), NODE_DISCOVERED, sample)
        in_cluster = series(in_cluster_job, in_cluster_discovered, sample)
        assert managed is not None and in_cluster is not None
        assert {k: in_cluster.get(k) for k in managed if k != "instance"} == {
            k: v for k, v in managed.items() if k != "instance"}, sample
        assert in_cluster["instance"] == "10.0.3.7:10250"
    for dropped in (HOST_NETWORK_ON_CNI, NODE_CGROUP):
        assert series(in_cluster_job, in_cluster_discovered, dropped) is None, dropped
