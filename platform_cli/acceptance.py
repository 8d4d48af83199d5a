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
first checkpoint, the recovery timed); step 6 reads the job's series from the stack's Prometheus and judges whether
the platform attributes each to the job's team, pool, queue and cost center (platform_cli/acceptance_labels.py);
step 7 prices what they did.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Callable, Sequence

from gpu_platform import acceptance as acc
from gpu_platform.stack_files import load_plan
from localcluster import objectstore

from .acceptance_cluster import ClusterClient, ClusterError, Kubectl, WorkloadClient, kubeconfig_of
from .acceptance_data import credentials_secret, local_state_dir, remove_run_objects
from .acceptance_labels import SeriesLabels, prometheus_of
from .acceptance_report import FORMATS, JSON_SCHEMA, text, to_json
from .acceptance_request import (
    ACCEPTANCE_USER, REPOSITORY, WORKLOAD, Request, default_gpus, stack_label, validate, with_workload,
)
from .acceptance_steps import (
    RunState, StepRunner, SubmitQueuedJob, UsefulWork, WithoutWorkload, WorkloadStep, admission_problem, owned_workload,
    queue_waits, runners, waiting_for,
)

# The command's names, wherever each is defined (tests and callers read them as acceptance.X).
__all__ = [
    "ACCEPTANCE_USER", "ClusterClient", "ClusterError", "FORMATS", "JSON_SCHEMA", "Kubectl", "REPOSITORY",
    "Request", "RunState", "SeriesLabels", "StepRunner", "SubmitQueuedJob", "UsefulWork", "WORKLOAD", "WithoutWorkload",
    "WorkloadClient", "WorkloadStep", "add_arguments", "admission_problem", "clean_up", "credentials_secret",
    "default_gpus", "kubeconfig_of", "owned_workload", "queue_waits", "run", "run_steps", "runners", "stack_label",
    "text", "to_json", "validate", "waiting_for", "with_workload",
]


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


def stderr_progress(message: str) -> None:
    print(f"acceptance: {message}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace, client: ClusterClient | None = None,
        progress: Callable[[str], None] = stderr_progress) -> int:
    _, plan = load_plan(args.stack, None)
    store = objectstore.load(local_state_dir()) if args.image is not None else None
    request = validate(plan, args, store)
    prometheus = prometheus_of(progress)
    state = RunState(request, client or Kubectl(kubeconfig_of(args.kubeconfig)), progress)
    try:
        verdict = run_steps(state, runners(request, prometheus))
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
        if state.observed is not None:  # the pods' logs, which the report's figures come from
            for pod in state.observed.pods.values():
                (out / f"{pod.name}.log").write_text(pod.log)
        progress(f"wrote acceptance.json and acceptance.md to {out}")
    return verdict.exit_code
