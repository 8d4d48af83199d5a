"""A team's Job, ready to submit: the platform's one workload template.

The seeds: "a clean Job template with labels, resource requests, storage mounts and log export beats a
complex platform nobody can debug". Everything the platform relies on is set here, from the plan, so a
team never has to know it: the queue label (Kueue admits it against the team's quota), the priority it
is granted, resources in the pool's units with CPU and memory in proportion (as the ClusterQueue's
quota is), EFA devices on EFA pools (a multi-node job without them silently falls back to TCP), the pod
labels that cost reports and DCGM metrics read, shared memory for NCCL, and a TTL so finished jobs go.
The job is pinned to its pool by the pool label alone (Kueue considers only flavors whose node labels the
pod's nodeSelector matches, so it is charged to that pool and no other of the same resource name); it
tolerates the GPU taint itself (the pools' flavors give themselves only to pod sets that do), and the rest
of the pool's labels and the workload taint's toleration Kueue injects from the flavor when it admits it.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from typing import Any

from . import conventions as cv, images
from .data import job_mounts, scratch_problem
from .plan import Plan, PoolPlan, QuotaPlan, TeamPlan
from .quota_reach import Reach, shapes
from .spec import JOB_TTL_SECONDS_DEFAULT

# The default of jobs.ttlSecondsAfterFinished (what a stack's template sets is plan.job_ttl_seconds).
TTL_SECONDS_AFTER_FINISHED = JOB_TTL_SECONDS_DEFAULT
# A job's image when none is given: a small shell image whose `sleep` stands in for the work (on the
# simulated nodes the pod's duration annotation decides; on a real cluster the command does).
DEFAULT_IMAGE = "busybox:1.37"
DEFAULT_DURATION = "10m"
# Shared memory for NCCL and data loaders (the container runtime's default /dev/shm is 64 MiB).
SHM_VOLUME = "dshm"
# The template's one container: the podFailurePolicy's exit-code rules name it.
CONTAINER_NAME = "main"
# How long a pod stays bound to a node that stopped reporting (NotReady) or cannot be reached before it is
# evicted: Kubernetes' DefaultTolerationSeconds gives 300 s (admission plugin), which leaves a whole gang's
# GPUs waiting five minutes on one dead node. The node is first given the node lifecycle controller's grace
# period (node-monitor-grace-period, 50 s) to report again; a minute more and its pods go (taint-based
# evictions, kubernetes.io/docs/concepts/scheduling-eviction/taint-and-toleration), which Kueue then sees.
NODE_LOST_TOLERATION_SECONDS = 60
NODE_LOST_TAINTS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
# Exit codes of a container the kubelet stopped: 128 + the signal. SIGTERM (143) starts a pod's termination (Kueue
# suspending the Job to preempt or evict it, a drain, the application's own liveness kill or `kill`); SIGKILL (137)
# ends one that outlived its grace period, or the kernel's OOM killer ended it. Neither says whether the platform
# or the application stopped it, so neither fails the Job at once: they count against backoffLimit (see
# pod_failure_policy for why a preempted job's pods are never counted).
SIGTERM_EXIT_CODE = 143
SIGKILL_EXIT_CODE = 137
COUNTED_EXIT_CODES = (SIGKILL_EXIT_CODE, SIGTERM_EXIT_CODE)
# backoffLimit: how many counted pod failures a Job survives. A single-pod job is retried 3 times (4 tries); a
# multi-node job is a gang whose survivors cannot go on without the lost rank, so its first counted failure
# fails it (Kueue requeues the whole gang for what is not the job's fault: node loss, preemption).
SINGLE_POD_BACKOFF_LIMIT = 3
GANG_BACKOFF_LIMIT = 0
# Pod conditions of a pod lost to its node: Kubernetes' own (kubernetes.io/docs/concepts/workloads/pods/
# disruptions, "Pod disruption conditions") and the one Kueue sets on a pod it fails because its assigned
# node failed (kueue v0.19.2 pkg/controller/tas/node_controller.go podTerminatedByKueueConditionType).
NODE_LOST_POD_CONDITIONS = ("DisruptionTarget", "TerminatedByKueue")
DURATION = re.compile(r"^(\d+)(s|m|h)$")
_SECONDS = {"s": 1, "m": 60, "h": 3600}


class JobError(ValueError):
    """A job the platform would refuse or never admit, with the valid choices named."""


class NeverAdmitted(JobError):
    """More units than the team can ever hold on the pool: Kueue would leave the job pending forever
    (quota_reach). Carries the figures so a caller that names shapes differently (a trace's pods and units)
    can say what fits in its own words."""

    def __init__(self, team: str, pool: PoolPlan, pods: int, per_pod: int, reach: Reach,
                 spell: str = "--nodes {pods} --gpus {units}"):
        self.team, self.pool, self.pods, self.per_pod, self.reach = team, pool, pods, per_pod, reach
        super().__init__(self.message(spell))

    def message(self, spell: str) -> str:
        fits = self.reach.fits(self.pods, self.per_pod, self.pool.units_per_node)
        what_fits = (f"what fits: {shapes(fits, spell)}" if fits else
                     f"nothing fits: team {self.team!r} can hold no {self.pool.resource_name} on pool {self.pool.name!r}")
        return (f"{self.pods} x {self.per_pod} = {self.pods * self.per_pod} {self.pool.resource_name} can never be "
                f"admitted: team {self.team!r} can hold at most {self.reach.units} on pool {self.pool.name!r}, "
                f"{self.reach.arithmetic()}; {what_fits}")


@dataclass(frozen=True)
class JobRequest:
    team: str
    pool: str
    gpus: int
    nodes: int = 1
    priority: str | None = None
    image: str | None = None
    duration: str = DEFAULT_DURATION
    name: str | None = None
    namespace: str | None = None
    # The kind of workload (workload_templates.KINDS): a batch Job, or a JobSet, TrainJob, RayJob, LeaderWorkerSet.
    kind: str = "job"
    # LeaderWorkerSet groups (serving replicas); each group is `nodes` pods.
    replicas: int = 1
    # On simulated nodes: the fraction of the time the pods keep their GPUs busy (conventions.SIM_GPU_BUSY_ANNOTATION).
    gpu_busy: float | None = None


def duration_seconds(value: str) -> int:
    m = DURATION.match(value)
    if not m or int(m.group(1)) <= 0:
        raise JobError(f"duration {value!r} is not a positive duration such as 90s, 10m or 2h")
    return int(m.group(1)) * _SECONDS[m.group(2)]


def _team(plan: Plan, name: str) -> TeamPlan:
    teams = {t.name: t for t in plan.teams}
    if name not in teams:
        raise JobError(f"unknown team {name!r}; teams: {', '.join(teams) or 'none'}")
    return teams[name]


def _pool(plan: Plan, team: TeamPlan, name: str) -> tuple[PoolPlan, QuotaPlan]:
    """The pool and the team's quota on it (whose reach is the most the team can ever hold there)."""
    quotas = {q.pool: q for q in team.quotas}
    if name not in quotas:
        raise JobError(
            f"team {team.name!r} has no quota on pool {name!r}; its pools: {', '.join(quotas) or 'none'}")
    pool = plan.pools_by_name[name]
    return pool, quotas[name]


def check(plan: Plan, req: JobRequest) -> tuple[TeamPlan, PoolPlan, str]:
    """Validate a request: (team, pool, namespace), or JobError naming what is valid."""
    team = _team(plan, req.team)
    pool, quota = _pool(plan, team, req.pool)
    unit = f"{pool.resource_name} per pod"
    if not 1 <= req.gpus <= pool.units_per_node:
        raise JobError(f"gpus {req.gpus} is outside 1..{pool.units_per_node} ({unit}: a pod runs on one "
                       f"{pool.instance_type} node of pool {pool.name!r}; use --nodes for more)")
    if pool.resource_name == cv.SHARED_GPU_RESOURCE and req.gpus > cv.SHARED_GPU_MAX_PER_CONTAINER:
        raise JobError(
            f"gpus {req.gpus} on time-sliced pool {pool.name!r}: a pod may ask for at most "
            f"{cv.SHARED_GPU_MAX_PER_CONTAINER} {pool.resource_name}; the device plugin refuses more per container "
            "(failRequestsGreaterThanOne: \"maximum request size for shared resources is 1\"), so the job would "
            f"be admitted and never start, and {req.gpus} replicas of one GPU are not {req.gpus} GPUs of compute; "
            f"use --gpus 1 --nodes {req.gpus * req.nodes} for {req.gpus * req.nodes} pods")
    if req.nodes < 1:
        raise JobError(f"nodes {req.nodes} must be at least 1")
    if req.gpus * req.nodes > quota.reach.units:
        raise NeverAdmitted(team.name, pool, req.nodes, req.gpus, quota.reach)
    if req.priority is not None and req.priority not in team.allowed_priorities:
        raise JobError(f"priority {req.priority!r} is not granted to team {team.name!r}; granted: "
                       f"{', '.join(team.allowed_priorities) or 'none'}")
    namespace = req.namespace or team.namespaces[0]
    if namespace not in team.namespaces:
        raise JobError(f"namespace {namespace!r} is not team {team.name!r}'s; its namespaces: {', '.join(team.namespaces)}")
    if req.name is not None and not cv.DNS1123_LABEL.match(req.name):
        raise JobError(f"name {req.name!r} is not a DNS-1123 label (lowercase letters, digits and '-')")
    duration_seconds(req.duration)
    if req.gpu_busy is not None and not 0.0 <= req.gpu_busy <= 1.0:
        raise JobError(f"gpu-busy {req.gpu_busy!r} is not a fraction of the time in 0..1 (0.25 keeps the GPUs busy a "
                       "quarter of the time)")
    problem = images.image_problem(req.image or DEFAULT_IMAGE, team.allowed_registries, plan.require_image_digests)
    if problem:
        raise JobError(problem + ("" if req.image else " (pass --image)"))
    if plan.data is not None:  # the data path's scratch claims must fit the namespace's own storage quota
        problem = scratch_problem(plan.data, team.name, team.own_storage, team.own_claims, req.nodes, pool.local_nvme)
        if problem:
            raise JobError(problem)
    return team, pool, namespace


def resources(pool: PoolPlan, units: int) -> dict[str, dict[str, str]]:
    """Limits (= requests) of one pod: the pool's units, CPU and memory in the same proportion as the
    flavor's quota, EFA devices in proportion to the node's share."""
    limits = {
        pool.resource_name: str(units),
        "cpu": f"{units * pool.cpu_millis_per_unit}m",
        "memory": f"{units * pool.memory_mib_per_unit}Mi",
    }
    if pool.efa_interfaces:
        limits[cv.EFA_RESOURCE] = str(max(1, pool.efa_interfaces * units // pool.units_per_node))
    # GPU and EFA belong in limits only (Kubernetes copies extended-resource limits to requests); CPU and
    # memory requests equal their limits, which the admission policy and the LimitRange both accept.
    return {"limits": limits, "requests": {"cpu": limits["cpu"], "memory": limits["memory"]}}


def node_lost_tolerations() -> list[dict[str, Any]]:
    """NoExecute tolerations of a node that stopped reporting, for NODE_LOST_TOLERATION_SECONDS (they replace
    the 300 s DefaultTolerationSeconds would add)."""
    return [{"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": NODE_LOST_TOLERATION_SECONDS}
            for key in NODE_LOST_TAINTS]


def pod_failure_policy() -> dict[str, Any]:
    """What a pod's end means for the Job (batch/v1 podFailurePolicy; it requires restartPolicy Never, which
    the template sets). Rules are tried in order and the first match decides; a failed pod that matches no rule
    is counted against backoffLimit (kubernetes.io/docs/concepts/workloads/controllers/job, "Pod failure
    policy"; kubernetes v1.33.13 pkg/controller/job/pod_failure_policy.go matchPodFailurePolicy).

    1. A pod lost to its node or to an eviction (condition DisruptionTarget: the taint manager evicting it from a
       NotReady node, pod garbage collection after the node was deleted, a drain, kube-scheduler preemption) is
       not the job's failure: Ignore, nothing is counted and the pod is replaced. Nor is one Kueue failed itself
       because the node it was placed on had failed before it could start (condition TerminatedByKueue,
       kueue v0.19.2 pkg/controller/tas/node_controller.go markPodsFailed).
    2. Any non-zero exit of the application other than 137 and 143 is the application's failure: FailJob, at
       once, instead of rerunning a broken job on scarce GPUs (or having Kueue requeue it forever).
    3. Exit 143 (SIGTERM) and 137 (SIGKILL after the grace period, or OOM) match no rule and are counted.

    Why 137 and 143 are counted and not ignored or failed. When Kueue preempts or evicts a Job it suspends it;
    the Job controller then strips its tracking finalizer from each active pod *before* deleting it (v1.33.13
    pkg/controller/job/job_controller.go manageJob -> deleteJobPods, removeTrackingFinalizerPatch), and a pod
    without that finalizer is never counted (getValidPodsWithFilter). So a preempted job's pods, whatever they
    exit with, cost it nothing, and Kueue requeues it. But FailJob is matched on every failed pod of the Job,
    tracked or not (getFailJobMessage): a FailJob rule that caught 137 failed a preempted job for good whenever
    its container outlived the grace period, and one that caught 143 would do so for every preemption. Ignore,
    on the other hand, never counts: a container that kept dying of its own SIGTERM (a liveness kill, a
    `timeout`) was recreated forever while it held GPUs. Counted, it is bounded by backoffLimit (3 retries for
    a single pod; a gang's first failure ends it), and the Job says why: condition Failed, reason
    BackoffLimitExceeded."""
    return {"rules": [
        {"action": "Ignore", "onPodConditions": [{"type": cond, "status": "True"} for cond in NODE_LOST_POD_CONDITIONS]},
        {"action": "FailJob", "onExitCodes": {"containerName": CONTAINER_NAME, "operator": "NotIn",
                                              "values": [0, *COUNTED_EXIT_CODES]}},
    ]}


@dataclass(frozen=True)
class GpuPod:
    """The parts of one GPU pod template every kind's template shares: labels, annotations, the container, the
    pod spec (each kind places them where its API keeps a pod template)."""

    labels: dict[str, Any]
    annotations: dict[str, Any]
    container: dict[str, Any]
    spec: dict[str, Any]

    def template(self) -> dict[str, Any]:
        return {"metadata": {"labels": self.labels, "annotations": self.annotations}, "spec": self.spec}


def object_labels(team: TeamPlan, pool: PoolPlan, priority: str | None) -> dict[str, str]:
    """Labels of the object Kueue manages: its queue, its priority, and who and where it is for."""
    labels = {
        cv.QUEUE_NAME_LABEL: cv.LOCAL_QUEUE_NAME,
        cv.TEAM: team.name,
        cv.POOL: pool.name,
        cv.MANAGED_BY: cv.MANAGED_BY_VALUE,
    }
    if priority is not None:
        labels[cv.PRIORITY_CLASS_LABEL] = cv.priority_class_name(priority)
    return labels


RESTRICTED_CONTAINER_SECURITY: dict[str, Any] = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
                                                  "runAsNonRoot": True, "runAsUser": 65534}


def gpu_pod(plan: Plan, team: TeamPlan, pool: PoolPlan, namespace: str, req: JobRequest,
            image: str, command: list[str] | None, env: list[dict[str, Any]] | None = None,
            run_as_user: int = 65534, runs_to_completion: bool = True) -> GpuPod:
    """One pod of `req.gpus` units on `pool`: see the module docstring for what each part is for.

    `runs_to_completion`: work that loses everything since its last checkpoint when its pod is evicted (a Job's,
    a JobSet's, a TrainJob's, a Ray worker's pod) tells the Cluster Autoscaler not to drain its node to scale
    down: a job pod is controller-backed and its memory emptyDir does not block a drain, so the autoscaler would
    otherwise evict it from an under-used node mid-run (kubernetes/autoscaler cluster-autoscaler-1.33.6
    utils/drain/drain.go; FAQ "What types of pods can prevent CA from removing a node?"). The annotation only
    blocks the autoscaler's scale-down: preemption, node loss and node repair still stop the pod. Serving
    replicas (LeaderWorkerSet) are restartable behind their Service and stay evictable."""
    seconds = duration_seconds(req.duration)
    # Pod labels: what DCGM copies onto GPU metrics and cost reports group by.
    pod_labels = {cv.TEAM: team.name, cv.COST_CENTER: team.cost_center, cv.POOL: pool.name,
                  cv.QUEUE_NAME_LABEL: cv.LOCAL_QUEUE_NAME}
    container: dict[str, Any] = {
        "name": CONTAINER_NAME,
        "image": image,
        "resources": resources(pool, req.gpus),
        "volumeMounts": [{"name": SHM_VOLUME, "mountPath": "/dev/shm"}],
        # The restricted Pod Security profile, so the same job runs in every team namespace.
        "securityContext": {**RESTRICTED_CONTAINER_SECURITY, "runAsUser": run_as_user},
    }
    if command is not None:
        container["command"] = command
    if env:
        container["env"] = env
    pod_spec: dict[str, Any] = {
        "restartPolicy": "Never",
        # SIGTERM to SIGKILL when the platform stops the pod (jobs.terminationGracePeriodSeconds).
        "terminationGracePeriodSeconds": plan.job_termination_grace_seconds,
        "nodeSelector": {cv.POOL: pool.name},
        # The GPU toleration is the template's own: Kueue gives a pool's flavor only to pod sets that carry
        # it (conventions.GPU_TOLERATION); the workload taint's toleration it adds from the flavor.
        "tolerations": [dict(cv.GPU_TOLERATION), *node_lost_tolerations()],
        "containers": [container],
        "volumes": [{"name": SHM_VOLUME, "emptyDir": {"medium": "Memory"}}],
        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
    }
    if req.priority is not None:
        pod_spec["priorityClassName"] = cv.priority_class_name(req.priority)
    # The data path (docs/data-path.md): the team's bucket read-only, its checkpoints read-write, scratch that
    # goes with the pod, the pool's file system; credentials through the team's Pod Identity service account.
    mounts = None if plan.data is None else job_mounts(plan.data, team.name, namespace, pool.name, pool.local_nvme,
                                                       container["securityContext"]["runAsUser"])
    if mounts is not None:
        container["volumeMounts"] += list(mounts.mounts)
        pod_spec["volumes"] += list(mounts.volumes)
        pod_spec["serviceAccountName"] = mounts.service_account
        pod_spec["securityContext"]["fsGroup"] = mounts.fs_group
        pod_spec["securityContext"]["fsGroupChangePolicy"] = mounts.fs_group_change_policy
    pod_annotations = {cv.SIM_DURATION_ANNOTATION: f"{seconds}s"}
    if runs_to_completion:
        pod_annotations[cv.SAFE_TO_EVICT_ANNOTATION] = "false"
    if req.gpu_busy is not None:
        pod_annotations[cv.SIM_GPU_BUSY_ANNOTATION] = f"{req.gpu_busy:g}"
    if pool.topology is not None:
        pod_annotations[cv.TAS_PREFERRED_TOPOLOGY_ANNOTATION] = cv.TAS_PREFERRED_LEVEL
    return GpuPod(pod_labels, pod_annotations, container, pod_spec)


def job(plan: Plan, req: JobRequest) -> list[dict[str, Any]]:
    """The Job (and, for a multi-node job, the headless Service its pods find each other through)."""
    team, pool, namespace = check(plan, req)
    name = req.name or f"{pool.name}-{secrets.token_hex(3)}"
    seconds = duration_seconds(req.duration)
    labels = object_labels(team, pool, req.priority)
    env = None
    if req.nodes > 1:
        env = [{"name": "GPU_PLATFORM_NODES", "value": str(req.nodes)},
               {"name": "GPU_PLATFORM_COORDINATOR", "value": f"{name}-0.{name}"}]
    pod = gpu_pod(plan, team, pool, namespace, req, req.image or DEFAULT_IMAGE,
                  None if req.image else ["sleep", str(seconds)], env)
    pod_spec = pod.spec
    if req.nodes > 1:
        pod_spec["subdomain"] = name
    spec: dict[str, Any] = {
        # Kueue's webhook suspends it too; created suspended, it can never start before Kueue admits it.
        "suspend": True,
        "parallelism": req.nodes,
        "completions": req.nodes,
        "backoffLimit": GANG_BACKOFF_LIMIT if req.nodes > 1 else SINGLE_POD_BACKOFF_LIMIT,
        "podFailurePolicy": pod_failure_policy(),
        "ttlSecondsAfterFinished": plan.job_ttl_seconds,
        "template": pod.template(),
    }
    if req.nodes > 1:
        spec["completionMode"] = "Indexed"
    out: list[dict[str, Any]] = [{
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": spec,
    }]
    if req.nodes > 1:
        out.append({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": name, "namespace": namespace, "labels": {cv.TEAM: team.name, cv.MANAGED_BY: cv.MANAGED_BY_VALUE}},
            "spec": {"clusterIP": "None", "selector": {"batch.kubernetes.io/job-name": name},
                     "publishNotReadyAddresses": True},
        })
    return out
