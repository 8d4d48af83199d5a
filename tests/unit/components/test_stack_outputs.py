"""What `pulumi stack output` shows a user of the prod stack, component by component, as literals read off
Pulumi.prod.yaml (and the local stack's) and the spec's pinned defaults (gpu_platform/workload_controllers.py's
chart versions), not recomputed from the plan.

The render harness records resources, not the stack's outputs, so these call each component's exports() on
a stand-in holding only what that method reads (the plan, or the component's own plan part): a dropped or
renamed output key fails here. World: pure functions on the stacks' plans, no render.
"""

from __future__ import annotations

from types import SimpleNamespace

from components import dashboards
from components.karpenter import KarpenterNodePool
from components.monitoring import Monitoring
from components.workload_controllers import WorkloadControllers
from tests.conftest import KARPENTER_STACK, plan_of


def test_workload_controllers_output_each_controllers_namespace_version_and_frameworks() -> None:
    out = WorkloadControllers.exports(SimpleNamespace(plan=plan_of("prod")))  # type: ignore[arg-type]
    assert out == {"workloadControllers": {
        "jobset": {"namespace": "jobset-system", "version": "0.10.1", "deployed": True,
                   "frameworks": ["jobset.x-k8s.io/jobset"]},
        "trainer": {"namespace": "kubeflow-system", "version": "2.2.1", "deployed": True,
                    "frameworks": ["trainer.kubeflow.org/trainjob"]},
        "leaderWorkerSet": {"namespace": "lws-system", "version": "0.7.0", "deployed": True,
                            "frameworks": ["leaderworkerset.x-k8s.io/leaderworkerset"]},
        "kuberay": {"namespace": "kuberay-system", "version": "1.5.0", "deployed": True,
                    "frameworks": ["ray.io/rayjob", "ray.io/raycluster"]},
    }}


def test_monitoring_outputs_its_namespace_whether_it_is_installed_and_its_dashboards_and_alerts() -> None:
    for stack, installed in (("prod", True), ("local", False)):
        plan = plan_of(stack)
        out = Monitoring.exports(SimpleNamespace(plan=plan, dashboards=dashboards.dashboards(plan)))  # type: ignore[arg-type]
        monitoring = out["monitoring"]
        assert {k: v for k, v in monitoring.items() if k != "alerts"} == {
            "namespace": "monitoring", "installed": installed,
            "dashboards": ["gpu-platform-fleet", "gpu-platform-queues", "gpu-platform-gpu-health"],
        }, stack
        # every alert by name, sorted (the list grows with the rule groups; these are the ones a runbook names)
        assert monitoring["alerts"] == sorted(monitoring["alerts"])
        assert {"DcgmExporterDown", "GpuXid79FallenOffBus", "KueueClusterQueueAtQuota",
                "KueueWorkloadsPendingTooLong"} <= set(monitoring["alerts"])


def test_each_karpenter_pool_outputs_its_nodepool_nodeclass_capacity_labels_and_taints() -> None:
    """tests/fixtures/stacks/staging-karpenter.yaml: h100-train (2 p5.48xlarge in a capacity block, 8 GPUs each)
    and l40s-infer (up to 4 on-demand g6e.12xlarge, 4 GPUs each)."""
    pools = {p.name: p for p in plan_of(KARPENTER_STACK).pools}
    taint = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
    labels = {"gpu-platform.io/pool": "h100-train", "gpu-platform.io/accelerator": "h100-80gb",
              "gpu-platform.io/topology": "8gpu-sxm-nvlink", "gpu-platform.io/fabric": "efa",
              "gpu-platform.io/workload": "training", "gpu-platform.io/sharing": "full-gpu"}
    assert KarpenterNodePool.exports(SimpleNamespace(pool=pools["h100-train"])) == {  # type: ignore[arg-type]
        "provisioner": "karpenter", "nodePool": "h100-train", "ec2NodeClass": "h100-train",
        "instanceType": "p5.48xlarge", "capacityType": "capacity-block", "karpenterCapacityTypes": ["reserved"],
        "capacityGpus": 16, "limits": {"nodes": "2", "nvidia.com/gpu": "16"}, "labels": labels,
        "taints": [taint, {"key": "gpu-platform.io/workload", "value": "training", "effect": "NoSchedule"}],
    }
    infer = KarpenterNodePool.exports(SimpleNamespace(pool=pools["l40s-infer"]))  # type: ignore[arg-type]
    assert {k: v for k, v in infer.items() if k not in ("labels", "taints")} == {
        "provisioner": "karpenter", "nodePool": "l40s-infer", "ec2NodeClass": "l40s-infer",
        "instanceType": "g6e.12xlarge", "capacityType": "on-demand", "karpenterCapacityTypes": ["on-demand"],
        "capacityGpus": 16, "limits": {"nodes": "4", "nvidia.com/gpu": "16"},
    }
