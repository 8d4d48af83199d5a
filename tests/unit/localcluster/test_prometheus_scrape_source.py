"""The live local cluster's Prometheus evaluates the stack's own rule groups. (Its scrape jobs are EKS's:
tests/unit/gpu_platform/test_scrape_jobs.py.)

World: none (files written to a temporary directory, no cluster)."""

from __future__ import annotations

from pathlib import Path


from localcluster import prometheus
from tests.conftest import load_yaml, plan_of


def test_the_local_rule_file_is_the_stacks_rule_groups(tmp_path: Path) -> None:
    from components import alerts

    prometheus.write(plan_of("local"), tmp_path, kueue_metrics="127.0.0.1:1", telemetry="127.0.0.1:2",
                     prometheus="127.0.0.1:3", karpenter_metrics=None, client=None)
    assert load_yaml((tmp_path / prometheus.RULE_FILE).read_text()) == alerts.rule_file(plan_of("local"))
