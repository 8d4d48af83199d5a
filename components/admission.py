"""Admission: guardrails for what tenants submit with kubectl, which the Pulumi policy pack never sees.

One ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1, CEL, evaluated in the API server) and its
binding, scoped to tenant namespaces (those carrying the team label). For Pods, batch Jobs and CronJobs,
and the workload APIs of the configured Kueue integrations (JobSet, Deployment, PyTorchJob, Ray...):

- a workload that asks for GPUs names a Kueue queue (`kueue.x-k8s.io/queue-name`), so it is queued
  and counted against its team's ClusterQueue instead of landing on a node directly;
- GPUs are requested in limits, as whole numbers; a GPU request, if given, equals the limit;
- no hostNetwork, hostPID or hostIPC.

- a pod that asks for no GPU does not tolerate the GPU taint (it would sit on a GPU node nobody pays for),
  and no pod is created with spec.nodeName (it would bypass the scheduler, the taints and Kueue);
- where work runs (issue 22): a pod template that asks for GPUs tolerates the GPU taint itself (the pools'
  Kueue flavors are given only to pod sets that do, so work without GPUs is only ever given the CPU-only
  flavor); a template without GPUs asks for no topology and, per pod set, for no more than the team's
  CPU-only allowance (namespace annotations): either would never be admitted, so it is refused at creation.
  These are creation checks: Kueue's own updates (the flavor's labels and tolerations on admission,
  suspending, restoring) never add what they refuse, and must pass for workloads made before them;
- a container asks for at most one time-sliced replica (the device plugin refuses more at the kubelet);
- a kind Kueue cannot queue (a DaemonSet, a bare ReplicaSet, a StatefulSet without its integration)
  does not request GPUs at all.

Queue label and ownership: the label belongs on the object Kueue manages (a Job, a JobSet, a Deployment;
for a CronJob, its jobTemplate). Objects that a workload controller creates (the Pods of a Job, the Jobs
of a JobSet or CronJob) are exempt from the queue rule, because their owner was checked when it was
admitted and Kueue does not label them; they still get every other check. Exempt means both: the
controlling ownerReference names a workload kind, and the request comes from a service account of
another namespace (the controllers' own). A tenant cannot claim the exemption by pointing an
ownerReference at a ConfigMap, or at its own Job from its own namespace. A bare Pod is its own top-level
workload and must carry the label (Kueue's plain-pod integration).

A third policy keeps each team inside the priorities it is granted (teams[].priorities): the Kueue
priority-class label and every pod template's priorityClassName must be one of the names its namespace
lists in the allowed-priorities annotation, which tenants cannot edit.

Objects being deleted are not checked, so finalizers can always be removed.

A second policy keeps NetworkPolicies in tenant namespaces in the platform's hands (see
`network_policy_guard_spec`): the default deny means nothing if a team member may add an allow-all.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from gpu_platform import conventions as cv, images
from gpu_platform.plan import Plan

from .kube_object import object_metadata

COMPONENT_VALUE = "admission"


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
    # are checked where they are (the trainjob_* expressions below); the JobSet its controller makes is checked
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


def cel_string(value: str) -> str:
    """A CEL single-quoted string literal."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def is_gpu(var: str) -> str:
    """CEL twin of conventions.is_gpu_resource for the resource name in `var`."""
    return (
        f"({var} == {cel_string(cv.GPU_RESOURCE)} || {var} == {cel_string(cv.SHARED_GPU_RESOURCE)} || "
        f"{var}.startsWith({cel_string(cv.MIG_RESOURCE_PREFIX)}))"
    )


def containers(spec: str) -> str:
    """Every container of a pod spec that can hold resources (ephemeral containers cannot)."""
    return f"({spec}.containers + ({_has(spec, 'initContainers')} ? {spec}.initContainers : []))"


def _has(obj: str, field: str) -> str:
    return f"has({obj}.{field})"


def cel_quantity(expr: str) -> str:
    # Built-in objects reach CEL with quantities as strings; custom resources may carry plain numbers.
    return f"quantity(string({expr}))"


def _kind_switch(values: dict[str, str], default: str) -> str:
    expr = default
    for kind, value in reversed(list(values.items())):
        expr = f"(request.kind.kind == {cel_string(kind)} ? {value} : {expr})"
    return expr


def cel_list(values: list[str] | tuple[str, ...]) -> str:
    return "[" + ", ".join(cel_string(v) for v in values) + "]"


def tolerates_gpu_taint(spec: str) -> str:
    """CEL: the pod spec tolerates the GPU taint (by its key, or by a key-less Exists that tolerates all)."""
    return (
        f"(has({spec}.tolerations) && {spec}.tolerations.exists(t, "
        f"(has(t.key) && t.key == {cel_string(cv.GPU_TAINT_KEY)}) || "
        "((!has(t.key) || t.key == '') && has(t.operator) && t.operator == 'Exists')))"
    )


def container_asks_gpu() -> str:
    """CEL: container `c` asks for a GPU resource, in its limits or its requests."""
    return (
        "has(c.resources) && ("
        f"(has(c.resources.limits) && c.resources.limits.exists(r, {is_gpu('r')})) || "
        f"(has(c.resources.requests) && c.resources.requests.exists(r, {is_gpu('r')})))"
    )


def carries_gpu_toleration(spec: str) -> str:
    """CEL: the pod spec tolerates the GPU taint as Kubernetes matches it (its key, or a key-less Exists;
    Exists or the taint's value; no effect or NoSchedule), which is what Kueue checks against a pool flavor's
    nodeTaints before it gives the flavor to a pod set (flavorassigner.go checkFlavorForPodSets)."""
    return (
        f"(has({spec}.tolerations) && {spec}.tolerations.exists(t, "
        f"((has(t.key) && t.key == {cel_string(cv.GPU_TAINT_KEY)}) || "
        "((!has(t.key) || t.key == '') && has(t.operator) && t.operator == 'Exists')) && "
        f"((has(t.operator) && t.operator == 'Exists') || (has(t.value) && t.value == {cel_string(cv.GPU_TAINT_VALUE)})) && "
        f"(!has(t.effect) || t.effect == '' || t.effect == {cel_string(cv.TAINT_EFFECT)})))"
    )


def resource_amount(c: str, resource: str) -> str:
    """CEL: a container's request of `resource` as a number (its limit when it sets no request, as Kubernetes
    defaults a request from the limit), 0.0 when it sets neither."""
    return f"(has({c}.resources) ? {resources_amount(f'{c}.resources', resource)} : 0.0)"


def resources_amount(res: str, resource: str) -> str:
    """CEL: `resource` of a ResourceRequirements `res` (which exists), as resource_amount reads a container's."""
    def held(field: str) -> str:
        return f"has({res}.{field}) && {cel_string(resource)} in {res}.{field}"

    def amount(field: str) -> str:
        return f"{cel_quantity(f'{res}.{field}[{cel_string(resource)}]')}.asApproximateFloat()"

    return f"({held('requests')} ? {amount('requests')} : ({held('limits')} ? {amount('limits')} : 0.0))"


def pod_amount(spec: str, resource: str) -> str:
    """CEL: what one pod of a pod spec asks for of `resource`: its containers' sum, a lower bound of what
    Kueue counts (init containers and overhead can only add), so a refusal on it is never wrong."""
    return f"{spec}.containers.map(c, {resource_amount('c', resource)}).sum()"


# TrainJob (Kubeflow Trainer v2.2.1, trainer.kubeflow.org/v1alpha1): the trainer container's resources, and the pod
# template patches of its runtime patches, read in place (CEL in the API server has no flatten to make them one
# list: cel-go's ext.Lists is not in Kubernetes' environment, k8s.io/apiserver pkg/cel/environment/base.go).
TRAINJOB = "request.kind.kind == 'TrainJob'"
TRAINER_RESOURCES = "object.spec.trainer.resourcesPerNode"
HAS_TRAINER_RESOURCES = f"({TRAINJOB} && has(object.spec.trainer) && has({TRAINER_RESOURCES}))"


def trainjob_templates(quantifier: str, pred: Any) -> str:
    """CEL: `quantifier` ('all' or 'exists') of `pred(t)` over a TrainJob's pod template patches (t: an expression
    for one); vacuous for other kinds and for patches that hold none."""
    unit = "true" if quantifier == "all" else "false"
    t = "tjr.template.spec.template"
    jobs = "tjp.trainingRuntimeSpec.template.spec.replicatedJobs"
    return (
        f"({TRAINJOB} && has(object.spec.runtimePatches) ? object.spec.runtimePatches.{quantifier}(tjp, "
        "has(tjp.trainingRuntimeSpec) && has(tjp.trainingRuntimeSpec.template) && "
        f"has(tjp.trainingRuntimeSpec.template.spec) && has({jobs}) ? {jobs}.{quantifier}(tjr, "
        f"has(tjr.template) && has(tjr.template.spec) && has({t}) ? ({pred(t)}) : {unit}) : {unit}) : {unit})"
    )


def has_tas_annotation(t: str) -> str:
    """CEL: the pod template `t` asks for a Kueue topology."""
    return (f"(has({t}.metadata) && has({t}.metadata.annotations) && "
            f"{cel_list(cv.TAS_ANNOTATIONS)}.exists(a, a in {t}.metadata.annotations))")


def no_host_path(spec: str) -> str:
    return f"(!has({spec}.volumes) || {spec}.volumes.all(v, !has(v.hostPath)))"


def selects_team_pools(spec: str) -> str:
    """CEL: the pod spec selects no pool but the team's by the pool label: its nodeSelector, and the `In` terms of
    its required node affinity (what Kueue matches a flavor's node labels against)."""
    pool = cel_string(cv.POOL)
    selector = (f"(!has({spec}.nodeSelector) || !({pool} in {spec}.nodeSelector) || "
                f"{spec}.nodeSelector[{pool}] in variables.teamPools)")
    required = f"{spec}.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    affinity = (
        f"(!has({spec}.affinity) || !has({spec}.affinity.nodeAffinity) || !has({required}) || "
        f"!has({required}.nodeSelectorTerms) || {required}.nodeSelectorTerms.all(term, "
        f"!has(term.matchExpressions) || term.matchExpressions.all(e, e.key != {pool} || e.operator != 'In' || "
        "!has(e.values) || e.values.all(x, x in variables.teamPools))))"
    )
    return f"({selector} && {affinity})"


# The rules a tenant's refusal is asserted by: rule name -> the part of its message that names it (the unit tests
# and the live layer assert these; docs/submitting-work.md lists them).
RULES: dict[str, str] = {
    "queue-label": "workloads that request GPUs must name a Kueue LocalQueue",
    "queue-name": f"is not a LocalQueue of team namespaces: each has one, {cv.LOCAL_QUEUE_NAME!r}",
    "queueable-kind": "Kueue cannot queue a",
    "whole-gpus": "must be whole numbers",
    "gpus-in-limits": "a GPU request, if set, must equal its limit",
    "host-namespaces": "hostNetwork, hostPID and hostIPC are not allowed",
    "host-path": "hostPath volumes are not allowed in team namespaces",
    "team-pools": "may select only its own pools",
    "gpu-toleration": "a pod template that requests GPUs must tolerate the GPU taint",
    "no-gpu-no-toleration": "a pod that requests no GPU may not tolerate the GPU taint",
    "no-gpu-no-topology": "a pod template that requests no GPU may not ask for a topology",
    "cpu-only-allowance": "a pod set without GPUs asks for more than team",
    "node-name": "spec.nodeName may not be set in team namespaces",
    "topology": "come only from topology-aware pools",
    "priority-label": "(label kueue.x-k8s.io/priority-class) is not granted to team",
    "priority-class-name": "is not granted to team",
    "image-registry": "images must come from a registry team",
    "job-ttl": "must set spec.ttlSecondsAfterFinished",
}


# Pods per pod set of a Job (and a CronJob's Jobs): parallelism, or completions when fewer (kueue v0.19.2
# pkg/controller/jobs/job/job_controller.go podsCount); one for every other kind, a lower bound.
def _job_pods(job_spec: str) -> str:
    par = f"(has({job_spec}.parallelism) ? {job_spec}.parallelism : 1)"
    comp = f"(has({job_spec}.completions) ? {job_spec}.completions : {par})"
    return f"({comp} < {par} ? {comp} : {par})"


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


def variables(apis: list[tuple[str, str, str, str]], queueable: list[str] | None = None) -> list[dict[str, str]]:
    kinds = [api[3] for api in apis]
    pod_templates = _kind_switch({k: SHAPES[k].pod_templates for k in kinds}, "[]")
    owners = {k: SHAPES[k].queue_labels_owner for k in kinds}
    queue_labels = _kind_switch(
        {
            k: f"(has({owner}) && has({owner}.labels) ? {owner}.labels : {{}})"
            for k, owner in owners.items() if owner != "object.metadata"
        },
        "(has(object.metadata.labels) ? object.metadata.labels : {})",
    )
    q = cel_string(cv.QUEUE_NAME_LABEL)
    asks_gpu = container_asks_gpu()
    pc = cel_string(cv.PRIORITY_CLASS_LABEL)
    allowed = cel_string(cv.ALLOWED_PRIORITIES_ANNOTATION)
    topo = cel_string(cv.TOPOLOGY_RESOURCES_ANNOTATION)
    return [
        {"name": "podTemplates", "expression": pod_templates},
        {"name": "podSpecs", "expression": "variables.podTemplates.map(t, t.spec)"},
        {"name": "trainJobGpus", "expression": (
            f"{HAS_TRAINER_RESOURCES} && ("
            f"(has({TRAINER_RESOURCES}.limits) && {TRAINER_RESOURCES}.limits.exists(r, {is_gpu('r')})) || "
            f"(has({TRAINER_RESOURCES}.requests) && {TRAINER_RESOURCES}.requests.exists(r, {is_gpu('r')})))")},
        {"name": "requestsGpus", "expression": (
            f"variables.trainJobGpus || variables.podSpecs.exists(s, {containers('s')}.exists(c, {asks_gpu}))")},
        {"name": "gpuLessSpecs", "expression": (
            f"variables.podSpecs.filter(s, !{containers('s')}.exists(c, {asks_gpu}))")},
        # Made by a workload controller: its controlling owner is a workload kind, and the request comes
        # from a service account of another namespace (the controllers' own: kube-system's job-controller,
        # the JobSet or training operator's), never from the tenant or a service account of its namespace.
        {"name": "controlled", "expression": controlled()},
        {"name": "queueable", "expression": f"request.kind.kind in {cel_list(queueable or [])}"},
        {"name": "queueLabels", "expression": queue_labels},
        {"name": "queueName", "expression": f"{q} in variables.queueLabels ? string(variables.queueLabels[{q}]) : ''"},
        {"name": "workloadPriority", "expression": (
            f"{pc} in variables.queueLabels ? string(variables.queueLabels[{pc}]) : ''")},
        {"name": "allowedPriorities", "expression": (
            f"has(namespaceObject.metadata.annotations) && {allowed} in namespaceObject.metadata.annotations ? "
            f"namespaceObject.metadata.annotations[{allowed}].split(',') : []")},
        {"name": "topologyResources", "expression": (
            f"has(namespaceObject.metadata.annotations) && {topo} in namespaceObject.metadata.annotations && "
            f"namespaceObject.metadata.annotations[{topo}] != '' ? "
            f"namespaceObject.metadata.annotations[{topo}].split(',') : []")},
        {"name": "team", "expression": (
            f"has(namespaceObject.metadata.labels) && {cel_string(cv.TEAM)} in namespaceObject.metadata.labels ? "
            f"namespaceObject.metadata.labels[{cel_string(cv.TEAM)}] : request.namespace")},
        {"name": "teamPools", "expression": (
            f"has(namespaceObject.metadata.annotations) && {cel_string(cv.TEAM_POOLS_ANNOTATION)} in "
            f"namespaceObject.metadata.annotations ? namespaceObject.metadata.annotations"
            f"[{cel_string(cv.TEAM_POOLS_ANNOTATION)}].split(',').filter(x, x != '') : []")},
        # The pod templates that ask for no GPU: Kueue can give them only the CPU-only flavor.
        {"name": "gpuLessTemplates", "expression": (
            f"variables.podTemplates.filter(t, !{containers('t.spec')}.exists(c, {asks_gpu}))")},
        {"name": "podSetPods", "expression": _kind_switch(
            {"Job": _job_pods("object.spec"), "CronJob": _job_pods("object.spec.jobTemplate.spec")}, "1")},
        *(
            {"name": name, "expression": (
                f"has(namespaceObject.metadata.annotations) && {cel_string(key)} in namespaceObject.metadata.annotations"
                f" && isQuantity(namespaceObject.metadata.annotations[{cel_string(key)}]) ? "
                f"namespaceObject.metadata.annotations[{cel_string(key)}] : ''")}
            for name, key in (("cpuOnlyCpu", cv.CPU_ONLY_CPU_ANNOTATION), ("cpuOnlyMemory", cv.CPU_ONLY_MEMORY_ANNOTATION))
        ),
        # Per GPU-less pod set: what its pods ask for together (a lower bound of Kueue's count), in cores / bytes.
        *(
            {"name": name, "expression": (
                f"variables.gpuLessTemplates.map(t, {pod_amount('t.spec', resource)} * double(variables.podSetPods)) + "
                f"({HAS_TRAINER_RESOURCES} && !variables.trainJobGpus ? [{resources_amount(TRAINER_RESOURCES, resource)} * "
                "double(has(object.spec.trainer.numNodes) ? object.spec.trainer.numNodes : 1)] : [])")}
            for name, resource in (("gpuLessCpu", "cpu"), ("gpuLessMemory", "memory"))
        ),
    ]


def validations(queueable: list[str] | None = None) -> list[dict[str, str]]:
    q = cv.QUEUE_NAME_LABEL
    # Whole numbers as Kubernetes counts them for extended resources ("1000m" is 1). The quantity
    # library's isInteger() is false for any milli-scaled value, so compare with the truncated value.
    # Each resource rule is written for a ResourceRequirements `res` (a container's, or a TrainJob's trainer's).
    def gpu_limits_integer(res: str) -> str:
        limit = cel_quantity(f"{res}.limits[r]")
        return (
            f"!has({res}.limits) || {res}.limits.all(r, "
            f"!{is_gpu('r')} || (isQuantity(string({res}.limits[r])) && "
            f"double(int({limit}.asApproximateFloat())) == {limit}.asApproximateFloat()))"
        )

    def gpu_requests_equal_limits(res: str) -> str:
        return (
            f"!has({res}.requests) || {res}.requests.all(r, "
            f"!{is_gpu('r')} || (has({res}.limits) && r in {res}.limits && "
            f"isQuantity(string({res}.requests[r])) && isQuantity(string({res}.limits[r])) && "
            f"{cel_quantity(f'{res}.requests[r]')}.compareTo({cel_quantity(f'{res}.limits[r]')}) == 0))"
        )

    shared = cel_string(cv.SHARED_GPU_RESOURCE)

    def shared_at_most_one(res: str) -> str:
        return (
            f"!has({res}.limits) || !({shared} in {res}.limits) || "
            f"!isQuantity(string({res}.limits[{shared}])) || "
            f"{cel_quantity(f'{res}.limits[{shared}]')}.compareTo("
            f"quantity({cel_string(str(cv.SHARED_GPU_MAX_PER_CONTAINER))})) <= 0"
        )

    asks_gpu = container_asks_gpu()
    host = (
        "!(has(s.hostNetwork) && s.hostNetwork == true) && !(has(s.hostPID) && s.hostPID == true) && "
        "!(has(s.hostIPC) && s.hostIPC == true)"
    )

    def every_resources(rule: Any) -> str:
        """Every container's resources and a TrainJob trainer's."""
        return (f"variables.podSpecs.all(s, {containers('s')}.all(c, !has(c.resources) || ({rule('c.resources')}))) && "
                f"(!{HAS_TRAINER_RESOURCES} || ({rule(TRAINER_RESOURCES)}))")

    gpu_taint = f"{cv.GPU_TAINT_KEY}={cv.GPU_TAINT_VALUE}:{cv.TAINT_EFFECT}"
    return [
        {
            "expression": "!variables.requestsGpus || variables.controlled || variables.queueable",
            "messageExpression": (
                f"'{RULES['queueable-kind']} ' + request.kind.kind + ' with the Kueue integrations of this platform, so it "
                "may not request GPUs in a team namespace; GPU workloads are one of: ' + "
                f"{cel_list(queueable or [])}.join(', ')"
            ),
            "reason": "Forbidden",
        },
        {
            "expression": "!variables.requestsGpus || variables.controlled || variables.queueName != ''",
            "message": (
                f"{RULES['queue-label']} in the label {q} (each team "
                f"namespace has one called {cv.LOCAL_QUEUE_NAME!r}; for a CronJob, on spec.jobTemplate.metadata)"
            ),
            "reason": "Forbidden",
        },
        {
            # Create only: a workload made before this rule must still take Kueue's own updates.
            "expression": (
                f"request.operation != 'CREATE' || variables.queueName == '' || "
                f"variables.queueName == {cel_string(cv.LOCAL_QUEUE_NAME)}"
            ),
            "messageExpression": "'queue ' + variables.queueName + " + cel_string(
                f" (label {q}) {RULES['queue-name']}: Kueue would keep the workload pending forever (its LocalQueue "
                "does not exist), and tenants cannot make LocalQueues"),
            "reason": "Invalid",
        },
        {
            "expression": every_resources(gpu_limits_integer),
            "message": f"GPU resources (nvidia.com/gpu, nvidia.com/gpu.shared, nvidia.com/mig-*) {RULES['whole-gpus']}",
            "reason": "Invalid",
        },
        {
            "expression": every_resources(shared_at_most_one),
            "message": (
                f"a container may ask for at most {cv.SHARED_GPU_MAX_PER_CONTAINER} {cv.SHARED_GPU_RESOURCE}: on "
                "time-sliced pools the device plugin refuses more per container (failRequestsGreaterThanOne: "
                "\"maximum request size for shared resources is 1\"), so the pod would be admitted and never "
                "start, and two replicas of one GPU are not two GPUs of compute; run more pods instead "
                "(python -m platform_cli job --nodes N)"
            ),
            "reason": "Invalid",
        },
        {
            "expression": every_resources(gpu_requests_equal_limits),
            "message": f"GPU resources belong in resources.limits; {RULES['gpus-in-limits']}",
            "reason": "Invalid",
        },
        {
            "expression": f"variables.podSpecs.all(s, {host})",
            "message": f"{RULES['host-namespaces']} in tenant namespaces",
            "reason": "Forbidden",
        },
        {
            # Pod Security `baseline` refuses hostPath pods too, but only the Pods: a JobSet, TrainJob, RayJob or
            # LeaderWorkerSet with one would be accepted and its controller's pods refused later, out of sight.
            "expression": (f"variables.podSpecs.all(s, {no_host_path('s')}) && "
                           f"{trainjob_templates('all', lambda t: no_host_path(f'{t}.spec'))}"),
            "message": (
                f"{RULES['host-path']}: a node's filesystem is not the team's (Pod Security refuses the pods "
                "too, after the workload was accepted); use the team's volumes (docs/data-path.md)"
            ),
            "reason": "Forbidden",
        },
        {
            "expression": (
                f"variables.gpuLessSpecs.all(s, !{tolerates_gpu_taint('s')}) && (variables.trainJobGpus || "
                f"{trainjob_templates('all', lambda t: '!' + tolerates_gpu_taint(f'{t}.spec'))})"
            ),
            "message": (
                f"{RULES['no-gpu-no-toleration']} {gpu_taint}: GPU nodes are for GPU "
                f"work; work without GPUs is admitted only on the {cv.CPU_FLAVOR!r} flavor and runs on CPU nodes"
            ),
            "reason": "Forbidden",
        },
        {
            # Create only: Kueue's own updates of a workload made before this rule (suspending it, restoring
            # its template) must pass, and a template without the toleration only keeps itself from admission.
            "expression": (
                "request.operation != 'CREATE' || (variables.podSpecs.all(s, "
                f"!{containers('s')}.exists(c, {asks_gpu}) || {carries_gpu_toleration('s')}) && "
                f"(!variables.trainJobGpus || {trainjob_templates('exists', lambda t: carries_gpu_toleration(f'{t}.spec'))}))"
            ),
            "message": (
                f"{RULES['gpu-toleration']} {gpu_taint} itself (tolerations: "
                f"[{{key: {cv.GPU_TOLERATION['key']}, operator: {cv.GPU_TOLERATION['operator']}, effect: "
                f"{cv.GPU_TOLERATION['effect']}}}]; a TrainJob in a runtime patch's pod template): Kueue gives a pool's "
                "flavor only to pod sets that tolerate its taint, so without it the workload would never be admitted; "
                "python -m platform_cli job sets it"
            ),
            "reason": "Invalid",
        },
        {
            "expression": (
                f"request.operation != 'CREATE' || (variables.gpuLessTemplates.all(t, !{has_tas_annotation('t')}) && "
                f"(variables.trainJobGpus || {trainjob_templates('all', lambda t: '!' + has_tas_annotation(t))}))"
            ),
            "message": (
                f"{RULES['no-gpu-no-topology']} (kueue.x-k8s.io/podset-*-topology): "
                f"work without GPUs is admitted only on the {cv.CPU_FLAVOR!r} flavor, which is not topology-aware, so "
                "Kueue would never admit it; annotate only the pod templates that request GPUs"
            ),
            "reason": "Invalid",
        },
        {
            # Create only, and only what Kueue queues itself (a controller's objects were checked as their owner).
            "expression": (
                "request.operation != 'CREATE' || variables.controlled || !variables.queueable || ("
                "(variables.cpuOnlyCpu == '' || variables.gpuLessCpu.all(x, x <= quantity(variables.cpuOnlyCpu)"
                ".asApproximateFloat())) && (variables.cpuOnlyMemory == '' || variables.gpuLessMemory.all(x, "
                "x <= quantity(variables.cpuOnlyMemory).asApproximateFloat())))"
            ),
            "messageExpression": (
                f"'{RULES['cpu-only-allowance']} ' + variables.team + '\\'s CPU-only allowance of ' + "
                "variables.cpuOnlyCpu + ' CPU and ' + variables.cpuOnlyMemory + ' memory (teams[].limits.cpu and "
                f"memoryGiB): work without GPUs is admitted only on the Kueue flavor {cv.CPU_FLAVOR}, never on a GPU "
                "pool, so it could never start; ask for less (per pod times parallelism) or have the allowance raised'"
            ),
            "reason": "Forbidden",
        },
        {
            "expression": (
                "variables.podTemplates.all(t, "
                f"!{containers('t.spec')}.exists(c, has(c.resources) && has(c.resources.limits) && "
                "c.resources.limits.exists(r, r in variables.topologyResources)) || "
                f"{has_tas_annotation('t')}) && "
                f"(!{HAS_TRAINER_RESOURCES} || !has({TRAINER_RESOURCES}.limits) || "
                f"!{TRAINER_RESOURCES}.limits.exists(r, r in variables.topologyResources) || "
                f"{trainjob_templates('exists', has_tas_annotation)})"
            ),
            "messageExpression": (
                "'the team\\'s ' + variables.topologyResources.join(', ') + ' " + RULES['topology'] + ", "
                "where Kueue admits a pod set only if it asks for a topology: annotate the pod template with "
                f"{cv.TAS_PREFERRED_TOPOLOGY_ANNOTATION}: {cv.TAS_PREFERRED_LEVEL} (or another Kueue topology "
                "annotation); python -m platform_cli job sets it'"
            ),
            "reason": "Invalid",
        },
        {
            # Create only: Kueue's own update on admission selects the flavor's pool, always one of the team's.
            "expression": (
                f"request.operation != 'CREATE' || (variables.podSpecs.all(s, {selects_team_pools('s')}) && "
                f"{trainjob_templates('all', lambda t: selects_team_pools(f'{t}.spec'))})"
            ),
            "messageExpression": (
                f"'a pod template selects a pool (label {cv.POOL}) that is not team ' + variables.team + '\\'s: a team "
                f"{RULES['team-pools']} (' + variables.teamPools.join(', ') + '); Kueue would never admit the "
                "workload on another team\\'s pool, it would wait forever'"
            ),
            "reason": "Forbidden",
        },
        {
            "expression": (
                "request.operation != 'CREATE' || "
                "variables.podSpecs.all(s, !has(s.nodeName) || s.nodeName == '')"
            ),
            "message": f"{RULES['node-name']}: it bypasses the scheduler, node taints and Kueue",
            "reason": "Forbidden",
        },
    ]


def priority_validations() -> list[dict[str, str]]:
    """The team's granted priorities (the namespace annotation) bound the Kueue label and priorityClassName."""
    granted = "variables.allowedPriorities.join(', ')"
    return [
        {
            "expression": "variables.workloadPriority == '' || variables.workloadPriority in variables.allowedPriorities",
            "messageExpression": (
                f"'priority class ' + variables.workloadPriority + ' (label {cv.PRIORITY_CLASS_LABEL}) is not granted "
                "to team ' + variables.team + '; granted: ' + " + granted
            ),
            "reason": "Forbidden",
        },
        {
            "expression": (
                "variables.podSpecs.all(s, !has(s.priorityClassName) || s.priorityClassName == '' || "
                "s.priorityClassName in variables.allowedPriorities)"
            ),
            "messageExpression": (
                "'priorityClassName ' + variables.podSpecs.filter(s, has(s.priorityClassName) && "
                "s.priorityClassName != '' && !(s.priorityClassName in variables.allowedPriorities))"
                ".map(s, s.priorityClassName)[0] + ' is not granted to team ' + variables.team + '; granted: ' + "
                + granted
            ),
            "reason": "Forbidden",
        },
    ]


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


def policy_spec(plan: Plan, checks: str = "workloads") -> dict[str, Any]:
    """The workload policy (`checks="workloads"`) or the priority policy (`"priorities"`): same match, same
    variables, different validations, so each denial names the policy that made it."""
    apis = matched_apis(plan)
    queueable = queueable_kinds(plan)
    return {
        # Fail closed: if the policy cannot be evaluated, the workload is not admitted.
        "failurePolicy": "Fail",
        "matchConstraints": {
            "resourceRules": resource_rules(apis),
            "namespaceSelector": tenant_namespace_selector(),
            "matchPolicy": "Equivalent",
        },
        "matchConditions": [
            {"name": "not-being-deleted", "expression": "!has(object.metadata.deletionTimestamp)"},
        ],
        "variables": variables(apis, queueable),
        "validations": validations(queueable) if checks == "workloads" else priority_validations(),
    }


def network_policy_guard_spec() -> dict[str, Any]:
    """NetworkPolicies are additive, and Kubernetes' `edit` and `admin` roles (bound to every team) may
    write them: a member could add an allow-all policy next to our default deny, or delete it. So in tenant
    namespaces only someone who may write NetworkPolicies in every namespace (a cluster-wide grant: the
    deployer, cluster admins, the namespace controller) may create, change or delete them; RoleBindings a
    tenant makes in its own namespace never pass this check. Teams change their egress in the stack config.
    (`authorizer` in ValidatingAdmissionPolicy CEL: kubernetes.io/docs/reference/access-authn-authz/
    validating-admission-policy; without .namespace() the check is cluster wide.)"""
    verb = "request.operation == 'CREATE' ? 'create' : (request.operation == 'DELETE' ? 'delete' : 'update')"
    return {
        "failurePolicy": "Fail",
        "matchConstraints": {
            "resourceRules": [{
                "apiGroups": ["networking.k8s.io"], "apiVersions": ["v1"], "resources": ["networkpolicies"],
                "operations": ["CREATE", "UPDATE", "DELETE"],
            }],
            "namespaceSelector": tenant_namespace_selector(),
            "matchPolicy": "Equivalent",
        },
        "variables": [{"name": "verb", "expression": verb}],
        "validations": [{
            "expression": (
                "authorizer.group('networking.k8s.io').resource('networkpolicies').check(variables.verb).allowed()"
            ),
            "message": (
                "NetworkPolicies in team namespaces are managed by the platform (teams[].egress in the stack "
                "config); only cluster-wide administrators may change them"
            ),
            "reason": "Forbidden",
        }],
    }


def image_names(spec: str) -> str:
    """CEL: the images of every container, init container and ephemeral container of a pod spec, as one
    list of strings (mapped first: the three container types are different CEL types)."""
    one = "(has(c.image) ? c.image : '')"
    return (
        f"({spec}.containers.map(c, {one}) + "
        f"({_has(spec, 'initContainers')} ? {spec}.initContainers.map(c, {one}) : []) + "
        f"({_has(spec, 'ephemeralContainers')} ? {spec}.ephemeralContainers.map(c, {one}) : []))"
    )


def domain_qualified(i: str) -> str:
    """CEL twin of the first step of images.normalize: a name whose first part is no domain is Docker Hub's."""
    first = f"{i}.split('/')[0]"
    return (f"({i}.contains('/') && ({first}.contains('.') || {first}.contains(':') || {first} == "
            f"{cel_string(images.LOCALHOST)}) ? {i} : {cel_string(images.DOCKER_HUB + '/')} + {i})")


def official_qualified(n: str) -> str:
    """CEL twin of the second step of images.normalize: a one-part Docker Hub name is an official image."""
    hub = images.DOCKER_HUB + "/"
    rest = f"{n}.substring({len(hub)})"
    return (f"({n}.startsWith({cel_string(hub)}) && !{rest}.contains('/') ? "
            f"{cel_string(images.DOCKER_HUB_OFFICIAL + '/')} + {rest} : {n})")


def from_allowed_registry(n: str) -> str:
    """CEL twin of images.from_entry over the namespace's registries, for a normalised reference `n`."""
    return (f"variables.allowedRegistries.exists(r, {n} == r || {n}.startsWith(r + '/') || "
            f"(r.contains('/') && ({n}.startsWith(r + ':') || {n}.startsWith(r + '@'))))")


def image_policy_spec(plan: Plan) -> dict[str, Any]:
    """Tenant pods' images come from the registries their namespace allows (`gpu-platform.io/allowed-
    registries`: images.allowedRegistries plus the team's own), and name a digest when the platform requires
    it. Checked on every pod template of the workload kinds (so a Job is refused when submitted, not when
    its pods fail later), on Pods, and on `kubectl debug`'s ephemeral containers, which arrive as an update
    of the pods/ephemeralcontainers subresource."""
    apis = matched_apis(plan)
    kinds = [api[3] for api in apis]
    annotation = cel_string(cv.ALLOWED_REGISTRIES_ANNOTATION)
    rules = resource_rules(apis) + [{
        "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods/ephemeralcontainers"], "operations": ["UPDATE"],
    }]
    team = next(v for v in variables(apis) if v["name"] == "team")
    validations = [{
        "expression": "size(variables.deniedImages) == 0",
        "messageExpression": (
            f"'{RULES['image-registry']} ' + variables.team + ' may pull from; not allowed: ' + "
            "variables.deniedImages.join(', ') + '; allowed registries: ' + variables.allowedRegistries.join(', ')"
        ),
        "reason": "Forbidden",
    }]
    if plan.require_image_digests:
        validations.append({
            "expression": f"variables.images.all(i, i.contains({cel_string(images.DIGEST_SEPARATOR)}))",
            "messageExpression": (
                "'this platform runs tenant images by digest (image@sha256:...), not by tag: ' + "
                f"variables.images.filter(i, !i.contains({cel_string(images.DIGEST_SEPARATOR)})).join(', ')"
            ),
            "reason": "Forbidden",
        })
    return {
        "failurePolicy": "Fail",
        "matchConstraints": {
            "resourceRules": rules,
            "namespaceSelector": tenant_namespace_selector(),
            "matchPolicy": "Equivalent",
        },
        "matchConditions": [
            {"name": "not-being-deleted", "expression": "!has(object.metadata.deletionTimestamp)"},
        ],
        "variables": [
            {"name": "podTemplates", "expression": _kind_switch({k: SHAPES[k].pod_templates for k in kinds}, "[]")},
            {"name": "podSpecs", "expression": "variables.podTemplates.map(t, t.spec)"},
            # One flat list of names without CEL's (absent) flatten: joined and split on a space, which no
            # image reference contains.
            {"name": "imageNames", "expression": (
                f"variables.podSpecs.map(s, {image_names('s')}.join(' ')).join(' ').split(' ').filter(i, i != '') + "
                # A TrainJob's trainer image (its runtime's own images are the platform's: images.CHART_DEFAULT_IMAGES).
                f"({TRAINJOB} && has(object.spec.trainer) && has(object.spec.trainer.image) ? "
                "[object.spec.trainer.image] : [])")},
            {"name": "domainQualified", "expression": f"variables.imageNames.map(i, {domain_qualified('i')})"},
            {"name": "images", "expression": f"variables.domainQualified.map(n, {official_qualified('n')})"},
            {"name": "allowedRegistries", "expression": (
                f"has(namespaceObject.metadata.annotations) && {annotation} in namespaceObject.metadata.annotations ? "
                f"namespaceObject.metadata.annotations[{annotation}].split(',').filter(r, r != '') : []")},
            {"name": "deniedImages", "expression": f"variables.images.filter(n, !{from_allowed_registry('n')})"},
            team,
        ],
        "validations": validations,
    }


# Kinds whose finished objects are deleted after spec.ttlSecondsAfterFinished, by the framework that queues them:
# batch/v1 Job (and a CronJob's jobTemplate: the TTL-after-finished controller), JobSet (sigs.k8s.io/jobset v0.10.1
# api/jobset/v1alpha2/jobset_types.go TTLSecondsAfterFinished: the JobSet and its Jobs), RayJob (KubeRay v1.5.0
# apis/ray/v1/rayjob_types.go; with shutdownAfterJobFinishes, which Kueue requires of the RayJobs it manages
# (pkg/controller/jobs/rayjob/rayjob_webhook.go), the RayCluster goes at the TTL, and the RayJob with it because
# the platform's operator runs with DELETE_RAYJOB_CR_AFTER_JOB_FINISHES: workload_controllers.chart_values).
# A TrainJob has no TTL (Trainer v2.2.1 TrainJobSpec), and a LeaderWorkerSet serves until deleted.
TTL_KINDS: tuple[tuple[str, str, str, str, str], ...] = (
    (cv.FRAMEWORK_JOB, "batch", "v1", "jobs", "Job"),
    (cv.FRAMEWORK_JOB, "batch", "v1", "cronjobs", "CronJob"),
    (cv.FRAMEWORK_JOBSET, "jobset.x-k8s.io", "v1alpha2", "jobsets", "JobSet"),
    (cv.FRAMEWORK_RAYJOB, "ray.io", "v1", "rayjobs", "RayJob"),
)


def job_cleanup_policy_spec(plan: Plan) -> dict[str, Any]:
    """Finished and failed tenant Jobs, JobSets and RayJobs do not linger: each (and a CronJob's jobTemplate) sets
    ttlSecondsAfterFinished, at most jobs.maxTtlSecondsAfterFinished, so its controller deletes it and its pods
    (TTL_KINDS). Enforced rather than defaulted: defaulting needs a mutating webhook or
    MutatingAdmissionPolicy, which is alpha and off by default in Kubernetes 1.33 (k8s.io/apiserver
    v0.33.13 pkg/features/kube_features.go: MutatingAdmissionPolicy Alpha, Default false), so EKS 1.33 does
    not serve it. On update only an object that already had a TTL is held to it (removing or raising it is
    refused), so objects created before the policy can still be unsuspended by Kueue. Objects a workload
    controller makes (a JobSet's Jobs, a TrainJob's JobSet, a RayJob's submitter Job) are exempt: their owner's
    lifetime decides. JobSets and RayJobs are matched only while their framework is on."""
    holder = "(request.kind.kind == 'CronJob' ? object.spec.jobTemplate.spec : object.spec)"
    old = ("(request.kind.kind == 'CronJob' ? oldObject.spec.jobTemplate.spec : oldObject.spec)")
    limit = plan.job_max_ttl_seconds
    kinds = [k for k in TTL_KINDS if k[0] in (cv.FRAMEWORK_JOB, *plan.kueue_integrations)]
    return {
        "failurePolicy": "Fail",
        "matchConstraints": {
            "resourceRules": resource_rules([(g, v, r, k) for _f, g, v, r, k in kinds]),
            "namespaceSelector": tenant_namespace_selector(),
            "matchPolicy": "Equivalent",
        },
        "matchConditions": [
            {"name": "not-being-deleted", "expression": "!has(object.metadata.deletionTimestamp)"},
            {"name": "not-made-by-a-workload-controller", "expression": f"!({controlled()})"},
            {"name": "new-or-already-bounded", "expression": (
                f"request.operation == 'CREATE' || has({old}.ttlSecondsAfterFinished)")},
        ],
        "variables": [{"name": "holder", "expression": holder}],
        "validations": [{
            "expression": (f"has(variables.holder.ttlSecondsAfterFinished) && "
                           f"variables.holder.ttlSecondsAfterFinished <= {limit}"),
            "message": (
                f"Jobs, JobSets and RayJobs in team namespaces {RULES['job-ttl']}, at most {limit} seconds (for a "
                "CronJob: spec.jobTemplate.spec.ttlSecondsAfterFinished), so that finished and failed ones and "
                f"their pods are deleted; python -m platform_cli job sets {plan.job_ttl_seconds}"
            ),
            "reason": "Invalid",
        }],
    }


def binding_spec(policy: str = cv.TENANT_WORKLOAD_POLICY) -> dict[str, Any]:
    return {
        "policyName": policy,
        "validationActions": ["Deny"],
        "matchResources": {"namespaceSelector": tenant_namespace_selector()},
    }


class Admission(pulumi.ComponentResource):
    """The tenant policies and their bindings (cluster scoped, independent of any addon)."""

    kubeconfig = None

    def __init__(self, name: str, plan: Plan, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:admission:Admission", name, None, opts)
        self.plan = plan
        self.policies: dict[str, k8s.admissionregistration.v1.ValidatingAdmissionPolicy] = {}
        policies = [
            ("admission-tenant-workloads", cv.TENANT_WORKLOAD_POLICY, policy_spec(plan)),
            ("admission-tenant-priorities", cv.TENANT_PRIORITY_POLICY, policy_spec(plan, "priorities")),
            ("admission-tenant-network-policies", cv.TENANT_NETWORK_POLICY_GUARD, network_policy_guard_spec()),
            ("admission-tenant-images", cv.TENANT_IMAGE_POLICY, image_policy_spec(plan)),
            ("admission-tenant-job-cleanup", cv.TENANT_JOB_CLEANUP_POLICY, job_cleanup_policy_spec(plan)),
        ]
        for logical, policy_name, spec in policies:
            meta = object_metadata(policy_name, component=COMPONENT_VALUE)
            if policy_name == cv.TENANT_IMAGE_POLICY:
                # The platform-wide list, where the policy pack compares the platform's own images with it.
                meta["annotations"] = {cv.PLATFORM_REGISTRIES_ANNOTATION: ",".join(plan.image_registries)}
            policy = k8s.admissionregistration.v1.ValidatingAdmissionPolicy(
                logical, metadata=meta, spec=spec, opts=pulumi.ResourceOptions(parent=self),
            )
            k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding(
                logical,
                metadata=meta,
                spec=binding_spec(policy_name),
                opts=pulumi.ResourceOptions(parent=self, depends_on=[policy]),
            )
            self.policies[policy_name] = policy
        self.register_outputs({})

    def exports(self) -> dict[str, Any]:
        return {"admissionPolicies": sorted(self.policies)}
