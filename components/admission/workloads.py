"""The workload policy (`tenant-workloads`), and the priority policy's match and variables, which are the same.

For Pods, batch Jobs and CronJobs, and the workload APIs of the configured Kueue integrations (JobSet,
Deployment, PyTorchJob, Ray...):

- a workload that asks for GPUs names a Kueue queue (`kueue.x-k8s.io/queue-name`), so it is queued
  and counted against its team's ClusterQueue instead of landing on a node directly (a controller's objects
  are exempt: matching.controlled);
- GPUs are requested in limits, as whole numbers; a GPU request, if given, equals the limit;
- no hostNetwork, hostPID or hostIPC;
- a pod that asks for no GPU does not tolerate the GPU taint (it would sit on a GPU node nobody pays for),
  and no pod is created with spec.nodeName (it would bypass the scheduler, the taints and Kueue);
- where work runs: a pod template that asks for GPUs tolerates the GPU taint itself (the pools'
  Kueue flavors are given only to pod sets that do, so work without GPUs is only ever given the CPU-only
  flavor); a template without GPUs asks for no topology and, per pod set, for no more than the team's
  CPU-only allowance (namespace annotations): either would never be admitted, so it is refused at creation.
  These are creation checks: Kueue's own updates (the flavor's labels and tolerations on admission,
  suspending, restoring) never add what they refuse, and must pass for workloads made before them;
- a container asks for at most one time-sliced replica (the device plugin refuses more at the kubelet);
- a kind Kueue cannot queue (a DaemonSet, a bare ReplicaSet, a StatefulSet without its integration)
  does not request GPUs at all.
"""

from __future__ import annotations

from typing import Any

from gpu_platform import conventions as cv
from gpu_platform.plan import Plan

from .cel import (
    HAS_TRAINER_RESOURCES, TRAINER_RESOURCES, carries_gpu_toleration, cel_list, cel_quantity, cel_string,
    container_asks_gpu, containers, has_tas_annotation, is_gpu, kind_switch, no_host_path, pod_amount,
    resources_amount, selects_team_pools, tolerates_gpu_taint, trainjob_templates,
)
from .matching import SHAPES, controlled, matched_apis, queueable_kinds, resource_rules, tenant_namespace_selector
from .priorities import priority_validations
from .rules import RULES


# Pods per pod set of a Job (and a CronJob's Jobs): parallelism, or completions when fewer (kueue v0.19.2
# pkg/controller/jobs/job/job_controller.go podsCount); one for every other kind, a lower bound.
def _job_pods(job_spec: str) -> str:
    par = f"(has({job_spec}.parallelism) ? {job_spec}.parallelism : 1)"
    comp = f"(has({job_spec}.completions) ? {job_spec}.completions : {par})"
    return f"({comp} < {par} ? {comp} : {par})"


def variables(apis: list[tuple[str, str, str, str]], queueable: list[str] | None = None) -> list[dict[str, str]]:
    kinds = [api[3] for api in apis]
    pod_templates = kind_switch({k: SHAPES[k].pod_templates for k in kinds}, "[]")
    owners = {k: SHAPES[k].queue_labels_owner for k in kinds}
    queue_labels = kind_switch(
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
        {"name": "podSetPods", "expression": kind_switch(
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
