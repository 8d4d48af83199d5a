"""The add-ons' plan: what the components install for Kueue, the GPU Operator, the EFA device plugin and
monitoring (plan/monitoring.py), and the MultiKueue workers, taken from the spec once like the pools and teams.

The workload controllers, the Cluster Autoscaler and Karpenter have their own plans (workload_controllers.py,
autoscaling.py, karpenter.py); Kueue's integrations as Kueue runs them are Plan.kueue_integrations.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..spec import Platform
# Monitoring's plan (its mode, the stack it installs, its size) has a module of its own; `install` and
# `prometheus_release` mean what they meant here before the modes.
from .monitoring import MonitoringPlan as MonitoringAddonPlan, plan_monitoring


@dataclass(frozen=True, slots=True)
class KueueAddonPlan:
    install: bool
    version: str
    # addons.kueue.integrations as configured, without the frameworks Kueue implies (Plan.kueue_integrations
    # has those): MultiKueue's worker role and the local cluster's audit policy name exactly these.
    integrations: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class GpuOperatorAddonPlan:
    install: bool
    version: str
    driver: bool
    toolkit: bool


@dataclass(frozen=True, slots=True)
class EfaDevicePluginAddonPlan:
    # Wanted by the spec; installed only with an EFA pool (Plan.installs_efa_device_plugin).
    install: bool
    version: str


@dataclass(frozen=True, slots=True)
class MultiKueueWorkerPlan:
    name: str
    # The Pulumi secret config key holding the worker's kubeconfig (never the kubeconfig itself).
    kubeconfig_secret: str


@dataclass(frozen=True, slots=True)
class AddonsPlan:
    kueue: KueueAddonPlan
    gpu_operator: GpuOperatorAddonPlan
    efa_device_plugin: EfaDevicePluginAddonPlan
    monitoring: MonitoringAddonPlan
    # addons.clusterAutoscaler.scaleDownUnneededTime, its default when the autoscaler is off: how long the
    # simulator keeps an emptied elastic node (the autoscaler's own plan exists only when it is installed).
    scale_down_unneeded_time: str
    # spec multiKueue.workers: the clusters a manager dispatches to (none on a stack without MultiKueue).
    multikueue_workers: tuple[MultiKueueWorkerPlan, ...] = ()


def plan_addons(spec: Platform) -> AddonsPlan:
    a = spec.addons
    mk = spec.multiKueue
    return AddonsPlan(
        kueue=KueueAddonPlan(install=a.kueue.install, version=a.kueue.version,
                             integrations=tuple(a.kueue.integrations)),
        gpu_operator=GpuOperatorAddonPlan(install=a.gpuOperator.install, version=a.gpuOperator.version,
                                          driver=a.gpuOperator.driver, toolkit=a.gpuOperator.toolkit),
        efa_device_plugin=EfaDevicePluginAddonPlan(install=a.efaDevicePlugin.install,
                                                   version=a.efaDevicePlugin.version),
        monitoring=plan_monitoring(spec),
        scale_down_unneeded_time=a.clusterAutoscaler.scaleDownUnneededTime,
        multikueue_workers=tuple(MultiKueueWorkerPlan(w.name, w.kubeconfigSecret) for w in mk.workers) if mk else (),
    )
