"""Detecting a failed GPU node and repairing it on EKS: the node monitoring agent add-on,
managed node group repair, Karpenter's node repair and one DCGM host engine per GPU node.

Renders are the cached runs of the real program (tests/conftest.py); the expected values are upstream facts
(EKS, Karpenter 1.15, the agent's chart at v1.7.0) written out here, not the code's own constants.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from gpu_platform import conventions as cv
from gpu_platform.plan import build_plan
from gpu_platform.spec import SpecError, load_platform
from tests.conftest import KARPENTER_STACK, plan_of, platform_raw, rendered

ADDON = "aws:eks/addon:Addon"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
RELEASE = "kubernetes:helm.sh/v3:Release"
EKS_STACKS = ("prod", "staging", KARPENTER_STACK)


def addons(stack: str) -> dict[str, dict[str, Any]]:
    return {r.inputs["addonName"]: r.inputs for r in rendered(stack).by_type(ADDON)}


@pytest.mark.parametrize("stack", EKS_STACKS)
def test_eks_stacks_run_the_node_monitoring_agent_at_its_pinned_version(stack: str) -> None:
    """Node repair sees GPU faults only through the agent's AcceleratedHardwareReady condition."""
    agent = addons(stack)["eks-node-monitoring-agent"]
    assert agent["addonVersion"] == "v1.7.0-eksbuild.1"
    assert agent["clusterName"] == plan_of(stack).cluster.name
    # The agent's DCGM host engine tolerates nothing by default; every GPU pool is tainted.
    assert json.loads(agent["configurationValues"]) == {"dcgmAgent": {"tolerations": [{"operator": "Exists"}]}}


def test_an_attached_cluster_without_eks_gets_no_agent() -> None:
    assert "eks-node-monitoring-agent" not in addons("local")
    raw = platform_raw("prod")
    raw.setdefault("addons", {})["nodeMonitoringAgent"] = {"manage": False}
    assert build_plan(load_platform(raw), "us-east-1").cluster.manage_node_monitoring_agent is False


def test_the_agent_version_must_be_an_exact_eks_addon_version() -> None:
    raw = platform_raw("prod")
    raw.setdefault("addons", {})["nodeMonitoringAgent"] = {"version": "latest"}
    with pytest.raises(SpecError) as e:
        load_platform(raw)
    assert "addons.nodeMonitoringAgent.version" in str(e.value)
    assert "vMAJOR.MINOR.PATCH-eksbuild.N" in str(e.value)


@pytest.mark.parametrize("stack", ("prod", "staging"))
def test_every_managed_node_group_repairs_its_nodes(stack: str) -> None:
    groups = rendered(stack).by_type(NODE_GROUP)
    gpu_groups = {f"np-{p.name}" for p in plan_of(stack).managed_node_group_pools}
    assert gpu_groups <= {g.name for g in groups}
    for g in groups:
        assert g.inputs["nodeRepairConfig"] == {"enabled": True}, g.name


def test_karpenter_runs_with_node_repair_on() -> None:
    (release,) = [r.inputs for r in rendered(KARPENTER_STACK).by_type(RELEASE)
                  if r.inputs["name"] == cv.KARPENTER_RELEASE_NAME]
    assert release["values"]["settings"]["featureGates"] == {"nodeRepair": True}


def test_one_dcgm_host_engine_per_gpu_node_the_agents() -> None:
    (op,) = [r.inputs for r in rendered("prod").by_type(RELEASE) if r.inputs["name"] == cv.GPU_OPERATOR_RELEASE_NAME]
    assert op["values"]["dcgm"] == {"enabled": False}
