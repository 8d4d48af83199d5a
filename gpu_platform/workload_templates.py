"""The paved road beyond a batch Job: a team's JobSet, TrainJob, RayJob or LeaderWorkerSet, ready to
submit (`python -m platform_cli job --kind ...`). Each is the Job template's pod (jobs.gpu_pod: queue, priority,
units with CPU and memory in proportion, EFA, the pool selector and GPU toleration, TAS on topology-aware pools,
/dev/shm, restricted Pod Security, the data path) placed where the kind's API keeps a pod template, plus what
the kind needs to run on this platform:

- jobset: one replicated Job of `--nodes` indexed pods, all-or-nothing (no restarts: Kueue requeues a gang that
  lost a node), JobSet's own headless Service (network.enableDNSHostnames, sigs.k8s.io/jobset v0.10.1
  api/jobset/v1alpha2/jobset_types.go Network), the rank and coordinator in the environment, NCCL's EFA
  settings on EFA pools, and a TTL.
- trainjob: the torch-distributed ClusterTrainingRuntime (the Trainer chart's; Trainer's torch plugin sets
  torchrun's PET_NNODES, PET_NODE_RANK, PET_MASTER_ADDR ... and the JobSet's headless Service itself), the
  trainer's image, resources and node count, and the pod parts in a runtime patch of the platform's own
  (Trainer v2.2.1 TrainJobSpec.runtimePatches; Kueue adds its own patch under its manager name on admission).
- rayjob: a GPU-less head on CPU capacity (no GPU toleration or pool selector: Kueue gives it the cpu-only
  flavor, within the team's CPU-only allowance), GPU workers on the pool, a submitter pod of the platform's
  shape, shutdownAfterJobFinishes (Kueue requires it) and a TTL (the operator deletes the RayJob with it).
- lws: multi-node inference on an inference pool, `production-inference` priority by default, a readiness probe
  on each leader and worker, a Service for the leaders and a PodDisruptionBudget (one pod at a time: a group is
  recreated whole when one of its pods goes).
"""

from __future__ import annotations

import secrets
from typing import Any

from . import conventions as cv, images, workload_controllers as wc
from .jobs import (
    DEFAULT_IMAGE, GANG_BACKOFF_LIMIT, JobError, JobRequest, check, duration_seconds, gpu_pod, job, object_labels, pod_failure_policy,
)
from .plan import Plan, PoolPlan, TeamPlan, cpu_quantity, memory_quantity

KINDS: tuple[str, ...] = ("job", "jobset", "trainjob", "rayjob", "lws")
# The controller (addons key) and the Kueue framework each kind needs.
KIND_CONTROLLER: dict[str, str] = {"jobset": wc.JOBSET, "trainjob": wc.TRAINER, "rayjob": wc.KUBERAY, "lws": wc.LWS}
KIND_FRAMEWORK: dict[str, str] = {"job": cv.FRAMEWORK_JOB, "jobset": cv.FRAMEWORK_JOBSET, "trainjob": cv.FRAMEWORK_TRAINJOB,
                                  "rayjob": cv.FRAMEWORK_RAYJOB, "lws": cv.FRAMEWORK_LWS}

# JobSet: the one replicated Job's name, and its pods' hostnames <jobset>-<replicatedJob>-<job index>-<pod index>
# under the subdomain (the JobSet's name): jobset_types.go Network, pkg/controllers/jobset_controller.go.
JOBSET_REPLICATED_JOB = "workers"
# Trainer: the ClusterTrainingRuntime the chart ships (runtimes.torchDistributed.enabled), its replicated Job and
# container (charts/kubeflow-trainer/templates/runtimes/torch-distributed.yaml, v2.2.1), and the manager name of
# the platform's runtime patch (trainjob_types.go RuntimePatch.manager: "who owns this patch entry").
TORCH_RUNTIME = "torch-distributed"
TORCH_RUNTIME_JOB = "node"
TRAINER_API_VERSION = "trainer.kubeflow.org/v1alpha1"
RUNTIME_PATCH_MANAGER = f"{cv.PREFIX}/job-template"
# NCCL over EFA: libfabric's EFA provider (fi_efa(7): FI_PROVIDER=efa selects it, which aws-ofi-nccl uses), and
# GPUDirect RDMA on the instance families whose EFA has it (p4d, p4de, p5, p5e: fi_efa(7) FI_EFA_USE_DEVICE_RDMA;
# aws/sagemaker-training-toolkit src/sagemaker_training/torch_distributed.py sets it for those types).
EFA_RDMA_FAMILIES = ("p4d", "p4de", "p5", "p5e", "p5en")
# Ray: the image of KubeRay v1.5.0's samples (ray-operator/config/samples/ray-job.sample.yaml, rayVersion 2.46.0),
# its -gpu variant for workers; the image runs as user ray (uid 1000). The head's ports (the sample's and
# ray-operator/controllers/ray/utils/constant.go) and its size: Ray's head at the team's CPU-only allowance
# default (8 CPU / 32 GiB is teams[].limits' default) would leave nothing for the submitter, so 2 CPU / 8 GiB.
RAY_VERSION = "2.46.0"
RAY_IMAGE = f"rayproject/ray:{RAY_VERSION}"
RAY_GPU_IMAGE = f"rayproject/ray:{RAY_VERSION}-gpu"
RAY_UID = 1000
RAY_HEAD_CPU_MILLIS = 2000
RAY_HEAD_MEMORY_MIB = 8 * 1024
RAY_SUBMITTER_CPU_MILLIS = 500
RAY_SUBMITTER_MEMORY_MIB = 512
RAY_WORKER_GROUP = "gpu-workers"
# LeaderWorkerSet: the serving port and the health path its readiness probe reads (vLLM's OpenAI-compatible
# server answers GET /health on 8000; a server of another kind must serve the same, or change the probe).
SERVING_PORT = 8000
HEALTH_PATH = "/health"
LWS_NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
LWS_WORKER_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"
PRODUCTION_INFERENCE = "production-inference"


def _kind(plan: Plan, req: JobRequest) -> None:
    if req.kind not in KINDS:
        raise JobError(f"kind {req.kind!r} is not a template; kinds: {', '.join(KINDS)}")
    key = KIND_CONTROLLER.get(req.kind)
    if key is not None and plan.workload_controller(key) is None:
        raise JobError(f"kind {req.kind!r} needs {wc.CONTROLLERS[key].title}, which this stack does not install "
                       f"(addons.{key}.install); kinds here: {', '.join(available_kinds(plan))}")
    if KIND_FRAMEWORK[req.kind] not in plan.kueue_integrations:
        raise JobError(f"kind {req.kind!r}: Kueue's {KIND_FRAMEWORK[req.kind]} integration is off on this stack "
                       f"(addons.kueue.integrations), so it would run unqueued and the platform refuses it; kinds here: "
                       f"{', '.join(available_kinds(plan))}")


def available_kinds(plan: Plan) -> list[str]:
    return [k for k in KINDS if (k not in KIND_CONTROLLER or plan.workload_controller(KIND_CONTROLLER[k]) is not None)
            and KIND_FRAMEWORK[k] in plan.kueue_integrations]


def template(plan: Plan, req: JobRequest) -> list[dict[str, Any]]:
    """The objects of `req.kind` for a team and pool, or JobError naming the field and what is valid."""
    _kind(plan, req)
    if req.kind == "job":
        return job(plan, req)
    if req.kind == "lws":
        req = _lws_request(plan, req)
    team, pool, namespace = check(plan, req)
    name = req.name or f"{pool.name}-{secrets.token_hex(3)}"
    build = {"jobset": _jobset, "trainjob": _trainjob, "rayjob": _rayjob, "lws": _lws}[req.kind]
    return build(plan, req, team, pool, namespace, name)


def _stand_in(req: JobRequest, image: str | None = None) -> tuple[str, list[str] | None]:
    """The image and command: the request's, or a shell image that sleeps for the duration (on the simulated
    nodes the pod's duration annotation decides; on a real cluster the command does)."""
    if req.image:
        return req.image, None
    return image or DEFAULT_IMAGE, ["sleep", str(duration_seconds(req.duration))]


def efa_env(pool: PoolPlan) -> list[dict[str, str]]:
    """NCCL's EFA settings on EFA pools (a multi-node job without them, or without the EFA devices the pod asks
    for, falls back to TCP sockets)."""
    if not pool.efa_interfaces:
        return []
    env = [{"name": "FI_PROVIDER", "value": "efa"}]
    if pool.instance_type.split(".", 1)[0] in EFA_RDMA_FAMILIES:
        env.append({"name": "FI_EFA_USE_DEVICE_RDMA", "value": "1"})
    return env


def _meta(name: str, namespace: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"name": name, "namespace": namespace, "labels": labels}


# How many times a JobSet restarts its whole gang (every child Job recreated, its pods resuming from their last
# checkpoint) after a pod of it was lost to what is neither the application's crash nor the platform: a pod
# deleted by hand, a container that died of its own SIGTERM or was OOM-killed (137 and 143 are counted,
# jobs.pod_failure_policy, and a gang's first counted failure ends its Job).
JOBSET_MAX_RESTARTS = 3
# The reason of a Job failed by a FailJob rule: the application's own non-zero exit (k8s.io/api v0.33.13
# batch/v1/types.go JobReasonPodFailurePolicy).
JOB_REASON_POD_FAILURE_POLICY = "PodFailurePolicy"


def jobset_failure_policy() -> dict[str, Any]:
    """What a JobSet does when one of its Jobs fails (jobset v0.10.1 api/jobset/v1alpha2/jobset_types.go
    FailurePolicy: rules in order, the first match acts; no match restarts the JobSet, up to maxRestarts).

    - The application crashed (the Job failed by the template's FailJob rule, reason PodFailurePolicy): fail the
      JobSet at once, as a batch Job does; rerunning a broken job on scarce GPUs helps nobody.
    - Anything else that failed a Job (BackoffLimitExceeded: a pod deleted, a container dead of its own SIGTERM,
      an OOM kill): restart the whole gang, at most JOBSET_MAX_RESTARTS times, so training resumes from its last
      checkpoint instead of a survivor waiting on a rank that is gone. BlockingRecreate deletes every pod of the
      old gang before the new one starts, so no rank of the new gang meets one of the old at its rendezvous.
    A node lost or a preemption never gets here: those pods are ignored or untracked (jobs.pod_failure_policy)
    and Kueue moves or requeues the whole workload."""
    return {
        "maxRestarts": JOBSET_MAX_RESTARTS,
        "restartStrategy": "BlockingRecreate",
        "rules": [{"name": "applicationFailed", "action": "FailJobSet",
                   "onJobFailureReasons": [JOB_REASON_POD_FAILURE_POLICY]}],
    }


def _jobset(plan: Plan, req: JobRequest, team: TeamPlan, pool: PoolPlan, namespace: str, name: str) -> list[dict[str, Any]]:
    image, command = _stand_in(req)
    coordinator = f"{name}-{JOBSET_REPLICATED_JOB}-0-0.{name}"
    env = [
        {"name": "GPU_PLATFORM_NODES", "value": str(req.nodes)},
        {"name": "GPU_PLATFORM_COORDINATOR", "value": coordinator},
        # The pod's rank: the Indexed Job's completion index (batch/v1: the annotation and JOB_COMPLETION_INDEX).
        {"name": "GPU_PLATFORM_RANK", "valueFrom": {"fieldRef": {
            "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}},
        *efa_env(pool),
    ]
    pod = gpu_pod(plan, team, pool, namespace, req, image, command, env)
    job_spec: dict[str, Any] = {
        "parallelism": req.nodes,
        "completions": req.nodes,
        "completionMode": "Indexed",
        "backoffLimit": GANG_BACKOFF_LIMIT,
        "podFailurePolicy": pod_failure_policy(),
        "template": pod.template(),
    }
    return [{
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": _meta(name, namespace, object_labels(team, pool, req.priority)),
        "spec": {
            # Kueue's webhook suspends it too; created suspended, it never starts before Kueue admits it.
            "suspend": True,
            # A headless Service named after the JobSet: every pod resolves as <pod hostname>.<name>.
            "network": {"enableDNSHostnames": True, "subdomain": name, "publishNotReadyAddresses": True},
            "failurePolicy": jobset_failure_policy(),
            "ttlSecondsAfterFinished": plan.job_ttl_seconds,
            "replicatedJobs": [{"name": JOBSET_REPLICATED_JOB, "replicas": 1, "template": {"spec": job_spec}}],
        },
    }]


def _trainjob(plan: Plan, req: JobRequest, team: TeamPlan, pool: PoolPlan, namespace: str, name: str) -> list[dict[str, Any]]:
    image, command = _stand_in(req)
    pod = gpu_pod(plan, team, pool, namespace, req, image, command)
    container = pod.container
    # The runtime's container is `node`; a runtime patch may add mounts and a security context to it, and the
    # pod's volumes, tolerations, selector and security context (trainjob_types.go PodSpecPatch, ContainerPatch).
    patch_spec: dict[str, Any] = {
        "nodeSelector": pod.spec["nodeSelector"],
        "tolerations": pod.spec["tolerations"],
        "volumes": pod.spec["volumes"],
        "securityContext": pod.spec["securityContext"],
        "containers": [{"name": TORCH_RUNTIME_JOB, "volumeMounts": container["volumeMounts"],
                        "securityContext": container["securityContext"]}],
    }
    if "serviceAccountName" in pod.spec:
        patch_spec["serviceAccountName"] = pod.spec["serviceAccountName"]
    trainer: dict[str, Any] = {
        "image": image,
        "numNodes": req.nodes,
        "resourcesPerNode": container["resources"],
    }
    if command is not None:
        trainer["command"] = command
    env = efa_env(pool)
    if env:
        trainer["env"] = env
    return [{
        "apiVersion": TRAINER_API_VERSION,
        "kind": "TrainJob",
        "metadata": _meta(name, namespace, object_labels(team, pool, req.priority)),
        "spec": {
            "suspend": True,
            "runtimeRef": {"name": TORCH_RUNTIME, "apiGroup": TRAINER_API_VERSION.split("/")[0],
                           "kind": "ClusterTrainingRuntime"},
            "trainer": trainer,
            "runtimePatches": [{
                "manager": RUNTIME_PATCH_MANAGER,
                "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [{
                    "name": TORCH_RUNTIME_JOB,
                    "template": {"spec": {"template": {"metadata": {"labels": pod.labels,
                                                                    "annotations": pod.annotations},
                                                       "spec": patch_spec}}},
                }]}}},
            }],
        },
    }]


def _cpu_pod(name: str, image: str, cpu_millis: int, memory_mib: int, labels: dict[str, str],
             uid: int, **extra: Any) -> dict[str, Any]:
    """A GPU-less pod template: no GPU toleration, no pool selector (Kueue gives it the cpu-only flavor)."""
    quantities = {"cpu": cpu_quantity(cpu_millis), "memory": memory_quantity(memory_mib)}
    return {
        "metadata": {"labels": labels},
        "spec": {
            "containers": [{
                "name": name, "image": image,
                "resources": {"limits": dict(quantities), "requests": dict(quantities)},
                "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
                                    "runAsNonRoot": True, "runAsUser": uid},
                **extra,
            }],
            "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
        },
    }


def _rayjob(plan: Plan, req: JobRequest, team: TeamPlan, pool: PoolPlan, namespace: str, name: str) -> list[dict[str, Any]]:
    cpu = RAY_HEAD_CPU_MILLIS + RAY_SUBMITTER_CPU_MILLIS
    memory = RAY_HEAD_MEMORY_MIB + RAY_SUBMITTER_MEMORY_MIB
    if cpu > team.cpu_only_cpu_millis or memory > team.cpu_only_memory_mib:
        raise JobError(
            f"a Ray head ({cpu_quantity(RAY_HEAD_CPU_MILLIS)} CPU, {memory_quantity(RAY_HEAD_MEMORY_MIB)}) and its "
            f"submitter ({cpu_quantity(RAY_SUBMITTER_CPU_MILLIS)} CPU, {memory_quantity(RAY_SUBMITTER_MEMORY_MIB)}) run "
            f"without GPUs, within team {team.name!r}'s CPU-only allowance of {cpu_quantity(team.cpu_only_cpu_millis)} "
            f"CPU and {memory_quantity(team.cpu_only_memory_mib)}: raise teams[].limits.cpu and memoryGiB")
    head_image = req.image or RAY_IMAGE
    worker_image = req.image or RAY_GPU_IMAGE
    for image in {head_image, worker_image}:
        problem = images.image_problem(image, team.allowed_registries, plan.require_image_digests)
        if problem:
            raise JobError(problem + ("" if req.image else " (pass --image)"))
    seconds = duration_seconds(req.duration)
    pod_labels = {cv.TEAM: team.name, cv.COST_CENTER: team.cost_center, cv.QUEUE_NAME_LABEL: cv.LOCAL_QUEUE_NAME}
    # KubeRay supplies the ray start command of head and workers (ray-operator controllers/ray/common/pod.go).
    worker = gpu_pod(plan, team, pool, namespace, req, worker_image, None, efa_env(pool), run_as_user=RAY_UID)
    worker.container["name"] = "ray-worker"
    del worker.spec["restartPolicy"]  # KubeRay's to decide for its pods
    head = _cpu_pod("ray-head", head_image, RAY_HEAD_CPU_MILLIS, RAY_HEAD_MEMORY_MIB, pod_labels, RAY_UID, ports=[
        {"containerPort": 6379, "name": "gcs-server"},
        {"containerPort": cv.RAY_DASHBOARD_PORT, "name": "dashboard"},
        {"containerPort": cv.RAY_CLIENT_PORT, "name": "client"},
    ])
    head["metadata"]["annotations"] = {cv.SIM_DURATION_ANNOTATION: f"{seconds}s"}
    # The submitter's command KubeRay supplies (ray job submit ... -- <entrypoint>) when none is given
    # (config/samples/ray-job.sample.yaml, submitterPodTemplate); restartPolicy Never as its Job requires.
    submitter = _cpu_pod("ray-job-submitter", head_image, RAY_SUBMITTER_CPU_MILLIS, RAY_SUBMITTER_MEMORY_MIB,
                         pod_labels, RAY_UID)
    submitter["spec"]["restartPolicy"] = "Never"
    submitter["metadata"]["annotations"] = {cv.SIM_DURATION_ANNOTATION: f"{seconds}s"}
    entrypoint = ("python -c \"import ray; ray.init(); print(ray.cluster_resources())\""
                  if req.image is None else "python main.py")
    return [{
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": _meta(name, namespace, object_labels(team, pool, req.priority)),
        "spec": {
            "suspend": True,
            "entrypoint": entrypoint,
            # Kueue requires it of the RayJobs it manages (rayjob_webhook.go: "a kueue managed job should delete
            # the cluster after finishing"); with the TTL the operator deletes the cluster, then the RayJob.
            "shutdownAfterJobFinishes": True,
            "ttlSecondsAfterFinished": plan.job_ttl_seconds,
            "submitterPodTemplate": submitter,
            "rayClusterSpec": {
                "rayVersion": RAY_VERSION,
                # No GPU on the head: Ray schedules no GPU task there, and the head needs no GPU node.
                "headGroupSpec": {"rayStartParams": {"num-gpus": "0", "dashboard-host": "0.0.0.0"},
                                  "template": head},
                "workerGroupSpecs": [{
                    "groupName": RAY_WORKER_GROUP,
                    "replicas": req.nodes, "minReplicas": req.nodes, "maxReplicas": req.nodes,
                    "rayStartParams": {},
                    "template": worker.template(),
                }],
            },
        },
    }]


def _lws_request(plan: Plan, req: JobRequest) -> JobRequest:
    """Inference pools only; `production-inference` unless another granted priority is asked for."""
    from dataclasses import replace

    teams = {t.name: t for t in plan.teams}
    team = teams.get(req.team)
    if team is not None and req.pool in team.pool_names:
        pool = plan.pools_by_name[req.pool]
        if pool.workload != "inference":
            serving = [p for p in team.pool_names if plan.pools_by_name[p].workload == "inference"]
            raise JobError(f"pool {pool.name!r} is a {pool.workload} pool; a LeaderWorkerSet serves on inference "
                           f"pools, team {team.name!r}'s: {', '.join(serving) or 'none'}")
        if req.priority is None:
            if PRODUCTION_INFERENCE not in team.allowed_priorities:
                raise JobError(f"priority {PRODUCTION_INFERENCE!r} (the serving default) is not granted to team "
                               f"{team.name!r}; pass --priority, granted: {', '.join(team.allowed_priorities) or 'none'}")
            req = replace(req, priority=PRODUCTION_INFERENCE)
    if req.replicas < 1:
        raise JobError(f"replicas {req.replicas} must be at least 1")
    return req


def _lws(plan: Plan, req: JobRequest, team: TeamPlan, pool: PoolPlan, namespace: str, name: str) -> list[dict[str, Any]]:
    if req.replicas * req.nodes * req.gpus > next(q.reach.units for q in team.quotas if q.pool == pool.name):
        reach = next(q.reach for q in team.quotas if q.pool == pool.name)
        raise JobError(f"{req.replicas} replicas x {req.nodes} pods x {req.gpus} = "
                       f"{req.replicas * req.nodes * req.gpus} {pool.resource_name} can never be admitted: team "
                       f"{team.name!r} can hold at most {reach.units} on pool {pool.name!r}, {reach.arithmetic()}")
    image, command = _stand_in(req)
    if command is not None:
        command = ["sleep", "infinity"]  # a server runs until deleted
    probe = {"httpGet": {"path": HEALTH_PATH, "port": SERVING_PORT}, "periodSeconds": 10, "failureThreshold": 3}

    def serving_pod() -> dict[str, Any]:
        pod = gpu_pod(plan, team, pool, namespace, req, image, command, runs_to_completion=False)
        pod.container["ports"] = [{"containerPort": SERVING_PORT, "name": "http"}]
        pod.container["readinessProbe"] = dict(probe)
        pod.spec["restartPolicy"] = "Always"
        # A server has no end: no duration for the simulated nodes either.
        pod.annotations.pop(cv.SIM_DURATION_ANNOTATION, None)
        return pod.template()

    labels = object_labels(team, pool, req.priority)
    meta_labels = {cv.TEAM: team.name, cv.MANAGED_BY: cv.MANAGED_BY_VALUE}
    return [
        {
            "apiVersion": "leaderworkerset.x-k8s.io/v1",
            "kind": "LeaderWorkerSet",
            "metadata": _meta(name, namespace, labels),
            "spec": {
                "replicas": req.replicas,
                "leaderWorkerTemplate": {
                    "size": req.nodes,
                    # A group serves only whole: a lost pod recreates its group (lws v0.7.0 api
                    # leaderworkerset_types.go RestartPolicy RecreateGroupOnPodRestart).
                    "restartPolicy": "RecreateGroupOnPodRestart",
                    "leaderTemplate": serving_pod(),
                    "workerTemplate": serving_pod(),
                },
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": _meta(name, namespace, meta_labels),
            "spec": {"selector": {LWS_NAME_LABEL: name, LWS_WORKER_INDEX_LABEL: "0"},
                     "ports": [{"name": "http", "port": SERVING_PORT, "targetPort": SERVING_PORT}]},
        },
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": _meta(name, namespace, meta_labels),
            # One pod at a time in voluntary disruptions (drains, consolidation): at most one group restarts.
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {LWS_NAME_LABEL: name}}},
        },
    ]
