"""Workloads the stack itself puts in tenant namespaces (inference Deployments, smoke-test Jobs, ...).

The ValidatingAdmissionPolicy enforces the same in the cluster for what users submit with kubectl; these rules
catch it in preview for what the program deploys. Any Kubernetes object with a pod spec counts (found by shape).
"""

from __future__ import annotations

from typing import Callable

from gpu_platform import conventions as cv

from . import objects as o
from .framework import Config, GuardrailResourcePolicy, Report, Resource, quoted
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


def _policy(name: str, description: str, check: Callable[[Resource, Config, Report], None]) -> GuardrailResourcePolicy:
    return GuardrailResourcePolicy(name, description, check, o.may_hold_pods, settings=(SYSTEM_NAMESPACES,))


POLICIES = [
    _policy("workload-gpu-toleration", "Pods in tenant namespaces that request GPUs tolerate the GPU taint.",
            check_gpu_toleration),
    _policy("workload-queue-name", "Workloads in tenant namespaces that request GPUs carry the Kueue queue-name label.",
            check_queue_name),
    _policy("workload-gpu-limits-only", "GPUs in tenant namespaces are set in limits only, as whole units.",
            check_gpu_limits_only),
    _policy("workload-no-host-access", "Pods in tenant namespaces use no host network, PID or IPC namespace and no hostPath.",
            check_no_host_access),
    _policy("workload-no-privileged", "Containers in tenant namespaces are not privileged.", check_no_privileged),
]
