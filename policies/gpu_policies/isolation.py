"""Isolation of tenant namespaces: Pod Security, quota, limit range, network policy, local queue.

A tenant namespace is every Namespace in the stack that is not listed in `systemNamespaces`. The stack rules
look for the objects each one must contain in a single indexed pass over the stack.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gpu_platform import conventions as cv

from . import objects as o
from . import stackindex as ix
from .framework import (
    Config,
    GuardrailResourcePolicy,
    GuardrailStackPolicy,
    Report,
    Resource,
    StackReport,
    guarded,
    quoted,
)
from .settings import PRIVILEGED_NAMESPACES, SYSTEM_NAMESPACES, TENANT_PSA_LEVELS

PRIVILEGED = "privileged"


def _is_namespace(t: str) -> bool:
    return o.is_kind(t, "Namespace", "")


def check_pod_security(r: Resource, cfg: Config, report: Report) -> None:
    name = o.object_name(r.props, r.name)
    if name in cfg.strings(SYSTEM_NAMESPACES):
        return
    allowed = cfg.strings(TENANT_PSA_LEVELS)
    level = o.labels(r.props).get(cv.PSA_ENFORCE)
    if level not in allowed:
        found = f"{cv.PSA_ENFORCE}={level!r}" if level is not None else f"no {cv.PSA_ENFORCE} label"
        report(f"tenant namespace {name!r} has {found}; it must enforce one of {quoted(allowed)}")


def check_privileged_namespaces(r: Resource, cfg: Config, report: Report) -> None:
    name = o.object_name(r.props, r.name)
    allowed = cfg.strings(PRIVILEGED_NAMESPACES)
    if name in allowed:
        return
    level = o.labels(r.props).get(cv.PSA_ENFORCE)
    if level is None:
        report(f"namespace {name!r} has no {cv.PSA_ENFORCE} label, so the API server's default (privileged "
               f"unless its AdmissionConfiguration says otherwise) applies; only {quoted(allowed)} may be privileged")
    elif level == PRIVILEGED:
        report(f"namespace {name!r} enforces {PRIVILEGED!r}; only {quoted(allowed)} may be privileged")
    elif level not in cv.PSA_LEVELS:
        report(f"namespace {name!r} has {cv.PSA_ENFORCE}={level!r}, not a Pod Security level ({quoted(cv.PSA_LEVELS)})")


# ---------------------------------------------------------------------------------------------------
# stack rules: what every tenant namespace must contain

_CORE_KINDS = {"ResourceQuota": "", "LimitRange": ""}
_NETPOL = {"NetworkPolicy": "networking.k8s.io"}


def check_resource_quota(resources: Sequence[Resource], cfg: Config, report: StackReport) -> None:
    tenants = ix.tenant_namespaces(resources, cfg.strings(SYSTEM_NAMESPACES), report)
    objs = ix.namespaced(resources, _CORE_KINDS, report)
    gpu_names = sorted(ix.gpu_resource_names(resources, report))
    for name, ns in sorted(tenants.items()):
        capped: dict[str, Any] = {}

        def collect(q: Resource) -> None:
            spec = o.mapping(q.props.get("spec"))
            # A scoped quota only counts pods in its scope, so it caps nothing for the rest.
            if o.sequence(spec.get("scopes")) or o.mapping(spec.get("scopeSelector")):
                return
            capped.update(o.mapping(spec.get("hard")))

        for q in objs.get(name, "ResourceQuota"):
            guarded(report, q, lambda q=q: collect(q))
        missing = [g for g in gpu_names if f"requests.{g}" not in capped]
        if missing:
            report(ns.resource, f"tenant namespace {name!r} has no ResourceQuota capping "
                   f"{quoted(f'requests.{g}' for g in missing)}: its pods could take any number of those GPUs "
                   "(cap them at 0 where the team has no quota)")
        bad = [k for k in (f"requests.{g}" for g in gpu_names) if k in capped and o.whole_units(capped[k]) is None]
        if bad:
            report(ns.resource, f"tenant namespace {name!r}: quota {quoted(bad)} is not a whole number of units")


def check_limit_range(resources: Sequence[Resource], cfg: Config, report: StackReport) -> None:
    tenants = ix.tenant_namespaces(resources, cfg.strings(SYSTEM_NAMESPACES), report)
    objs = ix.namespaced(resources, _CORE_KINDS, report)
    for name, ns in sorted(tenants.items()):
        def has_container_limits(lr: Resource) -> bool:
            return any(o.mapping(item).get("type") == "Container"
                       for item in o.sequence(o.mapping(lr.props.get("spec")).get("limits")))

        if not any(guarded(report, lr, lambda lr=lr: has_container_limits(lr)) for lr in objs.get(name, "LimitRange")):
            report(ns.resource, f"tenant namespace {name!r} has no LimitRange with Container defaults: a container "
                   "without requests would be rejected by the quota, or unbounded without it")


def _policy_types(spec: Mapping[str, Any]) -> set[str]:
    """NetworkPolicy.spec.policyTypes, defaulted as Kubernetes does: Ingress always, Egress when egress rules exist."""
    given = [t for t in o.sequence(spec.get("policyTypes")) if isinstance(t, str)]
    if given:
        return set(given)
    return {"Ingress", "Egress"} if "egress" in spec else {"Ingress"}


def check_default_deny(resources: Sequence[Resource], cfg: Config, report: StackReport) -> None:
    tenants = ix.tenant_namespaces(resources, cfg.strings(SYSTEM_NAMESPACES), report)
    objs = ix.namespaced(resources, _NETPOL, report)
    for name, ns in sorted(tenants.items()):
        denied: set[str] = set()

        def deny_of(np: Resource) -> None:
            spec = o.mapping(np.props.get("spec"))
            if not o.selector_is_empty(o.mapping(spec.get("podSelector"))):
                return
            types = _policy_types(spec)
            if "Ingress" in types and not o.sequence(spec.get("ingress")):
                denied.add("Ingress")
            if "Egress" in types and not o.sequence(spec.get("egress")):
                denied.add("Egress")

        for np in objs.get(name, "NetworkPolicy"):
            guarded(report, np, lambda np=np: deny_of(np))
        missing = [t for t in ("Ingress", "Egress") if t not in denied]
        if missing:
            report(ns.resource, f"tenant namespace {name!r} has no default-deny NetworkPolicy for "
                   f"{' and '.join(missing)} (podSelector {{}}, policyTypes {missing}, no rules)")


def _allows_dns(spec: Mapping[str, Any]) -> bool:
    if not o.selector_is_empty(o.mapping(spec.get("podSelector"))) or "Egress" not in _policy_types(spec):
        return False
    for rule in o.sequence(spec.get("egress")):
        for port in o.sequence(o.mapping(rule).get("ports")):
            port = o.mapping(port)
            # Protocol defaults to TCP (NetworkPolicyPort); DNS needs UDP.
            if o.as_int(port.get("port")) == cv.DNS_PORT and (port.get("protocol") or "TCP") == "UDP":
                return True
    return False


def check_dns_allow(resources: Sequence[Resource], cfg: Config, report: StackReport) -> None:
    tenants = ix.tenant_namespaces(resources, cfg.strings(SYSTEM_NAMESPACES), report)
    objs = ix.namespaced(resources, _NETPOL, report)
    for name, ns in sorted(tenants.items()):
        found = [guarded(report, np, lambda np=np: _allows_dns(o.mapping(np.props.get("spec"))))
                 for np in objs.get(name, "NetworkPolicy")]
        if not any(found):
            report(ns.resource, f"tenant namespace {name!r} has no NetworkPolicy allowing every pod egress to "
                   f"UDP port {cv.DNS_PORT}: under default deny nothing resolves names")


def check_local_queue(resources: Sequence[Resource], cfg: Config, report: StackReport) -> None:
    tenants = ix.tenant_namespaces(resources, cfg.strings(SYSTEM_NAMESPACES), report)
    objs = ix.namespaced(resources, {"LocalQueue": o.KUEUE_GROUP}, report)
    queues = ix.by_name(resources, "ClusterQueue", o.KUEUE_GROUP, report)
    # LocalQueues and not one ClusterQueue: a split environment's tenant stack (stackSplit), whose ClusterQueues
    # are its platform stack's. The stack refuses to deploy a team whose ClusterQueue the platform stack does not
    # export (components/tenant_stack.py); the selector is checked where both are seen: the platform stack's
    # own preview has none of the namespaces, so `check` of every part together (docs/architecture.md).
    split_tenants = not queues
    for name, ns in sorted(tenants.items()):
        local = objs.get(name, "LocalQueue")
        if not local:
            report(ns.resource, f"tenant namespace {name!r} has no Kueue LocalQueue: its jobs cannot be queued")
            continue
        for lq in local:
            def check(lq: Resource = lq) -> None:
                target = o.text(o.mapping(lq.props.get("spec")).get("clusterQueue"))
                cq = queues.get(target or "")
                if cq is None:
                    if not split_tenants:
                        report(lq, f"LocalQueue in {name!r} points at ClusterQueue {target!r}, which is not in the stack")
                    return
                selector = o.mapping(o.mapping(cq.props.get("spec")).get("namespaceSelector"))
                if not selector or not o.selector_matches(selector, ns.selector_labels()):
                    report(lq, f"LocalQueue in {name!r} points at ClusterQueue {target!r}, whose namespaceSelector "
                           f"does not select {name!r}: Kueue would never admit its workloads")
            guarded(report, lq, check)


POLICIES = [
    GuardrailResourcePolicy(
        "namespace-pod-security",
        "Tenant namespaces enforce Pod Security baseline or stricter.",
        check_pod_security,
        _is_namespace,
        settings=(SYSTEM_NAMESPACES, TENANT_PSA_LEVELS),
        remediation=f"Set {cv.PSA_ENFORCE} to the team's podSecurity level (baseline or restricted).",
    ),
    GuardrailResourcePolicy(
        "privileged-namespaces",
        "Only allowlisted system namespaces may be privileged (or lack a Pod Security enforce label).",
        check_privileged_namespaces,
        _is_namespace,
        settings=(PRIVILEGED_NAMESPACES,),
        remediation=f"Label the namespace {cv.PSA_ENFORCE}=baseline or restricted, or allowlist it in privilegedNamespaces.",
    ),
    GuardrailStackPolicy(
        "namespace-resource-quota",
        "Every tenant namespace has a ResourceQuota capping every GPU resource the stack's pools advertise "
        "(whole GPUs, MIG slices, shared replicas).",
        check_resource_quota,
        settings=(SYSTEM_NAMESPACES,),
        remediation="Cap requests.<gpu resource> for every GPU resource name, at 0 where the team has no quota.",
    ),
    GuardrailStackPolicy(
        "namespace-limit-range",
        "Every tenant namespace has a LimitRange with Container defaults.",
        check_limit_range,
        settings=(SYSTEM_NAMESPACES,),
    ),
    GuardrailStackPolicy(
        "namespace-default-deny",
        "Every tenant namespace has a default-deny NetworkPolicy for ingress and egress.",
        check_default_deny,
        settings=(SYSTEM_NAMESPACES,),
    ),
    GuardrailStackPolicy(
        "namespace-dns-allow",
        "Every tenant namespace allows DNS egress (UDP 53) for all its pods.",
        check_dns_allow,
        settings=(SYSTEM_NAMESPACES,),
    ),
    GuardrailStackPolicy(
        "namespace-local-queue",
        "Every tenant namespace has a LocalQueue pointing at a ClusterQueue of the stack that selects it.",
        check_local_queue,
        settings=(SYSTEM_NAMESPACES,),
    ),
]
