"""Tenancy: the objects in every team namespace, the cluster roles and tiers of a team, and the admission
policies on tenant namespaces."""

from __future__ import annotations

from .labels import MANAGED_BY_VALUE, PREFIX


# ==== Tenancy: the objects in every team namespace, cluster roles, admission policies =======================
TENANT_QUOTA_NAME = "tenant-quota"
TENANT_LIMIT_RANGE_NAME = "container-defaults"
NETWORK_POLICY_DEFAULT_DENY = "default-deny"
NETWORK_POLICY_ALLOW_DNS = "allow-dns"
NETWORK_POLICY_ALLOW_SAME_NAMESPACE = "allow-same-namespace"
NETWORK_POLICY_ALLOW_MONITORING = "allow-monitoring-scrape"
NETWORK_POLICY_ALLOW_EGRESS = "allow-configured-egress"
NETWORK_POLICY_ALLOW_KUBERAY = "allow-kuberay-operator"
NETWORK_POLICY_ALLOW_DATA_PATH = "allow-data-path"
# Kubernetes' user-facing ClusterRoles (kubernetes.io/docs/reference/access-authn-authz/rbac/#user-facing-roles).
CLUSTER_ROLE_CLUSTER_ADMIN = "cluster-admin"
CLUSTER_ROLE_ADMIN = "admin"
CLUSTER_ROLE_EDIT = "edit"
CLUSTER_ROLE_VIEW = "view"
# The platform's own ClusterRoles (they exist whether or not Kueue's chart, with its kueue-batch-*-role, is installed).
BATCH_USER_CLUSTER_ROLE = f"{MANAGED_BY_VALUE}:batch-user"
QUEUE_ADMIN_CLUSTER_ROLE = f"{MANAGED_BY_VALUE}:queue-admin"
# A team admin: everything `edit` allows plus reading the namespace's RBAC, and no RBAC writes. Team
# membership is declared in the spec (`groups`); a RoleBinding made by hand would bypass it.
TENANT_ADMIN_CLUSTER_ROLE = f"{MANAGED_BY_VALUE}:tenant-admin"
TENANT_ADMIN_AGGREGATION_LABEL = f"{PREFIX}/aggregate-to-tenant-admin"
TENANT_ADMIN_EXTRAS_CLUSTER_ROLE = f"{MANAGED_BY_VALUE}:tenant-admin-extras"
# Kubernetes labels the `view` and `edit` rule sets with this so they aggregate into `edit` (and so into ours).
AGGREGATE_TO_EDIT_LABEL = "rbac.authorization.k8s.io/aggregate-to-edit"
# Group tiers of a team (spec `groups`), and the RoleBinding of each in every team namespace.
TENANT_TIERS: tuple[str, ...] = ("admins", "members", "viewers", "batch-users")


def tenant_role_binding_name(tier: str) -> str:
    return f"tenant-{tier}"


# RoleBinding that gives cluster.platformAdmins the `admin` ClusterRole in a platform namespace.
PLATFORM_ADMINS_ROLE_BINDING = "platform-admins"
# Kubernetes' reserved prefix for users and groups the API server itself assigns (system:masters,
# system:authenticated, system:serviceaccounts:...): never a team's group, never mapped from an IAM role.
SYSTEM_GROUP_PREFIX = "system:"
# The ValidatingAdmissionPolicies on tenant namespaces (each binding has its policy's name): workloads,
# priorities (the granted ones only), NetworkPolicies (the platform's only), images (allowed registries,
# digests) and job cleanup (a bounded ttlSecondsAfterFinished).
TENANT_WORKLOAD_POLICY = f"tenant-workloads.{PREFIX}"
TENANT_PRIORITY_POLICY = f"tenant-priorities.{PREFIX}"
TENANT_NETWORK_POLICY_GUARD = f"tenant-network-policies.{PREFIX}"
TENANT_IMAGE_POLICY = f"tenant-images.{PREFIX}"
TENANT_JOB_CLEANUP_POLICY = f"tenant-job-cleanup.{PREFIX}"
