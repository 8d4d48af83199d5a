"""When a GPU node fails mid-run: Kueue requeues the job whole and not forever, the job
template tells a lost pod from an application error, and the simulated kubelet lets a node fail.

The expected values are upstream facts (Kueue v0.19.2, the Job API, the node lifecycle controller) written
out here, not the code's own constants.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from gpu_platform.jobs import JobRequest, job
from gpu_platform.kueue_config import chart_values, controller_config, local_controller_config
from gpu_platform.plan import build_plan
from gpu_platform.spec import SpecError, load_platform
from localcluster import kwok
from tests.conftest import plan_of, platform_raw

# ---------------------------------------------------------------------------------------------------
# Kueue: a failed node's job is requeued whole, and not forever

def test_kueue_runs_with_topology_aware_failed_node_replacement_pinned_on() -> None:
    config = controller_config(plan_of("prod"))
    assert config["featureGates"] == {
        "TASFailedNodeReplacement": True,
        "TASFailedNodeReplacementFailFast": True,
        "TASReplaceNodeOnPodTermination": True,
        "TASReplaceNodeOnNodeTaints": True,
        # ... and an evicted workload's ProvisioningRequests go with it (elastic pools).
        "CleanupProvisioningRequestsOnEviction": True,
    }
    # The chart passes no --feature-gates of its own (they would conflict with the Configuration's).
    assert "featureGates" not in chart_values(plan_of("prod"))["controllerManager"]


def test_the_requeue_limit_is_the_specs_and_defaults_to_ten() -> None:
    wait = controller_config(plan_of("prod"))["waitForPodsReady"]
    assert wait["recoveryTimeout"] == "15m"
    assert wait["requeuingStrategy"]["backoffLimitCount"] == 10
    raw = platform_raw("prod")
    raw["addons"]["kueue"] = {**raw["addons"].get("kueue", {}), "requeueLimit": 3}
    plan = build_plan(load_platform(raw), "us-east-1")
    assert controller_config(plan)["waitForPodsReady"]["requeuingStrategy"]["backoffLimitCount"] == 3
    chart = yaml.safe_load(chart_values(plan)["managerConfig"]["controllerManagerConfigYaml"])
    assert chart["waitForPodsReady"]["requeuingStrategy"]["backoffLimitCount"] == 3


def test_a_negative_requeue_limit_is_refused_with_its_path() -> None:
    raw = platform_raw("prod")
    raw["addons"]["kueue"] = {**raw["addons"].get("kueue", {}), "requeueLimit": -1}
    with pytest.raises(SpecError) as e:
        load_platform(raw)
    assert "addons.kueue.requeueLimit" in str(e.value)


def test_the_local_kueue_takes_its_gates_from_the_configuration_and_shortens_only_the_waits() -> None:
    plan = plan_of("local")
    local = local_controller_config(plan, health_port=1, metrics_port=2, webhook_port=3, cert_dir="/x",
                                    pods_ready_timeout="20s")
    assert local["featureGates"] == {**controller_config(plan)["featureGates"], "VisibilityOnDemand": False}
    wait = local["waitForPodsReady"]
    assert (wait["timeout"], wait["recoveryTimeout"]) == ("20s", "20s")
    assert wait["requeuingStrategy"] == {"timestamp": "Eviction", "backoffLimitCount": 10,
                                         "backoffBaseSeconds": 20, "backoffMaxSeconds": 3600}
    # Without a test's timeout the waits are production's.
    plain = local_controller_config(plan, health_port=1, metrics_port=2, webhook_port=3, cert_dir="/x")
    assert plain["waitForPodsReady"] == controller_config(plan)["waitForPodsReady"]


# ---------------------------------------------------------------------------------------------------
# The job template

@pytest.mark.parametrize("nodes", (1, 2))
def test_a_lost_pod_is_not_the_jobs_failure_and_an_application_error_is(nodes: int) -> None:
    (j, *_) = job(plan_of("prod"), JobRequest(team="llm-pretrain", pool="h100-train", gpus=8, nodes=nodes, name="t"))
    spec = j["spec"]
    assert spec["template"]["spec"]["restartPolicy"] == "Never"  # podFailurePolicy requires it
    assert spec["podFailurePolicy"] == {"rules": [
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"},
                                                 {"type": "TerminatedByKueue", "status": "True"}]},
        {"action": "FailJob", "onExitCodes": {"containerName": "main", "operator": "NotIn", "values": [0, 137, 143]}},
    ]}
    assert spec["template"]["spec"]["containers"][0]["name"] == "main"
    lost = [t for t in spec["template"]["spec"]["tolerations"] if t["effect"] == "NoExecute"]
    assert lost == [
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60},
        {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60},
    ]


# ---------------------------------------------------------------------------------------------------
# The simulated kubelet: heartbeats, and a failed node that stays failed

def _stage(name: str) -> dict[str, Any]:
    (s,) = [s for s in kwok.stages() if s["metadata"]["name"] == name]
    return s["spec"]


def test_kwok_heartbeats_every_node_within_the_node_lifecycle_grace_period() -> None:
    beat = _stage("gpu-platform-node-heartbeat")
    assert beat["resourceRef"] == {"apiGroup": "v1", "kind": "Node"}
    # At most 25 s between heartbeats: the node lifecycle controller marks a node Unknown after 50 s.
    assert beat["delay"] == {"durationMilliseconds": 20000, "jitterDurationMilliseconds": 25000}
    assert "lastHeartbeatTime" in beat["next"]["statusTemplate"]


FAILED = '.metadata.annotations["sim.gpu-platform.io/node-failed"]'
READY = '.status.conditions.[] | select( .type == "Ready" ) | .status'


@pytest.mark.parametrize("name", ("gpu-platform-node-ready", "gpu-platform-node-heartbeat"))
def test_a_failed_node_is_neither_set_ready_nor_heartbeated(name: str) -> None:
    assert {"key": FAILED, "operator": "NotIn", "values": ["true"]} in _stage(name)["selector"]["matchExpressions"]


def test_a_failed_node_reports_not_ready_at_once_and_keeps_reporting_it() -> None:
    """A stage of its own (not a status written from outside): KWOK keeps a node's queued heartbeat until
    another stage matches the node, and that heartbeat would set it Ready again."""
    fail, keep = _stage("gpu-platform-node-fail"), _stage("gpu-platform-node-failed-heartbeat")
    assert fail["selector"]["matchExpressions"] == [
        {"key": READY, "operator": "NotIn", "values": ["False"]}, {"key": FAILED, "operator": "In", "values": ["true"]}]
    assert "delay" not in fail
    assert keep["selector"]["matchExpressions"] == [
        {"key": READY, "operator": "In", "values": ["False"]}, {"key": FAILED, "operator": "In", "values": ["true"]}]
    assert keep["delay"] == {"durationMilliseconds": 20000, "jitterDurationMilliseconds": 25000}
    for stage in (fail, keep):
        assert 'status: "False", reason: KubeletNotReady' in stage["next"]["statusTemplate"]
