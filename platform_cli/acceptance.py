"""`python -m platform_cli acceptance`: the design guide's acceptance test as one command (docs/acceptance.md).

Every argument is checked against the stack's plan before anything reaches the cluster (the team, the pool it
has quota on, what the team can ever hold there, the image allowlist: gpu_platform/jobs.check, the same rules as
`job`), so bad input creates nothing. Then one JobSet (the platform's template, `job --kind jobset`) is created as
the team, and each of the seven steps (gpu_platform/acceptance.STEPS) is run by a StepRunner against a
ClusterClient (kubectl; a test gives a fake one). A step whose live part this cluster cannot run yet says so and
is skipped, which keeps the verdict from passing: exit 0 only when all seven pass, 1 otherwise, 2 for bad input.
The job and its ConfigMap are removed at the end unless --keep.

With --image, the pods run the acceptance workload (workloads/acceptance/train.py) against the team's data path
(platform_cli/acceptance_data.py: its bucket on EKS, the local cluster's object store beside the real node), and
steps 2 to 5 are read from their logs while platform_cli/acceptance_run.py drives the run (a pod deleted at the
first checkpoint, the recovery timed); step 7 prices what they did. Step 6 is the plug point left.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence

from gpu_platform import acceptance as acc, conventions as cv, images, useful_work as uw
from gpu_platform.errors import InputError
from gpu_platform.jobs import JobError, JobRequest, NeverAdmitted, duration_seconds
from gpu_platform.plan import Plan, PoolPlan, TeamPlan
from gpu_platform.stack_files import load_plan
from gpu_platform.workload_templates import template
from localcluster import objectstore

from .acceptance_data import DataPath, credentials_secret, data_path, local_state_dir, pod_env, remove_run_objects
from .acceptance_run import Observed, WorkloadRun

REPOSITORY = Path(__file__).resolve().parents[1]
# The program the pods run, shipped as a ConfigMap and mounted read-only where the container runs it from.
WORKLOAD = REPOSITORY / "workloads" / "acceptance" / "train.py"
WORKLOAD_FILE = "train.py"
WORKLOAD_MOUNT = "/opt/gpu-platform/acceptance"
WORKLOAD_VOLUME = "acceptance-workload"
# Who the job is created as: this user in the team's group, by impersonation (as tests/integration checks tenant
# RBAC), so the team's RBAC, quota and admission policies decide, not the caller's own rights.
ACCEPTANCE_USER = "gpu-platform-acceptance"
JSON_SCHEMA = f"{cv.PREFIX}/acceptance/v1"
FORMATS = ("table", "markdown", "json")
POLL_S = 2.0
PROGRESS_EVERY_S = 10.0
KUBECTL_TIMEOUT_S = 60
WORKLOAD_RESOURCE = "workloads.kueue.x-k8s.io"
JOBSET_RESOURCE = "jobsets.jobset.x-k8s.io"

# Why the steps whose live part is not built are skipped (StepResult.not_available adds "not available on this
# cluster: "). Each is a plug point: a runner that reads the pods' events (acc.events_from_log) replaces it.
WHY_PROMETHEUS = "the live part of this step (reading the job's series from Prometheus) is not built yet"
WHY_WORK = "it prices the work step 4 reports and the pods' run times, which no step on this cluster produces yet"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--stack", required=True, help="the stack the cluster runs (its plan names teams, pools, prices)")
    p.add_argument("--team", required=True, help="the team the job is submitted as (teams[].name)")
    p.add_argument("--pool", required=True, help="a pool the team has a quota entry for (teams[].quotas)")
    p.add_argument("--nodes", type=int, default=2, help="pods of the job, one per node (default 2: the all-reduce "
                                                         "of step 3 needs two or more)")
    p.add_argument("--gpus", type=int, help="units per pod, in the pool's units (default: the most that fit "
                                            "--nodes pods in the team's reach on the pool, up to a whole node)")
    p.add_argument("--image", help="the production image: Python 3 with torch and boto3, which runs the acceptance "
                                   "workload (default: the job template's stand-in image, which runs step 1 only)")
    p.add_argument("--window", default="10m", help="the training window of step 4 (90s, 10m, 2h; at least "
                                                   f"{acc.MIN_WINDOW_S}s; default 10m)")
    p.add_argument("--baseline", help="the price step 7 compares against: gpu-hour=USD (a GPU rental per GPU-hour) "
                                      "or api=USD/[N[k|M]-]UNIT (an API per N tokens or samples, e.g. "
                                      "api=0.002/1k-tokens)")
    p.add_argument("--format", choices=FORMATS, default="table",
                   help="table: for a terminal; markdown: for a PR comment or a page; json: every figure, for scripts")
    p.add_argument("--out", metavar="DIR", help="also write acceptance.json and acceptance.md there")
    p.add_argument("--keep", action="store_true", help="leave the job and its ConfigMap on the cluster")
    p.add_argument("--kubeconfig", help="the cluster's kubeconfig (default $KUBECONFIG, else the local cluster's)")


# ---------------------------------------------------------------------------------------------------
# The request, checked against the plan


@dataclass(frozen=True)
class Request:
    label: str
    plan: Plan
    team: TeamPlan
    pool: PoolPlan
    namespace: str
    name: str
    nodes: int
    gpus: int
    image: str | None
    window_s: int
    baseline: acc.Baseline | None
    data: DataPath | None
    objects: tuple[dict[str, Any], ...]
    keep: bool = False

    @property
    def bucket(self) -> str | None:
        return self.data.bucket if self.data is not None else None

    @property
    def runs_workload(self) -> bool:
        return self.image is not None

    @property
    def submitted_as(self) -> tuple[str, tuple[str, ...]] | None:
        """(user, groups) to impersonate: the team's member group, else its admin group; None: the caller's own."""
        groups = self.team.member_groups or self.team.admin_groups
        return (ACCEPTANCE_USER, (groups[0],)) if groups else None


def stack_label(stack: str) -> str:
    return Path(stack).stem.removeprefix("Pulumi.") if "/" in stack else stack


def default_gpus(pool: PoolPlan, reach_units: int, nodes: int) -> int:
    """Units per pod when --gpus is not given: the most that fit `nodes` pods in what the team can ever hold on the
    pool, at most a whole node (and one replica on a time-sliced pool: the device plugin's limit per container)."""
    most = cv.SHARED_GPU_MAX_PER_CONTAINER if pool.resource_name == cv.SHARED_GPU_RESOURCE else pool.units_per_node
    return min(most, reach_units // max(nodes, 1))


def validate(plan: Plan, args: argparse.Namespace, store: objectstore.Store | None = None) -> Request:
    """The request, or InputError naming the flag and the valid choices; nothing is created before this returns.
    STORE: the local cluster's object store, the data path of a stack without one (acceptance_data.data_path)."""
    label = stack_label(args.stack)
    teams = {t.name: t for t in plan.teams}
    team = teams.get(args.team)
    if team is None:
        raise InputError(f"--team {args.team!r}: not a team of stack {label}; teams: {', '.join(teams) or 'none'}")
    quotas = {q.pool: q for q in team.quotas}
    if args.pool not in quotas:
        raise InputError(f"--pool {args.pool!r}: team {team.name!r} has no quota there; its pools: "
                         f"{', '.join(quotas) or 'none'}")
    pool, reach = plan.pools_by_name[args.pool], quotas[args.pool].reach
    if args.nodes < 1:
        raise InputError(f"--nodes {args.nodes}: at least 1 (2 or more for the all-reduce of step 3)")
    gpus = args.gpus if args.gpus is not None else default_gpus(pool, reach.units, args.nodes)
    if reach.units < 1:
        raise InputError(f"--pool {pool.name!r}: team {team.name!r} can hold no {pool.resource_name} there "
                         f"({reach.arithmetic()}); its pools: {', '.join(quotas)}")
    if gpus < 1:
        raise InputError(f"--nodes {args.nodes}: team {team.name!r} can hold at most {reach.units} {pool.resource_name} "
                         f"on pool {pool.name!r} ({reach.arithmetic()}), fewer than one per pod; "
                         f"--nodes 1..{reach.units} fit")
    try:
        window_s = duration_seconds(args.window)
    except JobError:
        raise InputError(f"--window {args.window!r}: not a positive duration such as 90s, 10m or 2h") from None
    if window_s < acc.MIN_WINDOW_S:
        raise InputError(f"--window {args.window!r}: at least {acc.MIN_WINDOW_S}s (step 5 needs a checkpoint, a pod "
                         "deleted after it and training resumed within the window)")
    if args.image is not None:
        problem = images.image_problem(args.image, team.allowed_registries, plan.require_image_digests)
        if problem:
            raise InputError(f"--image {args.image!r}: {problem}")
    data = data_path(plan, team.name, store)
    if args.image is not None and data is None:
        raise InputError(f"--image {args.image!r}: the acceptance workload reads its data and writes its checkpoints on "
                         f"the team's data path, which stack {label} does not have for team {team.name!r} (data.enabled, "
                         "docs/data-path.md; on the local cluster: python -m localcluster.objectstore start); without "
                         "--image only step 1 runs, with the stand-in image")
    baseline = acc.parse_baseline(args.baseline) if args.baseline is not None else None
    if args.out is not None and Path(args.out).exists() and not Path(args.out).is_dir():
        raise InputError(f"--out {args.out!r}: exists and is not a directory")
    name = f"acceptance-{secrets.token_hex(3)}"
    req = JobRequest(team=team.name, pool=pool.name, gpus=gpus, nodes=args.nodes, image=args.image,
                     duration=f"{window_s}s", name=name, kind="jobset")
    try:
        objects = template(plan, req)
    except NeverAdmitted as err:
        raise InputError(f"--nodes {args.nodes} --gpus {gpus}: {err.message('--nodes {pods} --gpus {units}')}") from None
    except JobError as err:
        flag = "--gpus" if str(err).startswith("gpus ") else "--stack" if str(err).startswith("kind ") else "--team/--pool"
        raise InputError(f"{flag}: {err}") from None
    namespace = objects[0]["metadata"]["namespace"]
    request = Request(label, plan, team, pool, namespace, name, args.nodes, gpus, args.image, window_s, baseline, data,
                      tuple(objects), keep=args.keep)
    return replace(request, objects=tuple(with_workload(request))) if request.runs_workload else request


def with_workload(request: Request) -> list[dict[str, Any]]:
    """The JobSet running the acceptance workload from a ConfigMap of the team's namespace, and that ConfigMap
    (first, so the pods find it)."""
    jobset = json.loads(json.dumps(request.objects[0]))
    pod_spec = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    container = pod_spec["containers"][0]
    config_map = f"{request.name}-workload"
    container["command"] = ["python3", f"{WORKLOAD_MOUNT}/{WORKLOAD_FILE}", "run"]
    assert request.data is not None  # validate: no --image without a data path
    container["env"] = [*container.get("env", []), *pod_env(request.data, request.name, request.window_s)]
    container["volumeMounts"] = [*container.get("volumeMounts", []),
                                 {"name": WORKLOAD_VOLUME, "mountPath": WORKLOAD_MOUNT, "readOnly": True}]
    pod_spec["volumes"] = [*pod_spec.get("volumes", []), {"name": WORKLOAD_VOLUME, "configMap": {"name": config_map}}]
    cm = {"apiVersion": "v1", "kind": "ConfigMap",
          "metadata": {"name": config_map, "namespace": request.namespace,
                       "labels": {cv.TEAM: request.team.name, cv.MANAGED_BY: cv.MANAGED_BY_VALUE}},
          "data": {WORKLOAD_FILE: WORKLOAD.read_text()}}
    return [cm, jobset, *request.objects[1:]]


# ---------------------------------------------------------------------------------------------------
# The cluster


class ClusterError(RuntimeError):
    """The cluster refused or could not be reached: the message is its own (kubectl's stderr)."""


class ClusterClient(Protocol):
    def create(self, objects: Sequence[dict[str, Any]], as_user: tuple[str, tuple[str, ...]] | None) -> None: ...

    def get(self, resource: str, namespace: str) -> list[dict[str, Any]]: ...

    def delete(self, objects: Sequence[dict[str, Any]]) -> None: ...

    def logs(self, namespace: str, pod: str) -> str: ...


class WorkloadClient(ClusterClient, Protocol):
    """What steps 2 to 5 also need: the job's pods, one deleted, the JobSet's status, the data path's Secret."""

    def pods(self, namespace: str, selector: str) -> list[dict[str, Any]]: ...

    def delete_pod(self, namespace: str, pod: str) -> None: ...

    def get_object(self, resource: str, namespace: str, name: str) -> dict[str, Any] | None: ...

    def ensure(self, obj: dict[str, Any]) -> bool: ...


class Kubectl:
    """The ClusterClient of a real cluster: kubectl, so any kubeconfig's authentication works (EKS's exec plugin
    included), and impersonation is kubectl's own --as/--as-group."""

    def __init__(self, kubeconfig: Path | None):
        self.kubeconfig = kubeconfig

    def _run(self, *args: str, stdin: str | None = None) -> str:
        exe = shutil.which("kubectl")
        if exe is None:
            raise ClusterError("kubectl is not on PATH")
        cmd = [exe, *([f"--kubeconfig={self.kubeconfig}"] if self.kubeconfig else []), *args]
        try:
            done = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=KUBECTL_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise ClusterError(f"kubectl {' '.join(args[:2])} did not answer in {KUBECTL_TIMEOUT_S}s") from None
        if done.returncode != 0:
            raise ClusterError(done.stderr.strip() or f"kubectl {' '.join(args[:2])} exited {done.returncode}")
        return done.stdout

    def create(self, objects: Sequence[dict[str, Any]], as_user: tuple[str, tuple[str, ...]] | None) -> None:
        who = [] if as_user is None else ["--as", as_user[0], *[a for g in as_user[1] for a in ("--as-group", g)]]
        self._run("create", "-f", "-", *who, stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)}))

    def get(self, resource: str, namespace: str) -> list[dict[str, Any]]:
        return json.loads(self._run("get", resource, "-n", namespace, "-o", "json")).get("items", [])

    def delete(self, objects: Sequence[dict[str, Any]]) -> None:
        self._run("delete", "--ignore-not-found", "--wait=false", "-f", "-",
                  stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)}))

    def logs(self, namespace: str, pod: str) -> str:
        return self._run("logs", "-n", namespace, pod)

    def pods(self, namespace: str, selector: str) -> list[dict[str, Any]]:
        return json.loads(self._run("get", "pods", "-n", namespace, "-l", selector, "-o", "json")).get("items", [])

    def delete_pod(self, namespace: str, pod: str) -> None:
        self._run("delete", "pod", "-n", namespace, pod, "--wait=false")

    def get_object(self, resource: str, namespace: str, name: str) -> dict[str, Any] | None:
        out = self._run("get", resource, "-n", namespace, name, "--ignore-not-found", "-o", "json")
        return json.loads(out) if out.strip() else None

    def ensure(self, obj: dict[str, Any]) -> bool:
        """Create OBJ unless an object of its kind and name exists (which is kept as it is); whether it created."""
        meta = obj["metadata"]
        if self.get_object(obj["kind"].lower(), meta["namespace"], meta["name"]) is not None:
            return False
        self._run("create", "-f", "-", stdin=json.dumps(obj))
        return True


def kubeconfig_of(flag: str | None) -> Path | None:
    """--kubeconfig, else $KUBECONFIG (kubectl reads it), else the live local cluster's admin kubeconfig."""
    if flag:
        return Path(flag)
    state = Path(os.environ.get("LOCAL_CLUSTER_DIR") or REPOSITORY / ".local" / "cluster")
    local = state / "admin.kubeconfig"
    return None if os.environ.get("KUBECONFIG") or not local.exists() else local


# ---------------------------------------------------------------------------------------------------
# Steps


@dataclass
class RunState:
    """What the steps share: the request, the cluster, and what earlier steps found for later ones."""

    request: Request
    client: ClusterClient
    progress: Callable[[str], None]
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    admission_timeout_s: float = acc.ADMISSION_TIMEOUT_S
    submitted: bool = False
    workload: dict[str, Any] | None = None
    # The workload's run (steps 2 to 5, driven once by the first of them), and what step 7 prices.
    observed: Observed | None = None
    runs: list[acc.Run] | None = None
    work: acc.Work | None = None
    results: dict[int, acc.StepResult] = field(default_factory=dict)


class StepRunner(Protocol):
    number: int

    def run(self, state: RunState) -> acc.StepResult: ...


def _time(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value.replace("Z", "+00:00")) if value else None


def _condition(workload: dict[str, Any], kind: str) -> dict[str, Any]:
    return next((c for c in workload.get("status", {}).get("conditions") or [] if c.get("type") == kind), {})


def owned_workload(workloads: Sequence[dict[str, Any]], kind: str, name: str) -> dict[str, Any] | None:
    """The Kueue Workload of the object `kind`/`name`: the one it owns (Kueue's job reconciler makes it with an
    owner reference to the job)."""
    return next((w for w in workloads for o in w.get("metadata", {}).get("ownerReferences") or []
                 if o.get("kind") == kind and o.get("name") == name), None)


def queue_waits(workload: dict[str, Any]) -> tuple[int | None, int | None]:
    """Seconds from the Workload's creation to QuotaReserved and to Admitted (True), as Kueue's wait-time metrics
    count them for a first admission (kueue v0.19.2 pkg/workload/workload.go QueuedWaitTime: from creation, or from
    the Requeued condition after an eviction); the API's timestamps have whole seconds."""
    created = _time(workload.get("metadata", {}).get("creationTimestamp"))
    out: list[int | None] = []
    for kind in ("QuotaReserved", "Admitted"):
        c = _condition(workload, kind)
        at = _time(c.get("lastTransitionTime")) if c.get("status") == "True" else None
        out.append(int((at - created).total_seconds()) if at and created else None)
    return out[0], out[1]


def admission_problem(workload: dict[str, Any], team: TeamPlan, pool: PoolPlan) -> tuple[str, str] | None:
    """(expected, seen) when the Workload is not queued, or not given quota, where the platform puts the team's work
    on the pool: its LocalQueue, its ClusterQueue, the pool's flavor for the GPU resource; None when nothing is wrong
    so far (before QuotaReserved only the queue can be judged)."""
    queue = workload.get("spec", {}).get("queueName")
    if queue != cv.LOCAL_QUEUE_NAME:
        return f"queued in the team's LocalQueue {cv.LOCAL_QUEUE_NAME!r}", f"queueName {queue!r}"
    admission = workload.get("status", {}).get("admission") or {}
    if _condition(workload, "QuotaReserved").get("status") != "True":
        return None  # not yet reserved: nothing to judge
    cq = admission.get("clusterQueue")
    if cq != team.cluster_queue:
        return f"quota reserved in team {team.name!r}'s ClusterQueue {team.cluster_queue!r}", f"ClusterQueue {cq!r}"
    flavors = {a.get("flavors", {}).get(pool.resource_name) for a in admission.get("podSetAssignments") or []}
    flavors.discard(None)
    if flavors != {pool.flavor}:
        return (f"{pool.resource_name} on pool {pool.name!r}'s flavor {pool.flavor!r}",
                f"flavors {sorted(str(f) for f in flavors) or 'none'}")
    return None


class SubmitQueuedJob:
    """Step 1: create the JobSet as the team, wait for Kueue to admit it, and read the queue wait."""

    number = 1

    def run(self, state: RunState) -> acc.StepResult:
        r = state.request
        who = r.submitted_as
        who_text = f"{who[0]} in group {who[1][0]}" if who else "the kubeconfig's own user"
        submitted_as = acc.Figure("submitted_as", who_text)
        secret = credentials_secret(r.data, r.namespace, r.team.name) if r.runs_workload and r.data else None
        if secret is not None:
            try:
                if state.client.ensure(secret):  # type: ignore[attr-defined]
                    state.progress(f"step 1: made Secret {r.namespace}/{secret['metadata']['name']} with team "
                                   f"{r.team.name}'s keys to the local object store")
            except ClusterError as err:
                return acc.StepResult.failed(1, f"the team's data path keys in Secret {secret['metadata']['name']}",
                                             str(err).splitlines()[0] if str(err) else "refused", submitted_as)
        try:
            state.client.create(r.objects, who)
        except ClusterError as err:
            return acc.StepResult.failed(1, f"the JobSet accepted when created as team {r.team.name!r} ({who_text})",
                                         str(err).splitlines()[0] if str(err) else "refused", submitted_as)
        state.submitted = True
        state.progress(f"step 1: created JobSet {r.namespace}/{r.name} as {who_text}; waiting for Kueue to admit it")
        start = last = state.clock()
        while True:
            workload = owned_workload(state.client.get(WORKLOAD_RESOURCE, r.namespace), "JobSet", r.name)
            if workload is not None:
                state.workload = workload
                problem = admission_problem(workload, r.team, r.pool)
                if problem is not None:
                    return acc.StepResult.failed(1, problem[0], problem[1], submitted_as)
                if _condition(workload, "Admitted").get("status") == "True":
                    reserved, admitted = queue_waits(workload)
                    admission = workload.get("status", {}).get("admission") or {}
                    return acc.StepResult.passed(
                        1, acc.Figure("quota_reserved_wait", reserved, "s"), acc.Figure("admitted_wait", admitted, "s"),
                        acc.Figure("cluster_queue", admission.get("clusterQueue")), acc.Figure("flavor", r.pool.flavor),
                        submitted_as)
                if _condition(workload, "Finished").get("status") == "True":
                    finished = _condition(workload, "Finished")
                    return acc.StepResult.failed(1, "Admitted", f"Finished before admission: {finished.get('reason')}: "
                                                                f"{finished.get('message')}", submitted_as)
            now = state.clock()
            if now - start >= state.admission_timeout_s:
                return acc.StepResult.failed(1, f"Admitted within {state.admission_timeout_s:g} s",
                                             f"not admitted after {now - start:.0f} s: {waiting_for(workload)}",
                                             submitted_as)
            if now - last >= PROGRESS_EVERY_S:
                state.progress(f"step 1: {now - start:.0f}s, {waiting_for(workload)}")
                last = now
            state.sleep(POLL_S)


def waiting_for(workload: dict[str, Any] | None) -> str:
    """What a Workload not yet admitted waits for, in Kueue's words (its QuotaReserved condition)."""
    if workload is None:
        return "no Workload yet (Kueue has not seen the JobSet: is its jobset integration on?)"
    c = _condition(workload, "QuotaReserved")
    if not c:
        return "Workload created, not yet considered"
    return f"QuotaReserved {c.get('status')} ({c.get('reason')}): {c.get('message')}"


@dataclass(frozen=True)
class NotYetLive:
    """A step whose live part is not built: skipped, saying why (the plug point for its runner)."""

    number: int
    why: str

    def run(self, state: RunState) -> acc.StepResult:
        return acc.StepResult.not_available(self.number, self.why)


class WorkloadStep:
    """Steps 2 to 5 from the workload's run, which the first of them drives (acceptance_run.WorkloadRun) and the
    others read; step 7's runs and work are filled from it."""

    def __init__(self, number: int):
        self.number = number

    def run(self, state: RunState) -> acc.StepResult:
        r = state.request
        if state.observed is None:
            state.observed = WorkloadRun(state.client, r.namespace, r.name, r.nodes, r.window_s,  # type: ignore[arg-type]
                                         state.progress, state.clock, state.sleep).run()
            gpus = r.gpus * r.pool.gpus_per_node / r.pool.units_per_node
            state.runs, state.work = state.observed.runs(gpus), state.observed.work()
        seen = state.observed
        first, last = seen.events(0), seen.events(seen.last_attempt)
        if self.number == 2:
            if not first and seen.problem:
                return acc.StepResult.failed(2, f"a data event from each of {r.nodes} pods", seen.problem)
            return acc.evaluate_data_pull(first, r.nodes)
        if self.number == 3:
            result = acc.evaluate_allreduce_run(first, r.nodes, acc.busbw_expectation(r.pool))
            if result.status == acc.FAILED and not acc.of_kind(first, "allreduce") and seen.problem:
                return acc.StepResult.failed(3, result.expected or "", f"{result.seen}; {seen.problem}", *result.figures)
            return result
        if self.number == 4:
            if (stopped := acc.stopped_before(4, first)) is not None:
                return stopped
            result = acc.evaluate_training(last, r.nodes, r.window_s)
            if result.status == acc.FAILED and seen.problem:
                return acc.StepResult.failed(4, result.expected or "", f"{result.seen}; {seen.problem}", *result.figures)
            return result
        if (stopped := acc.stopped_before(5, first)) is not None:
            return stopped
        return acc.evaluate_recovery(seen.recovery(), r.nodes)


class WithoutWorkload:
    """Steps 2 to 5 when the pods run the stand-in image (no --image): nothing in them produces their figures."""

    def __init__(self, number: int):
        self.number = number

    def run(self, state: RunState) -> acc.StepResult:
        return acc.StepResult.skipped(self.number, "no --image: the stand-in image does not run the acceptance workload "
                                                   "(pass the production image: Python 3 with torch and boto3)")


class UsefulWork:
    """Step 7: the run's own figures priced against --baseline (gpu_platform/acceptance.evaluate_useful_work)."""

    number = 7

    def run(self, state: RunState) -> acc.StepResult:
        r = state.request
        if r.baseline is None or state.runs is None or state.work is None:
            if r.baseline is not None:
                return acc.StepResult.not_available(7, WHY_WORK)
            return acc.evaluate_useful_work(None, [], 0.0, acc.Work(0, 0))
        price = uw.usd_per_gpu_hour(r.pool.usd_per_node_hour, r.pool.gpus_per_node)
        return acc.evaluate_useful_work(r.baseline, state.runs, price, state.work)


def runners(request: Request) -> list[StepRunner]:
    """One runner per step, in order."""
    middle: list[StepRunner] = ([WorkloadStep(n) for n in (2, 3, 4, 5)] if request.runs_workload
                                else [WithoutWorkload(n) for n in (2, 3, 4, 5)])
    return [SubmitQueuedJob(), *middle, NotYetLive(6, WHY_PROMETHEUS), UsefulWork()]


def run_steps(state: RunState, steps: Sequence[StepRunner]) -> acc.Verdict:
    """Each step in order; once step 1 has not passed there is no admitted job, and the rest say so."""
    for runner in steps:
        spec = acc.STEPS[runner.number - 1]
        if runner.number > 1 and state.results[1].status != acc.PASSED:
            result = acc.StepResult.skipped(runner.number, "step 1 did not pass: there is no admitted job to test")
        else:
            state.progress(f"step {runner.number}/{len(acc.STEPS)} {spec.key}: {spec.title}")
            try:
                result = runner.run(state)
            except ClusterError as err:
                result = acc.StepResult.failed(runner.number, spec.criteria[0], f"the cluster: {err}")
        state.results[runner.number] = result
        state.progress(f"step {runner.number} {spec.key}: {result.status}")
    return acc.verdict(state.results.values())


def clean_up(state: RunState) -> None:
    r = state.request
    if not state.submitted:
        return
    if r.keep:
        kept = ", ".join(f"{o['kind']}/{o['metadata']['name']}" for o in r.objects)
        state.progress(f"kept (--keep): {kept} in namespace {r.namespace}")
        return
    try:
        state.client.delete(list(reversed(r.objects)))
        state.progress(f"removed the job and its objects from namespace {r.namespace}")
    except ClusterError as err:
        state.progress(f"could not remove {r.namespace}/{r.name} (delete it by hand): {err}")
    if r.runs_workload and r.data is not None:
        remove_run_objects(r.data, r.name, state.progress)


# ---------------------------------------------------------------------------------------------------
# Output


def to_json(verdict: acc.Verdict, r: Request) -> dict[str, Any]:
    """The report as JSON, schema gpu-platform.io/acceptance/v1 (docs/acceptance.md, "JSON"): keys are only ever
    added within a version."""
    return {
        "schema": JSON_SCHEMA,
        "stack": r.label, "team": r.team.name, "pool": r.pool.name, "instance_type": r.pool.instance_type,
        "nodes": r.nodes, "units_per_pod": r.gpus, "resource": r.pool.resource_name,
        "image": r.image, "window_s": r.window_s, "baseline": r.baseline.text if r.baseline else None,
        "job": {"kind": "JobSet", "namespace": r.namespace, "name": r.name},
        "passed": verdict.passed, "exit_code": verdict.exit_code,
        "steps": [{
            "number": res.step, "key": res.spec.key, "title": res.spec.title, "status": res.status,
            "figures": [{"name": f.name, "value": f.value, "unit": f.unit} for f in res.figures],
            "expected": res.expected, "seen": res.seen, "reason": res.reason,
        } for res in verdict.results],
        "problems": verdict.problems(),
    }


def _detail(res: acc.StepResult) -> str:
    if res.status == acc.FAILED:
        return f"expected {res.expected}; seen {res.seen}"
    if res.status == acc.SKIPPED:
        return res.reason or ""
    return ""


def text(verdict: acc.Verdict, r: Request, markdown: bool = False) -> str:
    head = (f"acceptance: stack {r.label}, team {r.team.name}, pool {r.pool.name} ({r.pool.instance_type}), "
            f"{r.nodes} pod(s) x {r.gpus} {r.pool.resource_name}, window {r.window_s}s, job {r.namespace}/{r.name}")
    rows = [(str(res.step), res.spec.key, res.status, ", ".join(f"{f.name} {f.text()}" for f in res.figures) or "-",
             _detail(res) or "-") for res in verdict.results]
    header = ("#", "step", "status", "figures", "expected / seen / why")
    if markdown:
        cell = lambda s: s.replace("|", "\\|")  # noqa: E731
        lines = [f"**{head}**", "", "| " + " | ".join(header) + " |", "|" + " --- |" * len(header),
                 *("| " + " | ".join(cell(c) for c in row) + " |" for row in rows), "", f"**{verdict.summary()}**"]
    else:
        widths = [max(len(row[i]) for row in [header, *rows]) for i in range(3)]
        fmt = lambda row: "  ".join(row[i].ljust(widths[i]) for i in range(3)) + "  " + row[3]  # noqa: E731
        lines = [head, "", fmt(header[:4]), *(fmt(row) for row in rows), "", verdict.summary(),
                 *(f"  {p}" for p in verdict.problems())]
    return "\n".join(lines) + "\n"


def stderr_progress(message: str) -> None:
    print(f"acceptance: {message}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace, client: ClusterClient | None = None,
        progress: Callable[[str], None] = stderr_progress) -> int:
    _, plan = load_plan(args.stack, None)
    store = objectstore.load(local_state_dir()) if args.image is not None else None
    request = validate(plan, args, store)
    state = RunState(request, client or Kubectl(kubeconfig_of(args.kubeconfig)), progress)
    try:
        verdict = run_steps(state, runners(request))
    finally:
        clean_up(state)
    if args.format == "json":
        sys.stdout.write(json.dumps(to_json(verdict, request), indent=2) + "\n")
    else:
        sys.stdout.write(text(verdict, request, markdown=args.format == "markdown"))
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "acceptance.json").write_text(json.dumps(to_json(verdict, request), indent=2) + "\n")
        (out / "acceptance.md").write_text(text(verdict, request, markdown=True))
        progress(f"wrote acceptance.json and acceptance.md to {out}")
    return verdict.exit_code
