"""MultiKueue across clusters: the manager's clusters, config and admission check, or a worker's account.

Which side a stack deploys is the stack config `gpu-platform:multiKueueRole` (the plan's multikueue_role).
Each worker's kubeconfig comes from a Pulumi secret config value and stays a secret Output all the way into
the Kubernetes Secret.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import pulumi
import pulumi_kubernetes as k8s

from gpu_platform import conventions as cv
from gpu_platform.plan import Plan

from ..kube_object import KubeObject, object_metadata


# The worker's ClusterRole is Kueue's reference role, rule for rule: Kueue v0.19.2
# site/static/examples/multikueue/create-multikueue-kubeconfig.sh. Per Kueue framework (the names of
# `integrations.frameworks`): its workload API, the verbs on it, and whether `get` on its /status follows
# (every kind but plain pods). Frameworks the script does not list get nothing: `deployment` has no
# MultiKueue adapter in v0.19.2 (pkg/controller/jobs/deployment has none; its pods are the `pod`
# integration's, deployment_controller.go ImplicitlyEnabledFrameworkNames), so no manager reads a worker's
# Deployments.
MIRROR = ("create", "delete", "get", "list", "watch")
# ... plus update and patch where the manager also changes the worker's copy after dispatch: Workloads, and
# RayClusters (elastic scale-down: pkg/controller/jobs/ray/ray_multikueue_adapter.go, syncElastic).
MIRROR_AND_EDIT = (*MIRROR, "update", "patch")
REFERENCE_WORKER_RULES: dict[str, tuple[str, str, tuple[str, ...], bool]] = {
    "batch/job": ("batch", "jobs", MIRROR, True),
    "pod": ("", "pods", MIRROR, False),
    "statefulset": ("apps", "statefulsets", MIRROR, True),
    "leaderworkerset.x-k8s.io/leaderworkerset": ("leaderworkerset.x-k8s.io", "leaderworkersets", MIRROR, True),
    "jobset.x-k8s.io/jobset": ("jobset.x-k8s.io", "jobsets", MIRROR, True),
    "kubeflow.org/tfjob": ("kubeflow.org", "tfjobs", MIRROR, True),
    "kubeflow.org/paddlejob": ("kubeflow.org", "paddlejobs", MIRROR, True),
    "kubeflow.org/pytorchjob": ("kubeflow.org", "pytorchjobs", MIRROR, True),
    "kubeflow.org/xgboostjob": ("kubeflow.org", "xgboostjobs", MIRROR, True),
    "kubeflow.org/mpijob": ("kubeflow.org", "mpijobs", MIRROR, True),
    "ray.io/rayjob": ("ray.io", "rayjobs", MIRROR, True),
    "ray.io/raycluster": ("ray.io", "rayclusters", MIRROR_AND_EDIT, True),
    "ray.io/rayservice": ("ray.io", "rayservices", MIRROR, True),
    "workload.codeflare.dev/appwrapper": ("workload.codeflare.dev", "appwrappers", MIRROR, True),
}


def multikueue_worker_rules(plan: Plan) -> list[dict[str, Any]]:
    """What a manager does on a worker: mirror the enabled integrations' jobs and Kueue Workloads, edit the
    copies it scales, read the worker's queues, and read and write status back. Kueue's reference role for
    the enabled integrations only: a verb fewer and the manager's dispatch or scale-down is forbidden on the
    worker; a kind more is a grant nothing uses."""
    kueue_group = cv.KUEUE_API_VERSION.split("/")[0]
    rules: list[dict[str, Any]] = []
    for name in dict.fromkeys(plan.addons.kueue.integrations):
        if name not in REFERENCE_WORKER_RULES:
            continue
        group, plural, verbs, status = REFERENCE_WORKER_RULES[name]
        rules.append({"apiGroups": [group], "resources": [plural], "verbs": list(verbs)})
        if status:
            rules.append({"apiGroups": [group], "resources": [f"{plural}/status"], "verbs": ["get"]})
    rules += [
        {"apiGroups": [kueue_group], "resources": ["workloads"], "verbs": list(MIRROR_AND_EDIT)},
        {"apiGroups": [kueue_group], "resources": ["clusterqueues", "localqueues"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": [kueue_group], "resources": ["workloads/status"], "verbs": ["get", "patch", "update"]},
    ]
    return rules


def multikueue_manager(
    parent: pulumi.Resource,
    plan: Plan,
    ready: Sequence[pulumi.Resource],
    namespace: pulumi.Resource | None,
    after: Callable[..., pulumi.ResourceOptions],
) -> dict[str, pulumi.Resource]:
    """Manager side of MultiKueue: workloads admitted here are dispatched to a worker cluster.

    Each worker's kubeconfig comes from a Pulumi secret config value and stays a secret Output all the
    way into the Kubernetes Secret, so it is encrypted in state and never printed.
    """
    workers = plan.addons.multikueue_workers
    cfg = pulumi.Config(cv.CONFIG_NAMESPACE)
    clusters: list[pulumi.Resource] = []
    for worker in workers:
        secret_name = cv.multikueue_secret_name(worker.name)
        secret = k8s.core.v1.Secret(
            f"kueue-mk-secret-{worker.name}",
            metadata=object_metadata(secret_name, namespace=cv.KUEUE_NAMESPACE),
            type="Opaque",
            string_data={cv.MULTIKUEUE_KUBECONFIG_KEY: cfg.require_secret(worker.kubeconfig_secret)},
            opts=pulumi.ResourceOptions(parent=parent, depends_on=[*ready, *([namespace] if namespace else [])]),
        )
        clusters.append(KubeObject(
            f"kueue-mk-cluster-{worker.name}",
            {
                "apiVersion": cv.KUEUE_API_VERSION,
                "kind": "MultiKueueCluster",
                "metadata": object_metadata(cv.multikueue_cluster_name(worker.name)),
                "spec": {"clusterSource": {"kubeConfig": {"locationType": "Secret", "location": secret_name}}},
            },
            opts=after(secret),
        ))
    config = KubeObject(
        "kueue-mk-config",
        {
            "apiVersion": cv.KUEUE_API_VERSION,
            "kind": "MultiKueueConfig",
            "metadata": object_metadata(cv.MULTIKUEUE_NAME),
            "spec": {"clusters": [cv.multikueue_cluster_name(w.name) for w in workers]},
        },
        opts=after(*clusters),
    )
    check = KubeObject(
        "kueue-mk-admission-check",
        {
            "apiVersion": cv.KUEUE_API_VERSION,
            "kind": "AdmissionCheck",
            "metadata": object_metadata(cv.MULTIKUEUE_NAME),
            "spec": {
                "controllerName": cv.MULTIKUEUE_CONTROLLER_NAME,
                "parameters": {"apiGroup": cv.KUEUE_API_VERSION.split("/")[0], "kind": "MultiKueueConfig",
                               "name": cv.MULTIKUEUE_NAME},
            },
        },
        opts=after(config),
    )
    return {"config": config, "admission-check": check}


def multikueue_worker(
    parent: pulumi.Resource, plan: Plan, ready: Sequence[pulumi.Resource], namespace: pulumi.Resource | None,
) -> dict[str, pulumi.Resource]:
    """Worker side: what a MultiKueue manager authenticates as here, and may do. Its kubeconfig (this
    cluster's server and CA, and the token Kubernetes puts in the token Secret) is what the manager's
    stack takes as a secret config value (README, MultiKueue)."""
    kopts = pulumi.ResourceOptions(parent=parent, depends_on=[*ready, *([namespace] if namespace else [])])
    sa = k8s.core.v1.ServiceAccount(
        "kueue-mk-worker-sa",
        metadata=object_metadata(cv.MULTIKUEUE_WORKER_SERVICE_ACCOUNT, namespace=cv.KUEUE_NAMESPACE),
        opts=kopts,
    )
    role = k8s.rbac.v1.ClusterRole(
        "kueue-mk-worker-role",
        metadata=object_metadata(cv.MULTIKUEUE_WORKER_CLUSTER_ROLE),
        rules=multikueue_worker_rules(plan),
        opts=pulumi.ResourceOptions(parent=parent),
    )
    k8s.rbac.v1.ClusterRoleBinding(
        "kueue-mk-worker-binding",
        metadata=object_metadata(cv.MULTIKUEUE_WORKER_CLUSTER_ROLE),
        role_ref={"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": cv.MULTIKUEUE_WORKER_CLUSTER_ROLE},
        subjects=[{"kind": "ServiceAccount", "name": cv.MULTIKUEUE_WORKER_SERVICE_ACCOUNT, "namespace": cv.KUEUE_NAMESPACE}],
        opts=pulumi.ResourceOptions(parent=parent, depends_on=[role, sa]),
    )
    # A long-lived token the token controller fills in (kubernetes.io/docs/concepts/configuration/secret,
    # "Service account token Secrets"); the stack never reads it, so it never enters the state.
    token = k8s.core.v1.Secret(
        "kueue-mk-worker-token",
        metadata={**object_metadata(cv.MULTIKUEUE_WORKER_TOKEN_SECRET, namespace=cv.KUEUE_NAMESPACE),
                  "annotations": {"kubernetes.io/service-account.name": cv.MULTIKUEUE_WORKER_SERVICE_ACCOUNT}},
        type="kubernetes.io/service-account-token",
        opts=pulumi.ResourceOptions(parent=parent, depends_on=[sa], ignore_changes=["data"]),
    )
    return {"service-account": sa, "token": token}
