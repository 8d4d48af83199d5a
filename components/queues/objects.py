"""The Kueue objects of a plan as plain dicts: ResourceFlavors, Topology, Cohorts, ClusterQueues.

Pure functions of the plan (no Pulumi resource is made here), so tests and the policy pack's fixtures can
build exactly what the component registers. Field names and rules are those of Kueue 0.19 `v1beta2`
(ClusterQueue webhook pkg/webhooks/clusterqueue_webhook.go at tag v0.19.2).
"""

from __future__ import annotations

from typing import Any, Sequence

from gpu_platform import conventions as cv
from gpu_platform.plan.autoscaling import ProvisioningPlan
from gpu_platform.plan import Plan, PoolPlan, QuotaPlan, TeamPlan, cpu_quantity, memory_quantity

from ..kube_object import object_metadata

# A ClusterQueue first tries the flavors where a job fits its own nominal quota before it borrows or
# preempts in an earlier flavor: borrowed GPUs can be reclaimed, nominal ones cannot.
FLAVOR_FUNGIBILITY: dict[str, str] = {"whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "TryNextFlavor"}
QUEUEING_STRATEGY = "BestEffortFIFO"

CPU = "cpu"
MEMORY = "memory"


def canonical_quantity(value: float) -> str:
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


def resource_flavor(pool: PoolPlan) -> dict[str, Any]:
    """Jobs admitted on this flavor get the pool's node labels as nodeSelector and its taints tolerated
    (podset.go adds a flavor's nodeLabels and tolerations to the pods it admits).

    A pod set without GPUs must never be given it: Kueue would pin it to GPU nodes it may not run
    on. On other pools the flavor declares the pool's taints as `nodeTaints` and does not tolerate the GPU
    taint, and Kueue assigns a flavor only to a pod set that tolerates every NoSchedule node taint the
    flavor's own tolerations leave open (kueue v0.19.2 pkg/scheduler/flavorassigner/flavorassigner.go
    checkFlavorForPodSets): GPU templates carry the GPU toleration (conventions.GPU_TOLERATION), templates
    without GPUs may not (admission). A topology-aware flavor is given only to pod sets that ask for a
    topology, which templates without GPUs may not either (PoolPlan.flavor_node_taints). Why taints and not a
    resource group of its own for the CPU-only flavor: docs/architecture.md, "Work without GPUs can only be
    given the CPU-only flavor"."""
    spec: dict[str, Any] = {"nodeLabels": dict(pool.labels), "tolerations": pool.flavor_tolerations}
    if pool.flavor_node_taints:
        spec["nodeTaints"] = pool.flavor_node_taints
    if pool.topology is not None:
        spec["topologyName"] = pool.topology
    metadata = object_metadata(pool.flavor)
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
        "metadata": object_metadata(cv.CPU_FLAVOR),
        "spec": {},
    }


def topology() -> dict[str, Any]:
    return {
        "apiVersion": cv.KUEUE_API_VERSION,
        "kind": "Topology",
        "metadata": object_metadata(cv.TOPOLOGY_NAME),
        "spec": {"levels": [{"nodeLabel": level} for level in cv.TOPOLOGY_LEVELS]},
    }


def cohort(name: str, parent: str | None, weight: float | None) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if parent is not None:
        spec["parentName"] = parent
    if weight is not None:
        spec["fairSharing"] = {"weight": canonical_quantity(weight)}
    return {"apiVersion": cv.KUEUE_API_VERSION, "kind": "Cohort", "metadata": object_metadata(name), "spec": spec}


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
    validateFlavorQuotas). The CPU-only flavor comes first, and it is the only one a pod set without GPUs
    can be given (the pools' flavors need the GPU toleration: resource_flavor), so such work waits for the
    team's allowance rather than spill onto a pool; GPU work does not fit it (0 GPUs) and moves on. Then the
    pools, in config order."""
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
        "fairSharing": {"weight": canonical_quantity(team.fair_sharing_weight)},
        "flavorFungibility": dict(FLAVOR_FUNGIBILITY),
        "queueingStrategy": QUEUEING_STRATEGY,
    }
    if team.cohort is not None:
        spec["cohortName"] = team.cohort
    rules: list[dict[str, Any]] = [{"name": name} for name in admission_checks]
    # The ProvisioningRequest check only on the flavors of the pools the autoscaler provisions: a job on
    # another flavor (reserved pools, the CPU-only flavor) is admitted as before (admissionChecksStrategy
    # onFlavors, apis/kueue/v1beta2/clusterqueue_types.go AdmissionCheckStrategyRule).
    provisioned = plan.provisioning.team_flavors([q.flavor for q in team.quotas])
    if provisioned:
        rules.append({"name": plan.provisioning.admission_check, "onFlavors": list(provisioned)})
    if rules:
        spec["admissionChecksStrategy"] = {"admissionChecks": rules}
    return {
        "apiVersion": cv.KUEUE_API_VERSION,
        "kind": "ClusterQueue",
        "metadata": object_metadata(team.cluster_queue, labels=team.namespace_labels),
        "spec": spec,
    }


def provisioning_request_config(provisioning: ProvisioningPlan) -> dict[str, Any]:
    """How Kueue asks for a job's nodes (apis/kueue/v1beta2/provisioningrequestconfig_types.go): the autoscaler's
    best-effort-atomic class, for the pod sets that ask for the provisioned pools' GPU resources, and the plan's
    retry strategy (ProvisioningPlan: its backoffs alone cover a GPU node's boot; Kueue's default, 3 retries from
    60 s, adds up to 7 minutes). A request the autoscaler cannot serve yet stays Provisioned=False and is retried by
    the autoscaler itself; only a Failed or BookingExpired one spends a retry."""
    return {
        "apiVersion": cv.KUEUE_API_VERSION,
        "kind": cv.PROVISIONING_CONFIG_KIND,
        "metadata": object_metadata(provisioning.config),
        "spec": {
            "provisioningClassName": provisioning.provisioning_class,
            "managedResources": list(provisioning.managed_resources),
            "retryStrategy": {
                "backoffLimitCount": provisioning.retry_limit,
                "backoffBaseSeconds": provisioning.retry_base_seconds,
                "backoffMaxSeconds": provisioning.retry_max_seconds,
            },
        },
    }


def provisioning_admission_check(provisioning: ProvisioningPlan) -> dict[str, Any]:
    """The check Kueue's own ProvisioningRequest controller answers (controllerName), with its config."""
    group = cv.KUEUE_API_VERSION.split("/")[0]
    return {
        "apiVersion": cv.KUEUE_API_VERSION,
        "kind": "AdmissionCheck",
        "metadata": object_metadata(provisioning.admission_check),
        "spec": {
            "controllerName": cv.PROVISIONING_REQUEST_CONTROLLER,
            "parameters": {"apiGroup": group, "kind": cv.PROVISIONING_CONFIG_KIND, "name": provisioning.config},
        },
    }
