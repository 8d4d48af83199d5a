"""Add-ons: the GPU Operator's and the EFA device plugin's Helm releases and ConfigMaps, and the EKS add-ons
the platform manages."""

from __future__ import annotations

import re

from .namespaces import KUBE_SYSTEM_NAMESPACE


# ==== Add-ons: Helm releases, their ConfigMaps, EKS add-ons =================================================
# GPU Operator: its Helm release, and the ConfigMaps its chart values name. They live in
# GPU_OPERATOR_NAMESPACE because the operator looks them up in its own namespace.
GPU_OPERATOR_RELEASE_NAME = "gpu-operator"
MIG_PARTED_CONFIGMAP = "mig-parted-config"
DEVICE_PLUGIN_CONFIGMAP = "device-plugin-config"
DCGM_METRICS_CONFIGMAP = "dcgm-exporter-metrics"
# The mig-parted config that turns MIG off: the MIG manager's default for nodes without a mig.config label.
MIG_DISABLED_CONFIG = "all-disabled"
DEFAULT_DEVICE_PLUGIN_CONFIG = "full-gpu"


def mig_config_name(profile: str) -> str:
    """mig-parted config name that partitions every GPU of a node into `profile` slices."""
    return f"all-{profile}"


def device_plugin_config_name(pool: str) -> str:
    return f"pool-{pool}"


# The AWS EFA device plugin's Helm release (its DaemonSet is named after it) and namespace: kube-system, as
# the chart's README installs it (aws/eks-charts stable/aws-efa-k8s-device-plugin/README.md).
EFA_DEVICE_PLUGIN_RELEASE_NAME = "aws-efa-k8s-device-plugin"
EFA_DEVICE_PLUGIN_NAMESPACE = KUBE_SYSTEM_NAMESPACE
# EKS add-ons the platform manages (`aws eks describe-addon-versions` names).
VPC_CNI_ADDON = "vpc-cni"
# The EKS node monitoring agent: node conditions (AcceleratedHardwareReady, ...) that node repair acts on.
NODE_MONITORING_AGENT_ADDON = "eks-node-monitoring-agent"
# The vpc-cni add-on's configuration key that turns on its network policy agent: without it the VPC CNI
# stores NetworkPolicies but enforces none (EKS user guide, "Restrict Pod network traffic with Kubernetes
# network policies", https://docs.aws.amazon.com/eks/latest/userguide/cni-network-policy-configure.html,
# step "Enable the network policy parameter for the add-on": {"enableNetworkPolicy": "true"}, a string;
# the same top-level key, default "false", is in aws/eks-charts stable/aws-vpc-cni/values.yaml).
VPC_CNI_NETWORK_POLICY_KEY = "enableNetworkPolicy"
# EKS add-on that hands Pod Identity credentials to pods (EKS user guide, pod-id-agent-setup.html).
POD_IDENTITY_AGENT_ADDON = "eks-pod-identity-agent"
# An EKS add-on version: vMAJOR.MINOR.PATCH-eksbuild.N (EKS user guide, managing-vpc-cni.html,
# "Versions are specified as major-version.minor-version.patch-version-eksbuild.build-number").
EKS_ADDON_VERSION = re.compile(r"^v(\d+)\.(\d+)\.(\d+)-eksbuild\.\d+$")
