"""Every series a rule, a dashboard or the report asks for is provided by something: Kueue v0.19.2's
exposition (its source, tests/metric_sources.py), the DCGM and kube-state-metrics families the local
cluster's telemetry serves (the ones dcgm-exporter and kube-state-metrics serve on a real cluster), Prometheus'
own `up`, or a recording rule of the stack. A name nothing provides is an alert that can never fire."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from localcluster.telemetry import Telemetry
from tests.conftest import plan_of
from tests.metric_sources import (
    KUEUE_FAMILIES, KUEUE_HISTOGRAMS, KUEUE_SERIES, SCRAPE_SERIES, metric_names, recorded_names, used_names,
)

STACK = "prod"


def telemetry_series() -> set[str]:
    t = Telemetry(plan_of("local"))
    t.update([{"metadata": {"name": "train-0", "labels": {"gpu-platform.io/pool": "train"},
                            "annotations": {"kwok.x-k8s.io/node": "fake"}}, "status": {}}], [], [])
    return set(re.findall(r"^# TYPE (\S+) ", t.dcgm("train-0") + t.ksm(), re.M))


def test_every_series_read_is_exposed_or_recorded() -> None:
    provided = recorded_names(plan_of(STACK)) | KUEUE_SERIES | telemetry_series() | SCRAPE_SERIES
    missing = {name: where for name, where in used_names(plan_of(STACK)).items() if name not in provided}
    assert missing == {}


def test_the_names_found_are_the_names_used() -> None:
    """The extraction itself: functions, label names and keywords are not taken for metric names."""
    names = metric_names('histogram_quantile(0.5, sum by (cluster_queue, le) (rate(kueue_admission_wait_time_seconds_bucket'
                         '{cluster_queue=~"$cq", resource="nvidia.com/gpu"}[$__rate_interval]))) '
                         '* on (pool) group_left (team) gpu_platform:x:info > bool 0 unless up offset 5m')
    assert names == {"kueue_admission_wait_time_seconds_bucket", "gpu_platform:x:info", "up"}


def _kueue_source() -> Path | None:
    modcache = Path(os.environ.get("GOMODCACHE") or Path.home() / "go" / "pkg" / "mod")
    path = modcache / "sigs.k8s.io" / "kueue@v0.19.2" / "pkg" / "metrics" / "metrics.go"
    return path if path.exists() else None


@pytest.mark.skipif(_kueue_source() is None, reason="Kueue v0.19.2 is not in the Go module cache")
def test_the_kueue_list_is_kueue_s_own() -> None:
    """tests/metric_sources.py against sigs.k8s.io/kueue@v0.19.2 pkg/metrics/metrics.go, where the Go module
    cache has it (scripts/tools/kueue.sh builds Kueue from there)."""
    text = _kueue_source().read_text()
    found = re.findall(r'prometheus\.New(\w+)\(\s*prometheus\.(\w+)Opts\{\s*Subsystem:\s*constants\.(\w+),\s*\n\s*'
                       r'Name:\s*"([a-z_]+)"', text)
    prefix = {"KueueName": "kueue", "MultiKueueName": "multikueue"}
    families = {f"{prefix[sub]}_{name}" for _, _, sub, name in found}
    histograms = {f"{prefix[sub]}_{name}" for _, opts, sub, name in found if opts == "Histogram"}
    assert (families, histograms) == (set(KUEUE_FAMILIES), set(KUEUE_HISTOGRAMS))
