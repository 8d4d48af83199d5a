"""GpuOperator: the NVIDIA GPU Operator's namespace, its MIG and device-plugin ConfigMaps, and its Helm release.

The plan decides how each pool shares its GPUs (full, MIG, time-slicing); this component writes that
down in the operator's own formats:
- a mig-parted config per MIG profile, which the MIG manager applies to nodes labelled
  `nvidia.com/mig.config=<name>` (the node pools put that label on every MIG pool's nodes);
- a device-plugin config per time-sliced pool, selected by `nvidia.com/device-plugin.config=<name>`,
  and a default config for every other node;
- chart values: operands on, tolerations for every pool taint, the MIG strategy, and dcgm-exporter
  told to attach the team and queue pod labels to GPU metrics.

With `addons.gpuOperator.install: false` (the local stack, or an operator installed by someone else)
the namespace and ConfigMaps are still made, so an operator installed another way finds them.

References: GPU Operator docs (docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest):
"GPU Operator with MIG" (custom mig-parted ConfigMap, `config.yaml` key, mig.config label),
"Time-Slicing GPUs in Kubernetes" (device-plugin config, renameByDefault, failRequestsGreaterThanOne,
per-node config label); chart values: ../shared/reference/gpu-operator-v26.7.0-chart-values.yaml.
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import yaml

from gpu_platform import conventions as cv
from gpu_platform.plan import Plan

from .platform_namespace import component_labels, platform_namespace

CHART = "gpu-operator"
CHART_REPO = "https://helm.ngc.nvidia.com/nvidia"
# The chart reads a custom mig-parted config from this key ("ConfigMap MUST have a key named config.yaml",
# chart values migManager.config).
MIG_CONFIG_KEY = "config.yaml"
# dcgm-exporter reads the custom metrics list from this key (chart values dcgmExporter.config).
DCGM_METRICS_KEY = "dcgm-metrics.csv"
# Config format version of mig-parted and of the device plugin's config file.
CONFIG_VERSION = "v1"
# A ServiceMonitor relabeling that copies the scraped pod's node into `node`, so GPU metrics join
# kube-state-metrics node series (the chart values' own dcgmExporter.serviceMonitor example).
NODE_RELABELING: dict[str, Any] = {
    "sourceLabels": ["__meta_kubernetes_pod_node_name"],
    "targetLabel": "node",
    "action": "replace",
}


labels = component_labels


def mig_parted_config(plan: Plan) -> dict[str, Any]:
    """mig-parted `version: v1` config: `all-disabled` plus one uniform layout per MIG profile in use.

    The slice count per GPU is the plan's units_per_gpu (the catalog's slices_per_gpu for the profile on
    the pool's accelerator). Config names are per profile, so two pools with one profile name but a
    different count (1g.10gb is 7 on A100-80GB but 4 on A100-40GB) cannot share a name: that is refused.
    """
    configs: dict[str, list[dict[str, Any]]] = {
        cv.MIG_DISABLED_CONFIG: [{"devices": "all", "mig-enabled": False}],
    }
    owner: dict[str, str] = {}
    for pool in plan.pools:
        if pool.mig_config is None or pool.mig_profile is None:
            continue
        layout = [{"devices": "all", "mig-enabled": True, "mig-devices": {pool.mig_profile: pool.units_per_gpu}}]
        if pool.mig_config in configs and configs[pool.mig_config] != layout:
            raise ValueError(
                f"pools {owner[pool.mig_config]!r} and {pool.name!r} both use MIG config {pool.mig_config!r} "
                f"with different slice counts; use a profile whose geometry is the same on both accelerators"
            )
        configs[pool.mig_config] = layout
        owner.setdefault(pool.mig_config, pool.name)
    return {"version": CONFIG_VERSION, "mig-configs": configs}


def device_plugin_configs(plan: Plan) -> dict[str, dict[str, Any]]:
    """Named device-plugin configs: the default (whole GPUs, or MIG devices under the plan's MIG strategy)
    and one time-slicing config per time-sliced pool.

    `renameByDefault: true` advertises the replicas as `nvidia.com/gpu.shared` (the plan's resource name
    for time-sliced pools), so a pod cannot mistake a slice for a whole GPU; `failRequestsGreaterThanOne`
    rejects a request for two replicas, which would not be two GPUs' worth of compute.
    """
    flags = {"migStrategy": plan.mig_strategy}
    out: dict[str, dict[str, Any]] = {cv.DEFAULT_DEVICE_PLUGIN_CONFIG: {"version": CONFIG_VERSION, "flags": dict(flags)}}
    for pool in plan.pools:
        if pool.device_plugin_config is None:
            continue
        out[pool.device_plugin_config] = {
            "version": CONFIG_VERSION,
            "flags": dict(flags),
            "sharing": {
                "timeSlicing": {
                    "renameByDefault": True,
                    "failRequestsGreaterThanOne": True,
                    "resources": [{"name": cv.GPU_RESOURCE, "replicas": pool.replicas}],
                },
            },
        }
    return out


def operand_tolerations(plan: Plan) -> list[dict[str, str]]:
    """Every pool's taints, once each: the operands (device plugin, GFD, DCGM exporter, MIG manager,
    validator) must run on every GPU node, and our nodes carry a workload taint besides the GPU taint."""
    seen: list[dict[str, str]] = []
    for pool in plan.pools:
        for t in pool.tolerations:
            if t not in seen:
                seen.append(t)
    return seen


def pod_label_allowlist() -> list[str]:
    """Anchored regexes (RE2) for the pod labels dcgm-exporter copies onto GPU metrics: the team and the
    Kueue queue, so utilization is attributable without keeping every pod label (cardinality). dcgm-exporter
    4.8.3 copies them in both modes, releases before it only with KUBERNETES_VIRTUAL_GPUS off (below): the
    recording rules do not rely on it."""
    return ["^" + key.replace(".", "\\.") + "$" for key in cv.GPU_METRIC_POD_LABELS]


def dcgm_exporter_env(plan: Plan) -> list[dict[str, str]]:
    """dcgm-exporter maps GPUs to pods only for `nvidia.com/gpu` and `nvidia.com/mig-*` unless told other
    resource names (NVIDIA_RESOURCE_NAMES, dcgm-exporter >= 3.3.7); time-sliced GPUs shared by several pods
    are attributed to each of them with KUBERNETES_VIRTUAL_GPUS (dcgm-exporter pkg/cmd/app.go flags).

    The setting holds for every pool and, before dcgm-exporter 4.8.3, cost the pod labels on every GPU series,
    so team and queue attribution comes from the recording rules (alerts.POD_ATTRIBUTION; see docs/architecture.md,
    "Attribution does not depend on the exporter's mode")."""
    extra = sorted({p.resource_name for p in plan.pools
                    if p.resource_name != cv.GPU_RESOURCE and not p.resource_name.startswith(cv.MIG_RESOURCE_PREFIX)})
    env: list[dict[str, str]] = []
    if extra:
        env.append({"name": "NVIDIA_RESOURCE_NAMES", "value": ",".join(extra)})
    if any(p.sharing_mode == "time-slicing" for p in plan.pools):
        env.append({"name": "KUBERNETES_VIRTUAL_GPUS", "value": "true"})
    return env


def chart_values(plan: Plan) -> dict[str, Any]:
    """Helm values for the gpu-operator chart. Every key here exists in the chart's default values (or is
    documented there as a commented-out key); tests/unit/components/test_gpu_operator.py enforces it."""
    addons = plan.addons
    tolerations = operand_tolerations(plan)
    return {
        # EKS NVIDIA AMIs ship the driver and the container toolkit; other clusters may need them.
        "driver": {"enabled": addons.gpu_operator.driver},
        "toolkit": {"enabled": addons.gpu_operator.toolkit},
        "cdi": {"enabled": True},
        "nfd": {"enabled": True},
        "gfd": {"enabled": True},
        # mixed keeps MIG slices under their own resource names (nvidia.com/mig-<profile>), which the
        # Kueue flavors quota; the plan chose it.
        "mig": {"strategy": plan.mig_strategy},
        "migManager": {
            "enabled": True,
            "config": {"name": cv.MIG_PARTED_CONFIGMAP, "default": cv.MIG_DISABLED_CONFIG},
        },
        "devicePlugin": {
            "enabled": True,
            "config": {"name": cv.DEVICE_PLUGIN_CONFIGMAP, "default": cv.DEFAULT_DEVICE_PLUGIN_CONFIG},
        },
        "daemonsets": {"tolerations": tolerations},
        # NFD workers label the GPU nodes the operator then targets: they must tolerate our taints too.
        "node-feature-discovery": {
            "worker": {
                "tolerations": [
                    {"key": cv.CONTROL_PLANE_TAINT_KEY, "operator": "Equal", "value": "", "effect": cv.TAINT_EFFECT},
                    *tolerations,
                ],
            },
        },
        # One DCGM host engine per GPU node: on eks stacks the node monitoring agent's (its dcgm-server
        # DaemonSet, hostPort 5555, components/node_pools/node_health.py), which its GPU health checks
        # (AcceleratedHardwareReady) talk to; dcgm-exporter embeds its own. The operator's standalone one is
        # off, as its chart default (values.yaml `dcgm.enabled: false`), and stays so explicitly.
        "dcgm": {"enabled": False},
        "dcgmExporter": {
            "enabled": True,
            "config": {"name": cv.DCGM_METRICS_CONFIGMAP},
            "enablePodLabels": True,
            "podLabelAllowlistRegex": pod_label_allowlist(),
            "env": dcgm_exporter_env(plan),
            "serviceMonitor": {
                # The ServiceMonitor CRD comes with the monitoring stack; without it there is nothing to create.
                "enabled": addons.monitoring.install,
                # Keep the workload pod's namespace/pod labels that dcgm-exporter attaches, instead of
                # renaming them exported_namespace/exported_pod (Prometheus honor_labels).
                "honorLabels": True,
                "additionalLabels": {cv.PROMETHEUS_RELEASE_LABEL: addons.monitoring.prometheus_release},
                "relabelings": [dict(NODE_RELABELING)],
            },
        },
    }


class GpuOperator(pulumi.ComponentResource):
    """The operator's namespace (Pod Security privileged: its operands run privileged with hostPID and
    hostIPC), the platform admins' access to it, the MIG and device-plugin ConfigMaps, and the release."""

    namespace: k8s.core.v1.Namespace
    release: k8s.helm.v3.Release | None

    def __init__(self, name: str, plan: Plan, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:gpu_operator:GpuOperator", name, None, opts)
        self.plan = plan
        # Everything derived first: a plan the operator cannot express registers nothing here.
        self.mig = mig = mig_parted_config(plan)
        self.device_plugin = device_plugin = device_plugin_configs(plan)
        self.values = chart_values(plan)
        addon = plan.addons.gpu_operator
        ns_name = cv.GPU_OPERATOR_NAMESPACE

        # Operands run privileged with hostPID and hostIPC: privileged at every Pod Security mode.
        self.namespace, self.admins = platform_namespace(
            self, plan, ns_name, "gpu-operator", enforce=cv.PSA_LEVELS[0], warn_audit=cv.PSA_LEVELS[0])
        in_ns = pulumi.ResourceOptions(parent=self, depends_on=[self.namespace])

        self.mig_config = k8s.core.v1.ConfigMap(
            f"{ns_name}-{cv.MIG_PARTED_CONFIGMAP}",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=cv.MIG_PARTED_CONFIGMAP, namespace=ns_name, labels=labels("mig-manager"),
            ),
            data={MIG_CONFIG_KEY: yaml.safe_dump(mig, sort_keys=False)},
            opts=in_ns,
        )
        self.device_plugin_config = k8s.core.v1.ConfigMap(
            f"{ns_name}-{cv.DEVICE_PLUGIN_CONFIGMAP}",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=cv.DEVICE_PLUGIN_CONFIGMAP, namespace=ns_name, labels=labels("device-plugin"),
            ),
            data={key: yaml.safe_dump(cfg, sort_keys=False) for key, cfg in device_plugin.items()},
            opts=in_ns,
        )

        self.release = None
        if addon.install:
            self.release = k8s.helm.v3.Release(
                cv.GPU_OPERATOR_RELEASE_NAME,
                name=cv.GPU_OPERATOR_RELEASE_NAME,
                chart=CHART,
                version=addon.version,
                repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=CHART_REPO),
                namespace=ns_name,
                create_namespace=False,
                values=self.values,
                opts=pulumi.ResourceOptions(
                    parent=self, depends_on=[self.namespace, self.mig_config, self.device_plugin_config],
                ),
            )
        self.register_outputs({})

    def exports(self) -> dict[str, Any]:
        addon = self.plan.addons.gpu_operator
        return {
            "gpuOperator": {
                "namespace": cv.GPU_OPERATOR_NAMESPACE,
                "installed": addon.install,
                "chartVersion": addon.version,
                "migStrategy": self.plan.mig_strategy,
                "migConfigs": sorted(self.mig["mig-configs"]),
                "devicePluginConfigs": sorted(self.device_plugin),
            }
        }
