"""What each kind of workload is in a replay: the objects it submits, where its pods' templates live, which
controllers it needs, and what "finished" means for it on simulated nodes.

A trace line names its kind (trace.py `kind`, default `job`); the replay submits exactly what
`python -m platform_cli job --kind <kind>` prints (gpu_platform.workload_templates), then sets, in every pod
template of it, the trace job's label (how the replay finds its pods, whatever controller made them), the
compressed run time and outcome, and the compressed toleration of a lost node.

What finishes a run, per kind (docs/what-if.md, "Kinds"):

- job, jobset, trainjob: their pods carry the duration annotation, so KWOK ends them at the run's time; the
  Job (JobSet: its Jobs; TrainJob: the JobSet Trainer makes) completes as on a real cluster, and Kueue marks
  the Workload Finished: the quota is back. A failed run (outcome `failed`) fails its pods: the Job and the
  JobSet fail at once (backoffLimit 0, failurePolicy maxRestarts 0).
- rayjob: cannot finish on simulated nodes. KubeRay asks the Ray head's dashboard (HTTP, port 8265) for the
  Ray job's state, and no Ray runs on a KWOK node, so the RayJob never reaches a terminal state. The replay
  does what tests/live/test_workloads.py does: its pods run until the RayJob is deleted, and the replay deletes
  it when its run is up (its admission, or the moment all its GPU pods ran if it had to wait for nodes, plus
  the compressed duration); the Workload goes with it and the quota is back. Recorded as a success.
- lws: a server has no end (its pods restart). It is deleted the same way at the end of its duration: the
  trace's duration of a serving line is how long it serves.

A trace may not ask `outcome: failed` of a trainjob (Trainer's torch runtime sets no backoffLimit, kubeflow/trainer
v2.2.1 charts/kubeflow-trainer/templates/runtimes/torch-distributed.yaml, so its Job's default of 6 retries a
failed pod: not a failed run), a rayjob or an lws (both end by deletion).
"""

from __future__ import annotations

from typing import Any, Iterator

from gpu_platform import conventions as cv
from gpu_platform import workload_controllers as wc
from gpu_platform.workload_templates import KIND_CONTROLLER, KINDS, TRAINER_API_VERSION

# The object Kueue manages for each kind (its Workload's owner), and its collection's plural.
MANAGED: dict[str, tuple[str, str]] = {
    "job": ("Job", "jobs"),
    "jobset": ("JobSet", "jobsets"),
    "trainjob": ("TrainJob", "trainjobs"),
    "rayjob": ("RayJob", "rayjobs"),
    "lws": ("LeaderWorkerSet", "leaderworkersets"),
}
OWNER_KINDS = frozenset(kind for kind, _ in MANAGED.values())
# Plurals of every object a template makes (for create and for the drain between replays).
PLURALS: dict[str, str] = {**dict(MANAGED.values()), "Service": "services", "PodDisruptionBudget": "poddisruptionbudgets"}
# Every collection a replay may have created objects in (the drain between replays empties them): batch/v1
# Jobs, jobset.x-k8s.io/v1alpha2 JobSets, trainer.kubeflow.org/v1alpha1 TrainJobs, ray.io/v1 RayJobs,
# leaderworkerset.x-k8s.io/v1 LeaderWorkerSets (the versions the templates write), Services and PDBs.
COLLECTIONS: tuple[tuple[str, str], ...] = (
    ("batch/v1", "jobs"), ("jobset.x-k8s.io/v1alpha2", "jobsets"), (TRAINER_API_VERSION, "trainjobs"),
    ("ray.io/v1", "rayjobs"), ("leaderworkerset.x-k8s.io/v1", "leaderworkersets"), ("v1", "services"),
    ("policy/v1", "poddisruptionbudgets"))
# Kinds whose run ends when the replay deletes them (see the module docstring), and kinds that can fail.
ENDS_BY_DELETION = frozenset({"rayjob", "lws"})
CAN_FAIL = frozenset({"job", "jobset"})
# The pod label that ties a pod to its trace job: a pod template label every controller copies onto its pods.
JOB_LABEL = cv.SIM_JOB_LABEL

assert set(MANAGED) == set(KINDS), "a kind of workload_templates.KINDS without a replay"


def problem(kind: str, outcome: str) -> str | None:
    """Why a trace line's kind (with its outcome) cannot be replayed, or None."""
    if kind not in KINDS:
        return f"kind {kind!r}; valid: {', '.join(KINDS)}"
    if outcome == "failed" and kind not in CAN_FAIL:
        why = ("Trainer's torch runtime retries a failed pod (the Job's default backoffLimit)" if kind == "trainjob"
               else "it ends when the replay deletes it")
        return f"outcome 'failed' cannot be replayed for kind {kind!r} ({why}); kinds that can fail: {', '.join(sorted(CAN_FAIL))}"
    return None


def controllers(kinds: set[str]) -> list[str]:
    """The workload controllers (workload_controllers keys) the kinds need, their prerequisites included
    (Trainer runs a TrainJob as a JobSet), in workload_controllers.KEYS order."""
    keys = {KIND_CONTROLLER[k] for k in kinds if k in KIND_CONTROLLER}
    keys |= {r for k in list(keys) for r in wc.CONTROLLERS[k].requires}
    return [k for k in wc.KEYS if k in keys]


def workloads_setting(kinds: set[str]) -> str:
    """LOCAL_CLUSTER_WORKLOADS for a replay of these kinds: their controllers, or "none"."""
    return ",".join(controllers(kinds)) or "none"


def managed(objs: list[dict[str, Any]]) -> dict[str, Any]:
    """The object Kueue manages among a template's objects."""
    return next(o for o in objs if o["kind"] in OWNER_KINDS)


def pod_templates(obj: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every pod template of a managed object, where its kind's API keeps them."""
    spec = obj.get("spec", {})
    kind = obj["kind"]
    if kind == "Job":
        yield spec["template"]
    elif kind == "JobSet":
        for rj in spec["replicatedJobs"]:
            yield rj["template"]["spec"]["template"]
    elif kind == "TrainJob":
        for patch in spec.get("runtimePatches", []):
            for rj in patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]:
                yield rj["template"]["spec"]["template"]
    elif kind == "RayJob":
        cluster = spec["rayClusterSpec"]
        yield cluster["headGroupSpec"]["template"]
        for group in cluster["workerGroupSpecs"]:
            yield group["template"]
        if "submitterPodTemplate" in spec:
            yield spec["submitterPodTemplate"]
    elif kind == "LeaderWorkerSet":
        lwt = spec["leaderWorkerTemplate"]
        yield lwt["leaderTemplate"]
        if "workerTemplate" in lwt:
            yield lwt["workerTemplate"]


def prepare(objs: list[dict[str, Any]], kind: str, name: str, duration: str, outcome: str,
            lost_node_toleration_s: int, ttl_s: int) -> list[dict[str, Any]]:
    """The template's objects as the replay submits them (changed in place, and returned): each pod template
    labelled with the trace job, the compressed run time (`duration`, KWOK's annotation) and outcome on the
    kinds that end by themselves, none on the kinds the replay deletes (their pods run until then), the lost
    node toleration compressed, and the longest TTL admission allows (finished objects stay for the report)."""
    top = managed(objs)
    for template in pod_templates(top):
        meta = template.setdefault("metadata", {})
        meta.setdefault("labels", {})[JOB_LABEL] = name
        annotations = meta.setdefault("annotations", {})
        annotations.pop(cv.SIM_DURATION_ANNOTATION, None)
        if kind not in ENDS_BY_DELETION:
            annotations[cv.SIM_DURATION_ANNOTATION] = duration
            if outcome == "failed":
                annotations[cv.SIM_OUTCOME_ANNOTATION] = cv.SIM_OUTCOME_FAILED
        for toleration in template.get("spec", {}).get("tolerations", []):
            if toleration.get("effect") == "NoExecute" and "tolerationSeconds" in toleration:
                toleration["tolerationSeconds"] = lost_node_toleration_s
    spec = top["spec"]
    if kind == "job":
        if outcome == "failed":
            spec["backoffLimit"] = 0   # one failed run is the trace's failure; Kubernetes would retry it
        spec["ttlSecondsAfterFinished"] = ttl_s
    elif "ttlSecondsAfterFinished" in spec:
        spec["ttlSecondsAfterFinished"] = ttl_s
    return objs


def units_of(pod: dict[str, Any]) -> int:
    """The GPU units a pod asks for (whole GPUs, MIG slices or time-sliced replicas): 0 for a CPU pod."""
    total = 0
    for c in pod.get("spec", {}).get("containers", []):
        resources = c.get("resources", {})
        # Extended resources are asked for in limits (requests, when given, must equal them).
        asked = {**resources.get("requests", {}), **resources.get("limits", {})}
        total += sum(int(float(str(v))) for r, v in asked.items() if cv.is_gpu_resource(r))
    return total
