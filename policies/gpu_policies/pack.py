"""Every rule of the pack, in report order, and the PolicyPack that serves them to the engine."""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, Policy, PolicyPack

from . import advisory, isolation, karpenter, labeling, queues, rbac, supply, workloads

PACK_NAME = "gpu-platform-guardrails"

POLICIES: list[Policy] = [
    *labeling.POLICIES,
    *isolation.POLICIES,
    *rbac.POLICIES,
    *queues.POLICIES,
    *karpenter.POLICIES,
    *workloads.POLICIES,
    *supply.POLICIES,
    *advisory.POLICIES,
]


def build_pack() -> PolicyPack:
    """Start the analyzer's gRPC server and serve until the engine stops it (this call blocks)."""
    return PolicyPack(
        name=PACK_NAME,
        policies=POLICIES,
        enforcement_level=EnforcementLevel.MANDATORY,
        description="Labeling and isolation guardrails for gpu-platform: pools, tenants, queues, supply.",
    )
