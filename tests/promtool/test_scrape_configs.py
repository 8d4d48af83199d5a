"""The scrape configurations the platform writes, through the real promtool's `check config`: the live local cluster's
prometheus.yml (EKS's jobs on static and HTTP discovery whose targets carry Kubernetes' discovery labels) and the
managed collector's configuration (Kubernetes endpoints discovery). A field Prometheus does not know, a relabeling it
refuses or a timeout above its interval fails here, before a cluster or an AWS account would refuse it.

World: none (the files are written to a temporary directory; promtool as in test_promtool.py, from the tool cache)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

from gpu_platform.plan.monitoring import scrape_configuration
from localcluster import prometheus
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
