"""Kueue's controller Configuration and Helm chart values, derived from the plan.

One function produces the Configuration both places run: the chart on a real cluster (as its
`managerConfig.controllerManagerConfigYaml`) and the Kueue host process of the live local cluster. The
local cluster may change only how the process listens and finds its certificates (`LOCAL_ONLY_KEYS`),
never a queueing decision: fair sharing, waitForPodsReady, integrations, preemption and resources are the
production values (a test compares the two).

Field names are those of Kueue 0.19 (`config.kueue.x-k8s.io/v1beta2`, apis/config/v1beta2/
configuration_types.go, and the chart's charts/kueue/values.yaml, both at tag v0.19.2 of
github.com/kubernetes-sigs/kueue).
"""

from __future__ import annotations

import copy
from typing import Any

import yaml

from . import conventions as cv
from .plan import Plan

# The released chart (hack/helm-chart-package.sh of the release: charts are pushed to
# registry.k8s.io/kueue/charts and their image is rewritten to registry.k8s.io/kueue/kueue:<tag>,
# pullPolicy IfNotPresent). The values file of the source tree points at a staging image instead, so
# the image is pinned here too: the controller always runs the same release as the chart.
KUEUE_CHART = "oci://registry.k8s.io/kueue/charts/kueue"
KUEUE_IMAGE_REPOSITORY = "registry.k8s.io/kueue/kueue"
KUEUE_CONFIG_API_VERSION = "config.kueue.x-k8s.io/v1beta2"

# Settings of the chart's default controller_manager_config.yaml that the chart's own manifests rely on
# (probe port 8081, metrics Service port 8443, webhook Service targetPort 9443, the leader election
# lease): replacing the YAML string replaces all of it, so they are restated verbatim.
CHART_CONTROLLER_DEFAULTS: dict[str, Any] = {
    "health": {"healthProbeBindAddress": ":8081"},
    "metrics": {"bindAddress": ":8443"},
    "webhook": {"port": 9443},
    "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
    "controller": {
        "groupKindConcurrency": {
            "Job.batch": 5,
            "Pod": 5,
            "Workload.kueue.x-k8s.io": 10,
            "LocalQueue.kueue.x-k8s.io": 5,
            "ClusterQueue.kueue.x-k8s.io": 5,
            "ResourceFlavor.kueue.x-k8s.io": 1,
        }
    },
    "clientConnection": {"qps": 300, "burst": 500},
}

# All-or-nothing admission for distributed jobs (waitForPodsReady; in the v1beta2 Configuration it is
# on when present, there is no `enable`). A job whose pods are not all Ready within the timeout gives its
# quota back and is requeued with exponential backoff; 30m is Kueue's default and leaves room for a GPU
# node to boot and pull a large training image. After BACKOFF_LIMIT requeues the workload is deactivated
# instead of cycling forever.
WAIT_FOR_PODS_READY_TIMEOUT = "30m"
WAIT_FOR_PODS_READY_RECOVERY_TIMEOUT = "15m"
REQUEUE_BACKOFF_LIMIT = 10
REQUEUE_BACKOFF_BASE_SECONDS = 60
REQUEUE_BACKOFF_MAX_SECONDS = 3600
# Fair sharing is on when `fairSharing` is present; these two strategies, in this order, are the
# complete set Kueue accepts (pkg/config/validation.go validStrategySets) and its documented default.
FAIR_SHARING_PREEMPTION_STRATEGIES: tuple[str, ...] = ("LessThanOrEqualToFinalShare", "LessThanInitialShare")

# Resources Kueue must not count against quota: a resource requested by a pod but covered by no
# resource group makes the workload inadmissible ("resource ... unavailable in ClusterQueue",
# pkg/scheduler/flavorassigner). EFA interfaces are a per-node device, not a tenant quota dimension.
EXCLUDED_RESOURCE_PREFIXES: tuple[str, ...] = (cv.EFA_RESOURCE,)

# Internal certificate management, as the chart runs Kueue by default (Kueue's own defaults,
# apis/config/v1beta2/defaults.go: enable, "<release>-webhook-service", "<release>-webhook-server-cert").
# Written out so the local cluster seeds exactly the Secret and names the controller will look for.
INTERNAL_CERT_MANAGEMENT: dict[str, Any] = {
    "enable": True,
    "webhookServiceName": f"{cv.KUEUE_RELEASE_NAME}-webhook-service",
    "webhookSecretName": f"{cv.KUEUE_RELEASE_NAME}-webhook-server-cert",
}

# The only top-level keys the local cluster's Kueue process may set differently from production: where
# it listens (loopback ports chosen per cluster, so two clusters and a user's can run side by side),
# where its webhook certificate lives (a file, not a mounted Secret), leader election (one process;
# a restart must not wait out a lease), waitForPodsReady.timeout and multiKueue.workerLostTimeout (tests
# use seconds, not 30m and 15m).
LOCAL_ONLY_KEYS: tuple[str, ...] = ("health", "metrics", "webhook", "leaderElection")
LOCAL_ONLY_PATHS: tuple[tuple[str, ...], ...] = (("waitForPodsReady", "timeout"), ("multiKueue", "workerLostTimeout"))


def controller_config(plan: Plan) -> dict[str, Any]:
    """The controller's Configuration (config.kueue.x-k8s.io/v1beta2)."""
    addons = plan.spec.addons
    config: dict[str, Any] = {
        "apiVersion": KUEUE_CONFIG_API_VERSION,
        "kind": "Configuration",
        "namespace": cv.KUEUE_NAMESPACE,
        **copy.deepcopy(CHART_CONTROLLER_DEFAULTS),
    }
    # Per-ClusterQueue quota and usage metrics (kueue_cluster_queue_resource_usage, ..._nominal_quota).
    config["metrics"] = {**config["metrics"], "enableClusterQueueResources": True}
    config["internalCertManagement"] = dict(INTERNAL_CERT_MANAGEMENT)
    # Kueue manages workloads only in tenant namespaces (tenancy labels every team namespace with the
    # team key); platform namespaces are never gated. Kueue requires that kube-system and its own
    # namespace are excluded, which a label they never carry guarantees.
    config["managedJobsNamespaceSelector"] = {"matchExpressions": [{"key": cv.TEAM, "operator": "Exists"}]}
    config["waitForPodsReady"] = {
        "timeout": WAIT_FOR_PODS_READY_TIMEOUT,
        "recoveryTimeout": WAIT_FOR_PODS_READY_RECOVERY_TIMEOUT,
        "blockAdmission": False,
        "requeuingStrategy": {
            "timestamp": "Eviction",
            "backoffLimitCount": REQUEUE_BACKOFF_LIMIT,
            "backoffBaseSeconds": REQUEUE_BACKOFF_BASE_SECONDS,
            "backoffMaxSeconds": REQUEUE_BACKOFF_MAX_SECONDS,
        },
    }
    config["integrations"] = {"frameworks": list(addons.kueue.integrations)}
    config["fairSharing"] = {"preemptionStrategies": list(FAIR_SHARING_PREEMPTION_STRATEGIES)}
    config["resources"] = {"excludeResourcePrefixes": list(EXCLUDED_RESOURCE_PREFIXES)}
    config["objectRetentionPolicies"] = object_retention_policies(plan)
    return config


def object_retention_policies(plan: Plan) -> dict[str, Any]:
    """What Kueue deletes on its own (apis/config/v1beta2/configuration_types.go, ObjectRetentionPolicies).

    `afterDeactivatedByKueue`: a Job Kueue deactivated (requeued REQUEUE_BACKOFF_LIMIT times without its pods
    becoming ready) stays suspended and never finishes, so its ttlSecondsAfterFinished never fires; Kueue
    deletes the Job itself (pkg/controller/jobframework/reconciler.go handleWorkloadAfterDeactivatedPolicy)
    after the same time a finished Job is kept. `afterFinished` stays unset: a finished Job's Workload goes
    with the Job (Kueue makes the Job its owner, so the garbage collector deletes it at the Job's TTL), and
    deleting it earlier would drop the record of where and when the Job ran while the Job is still there."""
    return {"workloads": {"afterDeactivatedByKueue": f"{plan.job_ttl_seconds}s"}}


def local_controller_config(
    plan: Plan,
    *,
    health_port: int,
    metrics_port: int,
    webhook_port: int,
    cert_dir: str,
    pods_ready_timeout: str | None = None,
    worker_lost_timeout: str | None = None,
) -> dict[str, Any]:
    """`controller_config` with only the `LOCAL_ONLY_KEYS` (and `LOCAL_ONLY_PATHS`) changed for a host process
    on loopback: ports, the webhook certificate directory, no leader election, optionally a short
    waitForPodsReady timeout for tests."""
    config = controller_config(plan)
    config["health"] = {"healthProbeBindAddress": f"127.0.0.1:{health_port}"}
    config["metrics"] = {**config["metrics"], "bindAddress": f"127.0.0.1:{metrics_port}"}
    config["webhook"] = {"host": "127.0.0.1", "port": webhook_port, "certDir": cert_dir}
    config["leaderElection"] = {"leaderElect": False}
    if pods_ready_timeout is not None:
        config["waitForPodsReady"] = {**config["waitForPodsReady"], "timeout": pods_ready_timeout}
    if worker_lost_timeout is not None:
        config["multiKueue"] = {**config.get("multiKueue", {}), "workerLostTimeout": worker_lost_timeout}
    return config


def chart_values(plan: Plan) -> dict[str, Any]:
    """Helm values of the Kueue chart; every key exists in the chart's values.yaml (a test checks)."""
    version = plan.spec.addons.kueue.version
    return {
        "controllerManager": {
            "manager": {
                "image": {
                    "repository": KUEUE_IMAGE_REPOSITORY,
                    "tag": f"v{version.removeprefix('v')}",
                    "pullPolicy": "IfNotPresent",
                },
            },
        },
        "managerConfig": {
            "controllerManagerConfigYaml": yaml.safe_dump(controller_config(plan), sort_keys=False),
        },
        # Off: the monitoring component makes Kueue's ServiceMonitor itself, with the `release` label
        # Prometheus selects on; the chart's own would lack it, or scrape Kueue twice. (With it off the
        # chart reads no `metrics.prometheusNamespace`: templates/prometheus/*.yaml are all inside
        # `if .Values.enablePrometheus`, which the rendered-chart test proved by finding the key ignored.)
        "enablePrometheus": False,
    }
