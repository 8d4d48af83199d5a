"""The CEL the admission policies are written in: literals, the resource and toleration tests on pod specs, the
TrainJob's parts read in place. Functions return expression text; the policies' variables and validations are
built from them (workloads, images, job_cleanup), and tests/cel.py evaluates them as the API server binds them."""

from __future__ import annotations

from typing import Any

from gpu_platform import conventions as cv


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
    return f"({spec}.containers + ({has_field(spec, 'initContainers')} ? {spec}.initContainers : []))"


def has_field(obj: str, field: str) -> str:
    return f"has({obj}.{field})"


def cel_quantity(expr: str) -> str:
    # Built-in objects reach CEL with quantities as strings; custom resources may carry plain numbers.
    return f"quantity(string({expr}))"


def kind_switch(values: dict[str, str], default: str) -> str:
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
