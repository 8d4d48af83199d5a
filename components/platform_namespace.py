"""The platform's own namespaces (GPU Operator, Kueue, monitoring): their Pod Security levels and access
for platform admins only. Tenants get nothing here; tenant namespaces are tenancy.py's."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from gpu_platform import conventions as cv
from gpu_platform.plan import Plan

from .kube_object import object_labels

RBAC_GROUP = "rbac.authorization.k8s.io"


def component_labels(component: str) -> dict[str, str]:
    """Labels of a platform namespace and of the add-on objects in it: part of the platform, by add-on."""
    return object_labels(component=component, part_of=True)


def platform_namespace(
    parent: pulumi.Resource,
    plan: Plan,
    name: str,
    component: str,
    enforce: str,
    warn_audit: str,
    logical_name: str | None = None,
) -> tuple[k8s.core.v1.Namespace, k8s.rbac.v1.RoleBinding | None]:
    """The Namespace and, when the spec names platform admins, their `admin` RoleBinding in it."""
    namespace = k8s.core.v1.Namespace(
        logical_name or f"ns-{name}",
        metadata=k8s.meta.v1.ObjectMetaArgs(
            name=name,
            labels={**component_labels(component), **cv.psa_labels(enforce, warn_audit, plan.psa_version)},
        ),
        opts=pulumi.ResourceOptions(parent=parent),
    )
    if not plan.cluster.platform_admins:
        return namespace, None
    admins = k8s.rbac.v1.RoleBinding(
        f"{name}-{cv.PLATFORM_ADMINS_ROLE_BINDING}",
        metadata=k8s.meta.v1.ObjectMetaArgs(
            name=cv.PLATFORM_ADMINS_ROLE_BINDING, namespace=name, labels=component_labels(component),
        ),
        role_ref=k8s.rbac.v1.RoleRefArgs(api_group=RBAC_GROUP, kind="ClusterRole", name=cv.CLUSTER_ROLE_ADMIN),
        subjects=[k8s.rbac.v1.SubjectArgs(api_group=RBAC_GROUP, kind="Group", name=g)
                  for g in plan.cluster.platform_admins],
        opts=pulumi.ResourceOptions(parent=parent, depends_on=[namespace]),
    )
    return namespace, admins
