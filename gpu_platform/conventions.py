"""Every label key, taint, annotation and name format of the platform, spelled once.

Node labels become Kueue flavor selectors, quota dimensions, AWS cost tags and DCGM metric labels, so a
key spelled twice would drift. Components, the CLI, tests and the policy pack all import from here.

Grouped by concern: the stack config and value formats; labels (the platform's objects, nodes, tenants);
annotations; GPU resources and taints; Pod Security; namespaces; Kueue and its integrations; tenancy's
objects and the admission policies; the network peers and ports tenants are given; add-ons; AWS names and
tags; pools' capacity; Karpenter; the Cluster Autoscaler; the data path; the simulated nodes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable


# ==== The stack config and the value formats the spec checks ================================================
# The stack config: the project's namespace in Pulumi.<stack>.yaml and the key of the platform spec under it.
CONFIG_NAMESPACE = "gpu-platform"
PLATFORM_CONFIG = "platform"
CONFIG_KEY = f"{CONFIG_NAMESPACE}:{PLATFORM_CONFIG}"
# Which side of MultiKueue a stack deploys (stack config key, beside gpu-platform:platform, so that a manager
# and its workers share one platform spec): the manager dispatches (admission check, clusters, worker
# kubeconfig Secrets), a worker accepts (a ServiceAccount for managers, its RBAC and a token).
MULTIKUEUE_ROLE_CONFIG = "multiKueueRole"
MULTIKUEUE_ROLES: tuple[str, ...] = ("manager", "worker")
# The region the AWS provider deploys to: the stack config key aws:region, else these environment variables in
# this order (pulumi-aws 7.51.1 sdk/python/pulumi_aws/config/vars.py `region`: `__config__.get('region') or
# _utilities.get_env('AWS_REGION', 'AWS_DEFAULT_REGION')`; pulumi/pulumi-aws docs/installation-configuration.md,
# "Set credentials as environment variables").
AWS_REGION_CONFIG = "aws:region"
AWS_REGION_ENV_VARS: tuple[str, ...] = ("AWS_REGION", "AWS_DEFAULT_REGION")
# Versions. An exact SemVer 2.0.0 version, optionally with Helm's customary leading "v" (semver.org,
# sections 9-10): what every Helm chart version in the spec and in a rendered release must be. The spec
# rejects anything else (`latest`, `0.19`, `~0.19.2`) and the policy pack checks the rendered releases
# with the same expression.
EXACT_VERSION = re.compile(r"^v?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$")
EXACT_VERSION_FORM = "MAJOR.MINOR.PATCH, optionally with a leading 'v' and a -prerelease (e.g. 0.19.2, v26.7.0)"
# Kubernetes name formats: a DNS-1123 label, a label value, and their length limit.
DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
MAX_LABEL_LENGTH = 63


# ==== Labels on the platform's own objects ==================================================================
# The prefix of the platform's own label, annotation and tag keys.
PREFIX = "gpu-platform.io"
MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGED_BY_VALUE = "gpu-platform"
PART_OF = "app.kubernetes.io/part-of"
COMPONENT = "app.kubernetes.io/component"
APP_NAME = "app.kubernetes.io/name"
APP_INSTANCE = "app.kubernetes.io/instance"


# ==== Node labels: the pools', the system pool's, the GPU Operator's ========================================
# Node pool labels (on every node of a pool; the ResourceFlavor selects on all of them).
POOL = f"{PREFIX}/pool"
ACCELERATOR = f"{PREFIX}/accelerator"
TOPOLOGY = f"{PREFIX}/topology"
FABRIC = f"{PREFIX}/fabric"
WORKLOAD = f"{PREFIX}/workload"
SHARING = f"{PREFIX}/sharing"
POOL_LABEL_KEYS: tuple[str, ...] = (POOL, ACCELERATOR, TOPOLOGY, FABRIC, WORKLOAD, SHARING)
# The FABRIC value of EFA pools (spec pools[].fabric), which the EFA device plugin selects nodes by.
FABRIC_EFA = "efa"


def topology_value(gpus: int, form_factor: str, interconnect: str) -> str:
    """`8gpu-sxm-nvlink`, `4gpu-pcie`: how many GPUs a node has and how they talk to each other."""
    if interconnect == "nvswitch":
        return f"{gpus}gpu-{form_factor}-nvlink"
    return f"{gpus}gpu-{form_factor}"


def sharing_value(mode: str, profile: str | None = None, replicas: int | None = None) -> str:
    if mode == "mig":
        return f"mig-{profile}"
    if mode == "time-slicing":
        return f"time-sliced-{replicas}"
    return "full-gpu"


def parse_sharing_value(value: str) -> tuple[str, str | None, int | None] | None:
    """The inverse of `sharing_value`: (mode, MIG profile, replicas), or None for a value it never makes.

    The policy pack sees resources, not the spec, so it reads a pool's sharing back from its label."""
    if value == sharing_value("full"):
        return "full", None, None
    mig_prefix = sharing_value("mig", "")
    if value.startswith(mig_prefix) and len(value) > len(mig_prefix):
        return "mig", value[len(mig_prefix):], None
    ts_prefix = sharing_value("time-slicing", replicas="")  # type: ignore[arg-type]
    replicas = value[len(ts_prefix):]
    if value.startswith(ts_prefix) and replicas.isdigit():
        return "time-slicing", None, int(replicas)
    return None


# The system pool (cluster.systemPool): CPU nodes for CoreDNS, Kueue, the GPU Operator's controller and
# the monitoring stack. Its nodes carry this label and no taint, and deliberately no gpu-platform.io/pool
# label: the pool label means "GPU pool" to the flavors, the node recording rules and the exporter-down
# alert.
NODE_ROLE = f"{PREFIX}/node-role"
SYSTEM_NODE_ROLE = "system"
SYSTEM_POOL_NAME = "system"
# GPU Operator node labels that select a pool's MIG layout and device-plugin (time-slicing) config.
MIG_CONFIG_LABEL = "nvidia.com/mig.config"
DEVICE_PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"
# GPU Operator deploy labels: each operand's DaemonSet runs only on nodes labelled "true" (NVIDIA/gpu-operator
# assets/state-device-plugin/0500_daemonset.yaml nodeSelector), and the operator adds a missing one but keeps
# a value already on the node (controllers/state_manager.go, addGPUStateLabels: "If a required state label
# already exists on the node, honor the current value"; the MIG manager's only when absent). A node group
# that sets "false" keeps that operand off its nodes for good.
GPU_OPERATOR_DEPLOY_DEVICE_PLUGIN_LABEL = "nvidia.com/gpu.deploy.device-plugin"
GPU_OPERATOR_DEPLOY_MIG_MANAGER_LABEL = "nvidia.com/gpu.deploy.mig-manager"
GPU_OPERATOR_DEPLOY_OFF = "false"


# ==== Tenant, workload and monitoring labels ================================================================
# Tenant labels (namespaces, and the pod labels DCGM exports so GPU metrics carry the team).
TEAM = f"{PREFIX}/team"
COST_CENTER = f"{PREFIX}/cost-center"
ENVIRONMENT = f"{PREFIX}/environment"
TENANT_NAMESPACE_LABEL_KEYS: tuple[str, ...] = (TEAM, COST_CENTER, ENVIRONMENT)
# Kueue's labels on a workload: the LocalQueue it is queued in, and its priority class.
QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"
# Pod labels that attribute a GPU's metrics to a team and a queue. dcgm-exporter copies them onto GPU
# series only without KUBERNETES_VIRTUAL_GPUS; the recording rules join them from kube-state-metrics'
# kube_pod_labels in every mode (components/alerts.py).
GPU_METRIC_POD_LABELS: tuple[str, ...] = (TEAM, QUEUE_NAME_LABEL)
# The API server sets this label on every namespace (kubernetes.io/docs/reference/labels-annotations-taints).
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
# Grafana's dashboard sidecar picks up ConfigMaps with this label.
GRAFANA_DASHBOARD_LABEL = "grafana_dashboard"
GRAFANA_DASHBOARD_LABEL_VALUE = "1"
# kube-prometheus-stack's Prometheus selects ServiceMonitors and PrometheusRules by this label, whose
# value is the stack's Helm release name (spec addons.monitoring.prometheusRelease).
PROMETHEUS_RELEASE_LABEL = "release"


# ==== Annotations: a flavor's capacity, what a team namespace grants (the admission policies read them) =====
# Annotation on every Kueue ResourceFlavor: its pool's capacity in schedulable units (PoolPlan.capacity_units).
# The policy pack checks that nominal quotas fit it even where no node group is in the stack (`existing`).
FLAVOR_CAPACITY_ANNOTATION = f"{PREFIX}/capacity-units"
# Which platform priorities a team may use: the team's namespaces carry the allowed names (comma
# separated) in this annotation, which the admission policy reads (tenants cannot edit namespaces).
ALLOWED_PRIORITIES_ANNOTATION = f"{PREFIX}/allowed-priorities"
# ... and the GPU resources the team gets only from topology-aware pools (comma separated): pod templates
# that ask for them must carry a Kueue topology annotation (TAS_ANNOTATIONS), or they could never be admitted.
TOPOLOGY_RESOURCES_ANNOTATION = f"{PREFIX}/topology-resources"
# ... and the team's CPU-only allowance (its quota on CPU_FLAVOR, a CPU and a memory quantity): a pod without
# GPUs that asks for more can never be admitted, so admission refuses it at creation.
CPU_ONLY_CPU_ANNOTATION = f"{PREFIX}/cpu-only-cpu"
CPU_ONLY_MEMORY_ANNOTATION = f"{PREFIX}/cpu-only-memory"
# ... and the pools the team has quota on (comma separated): a pod template may select only these by the pool label
# (nodeSelector or required node affinity); Kueue would never give it another team's pool's flavor.
TEAM_POOLS_ANNOTATION = f"{PREFIX}/pools"
# The registries a team's pods may pull from (comma separated: the platform-wide images.allowedRegistries
# plus the team's own), on every team namespace; the image admission policy reads it (tenants cannot edit
# namespaces) and the policy pack compares the platform's own images with the platform-wide part.
ALLOWED_REGISTRIES_ANNOTATION = f"{PREFIX}/allowed-registries"
# ... and on the image policy object itself: the platform-wide list, where the policy pack reads it.
PLATFORM_REGISTRIES_ANNOTATION = f"{PREFIX}/platform-registries"


# ==== GPU resources, taints and tolerations =================================================================
# Resource names the device plugin advertises.
GPU_RESOURCE = "nvidia.com/gpu"
MIG_RESOURCE_PREFIX = "nvidia.com/mig-"
SHARED_GPU_RESOURCE = "nvidia.com/gpu.shared"  # time-slicing with renameByDefault: true


def mig_resource(profile: str) -> str:
    return f"{MIG_RESOURCE_PREFIX}{profile}"


def sharing_resource_name(mode: str, profile: str | None = None) -> str:
    """The extended resource a pool of this sharing mode advertises: whole GPUs, the MIG profile's slices
    (mixed strategy) or shared replicas (time-slicing with renameByDefault). The plan names a pool's units
    with it and the policy pack reads them back from a pool's sharing label through it."""
    if mode == "mig":
        return mig_resource(profile or "")
    if mode == "time-slicing":
        return SHARED_GPU_RESOURCE
    return GPU_RESOURCE


def is_gpu_resource(name: str) -> bool:
    """True for every resource name that consumes a pool's GPUs (whole, MIG slice or shared replica)."""
    return name in (GPU_RESOURCE, SHARED_GPU_RESOURCE) or name.startswith(MIG_RESOURCE_PREFIX)


# Time-sliced pools: the device plugin refuses a container asking for more than one shared replica
# (the operator's config sets failRequestsGreaterThanOne: NVIDIA/k8s-device-plugin internal/plugin/
# server.go, Allocate, per container request: "maximum request size for shared resources is 1").
SHARED_GPU_MAX_PER_CONTAINER = 1
# EFA device plugin resource: pods of EFA pools request it, and Kueue must not count it against quota.
EFA_RESOURCE = "vpc.amazonaws.com/efa"
# Taints. Every GPU node carries the GPU taint; the workload taint keeps training and inference apart.
GPU_TAINT_KEY = GPU_RESOURCE
GPU_TAINT_VALUE = "present"
WORKLOAD_TAINT_KEY = WORKLOAD
TAINT_EFFECT = "NoSchedule"
# What every pod template that asks for GPUs carries itself (the job template sets it; admission refuses a
# GPU template without it). Pool flavors that are not topology-aware list the GPU taint under `nodeTaints`
# and do not tolerate it, and Kueue assigns a flavor only to a pod set that tolerates its nodeTaints (kueue
# v0.19.2 pkg/scheduler/flavorassigner/flavorassigner.go checkFlavorForPodSets; apis/kueue/v1beta2/
# resourceflavor_types.go, nodeTaints); topology-aware ones only to pod sets that ask for a topology. A pod
# set without GPUs may do neither (admission), so it can only be given the CPU-only flavor, never a pool.
GPU_TOLERATION: dict[str, str] = {"key": GPU_TAINT_KEY, "operator": "Exists", "effect": TAINT_EFFECT}
# kubeadm's control-plane taint (kubernetes.io/docs/reference/labels-annotations-taints), which the
# chart's node-feature-discovery workers tolerate by default.
CONTROL_PLANE_TAINT_KEY = "node-role.kubernetes.io/control-plane"


def workload_taint_value(workload: str) -> str:
    return workload


# ==== Pod Security admission ================================================================================
PSA_ENFORCE = "pod-security.kubernetes.io/enforce"
PSA_ENFORCE_VERSION = "pod-security.kubernetes.io/enforce-version"
PSA_WARN = "pod-security.kubernetes.io/warn"
PSA_WARN_VERSION = "pod-security.kubernetes.io/warn-version"
PSA_AUDIT = "pod-security.kubernetes.io/audit"
PSA_AUDIT_VERSION = "pod-security.kubernetes.io/audit-version"
PSA_LEVELS: tuple[str, ...] = ("privileged", "baseline", "restricted")
TENANT_PSA_LEVELS: tuple[str, ...] = ("baseline", "restricted")
# Pod Security level that warns and audits in every tenant namespace, whatever the enforced level.
PSA_RESTRICTED = "restricted"


def psa_labels(enforce: str, warn_audit: str, version: str) -> dict[str, str]:
    """Pod Security admission labels: enforce one level, warn and audit at another, all pinned to `version`
    so a cluster upgrade does not tighten the rules by surprise."""
    return {
        PSA_ENFORCE: enforce, PSA_ENFORCE_VERSION: version,
        PSA_WARN: warn_audit, PSA_WARN_VERSION: version,
        PSA_AUDIT: warn_audit, PSA_AUDIT_VERSION: version,
    }


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


# ==== Kueue's integrations: framework names and their workload APIs =========================================
# Kueue's framework names (`integrations.frameworks`): every FrameworkName of Kueue v0.19.2 (sigs.k8s.io/kueue
# pkg/controller/jobs/*/*_controller.go). Kueue refuses a name it does not know at start-up
# (pkg/controller/jobframework/integrationmanager.go checkEnabledListDependencies, errIntegrationNotFound).
FRAMEWORK_JOB = "batch/job"
FRAMEWORK_POD = "pod"
FRAMEWORK_DEPLOYMENT = "deployment"
FRAMEWORK_STATEFULSET = "statefulset"
FRAMEWORK_JOBSET = "jobset.x-k8s.io/jobset"
FRAMEWORK_TRAINJOB = "trainer.kubeflow.org/trainjob"
FRAMEWORK_LWS = "leaderworkerset.x-k8s.io/leaderworkerset"
FRAMEWORK_RAYJOB = "ray.io/rayjob"
FRAMEWORK_RAYCLUSTER = "ray.io/raycluster"
FRAMEWORK_RAYSERVICE = "ray.io/rayservice"
KUEUE_FRAMEWORKS: tuple[str, ...] = (
    FRAMEWORK_JOB, FRAMEWORK_POD, FRAMEWORK_DEPLOYMENT, FRAMEWORK_STATEFULSET, FRAMEWORK_JOBSET, FRAMEWORK_TRAINJOB,
    FRAMEWORK_LWS, FRAMEWORK_RAYJOB, FRAMEWORK_RAYCLUSTER, FRAMEWORK_RAYSERVICE,
    "kubeflow.org/mpijob", "kubeflow.org/pytorchjob", "kubeflow.org/tfjob", "kubeflow.org/xgboostjob",
    "kubeflow.org/paddlejob", "kubeflow.org/jaxjob", "workload.codeflare.dev/appwrapper",
    "sparkoperator.k8s.io/sparkapplication",
)
# The frameworks whose objects Kubernetes itself runs (no controller to install).
BUILTIN_FRAMEWORKS: tuple[str, ...] = (FRAMEWORK_JOB, FRAMEWORK_POD, FRAMEWORK_DEPLOYMENT, FRAMEWORK_STATEFULSET)
# Workload APIs of Kueue's integrations (the names of Kueue's `integrations.frameworks`), as
# (group, version, plural, kind). Sources: Kueue docs "Run a ..." task pages and each project's CRDs
# (JobSet v0.10.1 config/components/crd; LeaderWorkerSet v0.7.0 charts/lws/templates/crds; Kubeflow Trainer
# v2.2.1 manifests/base/crds/trainer.kubeflow.org_trainjobs.yaml, v1alpha1; KubeRay v1.5.0 config/crd).
KUEUE_INTEGRATION_APIS: dict[str, tuple[tuple[str, str, str, str], ...]] = {
    FRAMEWORK_JOB: (("batch", "v1", "jobs", "Job"), ("batch", "v1", "cronjobs", "CronJob")),
    FRAMEWORK_POD: (("", "v1", "pods", "Pod"),),
    FRAMEWORK_DEPLOYMENT: (("apps", "v1", "deployments", "Deployment"),),
    FRAMEWORK_STATEFULSET: (("apps", "v1", "statefulsets", "StatefulSet"),),
    FRAMEWORK_JOBSET: (("jobset.x-k8s.io", "v1alpha2", "jobsets", "JobSet"),),
    FRAMEWORK_TRAINJOB: (("trainer.kubeflow.org", "v1alpha1", "trainjobs", "TrainJob"),),
    FRAMEWORK_LWS: (("leaderworkerset.x-k8s.io", "v1", "leaderworkersets", "LeaderWorkerSet"),),
    "kubeflow.org/pytorchjob": (("kubeflow.org", "v1", "pytorchjobs", "PyTorchJob"),),
    FRAMEWORK_RAYJOB: (("ray.io", "v1", "rayjobs", "RayJob"),),
    FRAMEWORK_RAYCLUSTER: (("ray.io", "v1", "rayclusters", "RayCluster"),),
}


# ==== Tenancy: the objects in every team namespace, cluster roles, admission policies =======================
TENANT_QUOTA_NAME = "tenant-quota"
TENANT_LIMIT_RANGE_NAME = "container-defaults"
NETWORK_POLICY_DEFAULT_DENY = "default-deny"
NETWORK_POLICY_ALLOW_DNS = "allow-dns"
NETWORK_POLICY_ALLOW_SAME_NAMESPACE = "allow-same-namespace"
NETWORK_POLICY_ALLOW_MONITORING = "allow-monitoring-scrape"
NETWORK_POLICY_ALLOW_EGRESS = "allow-configured-egress"
NETWORK_POLICY_ALLOW_KUBERAY = "allow-kuberay-operator"
NETWORK_POLICY_ALLOW_DATA_PATH = "allow-data-path"
# Kubernetes' user-facing ClusterRoles (kubernetes.io/docs/reference/access-authn-authz/rbac/#user-facing-roles).
CLUSTER_ROLE_CLUSTER_ADMIN = "cluster-admin"
CLUSTER_ROLE_ADMIN = "admin"
CLUSTER_ROLE_EDIT = "edit"
CLUSTER_ROLE_VIEW = "view"
# The platform's own ClusterRoles (they exist whether or not Kueue's chart, with its kueue-batch-*-role, is installed).
BATCH_USER_CLUSTER_ROLE = f"{MANAGED_BY_VALUE}:batch-user"
QUEUE_ADMIN_CLUSTER_ROLE = f"{MANAGED_BY_VALUE}:queue-admin"
# A team admin: everything `edit` allows plus reading the namespace's RBAC, and no RBAC writes. Team
# membership is declared in the spec (`groups`); a RoleBinding made by hand would bypass it.
TENANT_ADMIN_CLUSTER_ROLE = f"{MANAGED_BY_VALUE}:tenant-admin"
TENANT_ADMIN_AGGREGATION_LABEL = f"{PREFIX}/aggregate-to-tenant-admin"
TENANT_ADMIN_EXTRAS_CLUSTER_ROLE = f"{MANAGED_BY_VALUE}:tenant-admin-extras"
# Kubernetes labels the `view` and `edit` rule sets with this so they aggregate into `edit` (and so into ours).
AGGREGATE_TO_EDIT_LABEL = "rbac.authorization.k8s.io/aggregate-to-edit"
# Group tiers of a team (spec `groups`), and the RoleBinding of each in every team namespace.
TENANT_TIERS: tuple[str, ...] = ("admins", "members", "viewers", "batch-users")


def tenant_role_binding_name(tier: str) -> str:
    return f"tenant-{tier}"


# RoleBinding that gives cluster.platformAdmins the `admin` ClusterRole in a platform namespace.
PLATFORM_ADMINS_ROLE_BINDING = "platform-admins"
# Kubernetes' reserved prefix for users and groups the API server itself assigns (system:masters,
# system:authenticated, system:serviceaccounts:...): never a team's group, never mapped from an IAM role.
SYSTEM_GROUP_PREFIX = "system:"
# The ValidatingAdmissionPolicies on tenant namespaces (each binding has its policy's name): workloads,
# priorities (the granted ones only), NetworkPolicies (the platform's only), images (allowed registries,
# digests) and job cleanup (a bounded ttlSecondsAfterFinished).
TENANT_WORKLOAD_POLICY = f"tenant-workloads.{PREFIX}"
TENANT_PRIORITY_POLICY = f"tenant-priorities.{PREFIX}"
TENANT_NETWORK_POLICY_GUARD = f"tenant-network-policies.{PREFIX}"
TENANT_IMAGE_POLICY = f"tenant-images.{PREFIX}"
TENANT_JOB_CLEANUP_POLICY = f"tenant-job-cleanup.{PREFIX}"


# ==== Peers and ports the tenant NetworkPolicies open =======================================================
# CoreDNS pods carry k8s-app=kube-dns on EKS and kubeadm clusters (the EKS coredns add-on keeps the label).
DNS_POD_LABELS: dict[str, str] = {"k8s-app": "kube-dns"}
DNS_PORT = 53
# KubeRay's operator reaches every Ray head from its own namespace: the RayJob controller submits and polls
# the job on the head service's dashboard port (ray-project/kuberay ray-operator v1.5.0 controllers/ray/
# rayjob_controller.go: FetchHeadServiceURL(..., DashboardPortName), then GetJobInfo; the RayService
# controller likewise). At v1.5.0 the operator dials no other head port (not GCS, 6379: it reaches GCS health
# only through the dashboard's api/gcs_healthz, controllers/ray/utils/constant.go RayDashboardGCSHealthPath) and
# makes no NetworkPolicy of its own (the networkpolicy_controller.go of later releases, which leaves "Operator
# access ... intentionally omitted ... platforms that need it should inject it", is not in v1.5.0). So the
# tenant default deny must open that path: from pods labelled app.kubernetes.io/component=kuberay-operator
# (its Helm chart, helm-chart/kuberay-operator/templates/deployment.yaml with componentOverride
# kuberay-operator, and its kustomization, ray-operator/config/manager/manager.yaml) in the operator's
# namespace, matched by kubernetes.io/metadata.name so no pod label can forge it, to pods labelled
# ray.io/node-type=head, on the dashboard and Ray Client ports (ray-operator/controllers/ray/utils/constant.go:
# DefaultDashboardPort 8265, DefaultClientPort 10001). The platform installs the operator in a namespace of
# its own (WORKLOAD_CONTROLLER_NAMESPACES); it is reserved, so no team can own it and pass a pod off as the
# operator. (Upstream's kustomization installs into `default`: ray-operator/config/default/kustomization.yaml.)
KUBERAY_API_GROUP = "ray.io"
KUBERAY_OPERATOR_NAMESPACE = KUBERAY_NAMESPACE
KUBERAY_OPERATOR_POD_LABELS: dict[str, str] = {COMPONENT: "kuberay-operator"}
RAY_NODE_TYPE_LABEL = f"{KUBERAY_API_GROUP}/node-type"
RAY_HEAD_POD_LABELS: dict[str, str] = {RAY_NODE_TYPE_LABEL: "head"}
RAY_DASHBOARD_PORT = 8265
RAY_CLIENT_PORT = 10001


def uses_kuberay(integrations: Iterable[str]) -> bool:
    """Whether any enabled Kueue integration is a KubeRay kind (ray.io/rayjob, ray.io/raycluster,
    ray.io/rayservice: Kueue names its frameworks <API group>/<kind>), so KubeRay's operator must reach heads."""
    return any(name.split("/", 1)[0] == KUBERAY_API_GROUP for name in integrations)


# The EKS Pod Identity agent, on every node's host network: SDKs in pods fetch their credentials from it
# (EKS user guide, pod-id-how-it-works.html / pod-identities.html considerations: 169.254.170.23 and
# [fd00:ec2::23], port 80), so a pod under the default deny needs an egress rule to it.
POD_IDENTITY_AGENT_CIDRS = ("169.254.170.23/32", "fd00:ec2::23/128")
POD_IDENTITY_AGENT_PORT = 80
# FSx for Lustre's LNET ports (FSx for Lustre user guide, limit-access-security-groups.html and
# cannot-create-fs.html: "allow inbound traffic on ports 988 and 1018-1023").
LUSTRE_PORT_RANGES = ((988, 988), (1018, 1023))
HTTPS_PORT = 443


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


# ==== AWS: names of what the stack makes, tags, IAM =========================================================
# AWS tags: the pool labels become cost-allocation tags under the same keys.
TAG_PLATFORM = f"{PREFIX}/platform"
TAG_ENVIRONMENT = ENVIRONMENT
TAG_CLUSTER = f"{PREFIX}/cluster"
# AWS tag on an EKS access entry: the team (or "platform") whose spec entry made it.
TAG_ACCESS_OWNER = f"{PREFIX}/access-owner"
# An IAM role ARN (IAM API reference, CreateRole: RoleName [\w+=,.@-]{1,64}, Path "/" or "/.../"; ARN
# partitions aws, aws-cn, aws-us-gov; account ids are 12 digits).
IAM_ROLE_ARN = re.compile(r"^arn:aws(?:-cn|-us-gov)?:iam::\d{12}:role/(?:[\w+=,.@-]+/)*[\w+=,.@-]{1,64}$")


def node_group_name(cluster: str, pool: str) -> str:
    return f"{cluster}-{pool}"


def system_node_group_name(cluster: str) -> str:
    """The system pool's node group: named like a GPU pool called `system`, which is why no GPU pool may
    take that name when there is a system pool."""
    return node_group_name(cluster, SYSTEM_POOL_NAME)


def launch_template_prefix(cluster: str, pool: str) -> str:
    """A prefix, not a name: a pool's launch template is replaced when its instance type changes, and the
    new one must exist before the old one goes (AWS adds a unique suffix)."""
    return f"{node_group_name(cluster, pool)}-"


def placement_group_name(cluster: str, pool: str) -> str:
    return node_group_name(cluster, pool)


def efa_security_group_name(cluster: str) -> str:
    """The security group every EFA interface of the cluster carries besides the cluster's own: all traffic
    to and from itself, which EFA's traffic needs (components/node_pools/cluster.py, efa_security_group)."""
    return f"{cluster}-efa"


# ==== Pools: provisioners, capacity types, who scales the nodes =============================================
# Pool provisioners (spec pools[].provisioner): an EKS managed node group made here, or Karpenter NodePools.
PROVISIONER_MANAGED_NODE_GROUP = "managed-node-group"
PROVISIONER_KARPENTER = "karpenter"
# Reserved and elastic capacity (docs/node-pools.md, "Capacity: reserved and elastic"). What a pool's capacity
# type means for how many nodes run: reserved capacity (capacity blocks, on-demand capacity reservations) is
# paid for whole and runs whole; on-demand and spot capacity scales between capacity.min and capacity.max.
CAPACITY_RESERVED = "reserved"
CAPACITY_ELASTIC = "elastic"
RESERVED_CAPACITY_TYPES: tuple[str, ...] = ("capacity-block", "capacity-reservation")
# Who sizes a pool's nodes (PoolPlan.scaler): the Cluster Autoscaler (elastic managed node groups on eks),
# Karpenter (its pools), the reservation (the node group is sized to it: by the stack for a capacity
# reservation, by EKS for a capacity block), nobody (elastic managed node groups without the autoscaler), or
# whoever brings the nodes of an `existing` cluster.
SCALER_CLUSTER_AUTOSCALER = "cluster-autoscaler"
SCALER_KARPENTER = "karpenter"
SCALER_RESERVATION = "reservation"
SCALER_NONE = "none"
SCALER_EXTERNAL = "external"


# ==== Karpenter =============================================================================================
# Karpenter v1.15 (github.com/aws/karpenter-provider-aws v1.15.2): NodePool is karpenter.sh/v1 and
# EC2NodeClass karpenter.k8s.aws/v1 (charts/karpenter-crd/templates).
KARPENTER_NODEPOOL_API_VERSION = "karpenter.sh/v1"
KARPENTER_NODECLASS_GROUP = "karpenter.k8s.aws"
KARPENTER_NODECLASS_API_VERSION = f"{KARPENTER_NODECLASS_GROUP}/v1"
KARPENTER_NODECLASS_KIND = "EC2NodeClass"
# Well-known node labels Karpenter requirements select on (pkg/apis/v1/labels.go of the provider, and
# sigs.k8s.io/karpenter pkg/apis/v1 labels: capacity types on-demand | spot | reserved).
KARPENTER_CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"
KARPENTER_CAPACITY_RESERVATION_ID_LABEL = "karpenter.k8s.aws/capacity-reservation-id"
KARPENTER_CAPACITY_RESERVATION_TYPE_LABEL = "karpenter.k8s.aws/capacity-reservation-type"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
ZONE_LABEL = "topology.kubernetes.io/zone"
# The label Karpenter puts on every node it launches; the chart's default affinity keeps its controller off them.
KARPENTER_NODEPOOL_LABEL = "karpenter.sh/nodepool"
# Pod annotation that keeps Karpenter from voluntarily disrupting the pod's node (disruption.md, "Pod-Level Controls").
KARPENTER_DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
# The controller's Helm releases, namespace and service account. kube-system as Karpenter's getting-started
# guide installs it (KARPENTER_NAMESPACE=kube-system); the service account the Pod Identity association names.
KARPENTER_NAMESPACE = KUBE_SYSTEM_NAMESPACE
KARPENTER_RELEASE_NAME = "karpenter"
KARPENTER_CRD_RELEASE_NAME = "karpenter-crd"
KARPENTER_SERVICE_ACCOUNT = "karpenter"


def karpenter_nodepool_name(pool: str) -> str:
    return pool


def karpenter_nodeclass_name(pool: str) -> str:
    return pool


def karpenter_node_role_name(cluster: str) -> str:
    """The IAM role of Karpenter's nodes, named as Karpenter's getting-started CloudFormation names it."""
    return f"KarpenterNodeRole-{cluster}"


def karpenter_controller_role_name(cluster: str) -> str:
    return f"{cluster}-karpenter"


def karpenter_queue_name(cluster: str) -> str:
    """The SQS interruption queue (Karpenter's CloudFormation names it after the cluster; the suffix says whose it is)."""
    return f"{cluster}-karpenter"


# The EventBridge rules that feed the interruption queue, by the short name each rule's AWS name ends in, with
# the event source and detail-type they match (the getting-started CloudFormation's ScheduledChangeRule,
# SpotInterruptionRule, RebalanceRule, InstanceStateChangeRule, CapacityReservationInterruptionRule). Short,
# because a rule name is at most 64 characters (PutRule, botocore events model shape RuleName) and starts
# with the queue's name: cluster.name is checked against the longest (spec/checks.py).
KARPENTER_INTERRUPTION_RULES: dict[str, tuple[str, str]] = {
    "health": ("aws.health", "AWS Health Event"),
    "spot": ("aws.ec2", "EC2 Spot Instance Interruption Warning"),
    "rebalance": ("aws.ec2", "EC2 Instance Rebalance Recommendation"),
    "state-change": ("aws.ec2", "EC2 Instance State-change Notification"),
    "reservation": ("aws.ec2", "EC2 Capacity Reservation Instance Interruption Warning"),
}


def karpenter_rule_name(cluster: str, rule: str) -> str:
    return f"{karpenter_queue_name(cluster)}-{rule}"


# ==== The Cluster Autoscaler ================================================================================
# The Cluster Autoscaler (kubernetes/autoscaler, cluster-autoscaler/cloudprovider/aws/README.md at tag
# cluster-autoscaler-1.33.6). Its release, namespace and service account (the chart's ClusterRole grants its
# leader-election lease by the name cluster-autoscaler, templates/clusterrole.yaml), in kube-system as the
# README's examples install it.
CLUSTER_AUTOSCALER_NAMESPACE = KUBE_SYSTEM_NAMESPACE
CLUSTER_AUTOSCALER_RELEASE_NAME = "cluster-autoscaler"
CLUSTER_AUTOSCALER_SERVICE_ACCOUNT = "cluster-autoscaler"
# Auto-discovery ("Auto-Discovery Setup"): an Auto Scaling group is the autoscaler's when it carries every
# listed tag key (and the value, where one is given). EKS tags every managed node group's group with the two
# standard keys (EKS user guide, managed-node-groups.html: "automatically tagged for auto-discovery by the
# Kubernetes Cluster Autoscaler"), reserved ones included, so the platform adds a third, CAPACITY_TAG=elastic,
# to the groups the autoscaler may scale, and only to those.
CLUSTER_AUTOSCALER_ENABLED_TAG = "k8s.io/cluster-autoscaler/enabled"
CAPACITY_TAG = f"{PREFIX}/capacity"
# Scale-up from zero: the node a group would add, described by tags on its Auto Scaling group ("When scaling
# up from 0 nodes, the Cluster Autoscaler reads ASG tags"): label/<key>: <value>, taint/<key>:
# <value>:<effect>, resources/<resource>: <quantity>.
CLUSTER_AUTOSCALER_LABEL_TAG = "k8s.io/cluster-autoscaler/node-template/label/"
CLUSTER_AUTOSCALER_TAINT_TAG = "k8s.io/cluster-autoscaler/node-template/taint/"
CLUSTER_AUTOSCALER_RESOURCES_TAG = "k8s.io/cluster-autoscaler/node-template/resources/"


def cluster_autoscaler_cluster_tag(cluster: str) -> str:
    return f"k8s.io/cluster-autoscaler/{cluster}"


# The label that tells the autoscaler on AWS a node has GPUs before its device plugin has advertised them
# (cloudprovider/aws/aws_cloud_provider.go GPULabel; README "Special note on GPU instances": "Cluster Autoscaler
# >= 1.15: k8s.amazonaws.com/accelerator=<gpu-type>"). A node that carries it with no allocatable nvidia.com/gpu
# counts as unready, not as a finished node without GPUs (processors/customresources/gpu_processor.go
# FilterOutNodesWithUnreadyResources), so it never triggers a second scale-up; the value is the GPU type its
# --gpu-total limits name (the README's example: nvidia-tesla-k80).
CLUSTER_AUTOSCALER_GPU_LABEL = "k8s.amazonaws.com/accelerator"


def cluster_autoscaler_gpu_type(accelerator: str) -> str:
    """The GPU type of a catalog accelerator in the README's form: nvidia-<model> (nvidia-h100-80gb)."""
    return f"nvidia-{accelerator}"


def cluster_autoscaler_role_name(cluster: str) -> str:
    """The autoscaler's IAM role (EKS Pod Identity): cluster.name is checked so this fits IAM's 64."""
    return f"{cluster}-cluster-autoscaler"


# ==== The data path: buckets, claims, mounts, CSI drivers, storage class ====================================
# Where each team's datasets, weights and checkpoints live (docs/data-path.md).
# The prefixes of a team bucket; scratch/ expires (data.lifecycle.scratchDays) and so do checkpoint objects
# tagged RUN_OUTCOME_TAG=RUN_OUTCOME_FAILED (data.lifecycle.failedCheckpointDays).
DATASETS_PREFIX = "datasets/"
MODELS_PREFIX = "models/"
CHECKPOINTS_PREFIX = "checkpoints/"
SCRATCH_PREFIX = "scratch/"
RUN_OUTCOME_TAG = f"{PREFIX}/run-outcome"
RUN_OUTCOME_FAILED = "failed"
# Per team namespace: the service account whose Pod Identity role reaches the team bucket, and the claims of
# the bucket read-only (data) and of its checkpoints/ prefix read-write, where the job template mounts them.
DATA_SERVICE_ACCOUNT = "team-data"
DATA_CLAIM = "team-data"
CHECKPOINTS_CLAIM = "team-checkpoints"
DATA_MOUNT_PATH = "/data"
CHECKPOINTS_MOUNT_PATH = "/checkpoints"
SCRATCH_MOUNT_PATH = "/scratch"
FSX_MOUNT_PATH = "/fsx"
# EKS add-ons and CSI driver names (EKS user guide, workloads-add-ons-available-eks.html; the drivers'
# CSIDriver objects: s3.csi.aws.com, fsx.csi.aws.com, ebs.csi.aws.com).
MOUNTPOINT_S3_ADDON = "aws-mountpoint-s3-csi-driver"
FSX_CSI_ADDON = "aws-fsx-csi-driver"
EBS_CSI_ADDON = "aws-ebs-csi-driver"
MOUNTPOINT_S3_CSI_DRIVER = "s3.csi.aws.com"
FSX_CSI_DRIVER = "fsx.csi.aws.com"
EBS_CSI_DRIVER = "ebs.csi.aws.com"
# The EBS CSI controller's service account, which its Pod Identity association names (kubernetes-sigs/
# aws-ebs-csi-driver docs/install.md).
EBS_CSI_CONTROLLER_SERVICE_ACCOUNT = "ebs-csi-controller-sa"
# The default StorageClass (gp3, encrypted) and the annotation that makes a class the default
# (kubernetes.io/docs/tasks/administer-cluster/change-default-storage-class).
DEFAULT_STORAGE_CLASS = "gp3"
DEFAULT_STORAGE_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"


def team_bucket_name(prefix: str, team: str) -> str:
    return f"{prefix}-{team}"


def data_admin_role_name(cluster: str) -> str:
    return f"{cluster}-data-admin"


def ebs_csi_role_name(cluster: str) -> str:
    return f"{cluster}-ebs-csi"


def fsx_security_group_name(cluster: str, file_system: str) -> str:
    return f"{cluster}-fsx-{file_system}"


def data_volume_name(namespace: str, claim: str) -> str:
    """The PersistentVolume bound to a team namespace's claim (cluster-scoped, so it carries the namespace)."""
    return f"{namespace}-{claim}"


# ==== Simulated nodes and pods (the live local cluster and `simulate`) ======================================
# KWOK manages nodes with this annotation (kwok --manage-nodes-with-annotation-selector) and plays
# their kubelet.
KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"
KWOK_NODE_ANNOTATION_VALUE = "fake"
# A pod on a simulated node finishes (Succeeded) this long after it starts Running: a Go duration such as
# "90s" (KWOK Stage delay.durationFrom, pkg/utils/lifecycle/value_duration_from.go). Without it the pod
# runs until deleted. Meaningless on a real cluster, where the container's command decides.
SIM_DURATION_ANNOTATION = f"sim.{PREFIX}/duration"
# ... and, set to "failed", fails (phase Failed, exit code 1) at that time instead: a run that crashed.
SIM_OUTCOME_ANNOTATION = f"sim.{PREFIX}/outcome"
SIM_OUTCOME_FAILED = "failed"
# ... and, set to "true", never becomes Ready (an image that never pulls, a node that never joins): the
# all-or-nothing (waitForPodsReady) path.
SIM_NEVER_READY_ANNOTATION = f"sim.{PREFIX}/never-ready"
# A simulated node with this annotation set to "true" has failed: KWOK reports it NotReady (Ready False)
# until the annotation goes, and the node lifecycle controller acts on it as on a real NotReady node. Its
# pods are still played (deleted when evicted).
SIM_NODE_FAILED_ANNOTATION = f"sim.{PREFIX}/node-failed"
# A pod on a simulated node keeps its GPUs' engines busy this fraction of the time (a decimal in 0..1): what
# the live cluster's DCGM-shaped telemetry reports for its GPUs (localcluster/telemetry.py), so a run's
# allocated-but-idle time is known. Without it a pod's GPUs are busy all the time (SIM_GPU_BUSY_DEFAULT).
# Set by the job template's --gpu-busy and a trace's `busy` column; meaningless on a real cluster.
SIM_GPU_BUSY_ANNOTATION = f"sim.{PREFIX}/gpu-busy"
SIM_GPU_BUSY_DEFAULT = 1.0
# `simulate` labels every pod template of a replayed trace job with the job's name, so its pods are found
# whichever controller made them (a JobSet's Jobs, KubeRay's head and workers, a LeaderWorkerSet's groups).
SIM_JOB_LABEL = f"sim.{PREFIX}/job"
