"""Detecting a failed GPU node and repairing it on EKS: the node monitoring agent add-on and node repair.

Two halves that only work together (EKS user guide, node-repair.html and node-health-nma.html):

- The EKS node monitoring agent (a DaemonSet, the `eks-node-monitoring-agent` add-on) reads each node's
  kernel log, the NVIDIA driver's XID errors and DCGM's health checks and sets node conditions:
  `AcceleratedHardwareReady` for GPUs (reasons such as `NvidiaXID79Error`, `DCGMHealthCode<code>`,
  `NvidiaFabricError`), `KernelReady`, `NetworkingReady`, `StorageReady`, `ContainerRuntimeReady`
  (aws/eks-node-monitoring-agent v1.7.0 docs/node-health-issues.adoc, pkg/reasons/reasons.yaml).
- Node repair acts on those conditions and on Ready: a managed node group's `nodeRepairConfig` (here), and
  Karpenter's NodeRepair feature gate for Karpenter pools (components/karpenter.py). Without the agent it
  sees Ready only, which stays True on a node whose GPU has fallen off the bus.

What EKS then does, by default, for a managed node group (EKS user guide, node-repair.html, the table of
default repair actions): `AcceleratedHardwareReady` False for 10 minutes -> the node is rebooted or replaced
depending on the reason (only managed node groups can reboot); `Ready`, `KernelReady`, `NetworkingReady`,
`StorageReady`, `ContainerRuntimeReady` False for 30 minutes -> replaced. Repair pauses by itself in a node
group of more than five nodes when more than 20% of them are unhealthy (a bad AMI or driver would otherwise
replace the whole pool). Those defaults are what EKS documents for accelerated instances; the node groups
enable repair and keep them (no `nodeRepairConfigOverrides`: an override must name one condition and reason
each, and the defaults already tell GPU faults apart by reason).

A repair drains the node: its pods are evicted (condition DisruptionTarget), which the job template's
podFailurePolicy does not count against the job, and Kueue requeues or re-places the job
(gpu_platform/kueue_config.py, docs/submitting-work.md "When a node fails").
"""

from __future__ import annotations

import json
from typing import Any

import pulumi
import pulumi_aws as aws

from gpu_platform import conventions as cv
from gpu_platform.plan import Plan

from .aws_names import ADDON_RESOLVE_CONFLICTS

# The DaemonSet that runs DCGM's host engine for the agent (nv-hostengine, hostPort 5555) tolerates nothing
# by default (charts/eks-node-monitoring-agent/values.yaml at v1.7.0: dcgmAgent.tolerations: []), and every
# GPU pool of the platform is tainted: without a toleration it would run on no GPU node, and the agent's DCGM
# health checks would find no host engine to talk to ("DCGMError", or silently no GPU checks at all). It gets
# the node agent's own toleration (nodeAgent.tolerations: [{operator: Exists}] in the same file). Both keys
# are in the add-on's configuration schema (charts/configuration.schema.json, DCGMAgent.tolerations).
DCGM_AGENT_TOLERATIONS: list[dict[str, str]] = [{"operator": "Exists"}]


def node_monitoring_agent_configuration() -> dict[str, Any]:
    """The add-on's configurationValues: the DCGM host engine on the (tainted) GPU nodes, nothing else changed.
    The GPU Operator's own standalone host engine stays off (its chart default, components/gpu_operator.py),
    so one host engine runs per GPU node."""
    return {"dcgmAgent": {"tolerations": DCGM_AGENT_TOLERATIONS}}


def node_monitoring_agent_addon(
    plan: Plan, cluster_name: pulumi.Input[str], cluster: aws.eks.Cluster | None, parent: pulumi.Resource,
) -> aws.eks.Addon:
    """The eks-node-monitoring-agent add-on at the spec's exact version."""
    return aws.eks.Addon(
        "np-node-monitoring-agent",
        cluster_name=cluster_name,
        addon_name=cv.NODE_MONITORING_AGENT_ADDON,
        addon_version=plan.cluster.node_monitoring_agent_version,
        configuration_values=json.dumps(node_monitoring_agent_configuration(), sort_keys=True),
        resolve_conflicts_on_create=ADDON_RESOLVE_CONFLICTS,
        resolve_conflicts_on_update=ADDON_RESOLVE_CONFLICTS,
        tags=plan.platform_tags,
        opts=pulumi.ResourceOptions(parent=parent, depends_on=[cluster] if cluster else None),
    )


def node_repair_config() -> aws.eks.NodeGroupNodeRepairConfigArgs:
    """Node repair on, with EKS's defaults (see the module docstring). pulumi-aws 7.51.1 exposes the whole
    EKS NodeRepairConfig (enabled, the unhealthy and parallel-repair thresholds, nodeRepairConfigOverrides:
    pulumi_aws/eks/_inputs.py NodeGroupNodeRepairConfigArgs)."""
    return aws.eks.NodeGroupNodeRepairConfigArgs(enabled=True)
