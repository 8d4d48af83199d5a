"""The platform's Prometheus rules through the real promtool: `check rules` and `promtool test rules`.

The rule file is generated from what the prod stack deploys (the rendered PrometheusRule's groups), so CI
tests exactly the deployed rules. promtool comes from the tool cache (scripts/tools/promtool.sh builds it
from Go modules) or PATH. When it is missing these tests fail in CI (env CI set) and skip locally.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from components import alerts, dashboards
from tests.conftest import plan_of, reference_yaml, rendered, require_tools

HERE = Path(__file__).resolve().parent
TEST_FILES = sorted(HERE.glob("*.test.yaml"))
RULES = "gpu-platform.rules.yaml"
LABELS_ONLY_RULES = "gpu-platform.labels-only.rules.yaml"
DASHBOARD_RULES = "dashboards.rules.yaml"
STACK = "prod"


@pytest.fixture(scope="module")
def promtool() -> str:
    (path,) = require_tools("promtool")
    return str(path)


def deployed_groups() -> list[dict[str, Any]]:
    rule = rendered(STACK).one("kubernetes:monitoring.coreos.com/v1:PrometheusRule", "monitoring-gpu-platform-gpu")
    return rule.inputs["spec"]["groups"]


def dashboard_rule_file() -> dict[str, Any]:
    """Every dashboard query as a recording rule, so `promtool check rules` parses it. Grafana's own
    `$__rate_interval` is not PromQL and becomes a duration; `$var` inside label matchers is just a string."""
    rules = []
    for d in dashboards.dashboards(plan_of(STACK)):
        for i, expr in enumerate(d.expressions):
            rules.append({"record": f"dashboard:{d.uid.replace('-', '_')}:{i}",
                          "expr": expr.replace("$__rate_interval", "5m")})
    return {"groups": [{"name": "dashboards", "rules": rules}]}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("promtool")
    groups = deployed_groups()
    (out / RULES).write_text(yaml.safe_dump({"groups": groups}, sort_keys=False))
    (out / LABELS_ONLY_RULES).write_text(yaml.safe_dump({"groups": alerts.without_annotations(groups)}, sort_keys=False))
    (out / DASHBOARD_RULES).write_text(yaml.safe_dump(dashboard_rule_file(), sort_keys=False))
    for f in TEST_FILES:
        shutil.copy(f, out / f.name)
    return out


CHECKS = {
    "rules": ("check", "rules", RULES),
    "dashboards": ("check", "rules", DASHBOARD_RULES),
    # One `promtool test rules` per test file: they run side by side (promtool runs a file's groups in turn).
    **{f"test {f.name}": ("test", "rules", f.name) for f in TEST_FILES},
}


@pytest.fixture(scope="module")
def runs(promtool: str, workdir: Path) -> dict[str, subprocess.CompletedProcess[str]]:
    """Every promtool run of this module, started at once and each waited for (120 s each at most)."""
    procs = {name: subprocess.Popen([promtool, *args], cwd=workdir, text=True, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE) for name, args in CHECKS.items()}
    out = {}
    try:
        for name, proc in procs.items():
            stdout, stderr = proc.communicate(timeout=120)
            out[name] = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    return out


def test_rules_pass_promtool_check(runs) -> None:
    res = runs["rules"]
    assert res.returncode == 0, res.stdout + res.stderr
    assert "SUCCESS" in res.stdout + res.stderr


@pytest.mark.parametrize("test_file", [f.name for f in TEST_FILES])
def test_alert_unit_tests_pass(runs, test_file: str) -> None:
    res = runs[f"test {test_file}"]
    assert res.returncode == 0, res.stdout + res.stderr
    assert "SUCCESS" in res.stdout + res.stderr


def test_dashboard_queries_are_valid_promql(runs) -> None:
    res = runs["dashboards"]
    assert res.returncode == 0, res.stdout + res.stderr
    assert "SUCCESS" in res.stdout + res.stderr


# ---------------------------------------------------------------------------------------------------
# Without promtool: the unit tests themselves are complete and consistent with the rules.


def _alert_cases() -> list[tuple[str, list[dict[str, Any]]]]:
    out = []
    for f in TEST_FILES:
        doc = reference_yaml(f)
        for group in doc["tests"]:
            for case in group.get("alert_rule_test", []):
                out.append((case["alertname"], case.get("exp_alerts") or []))
    return out


def test_every_alert_has_a_firing_and_a_silent_case() -> None:
    names = {a.alert for a in alerts.alerts(plan_of(STACK))}
    cases = _alert_cases()
    firing = {n for n, exp in cases if exp}
    silent = {n for n, exp in cases if not exp}
    assert names - firing == set(), "alerts without a promtool case that fires them"
    assert names - silent == set(), "alerts without a promtool case where they stay silent"
    assert {n for n, _ in cases} <= names, "promtool cases for alerts that do not exist"


def test_test_files_read_the_generated_rules() -> None:
    for f in TEST_FILES:
        assert reference_yaml(f)["rule_files"] == [LABELS_ONLY_RULES], f.name


def test_every_alert_carries_a_team_or_pool_label_when_it_fires() -> None:
    """Alerts are routed and read by team or pool; each firing case shows the label is there."""
    for name, exp in _alert_cases():
        for alert in exp:
            labels = alert["exp_labels"]
            assert labels["severity"] in alerts.SEVERITIES, name
            if labels.get("node") == "unlabelled" or labels.get("node") == "gpu-x":
                continue  # the deliberate "node without a pool label" cases
            assert "team" in labels or "pool" in labels, f"{name} fires without team or pool: {labels}"


def test_annotations_only_reference_labels_the_alert_has() -> None:
    """A `{{ $labels.x }}` the expression does not produce renders empty: check every summary,
    description and runbook against the labels of the alert's firing cases."""
    firing: dict[str, set[str]] = {}
    for name, exp in _alert_cases():
        for alert in exp:
            if alert["exp_labels"].get("node") in ("unlabelled", "gpu-x"):
                continue
            firing.setdefault(name, set()).update(alert["exp_labels"])
    for alert in alerts.alerts(plan_of(STACK)):
        used = set()
        for text in (alert.summary, alert.description, alert.runbook):
            used |= set(re.findall(r"\$labels\.([A-Za-z_][A-Za-z0-9_]*)", text))
        assert used <= firing[alert.alert], f"{alert.alert} annotations use {used - firing[alert.alert]}"
