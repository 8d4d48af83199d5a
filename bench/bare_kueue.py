"""Bare Kueue's objects for the scheduler baseline, as Kueue's own runner makes them, on the live local cluster.

Kueue's runner, run against an existing cluster (kubernetes-sigs/kueue v0.19.2 test/performance/scheduler,
README.md "Run in an existing cluster"), creates plain Kueue objects and nothing else
(runner/generator/generator.go): one ResourceFlavor `rf`; per cohort `cohort-<i>` and queue set, ClusterQueues
`cq-<set>-<q>-cohort-<i>` with one `cpu` quota (nominal 20, borrowing limit 100), the preemption policies of
the set, the default namespaceSelector {} and flavorFungibility of its wrappers (pkg/util/testing/v1beta2
wrappers.go MakeClusterQueue); per ClusterQueue a namespace and a LocalQueue of the same name; and Workloads
`<class>-<set>-<n>-0` directly, one pod set `main` of one pod whose container `c` requests the class's cpu,
with spec.priority and the runner's class and running-time labels (MakeWorkload, MakePodSet). Every object
but the Workloads carries the runner's cleanup label, which its Cleanup deletes by.

The namespaces carry no label of the platform, so nothing of it applies to them: the tenant admission
policies select namespaces by the team label (components/admission/matching.py tenant_namespace_selector),
Kueue manages Jobs only there (gpu_platform/kueue_config.py managedJobsNamespaceSelector), and the platform's
ResourceQuotas and NetworkPolicies are objects in the tenant namespaces. What bare Kueue shares with the
platform's path is the cluster: the API server, etcd, and the Kueue process with its Configuration and its
own webhooks (a Kueue install has them; the runner's minimalkueue mode alone runs without).

Kueue's runner also plays the job: its controller (runner/controller/controller.go) sets Finished once an
admitted Workload has run its class's time, counted from when it saw the Workload admitted, and completes
an eviction (there is no job to stop) by giving the quota back. Both are server-side applies to the status
subresource under Kueue's own field managers (pkg/workload/workload.go SetConditionAndUpdate,
pkg/workload/patching/patching.go PatchAdmissionStatus; WorkloadRequestUseMergePatch is off by default);
finished_patch and evicted_patch build the same bodies.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone
from typing import Any

from bench.kueue_baseline import BORROWING_LIMIT, CLASSES, COHORTS, NOMINAL, QUEUES_PER_COHORT, WorkloadClass
from localcluster.api import ApiError, Client

KUEUE_API = "kueue.x-k8s.io/v1beta2"
# runner/generator/generator.go
FLAVOR = "rf"
RUNNING_TIME_LABEL = "kueue.x-k8s.io/performance-scheduler-running-ms"
CLASS_LABEL = "kueue.x-k8s.io/performance-scheduler-class"
CLEANUP_LABEL = "kueue.x-k8s.io/performance-scheduler-cleanup"
COHORT_CLASS = "cohort"
QUEUE_CLASS = "cq"
# Field managers of the runner's status writes: constants.JobControllerName + "-" + condition type, and
# constants.AdmissionName (pkg/constants).
FINISHED_MANAGER = "kueue-job-controller-Finished"
ADMISSION_MANAGER = "kueue-admission"
# The conditions an admission status patch carries (pkg/workload/patching/patching.go admissionManagedConditions).
ADMISSION_MANAGED_CONDITIONS = ("QuotaReserved", "BlockedOnPreemptionGates", "Evicted", "Admitted", "Preempted",
                                "Requeued", "DeactivationTarget", "Finished", "PodsReady")

RESOURCE_FLAVORS = f"/apis/{KUEUE_API}/resourceflavors"
CLUSTER_QUEUES = f"/apis/{KUEUE_API}/clusterqueues"
NAMESPACES = "/api/v1/namespaces"


def cohort_name(cohort: int) -> str:
    return f"{COHORT_CLASS}-{cohort}"


def queue_name(cohort: int, queue: int) -> str:
    """ClusterQueue, its namespace and its LocalQueue: "%s-%d-%d-%s" of class, queue set (the baseline has
    one, 0), index and cohort."""
    return f"{QUEUE_CLASS}-0-{queue}-{cohort_name(cohort)}"


def queue_names() -> list[str]:
    return [queue_name(c, q) for c in range(COHORTS) for q in range(QUEUES_PER_COHORT)]


def workload_name(c: WorkloadClass, index: int) -> str:
    """"%s-%d-%d-%d": class, the workload set's index in the queue set (small 0, medium 1, large 2), the
    sequence number, the template's index in the set (one template each)."""
    return f"{c.name}-{CLASSES.index(c)}-{index}-0"


def resource_flavor() -> dict[str, Any]:
    return {"apiVersion": KUEUE_API, "kind": "ResourceFlavor",
            "metadata": {"name": FLAVOR, "labels": {CLEANUP_LABEL: "true"}}, "spec": {"nodeLabels": {}}}


def cluster_queue(cohort: int, queue: int) -> dict[str, Any]:
    return {
        "apiVersion": KUEUE_API, "kind": "ClusterQueue",
        "metadata": {"name": queue_name(cohort, queue), "labels": {CLASS_LABEL: QUEUE_CLASS, CLEANUP_LABEL: "true"}},
        "spec": {
            "cohortName": cohort_name(cohort),
            "namespaceSelector": {},
            "queueingStrategy": "BestEffortFIFO",
            "flavorFungibility": {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"},
            "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [{"name": FLAVOR, "resources": [
                {"name": "cpu", "nominalQuota": str(NOMINAL), "borrowingLimit": str(BORROWING_LIMIT)}]}]}],
            "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
        },
    }


def namespace(cohort: int, queue: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": queue_name(cohort, queue), "labels": {CLEANUP_LABEL: "true"}}}


def local_queue(cohort: int, queue: int) -> dict[str, Any]:
    name = queue_name(cohort, queue)
    return {"apiVersion": KUEUE_API, "kind": "LocalQueue", "metadata": {"name": name, "namespace": name},
            "spec": {"clusterQueue": name}}


def workload(ns: str, c: WorkloadClass, index: int) -> dict[str, Any]:
    return {
        "apiVersion": KUEUE_API, "kind": "Workload",
        "metadata": {"name": workload_name(c, index), "namespace": ns,
                     "labels": {RUNNING_TIME_LABEL: str(c.runtime_ms), CLASS_LABEL: c.name}},
        "spec": {
            "queueName": ns,
            "priority": c.kueue_priority,
            "podSets": [{"name": "main", "count": 1, "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "c", "resources": {"requests": {"cpu": str(c.units)}}}]}}}],
        },
    }


def workloads_path(ns: str) -> str:
    return f"/apis/{KUEUE_API}/namespaces/{ns}/workloads"


def rfc3339(t: float) -> str:
    return datetime.fromtimestamp(int(t), timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse(ts: str) -> float:
    return datetime.strptime(ts, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp()


def _base(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj["metadata"]
    return {"apiVersion": KUEUE_API, "kind": "Workload",
            "metadata": {"name": meta["name"], "namespace": meta["namespace"], "uid": meta["uid"]}}


def finished_patch(obj: dict[str, Any], now: float) -> dict[str, Any]:
    """The runner's Finished condition (reason ByTest), applied as FINISHED_MANAGER."""
    return {**_base(obj), "status": {"conditions": [{
        "type": "Finished", "status": "True", "reason": "ByTest", "message": "By test runner",
        "observedGeneration": obj["metadata"].get("generation", 1), "lastTransitionTime": rfc3339(now)}]}}


def evicted_patch(obj: dict[str, Any], now: float) -> dict[str, Any]:
    """An evicted Workload's quota given back, applied as ADMISSION_MANAGER with force: QuotaReserved False
    (reason Pending), Admitted False (NoReservation, the admitted time added to
    accumulatedPastExecutionTimeSeconds), status.admission left out so the apply removes it
    (UnsetQuotaReservationWithCondition, SyncAdmittedCondition; the rest as admissionStatusPatch copies it)."""
    status = obj.get("status", {})
    gen = obj["metadata"].get("generation", 1)
    conds = {c["type"]: dict(c) for c in status.get("conditions", [])}
    stamp = rfc3339(now)
    old = conds.get("QuotaReserved")
    if old is None or old.get("status") != "False":
        conds["QuotaReserved"] = {"type": "QuotaReserved", "status": "False", "reason": "Pending",
                                  "message": "Evicted by the test runner", "observedGeneration": gen,
                                  "lastTransitionTime": stamp}
    accumulated = status.get("accumulatedPastExecutionTimeSeconds")
    admitted = conds.get("Admitted")
    if admitted is None or admitted.get("status") == "True":
        if admitted is not None:
            accumulated = (accumulated or 0) + int(now - _parse(admitted["lastTransitionTime"]))
        conds["Admitted"] = {"type": "Admitted", "status": "False", "reason": "NoReservation",
                             "message": "The workload has no reservation", "observedGeneration": gen,
                             "lastTransitionTime": stamp}
    out: dict[str, Any] = {"conditions": [conds[t] for t in ADMISSION_MANAGED_CONDITIONS if t in conds]}
    if accumulated is not None:
        out["accumulatedPastExecutionTimeSeconds"] = accumulated
    requeue = status.get("requeueState") or {}
    if requeue.get("count") is not None or requeue.get("requeueAt") is not None:
        out["requeueState"] = requeue
    if status.get("resourceRequests"):
        out["resourceRequests"] = status["resourceRequests"]
    evictions = (status.get("schedulingStats") or {}).get("evictions")
    if evictions:
        out["schedulingStats"] = {"evictions": evictions}
    return {**_base(obj), "status": out}


def apply_status(client: Client, obj: dict[str, Any], patch: dict[str, Any], manager: str) -> None:
    meta = obj["metadata"]
    client.request("PATCH", f"{workloads_path(meta['namespace'])}/{meta['name']}/status"
                   f"?fieldManager={manager}&force=true", patch, content_type="application/apply-patch+yaml")


def _create(client: Client, path: str, obj: dict[str, Any]) -> None:
    try:
        client.create(path, obj)
    except ApiError as err:
        if err.status != 409:
            raise


def set_up(client: Client, timeout: float = 120) -> float:
    """The flavor, 30 ClusterQueues in 5 cohorts, their namespaces and LocalQueues; seconds until every
    ClusterQueue is Active."""
    started = time.perf_counter()
    _create(client, RESOURCE_FLAVORS, resource_flavor())
    for c in range(COHORTS):
        for q in range(QUEUES_PER_COHORT):
            _create(client, CLUSTER_QUEUES, cluster_queue(c, q))
            _create(client, NAMESPACES, namespace(c, q))
            _create(client, f"/apis/{KUEUE_API}/namespaces/{queue_name(c, q)}/localqueues", local_queue(c, q))
    names = set(queue_names())
    while time.perf_counter() - started < timeout:
        cqs = [q for q in client.get(CLUSTER_QUEUES)["items"] if q["metadata"]["name"] in names]
        if len(cqs) == len(names) and all(
                any(c["type"] == "Active" and c["status"] == "True" for c in q.get("status", {}).get("conditions", []))
                for q in cqs):
            return time.perf_counter() - started
        time.sleep(1)
    raise RuntimeError(f"bare Kueue's ClusterQueues not all active after {timeout:.0f}s")


def clean_up(client: Client, timeout: float = 300) -> float:
    """What the runner's Cleanup deletes (its namespaces, LocalQueues, ClusterQueues, flavor), Workloads first
    so the ClusterQueues' finalizers have nothing to wait for; seconds until the ClusterQueues and namespaces
    are gone (the next phase is not to share the machine with their deletion)."""
    started = time.perf_counter()
    names = queue_names()
    for ns in names:
        for path in (workloads_path(ns), f"/apis/{KUEUE_API}/namespaces/{ns}/localqueues"):
            try:
                client.delete(path)
            except ApiError as err:
                if err.status != 404:
                    raise
    for path in [f"{CLUSTER_QUEUES}/{n}" for n in names] + [f"{NAMESPACES}/{n}" for n in names] + \
            [f"{RESOURCE_FLAVORS}/{FLAVOR}"]:
        try:
            client.delete(path)
        except ApiError as err:
            if err.status != 404:
                raise
    left: list[str] = []
    while time.perf_counter() - started < timeout:
        left = [q["metadata"]["name"] for q in client.get(CLUSTER_QUEUES)["items"] if q["metadata"]["name"] in names]
        left += [f"namespace {n['metadata']['name']}" for n in client.get(NAMESPACES, labelSelector=CLEANUP_LABEL)["items"]]
        if not left:
            return time.perf_counter() - started
        time.sleep(1)
    raise RuntimeError(f"bare Kueue's {left[:3]} still there after {timeout:.0f}s")
