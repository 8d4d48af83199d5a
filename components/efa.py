"""EfaDevicePlugin: the AWS EFA Kubernetes device plugin on the EFA pools' nodes.

The EKS NVIDIA AMIs (AL2023 and Bottlerocket) carry the EFA kernel driver and libfabric, but nothing on
them advertises the devices to the kubelet: without the plugin no node has `vpc.amazonaws.com/efa`, a pod
cannot request it, and NCCL silently falls back to TCP sockets (EKS user guide, "Manage EFA devices on
Amazon EKS", device-management-efa.html: the EFA device plugin advertises an integer count of
`vpc.amazonaws.com/efa`). The plan decides where it runs (pools with EFA interfaces); this component writes
the chart's values. Each EFA interface of a node, EFA-with-ENA or EFA-only, is one device, so a node
advertises PoolPlan.efa_interfaces of them.

Chart: aws-efa-k8s-device-plugin from https://aws.github.io/eks-charts; default values kept in
tests/fixtures/charts/aws-efa-k8s-device-plugin-v0.5.30-values.yaml (every key set here exists there).
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from gpu_platform import conventions as cv
from gpu_platform.plan import Plan

CHART = "aws-efa-k8s-device-plugin"
CHART_REPO = "https://aws.github.io/eks-charts"


def tolerations(plan: Plan) -> list[dict[str, str]]:
    """Every taint of the EFA pools, once: GPU taint and workload taint. The chart adds its own
    CriticalAddonsOnly toleration (templates/daemonset.yaml)."""
    out: list[dict[str, str]] = []
    for pool in plan.efa_pools:
        for t in pool.tolerations:
            if t not in out:
                out.append(t)
    return out


def chart_values(plan: Plan) -> dict[str, Any]:
    """Only the EFA pools' nodes: the fabric label selects them (ethernet pools' instance types may support
    EFA too and would otherwise get a plugin with nothing to advertise). The chart's own node affinity on
    supportedInstanceLabels stays at its default list, which holds every EFA type of the catalog (a test
    checks it)."""
    return {
        "nodeSelector": {cv.FABRIC: cv.FABRIC_EFA},
        "tolerations": tolerations(plan),
    }


class EfaDevicePlugin(pulumi.ComponentResource):
    """The plugin's Helm release in kube-system; made only when the plan has an EFA pool."""

    release: k8s.helm.v3.Release

    def __init__(self, name: str, plan: Plan, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:efa:EfaDevicePlugin", name, None, opts)
        self.plan = plan
        self.values = chart_values(plan)
        addon = plan.addons.efa_device_plugin
        self.release = k8s.helm.v3.Release(
            cv.EFA_DEVICE_PLUGIN_RELEASE_NAME,
            name=cv.EFA_DEVICE_PLUGIN_RELEASE_NAME,
            chart=CHART,
            version=addon.version,
            repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=CHART_REPO),
            namespace=cv.EFA_DEVICE_PLUGIN_NAMESPACE,
            create_namespace=False,
            values=self.values,
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.register_outputs({})

    def exports(self) -> dict[str, Any]:
        return {
            "efaDevicePlugin": {
                "namespace": cv.EFA_DEVICE_PLUGIN_NAMESPACE,
                "chartVersion": self.plan.addons.efa_device_plugin.version,
                "pools": {p.name: {cv.EFA_RESOURCE: p.efa_interfaces} for p in self.plan.efa_pools},
            }
        }
