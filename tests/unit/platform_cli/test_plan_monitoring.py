"""`plan` prints the observability layer: its mode and sizes, and the estimate at the stack's capacity.max and at
1,000 GPU nodes; `validate` and `plan` warn when a size set in the spec is short."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import yaml

from platform_cli.cli import main
from tests.conftest import stack_doc


def plan(capsys, *args: str) -> str:
    assert main(["plan", *args]) == 0
    return capsys.readouterr().out


def test_plan_prints_prods_monitoring_at_the_stack_and_at_a_thousand_nodes(capsys) -> None:
    out = plan(capsys, "--stack", "prod")
    section = out[out.index("Monitoring\n=========="):out.index("Team cost at nominal quota")]
    assert ("mode in-cluster: kube-prometheus-stack 88.5.3, retention 15 days, gp3 volume 26 GiB (sized), memory "
            "2 GiB (sized); no alert receivers") in section
    # prod at capacity.max (tests/unit/gpu_platform/test_monitoring_sizing.py works the parts): 52 GPU nodes,
    # 272,759 series / 30 s = 9,092 samples/s, x 30 days x 86,400 s = 23.6 B samples; 26 GiB for 15 days
    rows = [line.split("  ") for line in section.splitlines() if line.startswith(("stack at", "1,000 GPU"))]
    cells = [[c.strip() for c in row if c.strip()] for row in rows]
    assert cells == [
        ["stack at capacity.max", "52", "272,759", "9,092", "23.6 B", "2 GiB", "26 GiB"],
        ["1,000 GPU nodes", "1,000", "5,115,435", "170,515", "442.0 B", "29 GiB", "485 GiB"],
    ]
    assert "series by source at capacity.max: dcgm-exporter 29,860," in section


def test_plan_json_carries_the_estimate(capsys) -> None:
    data = json.loads(plan(capsys, "--stack", "prod", "--format", "json"))
    m = data["monitoring"]
    assert (m["mode"], m["chartVersion"], m["volumeGiB"], m["memoryGiB"]) == ("in-cluster", "88.5.3", 26, 2)
    assert m["estimate"]["stack"]["activeSeries"] == 272759
    assert m["estimate"]["at1000Nodes"]["nodes"] == 1000


def test_a_short_volume_is_warned_about_in_plan_and_validate(capsys, tmp_path: Path) -> None:
    doc = copy.deepcopy(stack_doc("prod"))
    doc["config"]["gpu-platform:platform"]["addons"]["monitoring"]["volumeGiB"] = 20
    path = tmp_path / "Pulumi.short.yaml"
    path.write_text(yaml.safe_dump(doc))
    warning = ("addons.monitoring.volumeGiB 20 GiB is short: 272,759 active series at capacity.max (9,092 samples/s) "
               "kept 15 days need 26 GiB; raise it or lower retentionDays")
    assert f"- {warning}" in plan(capsys, str(path))
    assert main(["validate", str(path)]) == 0
    assert f"warning: {warning}" in capsys.readouterr().out


def test_managed_mode_prints_the_workspace_and_no_prometheus_sizes(capsys, tmp_path: Path) -> None:
    doc = copy.deepcopy(stack_doc("prod"))
    doc["config"]["gpu-platform:platform"]["addons"]["monitoring"] = {
        "install": True, "mode": "managed", "retentionDays": 150,
        "receivers": [{"name": "oncall", "type": "sns", "topicArn": "arn:aws:sns:us-east-1:123456789012:gpu"}]}
    path = tmp_path / "Pulumi.managed.yaml"
    path.write_text(yaml.safe_dump(doc))
    out = plan(capsys, str(path))
    assert ("mode managed: Amazon Managed Service for Prometheus workspace (retention 150 days), managed collector, "
            "kube-state-metrics 8.4.0; alerts to oncall (sns: critical/warning)") in out
    # without node-exporter and the kubelet; of cAdvisor the collector's byte counters, 52 targets x 5 + 1,296 pods
    # (672 GPU pods + 52 x 12 daemon pods) x 4 = 5,444: 29,860 + 56,760 + 4,699 + 5,444 + 6,948 = 103,711 series,
    # / 30 s = 3,458 samples/s
    assert "stack at capacity.max  52         103,711        3,458" in out
    assert "cAdvisor (pod bytes) 5,444" in out
    assert "- addons.monitoring.mode managed: the attached cluster must use authentication mode API" in out
