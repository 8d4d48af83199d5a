"""The simulated nodes' GPU telemetry (localcluster/telemetry.py): dcgm-exporter's series and labels per GPU
and MIG instance, the pods holding them and how busy they are, kube-state-metrics' families, HTTP service
discovery; and the local Prometheus' configuration (localcluster/prometheus.py)."""

from __future__ import annotations

import json
import re
import threading
import urllib.error
import urllib.request
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from components import alerts
from components.monitoring import DCGM_FIELDS
from gpu_platform.stack_files import load_plan
from localcluster import prometheus, telemetry_devices, telemetry_server
from localcluster.telemetry import Telemetry
from localcluster.telemetry_server import refresh_seconds
from tests.conftest import ROOT, load_yaml, plan_of

SIM_STACK = ROOT / "tests" / "simulate" / "stack.yaml"


def node(name: str, pool: str, allocatable: dict[str, str] | None = None, failed: bool = False) -> dict[str, Any]:
    annotations = {"kwok.x-k8s.io/node": "fake"}
    if failed:
        annotations["sim.gpu-platform.io/node-failed"] = "true"
    return {"metadata": {"name": name, "labels": {"gpu-platform.io/pool": pool, "kubernetes.io/os": "linux"},
                         "annotations": annotations},
            "status": {"allocatable": allocatable or {}}}


def pod(name: str, ns: str, node_name: str, resource: str, units: int, busy: str | None = None,
        phase: str = "Running", labels: dict[str, str] | None = None) -> dict[str, Any]:
    ann = {} if busy is None else {"sim.gpu-platform.io/gpu-busy": busy}
    return {"metadata": {"name": name, "namespace": ns, "uid": f"uid-{name}", "annotations": ann,
                         "labels": labels or {}},
            "spec": {"nodeName": node_name, "containers": [{"name": "main", "resources": {"limits": {resource: str(units)}}}]},
            "status": {"phase": phase}}


def samples(text: str, name: str) -> list[tuple[dict[str, str], float]]:
    out = []
    for line in text.splitlines():
        m = re.match(rf"^{name}{{(.*)}} (\S+)$", line)
        if m:
            labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(1)))
            out.append((labels, float(m.group(2))))
    return out


@pytest.fixture(scope="module")
def local() -> Telemetry:
    """The local stack (a time-sliced pool, so dcgm-exporter runs with virtual GPUs): a train node with an
    8-GPU pod at 25%, an empty train node, an infer node with two 1-replica pods, a notebooks (MIG) node
    with a 3-slice pod at 70%."""
    t = Telemetry(plan_of("local"))
    t.update(
        [node("train-0", "train", {"nvidia.com/gpu": "8", "cpu": "190", "memory": "2000Gi"}), node("train-1", "train"),
         node("infer-0", "infer"), node("notebooks-0", "notebooks"),
         {"metadata": {"name": "cpu-0", "labels": {}, "annotations": {}}, "status": {"allocatable": {"cpu": "32"}}}],
        [pod("big", "vision", "train-0", "nvidia.com/gpu", 8, "0.25",
             labels={"gpu-platform.io/team": "vision", "kueue.x-k8s.io/queue-name": "default", "other": "x"}),
         pod("web-a", "serving", "infer-0", "nvidia.com/gpu.shared", 1, "1"),
         pod("web-b", "serving", "infer-0", "nvidia.com/gpu.shared", 1, "0.5"),
         pod("nb", "vision", "notebooks-0", "nvidia.com/mig-1g.10gb", 3, "0.7"),
         pod("done", "vision", "train-1", "nvidia.com/gpu", 8, phase="Succeeded"),
         pod("cpu-work", "vision", "cpu-0", "cpu", 1)],
        [{"metadata": {"name": "job-a", "namespace": "vision"},
          "status": {"conditions": [{"type": "Complete", "status": "True"}]}}],
    )
    return t


def test_a_whole_gpu_pool_reports_each_gpu_with_its_pod_and_declared_activity(local) -> None:
    s = samples(local.dcgm("train-0"), "DCGM_FI_PROF_GR_ENGINE_ACTIVE")
    assert len(s) == 8 and {v for _, v in s} == {0.25}
    labels = s[0][0]
    assert {k: labels[k] for k in ("gpu", "device", "modelName", "hostname", "namespace", "pod", "container",
                                   "DCGM_FI_DRIVER_VERSION")} == {
        "gpu": "0", "device": "nvidia0", "modelName": "NVIDIA H100 80GB HBM3", "hostname": "train-0",
        "namespace": "vision", "pod": "big", "container": "main", "DCGM_FI_DRIVER_VERSION": "570.148.08"}
    assert labels["UUID"].startswith("GPU-") and len({lb["UUID"] for lb, _ in s}) == 8
    # the device's own utilization (the per-process copies read 0: tests/unit/localcluster/test_telemetry_exporter_shape.py)
    assert [v for lb, v in samples(local.dcgm("train-0"), "DCGM_FI_DEV_GPU_UTIL") if "pod" not in lb] == [25] * 8


def test_time_sliced_pods_get_a_copy_per_replica_on_the_least_used_gpus(local) -> None:
    s = samples(local.dcgm("infer-0"), "DCGM_FI_PROF_GR_ENGINE_ACTIVE")
    by_pod = {lb["pod"]: (lb["gpu"], lb["vgpu"], v) for lb, v in s if "pod" in lb}
    # web-a: 100% of one of 4 replicas; web-b on the next GPU: 50% of one replica
    assert by_pod == {"web-a": ("0", "0", 0.25), "web-b": ("1", "0", 0.125)}


def test_a_mig_pod_reports_each_instance_it_holds(local) -> None:
    s = samples(local.dcgm("notebooks-0"), "DCGM_FI_PROF_GR_ENGINE_ACTIVE")
    assert [(lb["gpu"], lb["GPU_I_ID"], lb["GPU_I_PROFILE"], lb["pod"], v) for lb, v in s if "pod" in lb] == [
        ("0", "1", "1g.10gb", "nb", 0.7), ("0", "2", "1g.10gb", "nb", 0.7), ("0", "3", "1g.10gb", "nb", 0.7)]


def test_every_dcgm_field_the_stack_collects_is_declared() -> None:
    t = Telemetry(plan_of("local"))
    t.update([node("train-0", "train")], [], [])
    declared = set(re.findall(r"^# TYPE (\S+) ", t.dcgm("train-0"), re.M))
    assert declared == {f.name for f in DCGM_FIELDS if f.kind != "label"}


def test_without_time_slicing_every_gpu_reports_and_carries_the_allowlisted_pod_labels() -> None:
    t = Telemetry(load_plan(None, str(SIM_STACK))[1])
    assert not t.virtual
    t.update([node("fill-0", "fill")],
             [pod("p", "solo", "fill-0", "nvidia.com/gpu", 2, "0.5",
                  labels={"gpu-platform.io/team": "solo", "kueue.x-k8s.io/queue-name": "default", "other": "x"})], [])
    s = samples(t.dcgm("fill-0"), "DCGM_FI_PROF_GR_ENGINE_ACTIVE")
    assert len(s) == 8
    held = [lb for lb, v in s if v == 0.5]
    assert len(held) == 2 and held[0]["gpu_platform_io_team"] == "solo" and held[0]["kueue_x_k8s_io_queue_name"] == "default"
    assert "other" not in held[0]
    assert [lb.get("pod") for lb, v in s if v == 0.0] == [None] * 6


def test_devices_stay_with_their_pod_and_are_freed_when_it_ends() -> None:
    t = Telemetry(plan_of("local"))
    first = pod("a", "vision", "train-0", "nvidia.com/gpu", 4, "1")
    second = pod("b", "vision", "train-0", "nvidia.com/gpu", 4, "0.5")
    t.update([node("train-0", "train")], [first, second], [])
    t.update([node("train-0", "train")], [second], [])          # a ended
    t.update([node("train-0", "train")], [second, pod("c", "vision", "train-0", "nvidia.com/gpu", 2, "0")], [])
    gpus = {lb["gpu"]: lb["pod"] for lb, _ in samples(t.dcgm("train-0"), "DCGM_FI_PROF_GR_ENGINE_ACTIVE") if "pod" in lb}
    assert gpus == {"0": "c", "1": "c", "4": "b", "5": "b", "6": "b", "7": "b"}


def test_kube_state_metrics_families_carry_only_the_allowlisted_labels(local) -> None:
    text = local.ksm()
    nodes = {lb["node"]: lb for lb, _ in samples(text, "kube_node_labels")}
    assert nodes["train-0"] == {"node": "train-0", "label_gpu_platform_io_pool": "train"}
    assert nodes["cpu-0"] == {"node": "cpu-0"}
    alloc = {(lb["node"], lb["resource"], lb["unit"]): v for lb, v in samples(text, "kube_node_status_allocatable")}
    assert alloc[("train-0", "nvidia_com_gpu", "integer")] == 8
    assert alloc[("train-0", "cpu", "core")] == 190 and alloc[("train-0", "memory", "byte")] == 2000 * 2**30
    big = next(lb for lb, _ in samples(text, "kube_pod_labels") if lb["pod"] == "big")
    assert big == {"namespace": "vision", "pod": "big", "uid": "uid-big", "label_gpu_platform_io_team": "vision",
                   "label_kueue_x_k8s_io_queue_name": "default"}
    phases = {lb["phase"]: v for lb, v in samples(text, "kube_pod_status_phase") if lb["pod"] == "done"}
    assert phases == {"Pending": 0, "Succeeded": 1, "Failed": 0, "Unknown": 0, "Running": 0}
    assert {lb["condition"]: v for lb, v in samples(text, "kube_job_complete")} == {"true": 1, "false": 0, "unknown": 0}


def test_service_discovery_gives_one_exporter_target_per_gpu_node(local) -> None:
    """World: mocks (a snapshot of nodes, no cluster). Each target carries what Kubernetes endpoints discovery gives
    the exporter pod's endpoint, so the local Prometheus relabels it with EKS's job."""
    targets = local.targets("127.0.0.1:9")
    assert [t["labels"]["__meta_kubernetes_pod_node_name"] for t in targets] == [
        "infer-0", "notebooks-0", "train-0", "train-1"]
    t = targets[2]
    assert t["targets"] == ["127.0.0.1:9"]
    assert {k: v for k, v in t["labels"].items() if k != "__meta_kubernetes_pod_name"} == {
        "__metrics_path__": "/dcgm/train-0/metrics", "instance": "train-0:9400",
        "__meta_kubernetes_namespace": "gpu-operator", "__meta_kubernetes_service_name": "nvidia-dcgm-exporter",
        "__meta_kubernetes_endpoint_port_name": "gpu-metrics", "__meta_kubernetes_pod_node_name": "train-0",
        "__meta_kubernetes_pod_container_name": "nvidia-dcgm-exporter"}
    assert t["labels"]["__meta_kubernetes_pod_name"].startswith("nvidia-dcgm-exporter-")


def test_a_failed_node_s_exporter_does_not_answer() -> None:
    t = Telemetry(plan_of("local"))
    t.update([node("train-0", "train", failed=True), node("train-1", "train")], [], [])
    server = ThreadingHTTPServer(("127.0.0.1", 0), telemetry_server.handler(t, "127.0.0.1:0"))
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(f"{base}/dcgm/train-0/metrics")
        assert err.value.code == 503
        with urllib.request.urlopen(f"{base}/dcgm/train-1/metrics") as resp:
            assert resp.status == 200
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(f"{base}/dcgm/nope/metrics")
        assert err.value.code == 404
        with urllib.request.urlopen(f"{base}/targets") as resp:
            assert len(json.loads(resp.read())) == 2
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("value, busy", [("0.3", 0.3), ("2", 1.0), ("-1", 0.0), ("lots", 1.0), (None, 1.0)])
def test_a_pod_s_busy_fraction_is_clamped_and_defaults_to_busy(value, busy) -> None:
    assert telemetry_devices.busy_fraction(pod("p", "n", "x", "nvidia.com/gpu", 1, value)) == busy


# ---------------------------------------------------------------------------------------------------
# The local Prometheus


def test_the_prometheus_config_scrapes_kueue_with_a_token_and_the_exporters_with_their_labels(tmp_path: Path) -> None:
    plan = plan_of("local")
    paths = prometheus.write(plan, tmp_path, kueue_metrics="127.0.0.1:16446", telemetry="127.0.0.1:16463",
                             prometheus="127.0.0.1:16462", karpenter_metrics="127.0.0.1:16449", client=None)
    cfg = load_yaml(paths[0].read_text())
    jobs = {j["job_name"]: j for j in cfg["scrape_configs"]}
    assert set(jobs) == {"kueue-controller-manager-metrics-service", "nvidia-dcgm-exporter", "kube-state-metrics",
                         "prometheus", "karpenter"}
    kueue = jobs["kueue-controller-manager-metrics-service"]
    assert kueue["scheme"] == "https" and kueue["tls_config"] == {"insecure_skip_verify": True}
    assert kueue["authorization"] == {"type": "Bearer", "credentials_file": str(tmp_path / "scrape.token")}
    assert kueue["static_configs"] == [{"targets": ["127.0.0.1:16446"], "labels": {
        "__meta_kubernetes_namespace": "kueue-system",
        "__meta_kubernetes_service_name": "kueue-controller-manager-metrics-service",
        "__meta_kubernetes_endpoint_port_name": "https"}}]
    assert jobs["nvidia-dcgm-exporter"]["honor_labels"] is True
    assert jobs["nvidia-dcgm-exporter"]["http_sd_configs"][0]["url"] == "http://127.0.0.1:16463/targets"
    assert jobs["kube-state-metrics"]["static_configs"][0]["labels"]["__metrics_path__"] == "/ksm/metrics"
    assert cfg["rule_files"] == [str(tmp_path / "gpu-platform.rules.yaml")]
    assert load_yaml((tmp_path / "gpu-platform.rules.yaml").read_text()) == alerts.rule_file(plan)
    assert (tmp_path / "scrape.token").stat().st_mode & 0o777 == 0o600
    assert cfg["global"] == {"scrape_interval": "15s", "evaluation_interval": "15s"}


def test_a_shorter_scrape_interval_sets_scraping_evaluation_and_the_telemetrys_reads(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("LOCAL_CLUSTER_SCRAPE_INTERVAL", "1s")
    paths = prometheus.write(plan_of("local"), tmp_path, kueue_metrics="127.0.0.1:1", telemetry="127.0.0.1:2",
                             prometheus="127.0.0.1:3", karpenter_metrics=None, client=None)
    cfg = load_yaml(paths[0].read_text())
    assert cfg["global"] == {"scrape_interval": "1s", "evaluation_interval": "1s"}
    dcgm = next(j for j in cfg["scrape_configs"] if j["job_name"] == "nvidia-dcgm-exporter")
    assert dcgm["http_sd_configs"][0]["refresh_interval"] == "1s"
    assert refresh_seconds() == 1.0
    monkeypatch.setenv("LOCAL_CLUSTER_SCRAPE_INTERVAL", "500ms")
    with pytest.raises(ValueError, match="LOCAL_CLUSTER_SCRAPE_INTERVAL '500ms' is not a whole number of seconds"):
        prometheus.intervals()


def test_the_scraper_may_get_metrics_and_nothing_else() -> None:
    objs = {o["kind"]: o for o in prometheus.scraper_objects()}
    assert objs["ClusterRole"]["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]
    assert objs["Secret"]["type"] == "kubernetes.io/service-account-token"
    assert objs["ClusterRoleBinding"]["subjects"] == [
        {"kind": "ServiceAccount", "name": "gpu-platform-prometheus", "namespace": "kube-system"}]


def test_the_local_prometheus_url_is_the_port_the_cluster_started_it_on(tmp_path: Path) -> None:
    assert prometheus.local_url(tmp_path) is None
    (tmp_path / "cluster.env").write_text("APISERVER_PORT=16443\nETCD_PORT=23790\nSTACK=local\n")
    assert prometheus.local_url(tmp_path) is None          # started without Prometheus
    (tmp_path / "cluster.env").write_text("APISERVER_PORT=16443\nETCD_PORT=23790\nSTACK=local\nPROMETHEUS_PORT=16463\n")
    assert prometheus.local_url(tmp_path) == "http://127.0.0.1:16463"


def test_kueue_workload_conditions_are_served_as_kube_state_metrics_custom_resource_state() -> None:
    t = Telemetry(plan_of("local"))
    workload = {"metadata": {"name": "jobset-train-1a2b3", "namespace": "vision",
                             "ownerReferences": [{"kind": "JobSet", "name": "train"}]},
                "status": {"conditions": [{"type": "Admitted", "status": "False", "reason": "NoReservation"},
                                          {"type": "Finished", "status": "True", "reason": "Succeeded"}]}}
    t.update([], [], [], [workload])
    got = {(lb["type"], lb["reason"]): (lb["owner_kind"], lb["owner_name"], lb["workload"], lb["namespace"],
                                        lb["customresource_kind"], lb["customresource_version"], v)
           for lb, v in samples(t.ksm(), "kube_kueue_workload_status_condition")}
    assert got == {("Admitted", "NoReservation"): ("JobSet", "train", "jobset-train-1a2b3", "vision", "Workload", "v1beta2", 0),
                   ("Finished", "Succeeded"): ("JobSet", "train", "jobset-train-1a2b3", "vision", "Workload", "v1beta2", 1)}
