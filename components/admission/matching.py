"""Which objects the admission policies match: the workload kinds and where each keeps its pod templates, the
tenant namespaces, and the objects a workload controller made.

Queue label and ownership: the label belongs on the object Kueue manages (a Job, a JobSet, a Deployment;
for a CronJob, its jobTemplate). Objects that a workload controller creates (the Pods of a Job, the Jobs
of a JobSet or CronJob) are exempt from the queue rule, because their owner was checked when it was
admitted and Kueue does not label them; they still get every other check. Exempt means both: the
controlling ownerReference names a workload kind, and the request comes from a service account of
another namespace (the controllers' own). A tenant cannot claim the exemption by pointing an
ownerReference at a ConfigMap, or at its own Job from its own namespace. A bare Pod is its own top-level
workload and must carry the label (Kueue's plain-pod integration).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpu_platform import conventions as cv
from gpu_platform.plan import Plan

from .cel import cel_list


@dataclass(frozen=True)
class WorkloadShape:
    """Where a kind keeps its pod templates (metadata + spec; a Pod is its own) and the labels Kueue reads
    the queue name from, as CEL."""

    pod_templates: str
    queue_labels_owner: str = "object.metadata"


# Pod templates per kind (each project's API: core/v1, batch/v1, apps/v1, jobset v1alpha2, LWS v1,
# Kubeflow training-operator v1, KubeRay v1). CronJob: Kueue reads the label from the jobTemplate's
# metadata (Kueue docs, "Run a CronJob").
SHAPES: dict[str, WorkloadShape] = {
    "Pod": WorkloadShape("[object]"),
    "ReplicaSet": WorkloadShape("[object.spec.template]"),
    "DaemonSet": WorkloadShape("[object.spec.template]"),
    "Job": WorkloadShape("[object.spec.template]"),
    "CronJob": WorkloadShape("[object.spec.jobTemplate.spec.template]", "object.spec.jobTemplate.metadata"),
    "Deployment": WorkloadShape("[object.spec.template]"),
    "StatefulSet": WorkloadShape("[object.spec.template]"),
    "JobSet": WorkloadShape(
        "(has(object.spec.replicatedJobs) ? object.spec.replicatedJobs.map(r, r.template.spec.template) : [])"
    ),
    "LeaderWorkerSet": WorkloadShape(
        "[object.spec.leaderWorkerTemplate.workerTemplate] + "
        "(has(object.spec.leaderWorkerTemplate.leaderTemplate) ? "
        "[object.spec.leaderWorkerTemplate.leaderTemplate] : [])"
    ),
    "PyTorchJob": WorkloadShape(
        "object.spec.pytorchReplicaSpecs.map(k, object.spec.pytorchReplicaSpecs[k].template)"
    ),
    "RayCluster": WorkloadShape(
        "[object.spec.headGroupSpec.template] + "
        "(has(object.spec.workerGroupSpecs) ? object.spec.workerGroupSpecs.map(w, w.template) : [])"
    ),
    "RayJob": WorkloadShape(
        "(has(object.spec.rayClusterSpec) ? [object.spec.rayClusterSpec.headGroupSpec.template] + "
        "(has(object.spec.rayClusterSpec.workerGroupSpecs) ? "
        "object.spec.rayClusterSpec.workerGroupSpecs.map(w, w.template) : []) : []) + "
        "(has(object.spec.submitterPodTemplate) ? [object.spec.submitterPodTemplate] : [])"
    ),
    # A TrainJob has no pod template of its own: its pods are the runtime's (a platform ClusterTrainingRuntime)
    # with the trainer's image and resources (spec.trainer) and the runtime patches (spec.runtimePatches[]
    # .trainingRuntimeSpec.template.spec.replicatedJobs[].template.spec.template: metadata, tolerations,
    # nodeSelector, affinity, volumes; Trainer v2.2.1 pkg/apis/trainer/v1alpha1/trainjob_types.go). Those parts
    # are checked where they are (cel.trainjob_templates and its kin); the JobSet its controller makes is checked
    # again as a JobSet (every rule but the queue rules, as any controller's object).
    "TrainJob": WorkloadShape("[]"),
}

# Always matched, whatever the integrations: plain Pods (where every GPU container ends up), batch Jobs,
# and every built-in kind that makes pods, so that one Kueue cannot queue is refused GPUs rather than
# admitted unqueued.
ALWAYS = ("pod", "batch/job", "deployment", "statefulset")
BUILTIN_POD_MAKERS: tuple[tuple[str, str, str, str], ...] = (
    ("apps", "v1", "replicasets", "ReplicaSet"),
    ("apps", "v1", "daemonsets", "DaemonSet"),
)
# Kinds whose controllers create the workloads the policy checks (the controlling ownerReference of an
# exempt object): Job (pods), ReplicaSet (pods), StatefulSet (pods), Deployment (ReplicaSets), CronJob
# (Jobs) and the integrations' own kinds (JobSet -> Jobs, LeaderWorkerSet -> the leader StatefulSet,
# PyTorchJob and RayCluster -> pods, RayJob -> RayCluster and its submitter Job, TrainJob -> JobSet), and Pod:
# LeaderWorkerSet makes each group's worker StatefulSet with the group's leader Pod as its controller
# (sigs.k8s.io/lws v0.7.0 pkg/controllers/pod_controller.go setControllerReferenceWithStatefulSet), found
# refused on the live cluster before Pod was listed. The username condition still keeps tenants out.
WORKLOAD_OWNER_KINDS: tuple[str, ...] = (
    "Job", "ReplicaSet", "StatefulSet", "Deployment", "CronJob", "Pod",
    "JobSet", "LeaderWorkerSet", "PyTorchJob", "RayCluster", "RayJob", "TrainJob",
)


def matched_apis(plan: Plan) -> list[tuple[str, str, str, str]]:
    """(group, version, plural, kind) the policy matches: Pods, Jobs, CronJobs, Deployments, StatefulSets,
    ReplicaSets and DaemonSets, plus each configured Kueue integration whose workload shape we know. A kind
    whose CRD is not installed simply never matches."""
    out: list[tuple[str, str, str, str]] = []
    for name in (*ALWAYS, *plan.kueue_integrations):
        for api in cv.KUEUE_INTEGRATION_APIS.get(name, ()):
            if api[3] in SHAPES and api not in out:
                out.append(api)
    out += [api for api in BUILTIN_POD_MAKERS if api not in out]
    return out


def queueable_kinds(plan: Plan) -> list[str]:
    """Kinds Kueue queues with this stack's integrations (a CronJob's Jobs are Kueue's batch/job)."""
    out: list[str] = []
    for name in plan.kueue_integrations:
        for api in cv.KUEUE_INTEGRATION_APIS.get(name, ()):
            if api[3] not in out:
                out.append(api[3])
    return out


def resource_rules(apis: list[tuple[str, str, str, str]]) -> list[dict[str, Any]]:
    by_gv: dict[tuple[str, str], list[str]] = {}
    for group, version, plural, _kind in apis:
        by_gv.setdefault((group, version), []).append(plural)
    return [
        {"apiGroups": [g], "apiVersions": [v], "resources": sorted(plurals), "operations": ["CREATE", "UPDATE"]}
        for (g, v), plurals in sorted(by_gv.items())
    ]


def tenant_namespace_selector() -> dict[str, Any]:
    """Namespaces carrying the team label: exactly the ones Tenancy makes (platform namespaces never do)."""
    return {"matchExpressions": [{"key": cv.TEAM, "operator": "Exists"}]}


def controlled() -> str:
    """CEL: made by a workload controller (see the module docstring): a workload kind is the controlling
    owner and the request comes from a service account of another namespace."""
    return (
        "has(object.metadata.ownerReferences) && "
        "object.metadata.ownerReferences.exists(o, has(o.controller) && o.controller == true && "
        f"o.kind in {cel_list(WORKLOAD_OWNER_KINDS)}) && "
        "request.userInfo.username.startsWith('system:serviceaccount:') && "
        "!request.userInfo.username.startsWith('system:serviceaccount:' + request.namespace + ':')"
    )
