"""Namespaces: the platform's own, the workload controllers', Kubernetes' own, and the ones no team may claim."""

from __future__ import annotations


# ==== Namespaces: the platform's, Kubernetes' own, the ones no team may claim ===============================
GPU_OPERATOR_NAMESPACE = "gpu-operator"
KUEUE_NAMESPACE = "kueue-system"
MONITORING_NAMESPACE = "monitoring"
# The workload controllers' namespaces (addons.jobset, trainer, leaderWorkerSet, kuberay): where each
# project's own install docs put it, so a runbook or an upstream issue reads the same. JobSet: charts/jobset/
# README.md ("in the `jobset-system` namespace"); LeaderWorkerSet: site/content/en/docs/installation/_index.md
# (`--namespace lws-system`); Kubeflow Trainer: manifests/overlays/manager/kustomization.yaml (`namespace:
# kubeflow-system`) and its chart README; KubeRay: a namespace of the platform's own (upstream installs into
# `default`, which the platform does not manage).
JOBSET_NAMESPACE = "jobset-system"
TRAINER_NAMESPACE = "kubeflow-system"
LWS_NAMESPACE = "lws-system"
KUBERAY_NAMESPACE = "kuberay-system"
WORKLOAD_CONTROLLER_NAMESPACES: tuple[str, ...] = (JOBSET_NAMESPACE, TRAINER_NAMESPACE, LWS_NAMESPACE, KUBERAY_NAMESPACE)
PLATFORM_NAMESPACES: tuple[str, ...] = (
    GPU_OPERATOR_NAMESPACE, KUEUE_NAMESPACE, MONITORING_NAMESPACE, *WORKLOAD_CONTROLLER_NAMESPACES,
)
# Namespaces a tenant may never claim: Kubernetes' own plus the platform's.
RESERVED_NAMESPACES: tuple[str, ...] = (
    "default", "kube-system", "kube-public", "kube-node-lease", *PLATFORM_NAMESPACES,
)
# Kubernetes' own namespace, where the EFA device plugin, Karpenter and the Cluster Autoscaler run as their
# upstream install docs put them.
KUBE_SYSTEM_NAMESPACE = "kube-system"
