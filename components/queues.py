"""Kueue: the controller (Helm release), ResourceFlavors, Topology, Cohorts, ClusterQueues, priorities, MultiKueue.

Quotas, flavors, labels and names all come from the plan; this module only shapes them into Kueue
`v1beta2` objects. Tenancy creates each team's LocalQueue (conventions.LOCAL_QUEUE_NAME) pointing at
`self.cluster_queues[team]`, and waits on `self.ready` like every Kueue object here: the CRDs and the
validating webhooks come with the Helm release, so nothing Kueue-shaped may be sent before it is up.

The controller's Configuration and the chart values come from gpu_platform.kueue_config, which the live
local cluster's Kueue process reads too. Field names and rules are those of Kueue 0.19 (reference CRDs in ../shared/crds/kueue-v0.19.2, the
controller's Configuration type apis/config/v1beta2/configuration_types.go, the ClusterQueue webhook
pkg/webhooks/clusterqueue_webhook.go, all at tag v0.19.2 of github.com/kubernetes-sigs/kueue).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import pulumi
import pulumi_kubernetes as k8s

from gpu_platform import conventions as cv
from gpu_platform.kueue_config import KUEUE_CHART, chart_values
from gpu_platform.plan import Plan, PoolPlan, QuotaPlan, TeamPlan, cpu_quantity, memory_quantity

from .platform_namespace import platform_namespace

# A ClusterQueue first tries the flavors where a job fits its own nominal quota before it borrows or
# preempts in an earlier flavor: borrowed GPUs can be reclaimed, nominal ones cannot.
FLAVOR_FUNGIBILITY: dict[str, str] = {"whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "TryNextFlavor"}
QUEUEING_STRATEGY = "BestEffortFIFO"

CPU = "cpu"
MEMORY = "memory"
PRIORITY_CLASS_PREEMPTION = "PreemptLowerPriority"


def _labels(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    return {**(extra or {}), cv.MANAGED_BY: cv.MANAGED_BY_VALUE}


def _metadata(name: str, namespace: str | None = None, labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": _labels(labels)}
    if namespace is not None:
        meta["namespace"] = namespace
    return meta


def quantity(value: float) -> str:
    """A Kubernetes quantity string in canonical form (2 -> "2", 1.5 -> "1500m").

    Fair-sharing weights are int-or-string quantities: a JSON float is rejected by the API server, and a
    non-canonical string would come back rewritten and show as a perpetual diff.
    """
    if float(value).is_integer():
        return str(int(value))
    millis = value * 1000
    if float(millis).is_integer():
        return f"{int(millis)}m"
    return repr(float(value))


def multikueue_worker_rules(plan: Plan) -> list[dict[str, Any]]:
    """What a manager does on a worker: mirror the configured integrations' jobs and Kueue Workloads and
    read their status back (Kueue docs, "Setup MultiKueue", create-multikueue-kubeconfig.sh; extended
    from batch and JobSet there to every integration the stack enables)."""
    by_group: dict[str, list[str]] = {}
    for name in plan.spec.addons.kueue.integrations:
        # The manager watches the worker's objects of every integration it runs, plain pods included
        # (a missing one keeps the MultiKueueCluster inactive: "pods is forbidden ... cannot watch").
        for group, _v, plural, _k in cv.KUEUE_INTEGRATION_APIS.get(name, ()):
            by_group.setdefault(group, []).append(plural)
    rules: list[dict[str, Any]] = []
    for group, plurals in sorted(by_group.items()):
        rules.append({"apiGroups": [group], "resources": sorted(set(plurals)),
                      "verbs": ["create", "delete", "get", "list", "watch"]})
        rules.append({"apiGroups": [group], "resources": sorted({f"{p}/status" for p in plurals}), "verbs": ["get"]})
    kueue_group = cv.KUEUE_API_VERSION.split("/")[0]
    rules += [
        {"apiGroups": [kueue_group], "resources": ["workloads"], "verbs": ["create", "delete", "get", "list", "watch"]},
        {"apiGroups": [kueue_group], "resources": ["workloads/status"], "verbs": ["get", "patch", "update"]},
    ]
    return rules


class KueueObject(pulumi.CustomResource):
    """A Kubernetes object with arbitrary top-level fields.

    `apiextensions.CustomResource` only carries `spec`; a WorkloadPriorityClass has `value` and
    `description` at the top level (like a PriorityClass). The provider takes the inputs as the object.
    """

    def __init__(self, resource_name: str, obj: Mapping[str, Any], opts: pulumi.ResourceOptions | None = None):
        super().__init__(f"kubernetes:{obj['apiVersion']}:{obj['kind']}", resource_name, dict(obj), opts)


def resource_flavor(pool: PoolPlan) -> dict[str, Any]:
    """Jobs admitted on this flavor get the pool's node labels as nodeSelector and its taints tolerated."""
    spec: dict[str, Any] = {"nodeLabels": dict(pool.labels), "tolerations": pool.tolerations}
    if pool.topology is not None:
        spec["topologyName"] = pool.topology
    metadata = _metadata(pool.flavor)
    # The pool's capacity travels with its flavor so the policy pack can check that nominal quotas fit
    # even where no node group is in the stack (`existing` clusters).
    metadata["annotations"] = {cv.FLAVOR_CAPACITY_ANNOTATION: str(pool.capacity_units)}
    return {
        "apiVersion": cv.KUEUE_API_VERSION,
        "kind": "ResourceFlavor",
        "metadata": metadata,
        "spec": spec,
    }


def cpu_only_flavor() -> dict[str, Any]:
    """The flavor of work that asks for no GPU (conventions.CPU_FLAVOR): no node labels and no tolerations,
    so its pods go wherever untainted nodes are, never onto a GPU pool (every GPU node is tainted)."""
    return {
        "apiVersion": cv.KUEUE_API_VERSION,
        "kind": "ResourceFlavor",
        "metadata": _metadata(cv.CPU_FLAVOR),
        "spec": {},
    }


def topology() -> dict[str, Any]:
    return {
        "apiVersion": cv.KUEUE_API_VERSION,
        "kind": "Topology",
        "metadata": _metadata(cv.TOPOLOGY_NAME),
        "spec": {"levels": [{"nodeLabel": level} for level in cv.TOPOLOGY_LEVELS]},
    }


def cohort(name: str, parent: str | None, weight: float | None) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if parent is not None:
        spec["parentName"] = parent
    if weight is not None:
        spec["fairSharing"] = {"weight": quantity(weight)}
    return {"apiVersion": cv.KUEUE_API_VERSION, "kind": "Cohort", "metadata": _metadata(name), "spec": spec}


def covered_resources(team: TeamPlan) -> list[str]:
    """cpu, memory, then the team's GPU resource names (whole GPUs, MIG slices, shared replicas), sorted."""
    return [CPU, MEMORY, *sorted({q.resource_name for q in team.quotas})]


def _limits(q: QuotaPlan, resource: str) -> dict[str, str]:
    """nominalQuota/borrowingLimit/lendingLimit of one resource of one flavor.

    The pool's GPU resource gets the plan's units; cpu and memory the same units converted by the
    plan's per-unit share of a node; any other GPU resource name of the team gets 0 on this flavor
    (the pool does not advertise it), which keeps every flavor listing every covered resource.
    """
    if resource == CPU:
        values = (q.cpu(q.nominal), q.cpu(q.borrowing), q.cpu(q.lending))
    elif resource == MEMORY:
        values = (q.memory(q.nominal), q.memory(q.borrowing), q.memory(q.lending))
    elif resource == q.resource_name:
        values = tuple(None if v is None else str(v) for v in (q.nominal, q.borrowing, q.lending))
    else:
        return {"name": resource, "nominalQuota": "0"}
    out = {"name": resource, "nominalQuota": values[0]}
    if values[1] is not None:
        out["borrowingLimit"] = values[1]
    if values[2] is not None:
        out["lendingLimit"] = values[2]
    return out


def _cpu_only_limits(team: TeamPlan, resource: str) -> dict[str, str]:
    """The CPU-only flavor: the team's namespace allowance of CPU and memory, no GPU, never borrowed (a
    team's CPU-only work must not eat into a sibling's)."""
    nominal = {CPU: cpu_quantity(team.cpu_only_cpu_millis), MEMORY: memory_quantity(team.cpu_only_memory_mib)}.get(resource, "0")
    out = {"name": resource, "nominalQuota": nominal}
    if team.cohort is not None:
        out["borrowingLimit"] = "0"
    return out


def resource_groups(team: TeamPlan, pool_order: Sequence[str]) -> list[dict[str, Any]]:
    """One resource group: Kueue allows a resource in only one group, and every flavor of a group must
    list all of the group's coveredResources in the same order (clusterqueue_webhook.go
    validateFlavorQuotas). The CPU-only flavor comes first: Kueue assigns a workload the first flavor it
    fits (pkg/scheduler/flavorassigner), and a workload without GPUs fits it, so it is never charged to
    a GPU pool; GPU work does not fit it (0 GPUs) and moves on. Then the pools, in config order."""
    covered = covered_resources(team)
    rank = {name: i for i, name in enumerate(pool_order)}
    quotas = sorted(team.quotas, key=lambda q: rank.get(q.pool, len(rank)))
    flavors = [{"name": cv.CPU_FLAVOR, "resources": [_cpu_only_limits(team, r) for r in covered]}]
    flavors += [{"name": q.flavor, "resources": [_limits(q, r) for r in covered]} for q in quotas]
    return [{"coveredResources": covered, "flavors": flavors}]


def cluster_queue(team: TeamPlan, plan: Plan, admission_checks: Sequence[str] = ()) -> dict[str, Any]:
    spec: dict[str, Any] = {
        # Only the team's own namespaces may point a LocalQueue at this ClusterQueue.
        "namespaceSelector": {"matchLabels": {cv.TEAM: team.name}},
        "resourceGroups": resource_groups(team, [p.name for p in plan.pools]),
        "preemption": {
            "reclaimWithinCohort": team.preemption.reclaim_within_cohort,
            "borrowWithinCohort": {"policy": team.preemption.borrow_within_cohort},
            "withinClusterQueue": team.preemption.within_cluster_queue,
        },
        "fairSharing": {"weight": quantity(team.fair_sharing_weight)},
        "flavorFungibility": dict(FLAVOR_FUNGIBILITY),
        "queueingStrategy": QUEUEING_STRATEGY,
    }
    if team.cohort is not None:
        spec["cohortName"] = team.cohort
    if admission_checks:
        spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": name} for name in admission_checks]}
    return {
        "apiVersion": cv.KUEUE_API_VERSION,
        "kind": "ClusterQueue",
        "metadata": _metadata(team.cluster_queue, labels=team.namespace_labels),
        "spec": spec,
    }


class Queues(pulumi.ComponentResource):
    """Everything Kueue for one plan. `cluster_queues` and `ready` are what tenancy builds on."""

    cluster_queues: dict[str, pulumi.Resource]
    ready: list[pulumi.Resource]

    def __init__(self, name: str, plan: Plan, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:queues:Queues", name, None, opts)
        self.plan = plan
        addons = plan.spec.addons
        self.installed = addons.kueue.install
        self.ready = []
        self.namespace: k8s.core.v1.Namespace | None = None
        self.release: k8s.helm.v3.Release | None = None
        if self.installed:
            self._install()

        # Kubernetes PriorityClasses are core objects: they need no Kueue and are made regardless.
        self.priority_classes: dict[str, pulumi.Resource] = {}
        self.workload_priority_classes: dict[str, pulumi.Resource] = {}
        for pr in plan.priorities:
            self.priority_classes[pr.name] = k8s.scheduling.v1.PriorityClass(
                f"kueue-priorityclass-{pr.name}",
                metadata=_metadata(pr.class_name),
                value=pr.value,
                description=pr.description,
                global_default=False,
                preemption_policy=PRIORITY_CLASS_PREEMPTION,
                opts=pulumi.ResourceOptions(parent=self),
            )
            self.workload_priority_classes[pr.name] = KueueObject(
                f"kueue-wpc-{pr.name}",
                {
                    "apiVersion": cv.KUEUE_API_VERSION,
                    "kind": "WorkloadPriorityClass",
                    "metadata": _metadata(pr.class_name),
                    "value": pr.value,
                    "description": pr.description,
                },
                opts=self._after(),
            )

        self.topology: pulumi.Resource | None = None
        if any(p.topology for p in plan.pools):
            self.topology = KueueObject("kueue-topology", topology(), opts=self._after())
        self.flavors: dict[str, pulumi.Resource] = {
            cv.CPU_FLAVOR: KueueObject(f"kueue-flavor-{cv.CPU_FLAVOR}", cpu_only_flavor(), opts=self._after()),
        }
        for pool in plan.pools:
            self.flavors[pool.flavor] = KueueObject(
                f"kueue-flavor-{pool.flavor}",
                resource_flavor(pool),
                opts=self._after(self.topology if pool.topology else None),
            )

        # Parents before children, so a child never points at a cohort that does not exist yet.
        self.cohorts: dict[str, pulumi.Resource] = {}
        pending = list(plan.cohorts)
        while pending:
            ready = [c for c in pending if c.parent is None or c.parent in self.cohorts]
            if not ready:  # the spec rejects unknown parents and cycles; never loop on a bad plan
                raise ValueError(f"cohorts without a resolvable parent: {[c.name for c in pending]}")
            for c in ready:
                self.cohorts[c.name] = KueueObject(
                    f"kueue-cohort-{c.name}",
                    cohort(c.name, c.parent, c.fair_sharing_weight),
                    opts=self._after(self.cohorts.get(c.parent) if c.parent else None),
                )
                pending.remove(c)

        self.admission_checks: list[str] = []
        self.multikueue: dict[str, pulumi.Resource] = {}
        self.multikueue_worker: dict[str, pulumi.Resource] = {}
        if plan.multikueue_manager:
            self._multikueue()
        elif plan.multikueue_worker:
            self._multikueue_worker()

        self.cluster_queues = {}
        for team in plan.teams:
            deps: list[pulumi.Resource | None] = [self.flavors[cv.CPU_FLAVOR], *(self.flavors[q.flavor] for q in team.quotas)]
            deps.append(self.cohorts.get(team.cohort) if team.cohort else None)
            deps.append(self.multikueue.get("admission-check"))
            self.cluster_queues[team.name] = KueueObject(
                f"kueue-cq-{team.name}",
                cluster_queue(team, plan, self.admission_checks),
                opts=self._after(*deps),
            )
        self.register_outputs({})

    def _after(self, *extra: pulumi.Resource | None) -> pulumi.ResourceOptions:
        """Child options for a Kueue object: after the controller (CRDs, webhooks) and `extra`."""
        return pulumi.ResourceOptions(parent=self, depends_on=[*self.ready, *(r for r in extra if r is not None)])

    def _install(self) -> None:
        kueue = self.plan.spec.addons.kueue
        # The controller pod meets the restricted profile (runAsNonRoot, RuntimeDefault seccomp, no
        # privilege escalation, all capabilities dropped: the chart's securityContext).
        self.namespace, _ = platform_namespace(
            self, self.plan, cv.KUEUE_NAMESPACE, "kueue", enforce=cv.PSA_RESTRICTED, warn_audit=cv.PSA_RESTRICTED,
            logical_name="kueue-namespace")
        self.release = k8s.helm.v3.Release(
            "kueue",
            name=cv.KUEUE_RELEASE_NAME,
            chart=KUEUE_CHART,
            version=kueue.version,
            namespace=cv.KUEUE_NAMESPACE,
            create_namespace=False,
            values=chart_values(self.plan),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.namespace]),
        )
        self.ready = [self.release]

    def _multikueue(self) -> None:
        """Manager side of MultiKueue: workloads admitted here are dispatched to a worker cluster.

        Each worker's kubeconfig comes from a Pulumi secret config value and stays a secret Output all the
        way into the Kubernetes Secret, so it is encrypted in state and never printed.
        """
        mk = self.plan.spec.multiKueue
        assert mk is not None
        cfg = pulumi.Config(cv.CONFIG_NAMESPACE)
        clusters: list[pulumi.Resource] = []
        for worker in mk.workers:
            secret_name = cv.multikueue_secret_name(worker.name)
            secret = k8s.core.v1.Secret(
                f"kueue-mk-secret-{worker.name}",
                metadata=_metadata(secret_name, namespace=cv.KUEUE_NAMESPACE),
                type="Opaque",
                string_data={cv.MULTIKUEUE_KUBECONFIG_KEY: cfg.require_secret(worker.kubeconfigSecret)},
                opts=pulumi.ResourceOptions(parent=self, depends_on=[*self.ready, *([self.namespace] if self.namespace else [])]),
            )
            clusters.append(KueueObject(
                f"kueue-mk-cluster-{worker.name}",
                {
                    "apiVersion": cv.KUEUE_API_VERSION,
                    "kind": "MultiKueueCluster",
                    "metadata": _metadata(cv.multikueue_cluster_name(worker.name)),
                    "spec": {"clusterSource": {"kubeConfig": {"locationType": "Secret", "location": secret_name}}},
                },
                opts=self._after(secret),
            ))
        config = KueueObject(
            "kueue-mk-config",
            {
                "apiVersion": cv.KUEUE_API_VERSION,
                "kind": "MultiKueueConfig",
                "metadata": _metadata(cv.MULTIKUEUE_NAME),
                "spec": {"clusters": [cv.multikueue_cluster_name(w.name) for w in mk.workers]},
            },
            opts=self._after(*clusters),
        )
        check = KueueObject(
            "kueue-mk-admission-check",
            {
                "apiVersion": cv.KUEUE_API_VERSION,
                "kind": "AdmissionCheck",
                "metadata": _metadata(cv.MULTIKUEUE_NAME),
                "spec": {
                    "controllerName": cv.MULTIKUEUE_CONTROLLER_NAME,
                    "parameters": {"apiGroup": cv.KUEUE_API_VERSION.split("/")[0], "kind": "MultiKueueConfig",
                                   "name": cv.MULTIKUEUE_NAME},
                },
            },
            opts=self._after(config),
        )
        self.multikueue = {"config": config, "admission-check": check}
        self.admission_checks = [cv.MULTIKUEUE_NAME]

    def _multikueue_worker(self) -> None:
        """Worker side: what a MultiKueue manager authenticates as here, and may do. Its kubeconfig (this
        cluster's server and CA, and the token Kubernetes puts in the token Secret) is what the manager's
        stack takes as a secret config value (README, MultiKueue)."""
        kopts = pulumi.ResourceOptions(parent=self, depends_on=[*self.ready, *([self.namespace] if self.namespace else [])])
        sa = k8s.core.v1.ServiceAccount(
            "kueue-mk-worker-sa",
            metadata=_metadata(cv.MULTIKUEUE_WORKER_SERVICE_ACCOUNT, namespace=cv.KUEUE_NAMESPACE),
            opts=kopts,
        )
        role = k8s.rbac.v1.ClusterRole(
            "kueue-mk-worker-role",
            metadata=_metadata(cv.MULTIKUEUE_WORKER_CLUSTER_ROLE),
            rules=multikueue_worker_rules(self.plan),
            opts=pulumi.ResourceOptions(parent=self),
        )
        k8s.rbac.v1.ClusterRoleBinding(
            "kueue-mk-worker-binding",
            metadata=_metadata(cv.MULTIKUEUE_WORKER_CLUSTER_ROLE),
            role_ref={"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": cv.MULTIKUEUE_WORKER_CLUSTER_ROLE},
            subjects=[{"kind": "ServiceAccount", "name": cv.MULTIKUEUE_WORKER_SERVICE_ACCOUNT, "namespace": cv.KUEUE_NAMESPACE}],
            opts=pulumi.ResourceOptions(parent=self, depends_on=[role, sa]),
        )
        # A long-lived token the token controller fills in (kubernetes.io/docs/concepts/configuration/secret,
        # "Service account token Secrets"); the stack never reads it, so it never enters the state.
        token = k8s.core.v1.Secret(
            "kueue-mk-worker-token",
            metadata={**_metadata(cv.MULTIKUEUE_WORKER_TOKEN_SECRET, namespace=cv.KUEUE_NAMESPACE),
                      "annotations": {"kubernetes.io/service-account.name": cv.MULTIKUEUE_WORKER_SERVICE_ACCOUNT}},
            type="kubernetes.io/service-account-token",
            opts=pulumi.ResourceOptions(parent=self, depends_on=[sa], ignore_changes=["data"]),
        )
        self.multikueue_worker = {"service-account": sa, "token": token}

    def exports(self) -> dict[str, Any]:
        mk = self.plan.spec.multiKueue
        return {
            "kueue": {
                "installed": self.installed,
                "version": self.plan.spec.addons.kueue.version if self.installed else None,
                "namespace": cv.KUEUE_NAMESPACE,
                "localQueue": cv.LOCAL_QUEUE_NAME,
                "clusterQueues": {t.name: t.cluster_queue for t in self.plan.teams},
                "flavors": [p.flavor for p in self.plan.pools],
                "priorityClasses": {p.name: p.class_name for p in self.plan.priorities},
                "multiKueueWorkers": [w.name for w in mk.workers] if self.plan.multikueue_manager and mk else [],
                "multiKueueRole": self.plan.multikueue_role,
                **({"multiKueueWorkerToken": {"namespace": cv.KUEUE_NAMESPACE,
                                              "secret": cv.MULTIKUEUE_WORKER_TOKEN_SECRET}}
                   if self.plan.multikueue_worker else {}),
            }
        }
