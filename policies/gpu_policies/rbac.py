"""RBAC isolation: tenants administer their namespaces and nothing else.

Tenant groups are the Group subjects of RoleBindings in tenant namespaces (minus `platformGroups` and
Kubernetes' own `system:` groups). They may hold no ClusterRoleBinding, no binding in a system namespace,
no cluster-admin, and no role with wildcard verbs or resources.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gpu_platform import conventions as cv

from . import objects as o
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
from .settings import PLATFORM_GROUPS, SYSTEM_NAMESPACES

RBAC_GROUP = "rbac.authorization.k8s.io"
WILDCARD = "*"


def _is(kind: str):
    return lambda t: o.is_kind(t, kind, RBAC_GROUP)


def check_no_cluster_admin(r: Resource, cfg: Config, report: Report) -> None:
    namespace = o.object_namespace(r.props)
    if namespace in cfg.strings(SYSTEM_NAMESPACES):
        return
    ref = o.mapping(r.props.get("roleRef"))
    if ref.get("name") == cv.CLUSTER_ROLE_CLUSTER_ADMIN:
        report(f"RoleBinding in tenant namespace {namespace!r} grants {cv.CLUSTER_ROLE_CLUSTER_ADMIN!r}; "
               f"tenants get {cv.CLUSTER_ROLE_ADMIN!r} at most")


def _wildcards(rules: Any) -> list[str]:
    found = []
    for i, rule in enumerate(o.sequence(rules)):
        rule = o.mapping(rule)
        if WILDCARD in list(o.sequence(rule.get("verbs"))):
            found.append(f"rules[{i}].verbs")
        resources = [x for x in o.sequence(rule.get("resources")) if isinstance(x, str)]
        if any(x == WILDCARD or x.startswith(WILDCARD + "/") or x.endswith("/" + WILDCARD) for x in resources):
            found.append(f"rules[{i}].resources")
    return found


def check_role_wildcards(resources: Sequence[Resource], cfg: Config, report: StackReport) -> None:
    system = cfg.strings(SYSTEM_NAMESPACES)
    cluster_roles: dict[str, Resource] = {}
    tenant_roles: list[tuple[Resource, str]] = []
    bound_cluster_roles: dict[str, str] = {}  # ClusterRole name -> a tenant namespace that binds it
    for r in resources:
        k = o.kube_kind(r.type)
        if k is None or k.group != RBAC_GROUP:
            continue
        if k.kind == "ClusterRole":
            name = guarded(report, r, lambda r=r: o.object_name(r.props, r.name))
            if name is not None:
                cluster_roles[name] = r
        elif k.kind in ("Role", "RoleBinding"):
            ns = guarded(report, r, lambda r=r: o.object_namespace(r.props))
            if ns is None or ns in system:
                continue
            if k.kind == "Role":
                tenant_roles.append((r, ns))
            else:
                ref = guarded(report, r, lambda r=r: o.mapping(r.props.get("roleRef")))
                if ref is not None and ref.get("kind") == "ClusterRole" and isinstance(ref.get("name"), str):
                    bound_cluster_roles.setdefault(ref["name"], ns)
    for role, ns in tenant_roles:
        found = guarded(report, role, lambda role=role: _wildcards(role.props.get("rules")))
        if found:
            report(role, f"Role in tenant namespace {ns!r} has wildcards in {', '.join(found)}")
    for name, ns in sorted(bound_cluster_roles.items()):
        role = cluster_roles.get(name)
        if role is None:
            continue  # Kubernetes' built-in roles (admin, edit, view) and charts' roles are not in the stack
        found = guarded(report, role, lambda role=role: _wildcards(role.props.get("rules")))
        if found:
            report(role, f"ClusterRole {name!r}, bound in tenant namespace {ns!r}, has wildcards in {', '.join(found)}")


def _groups(subjects: Any) -> list[str]:
    return [s.get("name") for s in map(o.mapping, o.sequence(subjects))
            if s.get("kind") == "Group" and isinstance(s.get("name"), str)]


def check_tenant_groups_scoped(resources: Sequence[Resource], cfg: Config, report: StackReport) -> None:
    system = cfg.strings(SYSTEM_NAMESPACES)
    platform = set(cfg.strings(PLATFORM_GROUPS))
    tenant_groups: dict[str, str] = {}  # group -> a tenant namespace that binds it
    system_bindings: list[tuple[Resource, str, list[str]]] = []
    cluster_bindings: list[tuple[Resource, list[str]]] = []
    for r in resources:
        k = o.kube_kind(r.type)
        if k is None or k.group != RBAC_GROUP or k.kind not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        groups = guarded(report, r, lambda r=r: _groups(r.props.get("subjects")))
        if groups is None:
            continue
        if k.kind == "ClusterRoleBinding":
            cluster_bindings.append((r, groups))
            continue
        ns = guarded(report, r, lambda r=r: o.object_namespace(r.props))
        if ns is None:
            continue
        if ns in system:
            system_bindings.append((r, ns, groups))
        else:
            for g in groups:
                if g not in platform and not g.startswith("system:"):
                    tenant_groups.setdefault(g, ns)
    for r, groups in cluster_bindings:
        bad = [g for g in groups if g in tenant_groups]
        if bad:
            report(r, f"ClusterRoleBinding binds tenant group(s) {quoted(bad)} (bound in tenant namespace "
                   f"{tenant_groups[bad[0]]!r}): tenants get namespace-scoped access only")
    for r, ns, groups in system_bindings:
        bad = [g for g in groups if g in tenant_groups]
        if bad:
            report(r, f"RoleBinding in system namespace {ns!r} binds tenant group(s) {quoted(bad)}")


POLICIES = [
    GuardrailResourcePolicy(
        "tenant-no-cluster-admin",
        "No RoleBinding in a tenant namespace grants cluster-admin.",
        check_no_cluster_admin,
        _is("RoleBinding"),
        settings=(SYSTEM_NAMESPACES,),
        remediation=f"Bind the team's admins to the {cv.CLUSTER_ROLE_ADMIN!r} ClusterRole instead.",
    ),
    GuardrailStackPolicy(
        "tenant-role-wildcards",
        "Roles in tenant namespaces, and ClusterRoles bound there, have no wildcard verbs or resources.",
        check_role_wildcards,
        settings=(SYSTEM_NAMESPACES,),
        remediation="List the verbs and resources the role needs.",
    ),
    GuardrailStackPolicy(
        "tenant-groups-namespace-scoped",
        "Tenant groups have no ClusterRoleBinding and no binding in a system namespace.",
        check_tenant_groups_scoped,
        settings=(SYSTEM_NAMESPACES, PLATFORM_GROUPS),
        remediation="Grant tenants RoleBindings in their own namespaces; list platform admin groups in platformGroups.",
    ),
]
