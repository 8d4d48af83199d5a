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
        "object.spec.rayClusterSpec.workerGroupSpecs.map(w, w.template) : []) : [])"
    ),
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
# (Jobs) and the integrations' own kinds (JobSet -> Jobs, LeaderWorkerSet -> StatefulSets and pods,
# PyTorchJob and RayCluster -> pods, RayJob -> RayCluster).
WORKLOAD_OWNER_KINDS: tuple[str, ...] = (
    "Job", "ReplicaSet", "StatefulSet", "Deployment", "CronJob",
    "JobSet", "LeaderWorkerSet", "PyTorchJob", "RayCluster", "RayJob",
)


def matched_apis(plan: Plan) -> list[tuple[str, str, str, str]]:
    """(group, version, plural, kind) the policy matches: Pods, Jobs, CronJobs, Deployments, StatefulSets,
    ReplicaSets and DaemonSets, plus each configured Kueue integration whose workload shape we know. A kind
    whose CRD is not installed simply never matches."""
    out: list[tuple[str, str, str, str]] = []
    for name in (*ALWAYS, *plan.spec.addons.kueue.integrations):
        for api in cv.KUEUE_INTEGRATION_APIS.get(name, ()):
            if api[3] in SHAPES and api not in out:
                out.append(api)
    out += [api for api in BUILTIN_POD_MAKERS if api not in out]
    return out


def queueable_kinds(plan: Plan) -> list[str]:
    """Kinds Kueue queues with this stack's integrations (a CronJob's Jobs are Kueue's batch/job)."""
    out: list[str] = []
    for name in plan.spec.addons.kueue.integrations:
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


def quantity(expr: str) -> str:
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
    def held(field: str) -> str:
        return f"has({c}.resources) && has({c}.resources.{field}) && {cel_string(resource)} in {c}.resources.{field}"

    def amount(field: str) -> str:
        return f"{quantity(f'{c}.resources.{field}[{cel_string(resource)}]')}.asApproximateFloat()"

    return f"({held('requests')} ? {amount('requests')} : ({held('limits')} ? {amount('limits')} : 0.0))"


def pod_amount(spec: str, resource: str) -> str:
    """CEL: what one pod of a pod spec asks for of `resource`: its containers' sum, a lower bound of what
    Kueue counts (init containers and overhead can only add), so a refusal on it is never wrong."""
    return f"{spec}.containers.map(c, {resource_amount('c', resource)}).sum()"


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
        {"name": "requestsGpus", "expression": f"variables.podSpecs.exists(s, {containers('s')}.exists(c, {asks_gpu}))"},
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
                f"variables.gpuLessTemplates.map(t, {pod_amount('t.spec', resource)} * double(variables.podSetPods))")}
            for name, resource in (("gpuLessCpu", "cpu"), ("gpuLessMemory", "memory"))
        ),
    ]


def validations(queueable: list[str] | None = None) -> list[dict[str, str]]:
    q = cv.QUEUE_NAME_LABEL
    # Whole numbers as Kubernetes counts them for extended resources ("1000m" is 1). The quantity
    # library's isInteger() is false for any milli-scaled value, so compare with the truncated value.
    limit = quantity("c.resources.limits[r]")
    gpu_limits_integer = (
        "!has(c.resources) || !has(c.resources.limits) || c.resources.limits.all(r, "
        f"!{is_gpu('r')} || (isQuantity(string(c.resources.limits[r])) && "
        f"double(int({limit}.asApproximateFloat())) == {limit}.asApproximateFloat()))"
    )
    gpu_requests_equal_limits = (
        "!has(c.resources) || !has(c.resources.requests) || c.resources.requests.all(r, "
        f"!{is_gpu('r')} || (has(c.resources.limits) && r in c.resources.limits && "
        "isQuantity(string(c.resources.requests[r])) && isQuantity(string(c.resources.limits[r])) && "
        f"{quantity('c.resources.requests[r]')}.compareTo({quantity('c.resources.limits[r]')}) == 0))"
    )
    shared = cel_string(cv.SHARED_GPU_RESOURCE)
    shared_at_most_one = (
        f"!has(c.resources) || !has(c.resources.limits) || !({shared} in c.resources.limits) || "
        f"!isQuantity(string(c.resources.limits[{shared}])) || "
        f"{quantity(f'c.resources.limits[{shared}]')}.compareTo("
        f"quantity({cel_string(str(cv.SHARED_GPU_MAX_PER_CONTAINER))})) <= 0"
    )
    asks_gpu = container_asks_gpu()
    host = (
        "!(has(s.hostNetwork) && s.hostNetwork == true) && !(has(s.hostPID) && s.hostPID == true) && "
        "!(has(s.hostIPC) && s.hostIPC == true)"
    )
    every_container = lambda rule: f"variables.podSpecs.all(s, {containers('s')}.all(c, {rule}))"  # noqa: E731
    gpu_taint = f"{cv.GPU_TAINT_KEY}={cv.GPU_TAINT_VALUE}:{cv.TAINT_EFFECT}"
    return [
        {
            "expression": "!variables.requestsGpus || variables.controlled || variables.queueable",
            "messageExpression": (
                "'Kueue cannot queue a ' + request.kind.kind + ' with the Kueue integrations of this platform, so it "
                "may not request GPUs in a team namespace; GPU workloads are one of: ' + "
                f"{cel_list(queueable or [])}.join(', ')"
            ),
            "reason": "Forbidden",
        },
        {
            "expression": "!variables.requestsGpus || variables.controlled || variables.queueName != ''",
            "message": (
                f"workloads that request GPUs must name a Kueue LocalQueue in the label {q} (each team "
                f"namespace has one called {cv.LOCAL_QUEUE_NAME!r}; for a CronJob, on spec.jobTemplate.metadata)"
            ),
            "reason": "Forbidden",
        },
        {
            "expression": every_container(gpu_limits_integer),
            "message": "GPU resources (nvidia.com/gpu, nvidia.com/gpu.shared, nvidia.com/mig-*) must be whole numbers",
            "reason": "Invalid",
        },
        {
            "expression": every_container(shared_at_most_one),
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
            "expression": every_container(gpu_requests_equal_limits),
            "message": "GPU resources belong in resources.limits; a GPU request, if set, must equal its limit",
            "reason": "Invalid",
        },
        {
            "expression": f"variables.podSpecs.all(s, {host})",
            "message": "hostNetwork, hostPID and hostIPC are not allowed in tenant namespaces",
            "reason": "Forbidden",
        },
        {
            "expression": f"variables.gpuLessSpecs.all(s, !{tolerates_gpu_taint('s')})",
            "message": (
                f"a pod that requests no GPU may not tolerate the GPU taint {gpu_taint}: GPU nodes are for GPU "
                f"work; work without GPUs is admitted only on the {cv.CPU_FLAVOR!r} flavor and runs on CPU nodes"
            ),
            "reason": "Forbidden",
        },
        {
            # Create only: Kueue's own updates of a workload made before this rule (suspending it, restoring
            # its template) must pass, and a template without the toleration only keeps itself from admission.
            "expression": (
                "request.operation != 'CREATE' || variables.podSpecs.all(s, "
                f"!{containers('s')}.exists(c, {asks_gpu}) || {carries_gpu_toleration('s')})"
            ),
            "message": (
                f"a pod template that requests GPUs must tolerate the GPU taint {gpu_taint} itself (tolerations: "
                f"[{{key: {cv.GPU_TOLERATION['key']}, operator: {cv.GPU_TOLERATION['operator']}, effect: "
                f"{cv.GPU_TOLERATION['effect']}}}]): Kueue gives a pool's flavor only to pod sets that tolerate its "
                "taint, so without it the workload would never be admitted; python -m platform_cli job sets it"
            ),
            "reason": "Invalid",
        },
        {
            "expression": (
                "request.operation != 'CREATE' || variables.gpuLessTemplates.all(t, !(has(t.metadata) && "
                f"has(t.metadata.annotations) && {cel_list(cv.TAS_ANNOTATIONS)}.exists(a, a in t.metadata.annotations)))"
            ),
            "message": (
                "a pod template that requests no GPU may not ask for a topology (kueue.x-k8s.io/podset-*-topology): "
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
                "'a pod set without GPUs asks for more than team ' + variables.team + '\\'s CPU-only allowance of ' + "
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
                "(has(t.metadata) && has(t.metadata.annotations) && "
                f"{cel_list(cv.TAS_ANNOTATIONS)}.exists(a, a in t.metadata.annotations)))"
            ),
            "messageExpression": (
                "'the team\\'s ' + variables.topologyResources.join(', ') + ' come only from topology-aware pools, "
                "where Kueue admits a pod set only if it asks for a topology: annotate the pod template with "
                f"{cv.TAS_PREFERRED_TOPOLOGY_ANNOTATION}: {cv.TAS_PREFERRED_LEVEL} (or another Kueue topology "
                "annotation); python -m platform_cli job sets it'"
            ),
            "reason": "Invalid",
        },
        {
            "expression": (
                "request.operation != 'CREATE' || "
                "variables.podSpecs.all(s, !has(s.nodeName) || s.nodeName == '')"
            ),
            "message": "spec.nodeName may not be set in team namespaces: it bypasses the scheduler, node taints and Kueue",
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
            "'images must come from a registry team ' + variables.team + ' may pull from; not allowed: ' + "
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
                f"variables.podSpecs.map(s, {image_names('s')}.join(' ')).join(' ').split(' ').filter(i, i != '')")},
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


def job_cleanup_policy_spec(plan: Plan) -> dict[str, Any]:
    """Finished and failed tenant Jobs do not linger: a Job (and a CronJob's jobTemplate) sets
    ttlSecondsAfterFinished, at most jobs.maxTtlSecondsAfterFinished, so the TTL-after-finished controller
    deletes it and its pods. Enforced rather than defaulted: defaulting needs a mutating webhook or
    MutatingAdmissionPolicy, which is alpha and off by default in Kubernetes 1.33 (k8s.io/apiserver
    v0.33.13 pkg/features/kube_features.go: MutatingAdmissionPolicy Alpha, Default false), so EKS 1.33 does
    not serve it. On update only a Job that already had a TTL is held to it (removing or raising it is
    refused), so Jobs created before the policy can still be unsuspended by Kueue. Jobs a workload
    controller makes (a JobSet's) are exempt: their owner's lifetime decides."""
    holder = "(request.kind.kind == 'CronJob' ? object.spec.jobTemplate.spec : object.spec)"
    old = ("(request.kind.kind == 'CronJob' ? oldObject.spec.jobTemplate.spec : oldObject.spec)")
    limit = plan.job_max_ttl_seconds
    return {
        "failurePolicy": "Fail",
        "matchConstraints": {
            "resourceRules": [{"apiGroups": ["batch"], "apiVersions": ["v1"], "resources": ["cronjobs", "jobs"],
                               "operations": ["CREATE", "UPDATE"]}],
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
                f"Jobs in team namespaces must set spec.ttlSecondsAfterFinished, at most {limit} seconds (for a "
                "CronJob: spec.jobTemplate.spec.ttlSecondsAfterFinished), so that finished and failed Jobs and "
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
            meta: dict[str, Any] = {
                "name": policy_name,
                "labels": {cv.MANAGED_BY: cv.MANAGED_BY_VALUE, cv.COMPONENT: COMPONENT_VALUE},
            }
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
