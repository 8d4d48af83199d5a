"""addons.monitoring: the three modes, and every combination that cannot work refused by the field to change
with the values that would (as `validate` and `plan` report it: load_platform, then the plan)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from gpu_platform.errors import Problem
from gpu_platform.plan import build_plan
from gpu_platform.spec import SpecError, load_platform
from gpu_platform.spec.monitoring_checks import check_monitoring
from tests.conftest import STACKS, platform_raw

REGION = "us-east-1"
SLACK = {"name": "gpu-alerts", "type": "slack", "secret": {"name": "alert-slack", "key": "url"}, "channel": "#gpu"}
SNS = {"name": "oncall", "type": "sns", "topicArn": "arn:aws:sns:us-east-1:123456789012:gpu-alerts"}


def problems(stack: str, monitoring: dict[str, Any], **other: Any) -> list[Problem]:
    """What validating and planning `stack` with addons.monitoring = `monitoring` reports ([] when accepted)."""
    raw = copy.deepcopy(platform_raw(stack))
    raw["addons"]["monitoring"] = monitoring
    for path, value in other.items():
        node = raw
        keys = path.split(".")
        for key in keys[:-1]:
            node = node.setdefault(key, {})
        node[keys[-1]] = value
    try:
        build_plan(load_platform(raw, REGION), REGION)
    except SpecError as err:
        return err.problems
    return []


def one(found: list[Problem]) -> Problem:
    assert len(found) == 1, found
    return found[0]


@pytest.mark.parametrize("stack", STACKS)
def test_every_stack_validates_with_its_mode(stack: str) -> None:
    raw = platform_raw(stack)
    build_plan(load_platform(raw, REGION), REGION)


def test_prod_chooses_the_in_cluster_stack() -> None:
    assert platform_raw("prod")["addons"]["monitoring"]["mode"] == "in-cluster"


def test_each_mode_with_its_receivers_is_accepted_on_an_eks_stack() -> None:
    assert problems("prod", {"mode": "in-cluster", "receivers": [SLACK]}) == []
    assert problems("prod", {"mode": "managed", "retentionDays": 1095, "receivers": [SNS]}) == []
    assert problems("prod", {"mode": "external"}) == []


def test_an_unknown_mode_is_refused_with_the_valid_ones() -> None:
    p = one(problems("prod", {"mode": "cloud"}))
    assert p.path == "addons.monitoring.mode"
    assert "'external', 'in-cluster' or 'managed'" in p.message


def test_a_mode_that_installs_a_stack_without_install_is_refused() -> None:
    p = one(problems("prod", {"install": False, "mode": "in-cluster"}))
    assert p.path == "addons.monitoring.mode"
    assert "mode 'in-cluster' installs a monitoring stack, and install is false" in p.message


def test_managed_on_an_existing_cluster_is_refused_naming_the_modes_that_work() -> None:
    p = one(problems("local", {"install": True, "mode": "managed"}))
    assert p.path == "addons.monitoring.mode"
    assert "mode 'managed' needs cluster.provider 'eks'" in p.message
    assert "valid with provider 'existing': external, in-cluster" in p.message


def test_managed_needs_two_subnets_for_the_collector() -> None:
    p = one(problems("prod", {"mode": "managed"}, **{"cluster.subnetIds": ["subnet-0a1"]}))
    assert p.path == "cluster.subnetIds"
    assert "at least 2 subnets in two availability zones, got 1" in p.message


def test_managed_retention_beyond_the_workspace_limit_is_refused() -> None:
    p = one(problems("prod", {"mode": "managed", "retentionDays": 1096}))
    assert p.path == "addons.monitoring.retentionDays"
    assert "at most 1095 days" in p.message


def test_in_cluster_without_the_ebs_driver_is_refused_naming_the_data_field() -> None:
    p = one(problems("prod", {"mode": "in-cluster"}, **{"data.ebsCsi.manage": False, "data.ebsCsi.version": "v1.64.0-eksbuild.1"}))
    assert p.path == "data.ebsCsi.manage"
    assert "keeps Prometheus' data on a gp3 volume" in p.message
    assert "or set addons.monitoring.mode to managed or external" in p.message


def test_in_cluster_release_name_over_helms_limit_is_refused() -> None:
    p = one(problems("prod", {"mode": "in-cluster", "prometheusRelease": "k" * 54}))
    assert p.path == "addons.monitoring.prometheusRelease"
    assert "at most 53 characters (got 54)" in p.message


@pytest.mark.parametrize("field", ["volumeGiB", "memoryGiB"])
def test_sizes_outside_in_cluster_are_refused(field: str) -> None:
    p = one(problems("prod", {"mode": "managed", field: 100}))
    assert p.path == f"addons.monitoring.{field}"
    assert "only mode 'in-cluster' runs a Prometheus the stack sizes" in p.message


@pytest.mark.parametrize(("mode", "receiver", "why", "valid"), [
    ("in-cluster", SNS, "the in-cluster Alertmanager has no AWS credentials to publish to SNS",
     "valid: slack, webhook, pagerduty"),
    ("managed", SLACK, "Amazon Managed Service for Prometheus delivers alerts only to Amazon SNS", "valid: sns"),
    ("external", SLACK, "mode 'external' configures no Alertmanager", "valid: none"),
])
def test_a_receiver_the_mode_cannot_deliver_to_is_refused(mode: str, receiver: dict, why: str, valid: str) -> None:
    p = one(problems("prod", {"mode": mode, "receivers": [receiver]}))
    assert p.path == "addons.monitoring.receivers[0].type"
    assert f"cannot be used with mode {mode!r}: {why}" in p.message
    assert p.message.endswith(valid)


def test_duplicate_receiver_names_are_refused() -> None:
    other = {**SLACK, "type": "webhook", "channel": None}
    p = one(problems("prod", {"mode": "in-cluster", "receivers": [SLACK, other]}))
    assert p.path == "addons.monitoring.receivers[1].name"
    assert "duplicate receiver 'gpu-alerts'" in p.message


@pytest.mark.parametrize(("receiver", "message"), [
    ({"name": "a", "type": "pagerduty"}, "type 'pagerduty' needs secret: {name, key} of the Secret holding its routing key"),
    ({"name": "a", "type": "sns", "topicArn": "arn:aws:sqs:us-east-1:123456789012:q"}, "type 'sns' needs topicArn: an SNS topic ARN"),
    ({"name": "a", "type": "webhook", "secret": {"name": "w", "key": "url"}, "channel": "#x"},
     "channel is only for type 'slack', not 'webhook'"),
    ({**SLACK, "severities": []}, "severities is empty"),
])
def test_a_receiver_of_the_wrong_shape_is_refused_at_the_receiver(receiver: dict, message: str) -> None:
    p = one(problems("prod", {"mode": "in-cluster", "receivers": [receiver]}))
    assert p.path == "addons.monitoring.receivers[0]"
    assert message in p.message


def test_a_severity_outside_the_alerts_is_refused_with_the_valid_ones() -> None:
    p = one(problems("prod", {"mode": "in-cluster", "receivers": [{**SLACK, "severities": ["page"]}]}))
    assert p.path == "addons.monitoring.receivers[0].severities[0]"
    assert "'critical', 'warning' or 'info'" in p.message


def test_the_checks_report_every_problem_at_once() -> None:
    """check_monitoring is what checks.py runs with the other cross-field checks: all problems, not the first."""
    raw = copy.deepcopy(platform_raw("local"))
    raw["addons"]["monitoring"] = {"mode": "managed", "volumeGiB": 10, "receivers": [SLACK]}
    from gpu_platform.spec.platform import Platform

    paths = [p.path for p in check_monitoring(Platform.model_validate(raw))]
    assert paths == ["addons.monitoring.mode", "addons.monitoring.volumeGiB", "addons.monitoring.receivers[0].type"]
