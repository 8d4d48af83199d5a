"""The acceptance command's request: every argument checked against the stack's plan before anything reaches the
cluster (the team, the pool it has quota on, what the team can ever hold there, the image allowlist:
gpu_platform/jobs.check, the same rules as `job`), the JobSet built from the platform's template, and with
--image the acceptance workload added to it from a ConfigMap, with the team's data path in its environment."""

from __future__ import annotations

import argparse
import json
import secrets
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from gpu_platform import acceptance as acc, conventions as cv, images
from gpu_platform.errors import InputError
from gpu_platform.jobs import JobError, JobRequest, NeverAdmitted, duration_seconds
from gpu_platform.plan import Plan, PoolPlan, TeamPlan
from gpu_platform.workload_templates import template
from localcluster import objectstore

from .acceptance_data import REPOSITORY, DataPath, data_path, pod_env

# The program the pods run, shipped as a ConfigMap and mounted read-only where the container runs it from.
WORKLOAD = REPOSITORY / "workloads" / "acceptance" / "train.py"
WORKLOAD_FILE = "train.py"
WORKLOAD_MOUNT = "/opt/gpu-platform/acceptance"
WORKLOAD_VOLUME = "acceptance-workload"
# Who the job is created as: this user in the team's group, by impersonation (as tests/integration checks tenant
# RBAC), so the team's RBAC, quota and admission policies decide, not the caller's own rights.
ACCEPTANCE_USER = "gpu-platform-acceptance"



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
