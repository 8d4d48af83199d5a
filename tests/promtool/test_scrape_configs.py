"""The scrape configurations the platform writes, through the real promtool: `check config` on the live local
cluster's prometheus.yml (EKS's jobs on static and HTTP discovery whose targets carry Kubernetes' discovery labels) and
on the managed collector's configuration (Kubernetes endpoints discovery), so a field Prometheus does not know or a
relabeling it refuses fails here, before a cluster or an AWS account would refuse it; and `check service-discovery`
on the local jobs, which runs Prometheus' own discovery and relabeling and shows each target with the labels EKS gives
it (gpu_platform/plan/scrape_jobs.py).

World: none (files in a temporary directory; for dcgm-exporter's HTTP discovery, the telemetry's HTTP server in this
process on a snapshot of one simulated GPU node; promtool as in test_promtool.py, from the tool cache)."""

from __future__ import annotations

import json
import subprocess
import threading
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

from gpu_platform.plan.monitoring import scrape_configuration
from localcluster import prometheus, telemetry_server
from localcluster.telemetry import Telemetry
from tests.conftest import plan_of, require_tools


def check_config(promtool: Path, path: Path) -> subprocess.CompletedProcess:
    # --syntax-only: the managed collector's token path exists only inside the collector
    return subprocess.run([str(promtool), "check", "config", "--syntax-only", str(path)], capture_output=True,
                          text=True)


def test_the_local_prometheus_configuration_is_valid(tmp_path: Path) -> None:
    (promtool,) = require_tools("promtool")
    written = prometheus.write(plan_of("local"), tmp_path, kueue_metrics="127.0.0.1:1", telemetry="127.0.0.1:2",
                               prometheus="127.0.0.1:3", karpenter_metrics="127.0.0.1:4", client=None)
    out = subprocess.run([str(promtool), "check", "config", str(written[0])], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "SUCCESS" in out.stdout


def test_the_managed_collectors_configuration_is_valid(tmp_path: Path) -> None:
    (promtool,) = require_tools("promtool")
    path = tmp_path / "collector.yml"
    path.write_text(yaml.safe_dump(scrape_configuration(plan_of("prod").addons.monitoring), sort_keys=False))
    out = check_config(promtool, path)
    assert out.returncode == 0, out.stdout + out.stderr


def discovered(promtool: Path, config: Path, job: str) -> list[dict[str, str]]:
    """The job's targets after Prometheus' relabeling, without the reserved __ labels."""
    out = subprocess.run([str(promtool), "check", "service-discovery", "--timeout=3s", str(config), job],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    results: list[dict[str, Any]] = json.loads(out.stdout)
    return [{k: v for k, v in r["labels"].items() if not k.startswith("__")} for r in results]


def test_prometheus_relabels_the_local_targets_as_eks_targets(tmp_path: Path) -> None:
    (promtool,) = require_tools("promtool")
    t = Telemetry(plan_of("local"))
    t.update([{"metadata": {"name": "train-0", "labels": {"gpu-platform.io/pool": "train"},
                            "annotations": {"kwok.x-k8s.io/node": "fake"}},
               "status": {"allocatable": {"nvidia.com/gpu": "8"}}}], [], [])
    server = ThreadingHTTPServer(("127.0.0.1", 0), telemetry_server.handler(t, "127.0.0.1:0"))
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    telemetry = f"127.0.0.1:{server.server_address[1]}"
    try:
        config, *_ = prometheus.write(plan_of("local"), tmp_path, kueue_metrics="127.0.0.1:16446", telemetry=telemetry,
                                      prometheus="127.0.0.1:16462", karpenter_metrics=None, client=None)
        (dcgm,) = discovered(promtool, config, "nvidia-dcgm-exporter")
        assert dcgm["pod"].startswith("nvidia-dcgm-exporter-")
        assert {k: v for k, v in dcgm.items() if k != "pod"} == {
            "job": "nvidia-dcgm-exporter", "instance": "train-0:9400", "namespace": "gpu-operator",
            "service": "nvidia-dcgm-exporter", "container": "nvidia-dcgm-exporter", "endpoint": "gpu-metrics",
            "node": "train-0"}
        assert discovered(promtool, config, "kueue-controller-manager-metrics-service") == [{
            "job": "kueue-controller-manager-metrics-service", "instance": "127.0.0.1:16446",
            "namespace": "kueue-system", "service": "kueue-controller-manager-metrics-service", "endpoint": "https"}]
        assert discovered(promtool, config, "kube-state-metrics") == [{
            "job": "kube-state-metrics", "instance": telemetry, "namespace": "monitoring",
            "service": "kube-state-metrics", "endpoint": "http"}]
    finally:
        server.shutdown()
        server.server_close()
