"""Kueue's controller Configuration and Helm chart values, derived from the plan.

One function produces the Configuration both places run: the chart on a real cluster (as its
`managerConfig.controllerManagerConfigYaml`) and the Kueue host process of the live local cluster. The
local cluster may change only how the process listens and finds its certificates (`LOCAL_ONLY_KEYS`) and,
for tests, how long waitForPodsReady waits (`LOCAL_ONLY_PATHS`), never a queueing decision: fair sharing,
the requeue limit, integrations, the failed-node gates, preemption and resources are the production values
(a test compares the two).

Field names are those of Kueue 0.19 (`config.kueue.x-k8s.io/v1beta2`, apis/config/v1beta2/
configuration_types.go, and the chart's charts/kueue/values.yaml, both at tag v0.19.2 of
github.com/kubernetes-sigs/kueue).
"""

from __future__ import annotations

import copy
from typing import Any

import yaml

from . import conventions as cv
from .jobs import duration_seconds
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
# node to boot and pull a large training image. A running job that loses a pod (its node failed) and is
# not whole again within the recovery timeout is stopped the same way: all its pods go, its quota is given
# back and it is requeued (Kueue v0.19.2 pkg/controller/core/workload_controller.go reconcileNotReadyTimeout,
# underlying cause WaitForRecovery). After the plan's requeue limit (addons.kueue.requeueLimit; Kueue counts
# these evictions over the workload's life, pkg/workload/workload.go UpdateRequeueState) the workload is
# deactivated instead of cycling forever.
WAIT_FOR_PODS_READY_TIMEOUT = "30m"
WAIT_FOR_PODS_READY_RECOVERY_TIMEOUT = "15m"
REQUEUE_BACKOFF_BASE_SECONDS = 60
REQUEUE_BACKOFF_MAX_SECONDS = 3600

# What Kueue does when a node of a topology-aware flavor fails (pkg/controller/tas/node_controller.go, Kueue
# v0.19.2); every gate exists there (pkg/features/kube_features.go) and is Beta, on by default since 0.14 or
# 0.17. They are set explicitly because the platform's promise rests on them: a Beta default can change in a
# release, and the Configuration is the one place the behaviour is written down.
# - TASFailedNodeReplacement: a deleted node, or a NotReady one (below), is recorded in the workload's
#   status.unhealthyNodes, and the scheduler looks for a replacement node for the pods it held.
# - TASFailedNodeReplacementFailFast: when there is none at the first attempt, the whole workload is evicted
#   at once (reason NodeFailures, "Workload was evicted as there was no replacement for unhealthy node(s):
#   <node>", pkg/scheduler/scheduler.go evictWorkloadAfterFailedTASReplacement) and requeued without backoff
#   (pkg/controller/jobframework/reconciler.go: Requeued=True for NodeFailures), keeping its priority;
#   a second failed node evicts it too ("multiple TAS assigned node failures, including: ...").
# - TASReplaceNodeOnPodTermination: a NotReady node counts as failed once the workload's pods on it have
#   terminated (taint eviction after the template's not-ready toleration), not while a brief NotReady
#   leaves them running.
# - TASReplaceNodeOnNodeTaints: a node that gains a NoSchedule/NoExecute taint the pods do not tolerate
#   (a cordon before repair) counts as failed the same way.
# Not set: TASReplaceNodeDueToNotReadyOverFixedTime (Deprecated in 0.19, off), FailureRecoveryPolicy (Alpha:
# force-deletes pods stuck terminating on unreachable nodes, opt-in per pod).
TAS_NODE_FAILURE_GATES: dict[str, bool] = {
    "TASFailedNodeReplacement": True,
    "TASFailedNodeReplacementFailFast": True,
    "TASReplaceNodeOnPodTermination": True,
    "TASReplaceNodeOnNodeTaints": True,
}
# Kueue's ProvisioningRequest cleanup on eviction (pkg/features/kube_features.go v0.19.2, Beta and on since
# 0.19): an evicted or preempted workload's ProvisioningRequests are deleted, so the autoscaler stops holding
# nodes for a job that no longer waits for them. Pinned like the TAS gates: the elastic pools' cost rests on it.
# (No gate is needed for the ProvisioningRequest check itself: it is GA since 0.14, and v0.19.2 has no gate
# for it, site/content/en/docs/concepts/admission_check/provisioning_request.md.)
PROVISIONING_GATES: dict[str, bool] = {"CleanupProvisioningRequestsOnEviction": True}
# The API the ProvisioningRequest check needs served (kueue v0.19.2 imports k8s.io/autoscaler/cluster-autoscaler/
# apis/provisioningrequest/autoscaling.x-k8s.io/v1 in cmd/kueue/main.go).
PROVISIONING_REQUEST_API = "autoscaling.x-k8s.io/v1"
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
# a restart must not wait out a lease), the waits of waitForPodsReady and multiKueue.workerLostTimeout
# (tests use seconds, not 30m and 15m), and the VisibilityOnDemand gate (off: its server reads a
# certificate at the fixed path /visibility, which a host process does not have). Kueue takes feature
# gates from the command line or from the Configuration, never both ("feature gates for CLI and
# configuration cannot both specified", pkg/config/validation.go LoadAndValidateFeatureGates), so the
# local process gets that one here too.
LOCAL_ONLY_KEYS: tuple[str, ...] = ("health", "metrics", "webhook", "leaderElection")
LOCAL_ONLY_PATHS: tuple[tuple[str, ...], ...] = (
    ("waitForPodsReady", "timeout"),
    ("waitForPodsReady", "recoveryTimeout"),
    ("waitForPodsReady", "requeuingStrategy", "backoffBaseSeconds"),
    ("multiKueue", "workerLostTimeout"),
    ("featureGates", "VisibilityOnDemand"),
)


def controller_config(plan: Plan) -> dict[str, Any]:
    """The controller's Configuration (config.kueue.x-k8s.io/v1beta2)."""
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
            "backoffLimitCount": plan.kueue_requeue_limit,
            "backoffBaseSeconds": REQUEUE_BACKOFF_BASE_SECONDS,
            "backoffMaxSeconds": REQUEUE_BACKOFF_MAX_SECONDS,
        },
    }
    # The installed controllers' frameworks (the spec refuses one whose controller is not installed), with `pod`
    # where Kueue implies it anyway (workload_controllers.effective_frameworks).
    config["integrations"] = {"frameworks": list(plan.kueue_integrations)}
    config["fairSharing"] = {"preemptionStrategies": list(FAIR_SHARING_PREEMPTION_STRATEGIES)}
    config["resources"] = {"excludeResourcePrefixes": list(EXCLUDED_RESOURCE_PREFIXES)}
    config["objectRetentionPolicies"] = object_retention_policies(plan)
    config["featureGates"] = {**TAS_NODE_FAILURE_GATES, **PROVISIONING_GATES}
    return config


def object_retention_policies(plan: Plan) -> dict[str, Any]:
    """What Kueue deletes on its own (apis/config/v1beta2/configuration_types.go, ObjectRetentionPolicies).

    `afterDeactivatedByKueue`: a Job Kueue deactivated (requeued the plan's requeue limit times without its pods
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
    on loopback: ports, the webhook certificate directory, no leader election, the VisibilityOnDemand gate
    off, optionally short waits for tests. A test's `pods_ready_timeout` shortens every wait of
    waitForPodsReady at once (the timeout, the recovery timeout after a lost pod, and the base of the requeue
    backoff), so that a node failure's whole course (eviction, requeue, readmission) fits in a test; the
    order of events and the requeue limit stay the production ones."""
    config = controller_config(plan)
    config["health"] = {"healthProbeBindAddress": f"127.0.0.1:{health_port}"}
    config["metrics"] = {**config["metrics"], "bindAddress": f"127.0.0.1:{metrics_port}"}
    config["webhook"] = {"host": "127.0.0.1", "port": webhook_port, "certDir": cert_dir}
    config["leaderElection"] = {"leaderElect": False}
    config["featureGates"] = {**config["featureGates"], "VisibilityOnDemand": False}
    if pods_ready_timeout is not None:
        strategy = config["waitForPodsReady"]["requeuingStrategy"]
        config["waitForPodsReady"] = {
            **config["waitForPodsReady"], "timeout": pods_ready_timeout, "recoveryTimeout": pods_ready_timeout,
            "requeuingStrategy": {**strategy, "backoffBaseSeconds": min(strategy["backoffBaseSeconds"],
                                                                        duration_seconds(pods_ready_timeout))},
        }
    if worker_lost_timeout is not None:
        config["multiKueue"] = {**config.get("multiKueue", {}), "workerLostTimeout": worker_lost_timeout}
    return config


def chart_values(plan: Plan) -> dict[str, Any]:
    """Helm values of the Kueue chart; every key exists in the chart's values.yaml (a test checks)."""
    version = plan.addons.kueue.version
    manager: dict[str, Any] = {
        "image": {
            "repository": KUEUE_IMAGE_REPOSITORY,
            "tag": f"v{version.removeprefix('v')}",
            "pullPolicy": "IfNotPresent",
        },
    }
    if plan.provisioning.enabled:
        # Kueue sets up its ProvisioningRequest controller only if the CRD is served when it starts
        # (cmd/kueue/main.go, provisioning.ServerSupportsProvisioningRequest: "Skipping provisioning controller
        # setup"), and the check it would answer stays inactive until then, which stops every ClusterQueue
        # holding it. The release waits for the CRD on a new cluster; on one where Kueue already runs, this
        # pod annotation (charts/kueue/values.yaml controllerManager.manager.podAnnotations) changes the pod
        # template when ProvisioningRequests are turned on or off, so Kueue restarts and looks again.
        manager["podAnnotations"] = {cv.KUEUE_PROVISIONING_ANNOTATION: PROVISIONING_REQUEST_API}
    return {
        "controllerManager": {"manager": manager},
        "managerConfig": {
            "controllerManagerConfigYaml": yaml.safe_dump(controller_config(plan), sort_keys=False),
        },
        # Off: the monitoring component makes Kueue's ServiceMonitor itself, with the `release` label
        # Prometheus selects on; the chart's own would lack it, or scrape Kueue twice. (With it off the
        # chart reads no `metrics.prometheusNamespace`: templates/prometheus/*.yaml are all inside
        # `if .Values.enablePrometheus`, which the rendered-chart test proved by finding the key ignored.)
        "enablePrometheus": False,
    }
