"""Workloads the stack itself puts in tenant namespaces (inference Deployments, smoke-test Jobs, ...).

The ValidatingAdmissionPolicy enforces the same in the cluster for what users submit with kubectl; these rules
catch it in preview for what the program deploys. Any Kubernetes object with a pod spec counts (found by shape).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Callable

from gpu_platform import conventions as cv

from . import objects as o
from . import stackindex as ix
from .framework import Config, GuardrailResourcePolicy, GuardrailStackPolicy, Report, Resource, StackReport, guarded, quoted
from .settings import SYSTEM_NAMESPACES

HOST_NAMESPACES = ("hostNetwork", "hostPID", "hostIPC")


def _tenant_pod_specs(r: Resource, cfg: Config) -> list[o.PodSpec]:
    """Pod specs of a namespaced object in a tenant namespace (cluster-scoped objects land in `default`)."""
    if o.object_namespace(r.props) in cfg.strings(SYSTEM_NAMESPACES):
        return []
    return o.pod_specs(r.props)


def _gpu_pod_specs(r: Resource, cfg: Config) -> list[tuple[o.PodSpec, list[str]]]:
    out = []
    for ps in _tenant_pod_specs(r, cfg):
        names = sorted({k for _, c in ps.containers() for field in ("limits", "requests")
                        for k in o.gpu_resources(c, field)})
        if names:
            out.append((ps, names))
    return out


def check_gpu_toleration(r: Resource, cfg: Config, report: Report) -> None:
    taint = o.gpu_taint()
    for ps, names in _gpu_pod_specs(r, cfg):
        if not o.tolerated(ps.spec.get("tolerations"), taint):
            report(f"{ps.path} requests {quoted(names)} but does not tolerate the GPU taint {taint}")


def check_queue_name(r: Resource, cfg: Config, report: Report) -> None:
    own = o.text(o.labels(r.props).get(cv.QUEUE_NAME_LABEL))
    for ps, names in _gpu_pod_specs(r, cfg):
        if not (own or o.text(ps.template_labels.get(cv.QUEUE_NAME_LABEL))):
            report(f"{ps.path} requests {quoted(names)} without the {cv.QUEUE_NAME_LABEL} label: it would bypass "
                   "the team's Kueue quota")


def check_gpu_limits_only(r: Resource, cfg: Config, report: Report) -> None:
    for ps in _tenant_pod_specs(r, cfg):
        for path, c in ps.containers():
            in_requests = o.gpu_resources(c, "requests")
            if in_requests:
                report(f"{path} sets {quoted(sorted(in_requests))} under requests: set GPUs under limits only "
                       "(Kubernetes copies extended-resource limits to requests)")
            for name, value in sorted(o.gpu_resources(c, "limits").items()):
                units = o.whole_units(value)
                if units is None or units < 0:
                    report(f"{path} limits {name}={value!r}: GPUs are whole units")


def check_shared_gpu_per_container(r: Resource, cfg: Config, report: Report) -> None:
    """Time-sliced pools' device plugin refuses a container asking for more than one replica
    (failRequestsGreaterThanOne; NVIDIA/k8s-device-plugin internal/plugin/server.go Allocate), after Kueue
    admitted it: the pod would hold quota and never start."""
    for ps in _tenant_pod_specs(r, cfg):
        for path, c in ps.containers():
            for field in ("limits", "requests"):
                value = o.gpu_resources(c, field).get(cv.SHARED_GPU_RESOURCE)
                units = None if value is None else o.whole_units(value)
                if units is not None and units > cv.SHARED_GPU_MAX_PER_CONTAINER:
                    report(f"{path} asks for {cv.SHARED_GPU_RESOURCE}={value!r} under {field}: a container gets at most "
                           f"{cv.SHARED_GPU_MAX_PER_CONTAINER} time-sliced replica (the device plugin's "
                           "failRequestsGreaterThanOne refuses more, so the pod would never start); use more pods")


def check_no_host_access(r: Resource, cfg: Config, report: Report) -> None:
    for ps in _tenant_pod_specs(r, cfg):
        used = [f for f in HOST_NAMESPACES if o.is_true(ps.spec.get(f))]
        if used:
            report(f"{ps.path} uses host namespace(s) {quoted(used)} in a tenant namespace")
        for i, v in enumerate(o.sequence(ps.spec.get("volumes"))):
            if o.mapping(v).get("hostPath") is not None:
                report(f"{ps.path}.volumes[{i}] mounts a hostPath in a tenant namespace")


def check_no_privileged(r: Resource, cfg: Config, report: Report) -> None:
    for ps in _tenant_pod_specs(r, cfg):
        for path, c in ps.containers():
            if o.is_true(o.mapping(c.get("securityContext")).get("privileged")):
                report(f"{path} is privileged in a tenant namespace")


def check_no_gpu_squatting(r: Resource, cfg: Config, report: Report) -> None:
    """A pod that requests no GPU but tolerates the GPU taint would sit on a GPU node nobody pays for."""
    taint = o.gpu_taint()
    for ps in _tenant_pod_specs(r, cfg):
        asks = any(o.gpu_resources(c, f) for _, c in ps.containers() for f in ("limits", "requests"))
        if not asks and o.tolerated(ps.spec.get("tolerations"), taint):
            report(f"{ps.path} requests no GPU but tolerates the GPU taint {taint}: it could occupy a GPU node "
                   f"(work without GPUs runs on the {cv.CPU_FLAVOR!r} flavor, on CPU nodes)")
        if o.text(ps.spec.get("nodeName")):
            report(f"{ps.path} sets nodeName: it would bypass the scheduler, the node taints and Kueue")


def check_granted_priorities(resources: Sequence[Resource], cfg: Config, report: StackReport) -> None:
    """Team namespaces name the priorities their team may use (the annotation admission reads), never the
    platform's system tier, and the stack's own workloads stay inside them."""
    tenants = ix.tenant_namespaces(resources, cfg.strings(SYSTEM_NAMESPACES), report)
    classes = {o.object_name(r.props, r.name) for r in resources if o.is_kind(r.type, "PriorityClass", "scheduling.k8s.io")}
    system_tier = cv.priority_class_name(cv.RESERVED_PRIORITY_CLASS_PREFIX)
    granted: dict[str, list[str]] = {}
    for name, ns in sorted(tenants.items()):
        def read(ns=ns) -> None:
            raw = o.annotations(ns.resource.props).get(cv.ALLOWED_PRIORITIES_ANNOTATION)
            if raw is None:
                report(ns.resource, f"tenant namespace {ns.name!r} has no {cv.ALLOWED_PRIORITIES_ANNOTATION} "
                       "annotation: admission would refuse every priority, and the team's grant is not declared")
                return
            names = [n for n in str(raw).split(",") if n]
            granted[ns.name] = names
            system = [n for n in names if n.startswith(system_tier)]
            if system:
                report(ns.resource, f"tenant namespace {ns.name!r} is granted system priorities {quoted(system)}: "
                       "a tenant with them preempts the platform itself")
            unknown = sorted(set(names) - classes) if classes else []
            if unknown:
                report(ns.resource, f"tenant namespace {ns.name!r} is granted {quoted(unknown)}, which are not "
                       f"PriorityClasses of the stack ({quoted(sorted(classes))})")
        guarded(report, ns.resource, read)
    for r in resources:
        if not o.may_hold_pods(r.type):
            continue
        ns_name = o.object_namespace(r.props)
        if ns_name not in granted:
            continue

        def check(r: Resource = r, allowed: list[str] = granted[ns_name]) -> None:
            used = {o.text(o.labels(r.props).get(cv.PRIORITY_CLASS_LABEL))}
            used |= {o.text(ps.spec.get("priorityClassName")) for ps in o.pod_specs(r.props)}
            used |= {o.text(ps.template_labels.get(cv.PRIORITY_CLASS_LABEL)) for ps in o.pod_specs(r.props)}
            beyond = sorted(u for u in used if u and u not in allowed)
            if beyond:
                report(r, f"uses priority {quoted(beyond)}, not granted to namespace {ns_name!r} "
                       f"(granted: {quoted(allowed)})")
        guarded(report, r, check)


def _policy(name: str, description: str, check: Callable[[Resource, Config, Report], None]) -> GuardrailResourcePolicy:
    return GuardrailResourcePolicy(name, description, check, o.may_hold_pods, settings=(SYSTEM_NAMESPACES,))


POLICIES = [
    _policy("workload-gpu-toleration", "Pods in tenant namespaces that request GPUs tolerate the GPU taint.",
            check_gpu_toleration),
    _policy("workload-queue-name", "Workloads in tenant namespaces that request GPUs carry the Kueue queue-name label.",
            check_queue_name),
    _policy("workload-gpu-limits-only", "GPUs in tenant namespaces are set in limits only, as whole units.",
            check_gpu_limits_only),
    _policy("workload-shared-gpu-per-container", "Containers in tenant namespaces ask for at most one time-sliced "
            f"replica ({cv.SHARED_GPU_RESOURCE}): the device plugin refuses more.", check_shared_gpu_per_container),
    _policy("workload-no-host-access", "Pods in tenant namespaces use no host network, PID or IPC namespace and no hostPath.",
            check_no_host_access),
    _policy("workload-no-privileged", "Containers in tenant namespaces are not privileged.", check_no_privileged),
    _policy("workload-no-gpu-squatting", "Pods in tenant namespaces that request no GPU do not tolerate the GPU "
            "taint, and no pod sets nodeName.", check_no_gpu_squatting),
    GuardrailStackPolicy(
        "tenant-priorities",
        "Tenant namespaces declare the priorities their team is granted (never the system tier), and workloads "
        "in them use only those.",
        check_granted_priorities,
        settings=(SYSTEM_NAMESPACES,),
    ),
]
