"""Tenancy: what each team gets in each of its namespaces, and the cluster roles around them.

Per team namespace: the Namespace (team, cost-center, environment and Pod Security labels), the Kueue
LocalQueue that feeds the team's ClusterQueue, RoleBindings for the team's groups, a ResourceQuota and a
LimitRange, and NetworkPolicies (default deny, then DNS, the namespace itself, scraping from monitoring,
KubeRay's operator to Ray heads where a Ray integration is on, and the team's configured egress). Cluster wide: the platform's batch-user ClusterRole (so RoleBindings
work whether or not Kueue's chart, with its own kueue-batch-user-role, is installed) and a queue-admin
ClusterRole for the platform admins.

Tenant groups only ever get RoleBindings inside their own namespaces: no ClusterRoleBinding, nothing in
the platform namespaces. Every number and label comes from
the plan; this module only shapes objects.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Iterable, Mapping

import pulumi
import pulumi_kubernetes as k8s

from gpu_platform import conventions as cv
from gpu_platform.plan import CONTAINER_DEFAULT_LIMIT, CONTAINER_DEFAULT_REQUEST, Plan, TeamPlan

from .kube_object import KubeObject, object_labels

RBAC_GROUP = "rbac.authorization.k8s.io"
KUEUE_GROUP = cv.KUEUE_API_VERSION.split("/")[0]
KUEUE_VISIBILITY_GROUP = f"visibility.{KUEUE_GROUP}"
COMPONENT_VALUE = "tenancy"

# Verbs spelled out (no "*"): a wildcard would silently grant verbs added to Kubernetes later.
READ = ["get", "list", "watch"]
WRITE = ["create", "delete", "get", "list", "patch", "update", "watch"]

# Kueue's cluster-scoped queue objects, and the namespaced ones platform admins also manage.
# (Kueue v0.19 CRDs in ../shared/crds/kueue-v0.19.2: scope Cluster except LocalQueue and Workload.)
KUEUE_CLUSTER_RESOURCES = (
    "admissionchecks", "clusterqueues", "cohorts", "resourceflavors", "topologies", "workloadpriorityclasses",
)
KUEUE_ADMIN_NAMESPACED_RESOURCES = ("localqueues", "workloads")
KUEUE_STATUS_SUBRESOURCES = (
    "admissionchecks/status", "clusterqueues/status", "cohorts/status", "localqueues/status", "workloads/status",
)


labels = partial(object_labels, component=COMPONENT_VALUE)


def group_subjects(groups: Iterable[str]) -> list[dict[str, str]]:
    return [{"kind": "Group", "apiGroup": RBAC_GROUP, "name": g} for g in groups]


def namespace_labels(plan: Plan, team: TeamPlan) -> dict[str, str]:
    """Team labels from the plan, plus Pod Security admission: enforce the team's level, warn and audit at
    restricted so a baseline team sees what would break under restricted, all pinned to the cluster's
    minor version so an upgrade does not tighten the rules by surprise."""
    return labels({**team.namespace_labels, **cv.psa_labels(team.pod_security, cv.PSA_RESTRICTED, plan.psa_version)})


def workload_apis(plan: Plan) -> list[tuple[str, str, str, str]]:
    """(group, version, plural, kind) of batch Jobs plus every configured Kueue integration's workload API: what a
    team member may create in the team's namespaces (JobSet, TrainJob, LeaderWorkerSet, RayJob, RayCluster when
    their controllers are installed), never anything cluster-scoped."""
    names = ["batch/job", *plan.kueue_integrations]
    out: list[tuple[str, str, str, str]] = []
    for name in names:
        for api in cv.KUEUE_INTEGRATION_APIS.get(name, ()):
            if api not in out:
                out.append(api)
    return out


def batch_user_rules(plan: Plan) -> list[dict[str, Any]]:
    """Kueue's batch user (its docs, "Setup RBAC": manage Jobs, view LocalQueues and Workloads), without
    relying on Kueue's chart. Core and apps workloads (pods, deployments) come with `edit`/`admin`, which
    this role is always bound next to; batch Jobs and the integrations' CRDs (JobSet, PyTorchJob, Ray...)
    are granted here because `edit` does not aggregate CRDs unless their charts label roles for it."""
    by_group: dict[str, list[str]] = {}
    for group, _version, plural, _kind in workload_apis(plan):
        if group in ("", "apps"):
            continue
        by_group.setdefault(group, []).append(plural)
    rules: list[dict[str, Any]] = []
    for group, plurals in sorted(by_group.items()):
        rules.append({"apiGroups": [group], "resources": sorted(plurals), "verbs": WRITE})
        rules.append({"apiGroups": [group], "resources": sorted(f"{p}/status" for p in plurals), "verbs": ["get"]})
    rules += [
        {"apiGroups": [KUEUE_GROUP], "resources": ["localqueues", "workloads"], "verbs": READ},
        {"apiGroups": [KUEUE_GROUP], "resources": ["localqueues/status", "workloads/status"], "verbs": ["get"]},
        # Pending workloads of a LocalQueue, in order (Kueue's visibility API).
        {"apiGroups": [KUEUE_VISIBILITY_GROUP], "resources": ["localqueues/pendingworkloads"], "verbs": READ},
    ]
    return rules


def tenant_admin_extra_rules() -> list[dict[str, Any]]:
    """What a team admin has beyond `edit`: see who has access (read RBAC) and check it (can-i reviews)."""
    return [
        {"apiGroups": [RBAC_GROUP], "resources": ["roles", "rolebindings"], "verbs": READ},
        {"apiGroups": ["authorization.k8s.io"], "resources": ["localsubjectaccessreviews"], "verbs": ["create"]},
    ]


def queue_admin_rules() -> list[dict[str, Any]]:
    """Platform admins run the queue model: flavors, cohorts, cluster and local queues, priorities,
    topologies, admission checks, and workloads (to deactivate or evict one)."""
    return [
        {"apiGroups": [KUEUE_GROUP], "resources": [*KUEUE_CLUSTER_RESOURCES, *KUEUE_ADMIN_NAMESPACED_RESOURCES],
         "verbs": WRITE},
        {"apiGroups": [KUEUE_GROUP], "resources": list(KUEUE_STATUS_SUBRESOURCES), "verbs": ["get"]},
        {"apiGroups": [KUEUE_VISIBILITY_GROUP],
         "resources": ["clusterqueues/pendingworkloads", "localqueues/pendingworkloads"], "verbs": READ},
    ]


def kuberay_operator_policy_spec() -> dict[str, Any]:
    """KubeRay's operator submits and polls RayJobs on the head's dashboard from its own namespace; under the
    default deny a RayJob would never record completion and would hold its quota. Only the operator's pods
    (namespace by its immutable name label, pods by KubeRay's component label) reach only Ray heads, on
    only the dashboard and client ports; teams cannot add such a rule themselves (the network-policy guard),
    so the platform owns it. Sources next to the names in conventions."""
    return {
        "podSelector": {"matchLabels": dict(cv.RAY_HEAD_POD_LABELS)},
        "policyTypes": ["Ingress"],
        "ingress": [{
            "from": [{
                "namespaceSelector": {"matchLabels": {cv.NAMESPACE_NAME_LABEL: cv.KUBERAY_OPERATOR_NAMESPACE}},
                "podSelector": {"matchLabels": dict(cv.KUBERAY_OPERATOR_POD_LABELS)},
            }],
            "ports": [{"protocol": "TCP", "port": cv.RAY_DASHBOARD_PORT},
                      {"protocol": "TCP", "port": cv.RAY_CLIENT_PORT}],
        }],
    }


def network_policy_specs(plan: Plan, team: TeamPlan) -> dict[str, dict[str, Any]]:
    """Name -> NetworkPolicy spec. Policies are additive: the default deny selects every pod for both
    directions, each allow opens one path. EFA (OS-bypass) traffic between training pods does not pass
    through the kernel's IP stack, so NCCL over EFA is not filtered; its TCP bootstrap stays in-namespace."""
    everything: dict[str, Any] = {}
    specs: dict[str, dict[str, Any]] = {
        cv.NETWORK_POLICY_DEFAULT_DENY: {"podSelector": everything, "policyTypes": ["Ingress", "Egress"]},
        cv.NETWORK_POLICY_ALLOW_DNS: {
            "podSelector": everything,
            "policyTypes": ["Egress"],
            "egress": [{
                "to": [{
                    "namespaceSelector": {"matchLabels": {cv.NAMESPACE_NAME_LABEL: cv.KUBE_SYSTEM_NAMESPACE}},
                    "podSelector": {"matchLabels": dict(cv.DNS_POD_LABELS)},
                }],
                "ports": [{"protocol": "UDP", "port": cv.DNS_PORT}, {"protocol": "TCP", "port": cv.DNS_PORT}],
            }],
        },
        cv.NETWORK_POLICY_ALLOW_SAME_NAMESPACE: {
            "podSelector": everything,
            "policyTypes": ["Ingress", "Egress"],
            "ingress": [{"from": [{"podSelector": everything}]}],
            "egress": [{"to": [{"podSelector": everything}]}],
        },
        cv.NETWORK_POLICY_ALLOW_MONITORING: {
            "podSelector": everything,
            "policyTypes": ["Ingress"],
            "ingress": [{"from": [{
                "namespaceSelector": {"matchLabels": {cv.NAMESPACE_NAME_LABEL: cv.MONITORING_NAMESPACE}},
            }]}],
        },
    }
    if plan.uses_kuberay:
        specs[cv.NETWORK_POLICY_ALLOW_KUBERAY] = kuberay_operator_policy_spec()
    if team.egress:
        specs[cv.NETWORK_POLICY_ALLOW_EGRESS] = {
            "podSelector": everything,
            "policyTypes": ["Egress"],
            "egress": [
                {"to": [{"ipBlock": {"cidr": e.cidr}}], "ports": [{"protocol": e.protocol, "port": p} for p in e.ports]}
                for e in team.egress
            ],
        }
    return specs


def role_bindings(team: TeamPlan) -> dict[str, tuple[str, tuple[str, ...]]]:
    """Tier -> (ClusterRole, groups), only for tiers that have groups (a binding to nobody is noise)."""
    tiers = {
        "admins": (cv.TENANT_ADMIN_CLUSTER_ROLE, team.admin_groups),
        "members": (cv.CLUSTER_ROLE_EDIT, team.member_groups),
        "viewers": (cv.CLUSTER_ROLE_VIEW, team.viewer_groups),
        "batch-users": (cv.BATCH_USER_CLUSTER_ROLE, tuple(dict.fromkeys(team.admin_groups + team.member_groups))),
    }
    return {tier: (role, groups) for tier, (role, groups) in tiers.items() if groups}


class Tenancy(pulumi.ComponentResource):
    """Team namespaces with their queue, RBAC, quota, limits and network policy; the platform's roles."""

    namespaces: dict[str, k8s.core.v1.Namespace]
    local_queues: dict[str, KubeObject]

    def __init__(self, name: str, plan: Plan, queues: Any, opts: pulumi.ResourceOptions | None = None,
                 namespaces: bool = True, cluster_roles: bool = True):
        """`namespaces` / `cluster_roles` False: a split environment's platform stack deploys the roles and
        its tenant stacks the namespaces (gpu_platform/stack_split.py)."""
        super().__init__("gpu-platform:tenancy:Tenancy", name, None, opts)
        self.plan = plan
        self.namespaces = {}
        self.local_queues = {}
        # Until the queues component exposes these, there is nothing to wait for.
        cluster_queues: Mapping[str, pulumi.Resource] = getattr(queues, "cluster_queues", {}) or {}
        queues_ready: list[pulumi.Resource] = list(getattr(queues, "ready", []) or [])

        self.batch_user_role = self._cluster_roles() if cluster_roles else None
        for team in plan.teams if namespaces else ():
            for ns in team.namespaces:
                self._namespace(team, ns, cluster_queues.get(team.name), queues_ready)
        self.register_outputs({"namespaces": sorted(self.namespaces)})

    # -- cluster wide -----------------------------------------------------------------------------------

    def _cluster_roles(self) -> k8s.rbac.v1.ClusterRole:
        child = pulumi.ResourceOptions(parent=self)
        batch_user = k8s.rbac.v1.ClusterRole(
            "tenancy-batch-user",
            metadata={"name": cv.BATCH_USER_CLUSTER_ROLE, "labels": labels()},
            rules=batch_user_rules(self.plan),
            opts=child,
        )
        # Team admins: `edit` (which aggregates `view`) plus the extras below, through aggregation so new
        # API groups that extend `edit` reach them too. Built-in `admin` would let them write RoleBindings.
        extras = k8s.rbac.v1.ClusterRole(
            "tenancy-tenant-admin-extras",
            metadata={"name": cv.TENANT_ADMIN_EXTRAS_CLUSTER_ROLE,
                      "labels": {**labels(), cv.TENANT_ADMIN_AGGREGATION_LABEL: "true"}},
            rules=tenant_admin_extra_rules(),
            opts=child,
        )
        self.tenant_admin_role = k8s.rbac.v1.ClusterRole(
            "tenancy-tenant-admin",
            metadata={"name": cv.TENANT_ADMIN_CLUSTER_ROLE, "labels": labels()},
            aggregation_rule={"clusterRoleSelectors": [
                {"matchLabels": {cv.AGGREGATE_TO_EDIT_LABEL: "true"}},
                {"matchLabels": {cv.TENANT_ADMIN_AGGREGATION_LABEL: "true"}},
            ]},
            opts=pulumi.ResourceOptions(parent=self, depends_on=[extras]),
        )
        # Tenants get no ClusterRoleBinding at all, not even read-only: their queue's usage is in the
        # LocalQueue's status (flavorsUsage, flavorsReservation), which the batch-user role can read.
        admin = k8s.rbac.v1.ClusterRole(
            "tenancy-queue-admin",
            metadata={"name": cv.QUEUE_ADMIN_CLUSTER_ROLE, "labels": labels()},
            rules=queue_admin_rules(),
            opts=child,
        )
        if self.plan.cluster.platform_admins:
            k8s.rbac.v1.ClusterRoleBinding(
                "tenancy-queue-admin",
                metadata={"name": cv.QUEUE_ADMIN_CLUSTER_ROLE, "labels": labels()},
                role_ref={"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": cv.QUEUE_ADMIN_CLUSTER_ROLE},
                subjects=group_subjects(self.plan.cluster.platform_admins),
                opts=pulumi.ResourceOptions(parent=self, depends_on=[admin]),
            )
        return batch_user

    # -- per namespace ----------------------------------------------------------------------------------

    def _namespace(
        self,
        team: TeamPlan,
        ns: str,
        cluster_queue: pulumi.Resource | None,
        queues_ready: list[pulumi.Resource],
    ) -> None:
        plan = self.plan
        # In prod, retain_on_delete: dropping a team (or a typo in its name) must not delete its namespace and
        # with it every PVC and running job; its quota, RBAC and policies go, the namespace is left to an
        # admin. Elsewhere `pulumi destroy` removes everything, as a throwaway environment expects.
        namespace = k8s.core.v1.Namespace(
            f"tenant-{ns}",
            metadata={"name": ns, "labels": namespace_labels(plan, team), "annotations": team.namespace_annotations},
            opts=pulumi.ResourceOptions(parent=self, retain_on_delete=plan.environment == "prod"),
        )
        self.namespaces[ns] = namespace
        inside = pulumi.ResourceOptions(parent=self, depends_on=[namespace])

        def meta(name: str) -> dict[str, Any]:
            return {"name": name, "namespace": ns, "labels": labels({cv.TEAM: team.name})}

        k8s.core.v1.ResourceQuota(
            f"tenant-{ns}-quota",
            metadata=meta(cv.TENANT_QUOTA_NAME),
            spec={"hard": dict(team.quota_of(ns))},
            opts=inside,
        )
        k8s.core.v1.LimitRange(
            f"tenant-{ns}-limits",
            metadata=meta(cv.TENANT_LIMIT_RANGE_NAME),
            spec={"limits": [{
                "type": "Container",
                "defaultRequest": dict(CONTAINER_DEFAULT_REQUEST),
                "default": dict(CONTAINER_DEFAULT_LIMIT),
            }]},
            opts=inside,
        )
        for policy, spec in network_policy_specs(plan, team).items():
            k8s.networking.v1.NetworkPolicy(f"tenant-{ns}-{policy}", metadata=meta(policy), spec=spec, opts=inside)

        for tier, (role, groups) in role_bindings(team).items():
            deps: list[pulumi.Resource] = [namespace]
            if role == cv.BATCH_USER_CLUSTER_ROLE and self.batch_user_role is not None:
                deps.append(self.batch_user_role)
            k8s.rbac.v1.RoleBinding(
                f"tenant-{ns}-{tier}",
                metadata=meta(cv.tenant_role_binding_name(tier)),
                role_ref={"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": role},
                subjects=group_subjects(groups),
                opts=pulumi.ResourceOptions(parent=self, depends_on=deps),
            )

        # The LocalQueue is what users name in kueue.x-k8s.io/queue-name; it must not exist before the
        # ClusterQueue it points at (Kueue marks it inactive) nor before Kueue's CRDs and webhook.
        queue_deps: list[pulumi.Resource] = [namespace, *queues_ready]
        if cluster_queue is not None:
            queue_deps.append(cluster_queue)
        self.local_queues[ns] = KubeObject(
            f"tenant-{ns}-local-queue",
            {
                "apiVersion": cv.KUEUE_API_VERSION,
                "kind": "LocalQueue",
                "metadata": meta(cv.LOCAL_QUEUE_NAME),
                "spec": {"clusterQueue": team.cluster_queue},
            },
            opts=pulumi.ResourceOptions(parent=self, depends_on=queue_deps),
        )

    def exports(self) -> dict[str, Any]:
        """Where each team submits: namespace -> LocalQueue name (the queue-name label value)."""
        return {"localQueues": {ns: cv.LOCAL_QUEUE_NAME for ns in sorted(self.namespaces)}}
