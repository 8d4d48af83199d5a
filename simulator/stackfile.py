"""The part of a stack a local cluster can run: its Kubernetes layer on an `existing` cluster.

What needs a cloud account or a download goes (node groups, the cluster, the vpc-cni and EFA add-ons, the
GPU Operator and monitoring charts, MultiKueue workers); what decides queueing stays exactly as written
(pools, cohorts, teams, quotas, priorities, preemption, Kueue's integrations). Kueue itself is the local
cluster's process, with the Configuration this same spec gives the chart.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from gpu_platform.spec import CONFIG_KEY

# Cluster fields only an `eks` stack uses (spec.Cluster).
EKS_ONLY_CLUSTER_FIELDS = ("subnetIds", "create", "nodeRoleArn", "systemPool", "identity", "controlPlaneLogs")
# Team fields only an `eks` stack uses (spec.Team): IAM roles mapped by EKS access entries.
EKS_ONLY_TEAM_FIELDS = ("accessEntries",)


def kubernetes_layer(doc: dict[str, Any]) -> dict[str, Any]:
    """A copy of a Pulumi.<stack>.yaml document with only its Kubernetes layer left to deploy."""
    out = copy.deepcopy(doc)
    platform = out["config"][CONFIG_KEY]
    cluster = platform.setdefault("cluster", {})
    cluster["provider"] = "existing"
    for key in EKS_ONLY_CLUSTER_FIELDS:
        cluster.pop(key, None)
    for team in platform.get("teams") or ():
        for key in EKS_ONLY_TEAM_FIELDS:
            team.pop(key, None)
    addons = platform.setdefault("addons", {})
    for name in ("gpuOperator", "kueue", "monitoring", "efaDevicePlugin"):
        addons.setdefault(name, {})["install"] = False
    # Nothing of the monitoring stack either: its mode's settings (in-cluster sizes, receivers) go with it.
    addons["monitoring"] = {"install": False}
    addons.setdefault("vpcCni", {})["manage"] = False
    platform.pop("multiKueue", None)
    # The data path is EKS's (team buckets reached through EKS Pod Identity, the storage add-ons).
    platform.pop("data", None)
    # The throwaway stack gets a salt of its own; secrets of the real stack (worker kubeconfigs, the
    # cluster's kubeconfig) are neither needed nor decryptable here.
    out.pop("encryptionsalt", None)
    out["config"] = {k: v for k, v in out["config"].items() if k in (CONFIG_KEY, "aws:region")}
    return out


def write_kubernetes_layer(stack_file: Path, out: Path) -> Path:
    out.write_text(yaml.safe_dump(kubernetes_layer(yaml.safe_load(stack_file.read_text())), sort_keys=False))
    return out
