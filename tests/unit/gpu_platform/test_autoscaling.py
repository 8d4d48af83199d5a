"""The Cluster Autoscaler's part of the plan on AWS (gpu_platform/plan/autoscaling.py): what Kueue's ProvisioningRequest
check promises, how long its retries last, which node labels and Auto Scaling group tags the platform adds.

Literal expectations from the stack files (staging: h100-train p5.48xlarge and a10g-dev g5.xlarge whole GPUs,
l40s-infer time-sliced, all scaled by the autoscaler; prod: its elastic pools MIG or time-sliced) and upstream
facts: kubernetes/autoscaler at tag cluster-autoscaler-1.33.6, kubernetes-sigs/kueue at tag v0.19.2.
"""

from __future__ import annotations

from typing import Any

import pytest

from gpu_platform.plan import build_plan
from gpu_platform.spec import load_platform
from tests.conftest import plan_of, platform_raw

GPU_LABEL = "k8s.amazonaws.com/accelerator"


def test_the_checks_reason_says_the_nodes_are_requested_not_provisioned() -> None:
    """best-effort-atomic on AWS is one IncreaseSize marked Provisioned once it succeeds, before any node exists
    (cloudprovider/aws/aws_cloud_provider.go AtomicIncreaseSize: not implemented; core/scaleup/orchestrator/
    executor.go falls back; provisioningrequest/besteffortatomic/provisioning_class.go)."""
    reason = plan_of("prod").provisioning.reason
    assert reason == (
        "Kueue asks the Cluster Autoscaler for all of a job's nodes on l40s-infer, a100-mig, l4-interactive in one "
        "request before it admits the job (best-effort-atomic-scale-up; on AWS one non-atomic increase of the node "
        "group, marked provisioned once requested, before the nodes exist)")
    assert "provisions all" not in reason


@pytest.mark.parametrize("max_node_provision_time,boot,limit,backoffs", [
    # boot = maxNodeProvisionTime + 15 min (GPUs allocatable after Ready, core/static_autoscaler.go).
    ("15m", 1800, 5, (60, 120, 240, 480, 960)),                      # 1860 s
    ("5m", 1200, 5, (60, 120, 240, 480, 960)),                       # 4 retries: 900 s, short
    ("45m", 3600, 6, (60, 120, 240, 480, 960, 1800)),                # 3660 s
    ("1h30m", 6300, 8, (60, 120, 240, 480, 960, 1800, 1800, 1800)),  # 7260 s; 7 retries: 5460 s
])
def test_the_retries_backoffs_cover_the_boot(max_node_provision_time: str, boot: int, limit: int,
                                             backoffs: tuple[int, ...]) -> None:
    """Kueue's n-th retry waits 60 s * 2^(n-1), at most 1800 s (kueue pkg/workload/admissionchecks.go
    UpdateAdmissionCheckRequeueState with the plan's base and cap, Kueue's own defaults)."""
    raw = platform_raw("prod")
    raw["addons"]["clusterAutoscaler"] = {"maxNodeProvisionTime": max_node_provision_time}
    p = build_plan(load_platform(raw, "us-east-1"), "us-east-1").provisioning
    assert (p.node_boot_seconds, p.retry_limit, p.retry_base_seconds, p.retry_max_seconds) == (boot, limit, 60, 1800)
    assert p.retry_backoffs == backoffs
    assert sum(backoffs) >= boot > sum(backoffs[:-1])


def test_no_retry_strategy_where_the_check_is_off() -> None:
    p = plan_of("local").provisioning
    assert (p.enabled, p.flavors, p.retry_limit) == (False, (), 0)


def pools(stack_or_raw: Any) -> dict[str, Any]:
    if isinstance(stack_or_raw, str):
        plan = plan_of(stack_or_raw)
    else:
        plan = build_plan(load_platform(stack_or_raw, "us-east-1"), "us-east-1")
    return {p.name: p for p in plan.pools}


def test_the_gpu_label_is_on_whole_gpu_pools_the_autoscaler_scales_only() -> None:
    """cloudprovider/aws/README.md, "Special note on GPU instances": k8s.amazonaws.com/accelerator=<gpu-type>.
    Whole GPUs only: gpu_processor.go counts a labelled node with no allocatable nvidia.com/gpu as unready, which a
    MIG or time-sliced node stays."""
    staging = pools("staging")
    assert {name: p.group_labels.get(GPU_LABEL) for name, p in staging.items()} == {
        "h100-train": "nvidia-h100-80gb", "l40s-infer": None, "a10g-dev": "nvidia-a10g-24gb"}
    # The pool's own labels (the flavor's selector, the simulated nodes) are the same whoever scales the pool.
    assert GPU_LABEL not in staging["h100-train"].labels and GPU_LABEL not in staging["h100-train"].node_labels
    assert {name: p.group_labels.get(GPU_LABEL) for name, p in pools("prod").items()} == dict.fromkeys(
        ("h100-train", "h200-train", "l40s-infer", "a100-mig", "l4-interactive"))
    # Nothing scales the group without the autoscaler, and a reserved group is never its: no label then either.
    raw = platform_raw("staging")
    raw["addons"]["clusterAutoscaler"] = {"install": False}
    raw["pools"][0]["capacity"]["min"] = 1  # h100-train: topology-aware, refused at min 0 without the autoscaler
    assert [name for name, p in pools(raw).items() if GPU_LABEL in p.group_labels] == []


def test_the_platform_tags_no_standard_discovery_key() -> None:
    """EKS puts k8s.io/cluster-autoscaler/enabled and .../<cluster> on every managed node group's Auto Scaling
    group itself (EKS user guide, managed-node-groups.html), so the platform's tags are its own only."""
    tags = pools("staging")["a10g-dev"].autoscaler_tags
    assert sorted(tags) == [
        "gpu-platform.io/capacity",
        "k8s.io/cluster-autoscaler/node-template/label/gpu-platform.io/accelerator",
        "k8s.io/cluster-autoscaler/node-template/label/gpu-platform.io/fabric",
        "k8s.io/cluster-autoscaler/node-template/label/gpu-platform.io/pool",
        "k8s.io/cluster-autoscaler/node-template/label/gpu-platform.io/sharing",
        "k8s.io/cluster-autoscaler/node-template/label/gpu-platform.io/topology",
        "k8s.io/cluster-autoscaler/node-template/label/gpu-platform.io/workload",
        "k8s.io/cluster-autoscaler/node-template/label/k8s.amazonaws.com/accelerator",
        "k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu",
        "k8s.io/cluster-autoscaler/node-template/taint/gpu-platform.io/workload",
        "k8s.io/cluster-autoscaler/node-template/taint/nvidia.com/gpu",
    ]
    assert plan_of("staging").cluster_autoscaler.discovery_tags == (
        "k8s.io/cluster-autoscaler/enabled", "k8s.io/cluster-autoscaler/ml-staging", "gpu-platform.io/capacity=elastic")
