"""Kueue's names: its API version and release, flavors, queues, priorities, the topology of TAS pools,
MultiKueue's objects and the ProvisioningRequest admission check."""

from __future__ import annotations

from .labels import MANAGED_BY_VALUE, PREFIX


# ==== Kueue: API, object names, topology, MultiKueue, ProvisioningRequest ===================================
KUEUE_API_VERSION = "kueue.x-k8s.io/v1beta2"
# Helm release name of Kueue: the chart names its Services and Deployment after it
# (kueue-controller-manager, kueue-webhook-service, kueue-controller-manager-metrics-service).
KUEUE_RELEASE_NAME = "kueue"
LOCAL_QUEUE_NAME = "default"
# CPU-only work. Kueue 0.19 gives every Job and Pod without a queue label in a managed namespace the
# queue name of the LocalQueue called `default` (jobframework.ApplyDefaultLocalQueueWithManaged-
# JobsNamespaceSelector, pkg/controller/jobframework/defaults.go), and every team namespace has one, so
# CPU-only work is queued too. Each ClusterQueue therefore lists this flavor first: no node labels, no
# tolerations, a CPU and memory quota only. It is the only flavor a pod set without GPUs can be given (the
# pools' flavors need GPU_TOLERATION or a topology request, which such a pod set may not carry), so work
# without GPUs is never charged to, or pinned onto, a GPU pool, whether or not the allowance is free. Pool
# names may not take it.
CPU_FLAVOR = "cpu-only"


def flavor_name(pool: str) -> str:
    return pool


def cluster_queue_name(team: str) -> str:
    return team


# PriorityClass names starting with "system-" are reserved by Kubernetes (only system-cluster-critical
# and system-node-critical may use it: k8s pkg/apis/scheduling/validation ValidatePriorityClass).
RESERVED_PRIORITY_CLASS_PREFIX = "system-"


def priority_class_name(priority: str) -> str:
    """The name of a platform priority as both Kubernetes PriorityClass and Kueue WorkloadPriorityClass.

    One name for both, so a team writes the same word in `priorityClassName` and in the
    `kueue.x-k8s.io/priority-class` label; names in the reserved `system-` range get the platform prefix
    (`system-critical` -> `gpu-platform-system-critical`).
    """
    if priority.startswith(RESERVED_PRIORITY_CLASS_PREFIX):
        return f"{MANAGED_BY_VALUE}-{priority}"
    return priority


# One Kueue Topology for every EFA or NVLink pool: AWS's network-node layers, then the host.
# (EC2 instance topology labels: docs.aws.amazon.com/eks "topology.k8s.aws/network-node-layer-N".)
TOPOLOGY_NAME = "aws-network"
TOPOLOGY_LEVELS: tuple[str, ...] = (
    "topology.k8s.aws/network-node-layer-1",
    "topology.k8s.aws/network-node-layer-2",
    "topology.k8s.aws/network-node-layer-3",
    "kubernetes.io/hostname",
)
# Kueue's topology request on a pod template (Kueue apis/kueue/v1beta2/topology_types.go, v0.19.2). A ClusterQueue that also has non-TAS flavors
# (every one here: the CPU-only flavor comes first) admits a pod set on a TAS flavor only when it asks
# for a topology, so the job template always does on TAS pools: preferably all pods under one
# network node of the lowest layer, else as close as the free nodes allow.
TAS_PREFERRED_TOPOLOGY_ANNOTATION = "kueue.x-k8s.io/podset-preferred-topology"
TAS_REQUIRED_TOPOLOGY_ANNOTATION = "kueue.x-k8s.io/podset-required-topology"
TAS_UNCONSTRAINED_TOPOLOGY_ANNOTATION = "kueue.x-k8s.io/podset-unconstrained-topology"
TAS_ANNOTATIONS: tuple[str, ...] = (
    TAS_PREFERRED_TOPOLOGY_ANNOTATION, TAS_REQUIRED_TOPOLOGY_ANNOTATION, TAS_UNCONSTRAINED_TOPOLOGY_ANNOTATION,
)
TAS_PREFERRED_LEVEL = TOPOLOGY_LEVELS[2]
# MultiKueue (kueue.sigs.k8s.io/docs/tasks/manage/setup_multikueue): one AdmissionCheck and one
# MultiKueueConfig named MULTIKUEUE_NAME; per worker a MultiKueueCluster and a Secret in the Kueue
# namespace holding the worker's kubeconfig under the key Kueue reads (v1beta2 MultiKueueConfigSecretKey).
MULTIKUEUE_CONTROLLER_NAME = "kueue.x-k8s.io/multikueue"
MULTIKUEUE_NAME = "multikueue"
MULTIKUEUE_KUBECONFIG_KEY = "kubeconfig"
# On a worker: what a manager authenticates as (the ServiceAccount, its token Secret), in Kueue's namespace,
# and the ClusterRole that lets it mirror jobs and workloads (Kueue docs, "Setup MultiKueue",
# site/static/examples/multikueue/create-multikueue-kubeconfig.sh).
MULTIKUEUE_WORKER_SERVICE_ACCOUNT = "multikueue-manager"
MULTIKUEUE_WORKER_TOKEN_SECRET = "multikueue-manager-token"
MULTIKUEUE_WORKER_CLUSTER_ROLE = f"{MANAGED_BY_VALUE}:multikueue-worker"


def multikueue_cluster_name(worker: str) -> str:
    return worker


def multikueue_secret_name(worker: str) -> str:
    return f"{MULTIKUEUE_NAME}-{worker}"


# Kueue's ProvisioningRequest admission check (kueue v0.19.2 apis/kueue/v1beta2/provisioningrequestconfig_types.go
# ProvisioningRequestControllerName; site/content/en/docs/concepts/admission_check/provisioning_request.md):
# one AdmissionCheck and its ProvisioningRequestConfig per cluster, on the flavors of the pools the
# autoscaler provisions. The class is the autoscaler's all-or-nothing one (kubernetes/autoscaler
# cluster-autoscaler/apis/provisioningrequest/autoscaling.x-k8s.io/v1/types.go,
# ProvisioningClassBestEffortAtomicScaleUp).
PROVISIONING_REQUEST_CONTROLLER = "kueue.x-k8s.io/provisioning-request"
PROVISIONING_CHECK_NAME = "provisioning-request"
PROVISIONING_CONFIG_NAME = "best-effort-atomic-scale-up"
PROVISIONING_CONFIG_KIND = "ProvisioningRequestConfig"
PROVISIONING_CLASS_BEST_EFFORT_ATOMIC = "best-effort-atomic-scale-up.autoscaling.x-k8s.io"
# Kueue's pod annotation that rolls its controller when ProvisioningRequests come or go: the controller sets
# up its ProvisioningRequest controller only if the CRD is served when it starts (cmd/kueue/main.go,
# provisioning.ServerSupportsProvisioningRequest).
KUEUE_PROVISIONING_ANNOTATION = f"{PREFIX}/provisioning-request-crd"
# The Cluster Autoscaler drains an under-used node by evicting its pods unless one says it must not be
# (kubernetes/autoscaler cluster-autoscaler/utils/drain/drain.go, PodSafeToEvictKey; cluster-autoscaler FAQ
# "What types of pods can prevent CA from removing a node?"): a running training pod carries "false".
SAFE_TO_EVICT_ANNOTATION = "cluster-autoscaler.kubernetes.io/safe-to-evict"
