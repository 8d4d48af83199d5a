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

from .kueue_object import KueueObject
from .objects import object_metadata


def multikueue_worker_rules(plan: Plan) -> list[dict[str, Any]]:
    """What a manager does on a worker: mirror the configured integrations' jobs and Kueue Workloads and
    read their status back (Kueue docs, "Setup MultiKueue", create-multikueue-kubeconfig.sh; extended
    from batch and JobSet there to every integration the stack enables)."""
    by_group: dict[str, list[str]] = {}
    for name in plan.spec.addons.kueue.integrations:
        # The manager watches the worker's objects of every integration it runs, plain pods included
        # (a missing one keeps the MultiKueueCluster inactive: "pods is forbidden ... cannot watch").
        for group, _v, plural, _k in cv.KUEUE_INTEGRATION_APIS.get(name, ()):
            by_group.setdefault(group, []).append(plural)
    rules: list[dict[str, Any]] = []
    for group, plurals in sorted(by_group.items()):
        rules.append({"apiGroups": [group], "resources": sorted(set(plurals)),
                      "verbs": ["create", "delete", "get", "list", "watch"]})
        rules.append({"apiGroups": [group], "resources": sorted({f"{p}/status" for p in plurals}), "verbs": ["get"]})
    kueue_group = cv.KUEUE_API_VERSION.split("/")[0]
    rules += [
        {"apiGroups": [kueue_group], "resources": ["workloads"], "verbs": ["create", "delete", "get", "list", "watch"]},
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
    mk = plan.spec.multiKueue
    assert mk is not None
    cfg = pulumi.Config(cv.CONFIG_NAMESPACE)
    clusters: list[pulumi.Resource] = []
    for worker in mk.workers:
        secret_name = cv.multikueue_secret_name(worker.name)
        secret = k8s.core.v1.Secret(
            f"kueue-mk-secret-{worker.name}",
            metadata=object_metadata(secret_name, namespace=cv.KUEUE_NAMESPACE),
            type="Opaque",
            string_data={cv.MULTIKUEUE_KUBECONFIG_KEY: cfg.require_secret(worker.kubeconfigSecret)},
            opts=pulumi.ResourceOptions(parent=parent, depends_on=[*ready, *([namespace] if namespace else [])]),
        )
        clusters.append(KueueObject(
            f"kueue-mk-cluster-{worker.name}",
            {
                "apiVersion": cv.KUEUE_API_VERSION,
                "kind": "MultiKueueCluster",
                "metadata": object_metadata(cv.multikueue_cluster_name(worker.name)),
                "spec": {"clusterSource": {"kubeConfig": {"locationType": "Secret", "location": secret_name}}},
            },
            opts=after(secret),
        ))
    config = KueueObject(
        "kueue-mk-config",
        {
            "apiVersion": cv.KUEUE_API_VERSION,
            "kind": "MultiKueueConfig",
            "metadata": object_metadata(cv.MULTIKUEUE_NAME),
            "spec": {"clusters": [cv.multikueue_cluster_name(w.name) for w in mk.workers]},
        },
        opts=after(*clusters),
    )
    check = KueueObject(
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
