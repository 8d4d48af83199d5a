"""`python -m platform_cli`: validate | plan | render | check | nodes | job | kueue-config | simulate | report | acceptance | inventory | deployer-policy | plugins | config-reference.

Exit codes: 0 ok, 1 policy violations (check), 2 invalid input (bad config, bad YAML, missing file).
No traceback reaches the user for any bad input: every error names the file or config path.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, Sequence

import yaml

from gpu_platform.errors import InputError, SpecError
from gpu_platform.spec import CONFIG_KEY
from gpu_platform.stack_files import load_plan, platform_value, read_json
from localcluster.signals import EXIT_INTERRUPTED, interrupt_on_sigterm
from simulator.options import add_arguments as add_simulate_arguments

from .acceptance import add_arguments as add_acceptance_arguments
from .plan_report import format_plan
from .plugins import AWS_PACKAGE, KUBERNETES_PACKAGE, plugin_of

EXIT_OK, EXIT_VIOLATIONS, EXIT_INVALID = 0, 1, 2
# Every flag's help is its meaning in docs/cli.md, whose flag tables are generated from this parser
# (`python -m platform_cli config-reference`, platform_cli/config_reference.py).
STACK_HELP = "stack name (Pulumi.<stack>.yaml in the working directory or the repository) or a stack file's path"
FORMAT_HELP = "table: for a terminal; markdown: for a PR comment or a page; json: every figure, for scripts"


# ---------------------------------------------------------------------------------------------------
# commands


def cmd_validate(args: argparse.Namespace) -> int:
    name, plan = load_plan(args.stack, args.file)
    if args.deploy:
        from gpu_platform.spec.placeholders import deploy_problems

        problems = deploy_problems(platform_value(args.stack, args.file))
        if problems:
            raise SpecError(problems)
    gpus = sum(p.capacity_gpus for p in plan.pools)
    warnings = [*plan.warnings, *plan.addons.monitoring.warnings]
    print(
        f"{name}: valid: {len(plan.pools)} pools ({gpus} GPUs at max), {len(plan.teams)} teams, "
        f"{len(plan.cohorts)} cohorts, environment {plan.environment}"
        + (f", {len(warnings)} warning(s)" if warnings else "")
    )
    for w in warnings:
        print(f"warning: {w}")
    return EXIT_OK


def cmd_plan(args: argparse.Namespace) -> int:
    name, plan = load_plan(args.stack, args.file)
    sys.stdout.write(format_plan(plan, args.format, name))
    return EXIT_OK


def _render(stack: str) -> Any:
    from .stack_render import render_stack

    return render_stack(stack)


def cmd_render(args: argparse.Namespace) -> int:
    from harness.render import write

    rendered = _render(args.stack)
    path, count = write(rendered, Path(args.out))
    print(f"{args.stack}: wrote {count} resources to {path} and manifests to {path.parent / 'manifests'}")
    return EXIT_OK


def cmd_check(args: argparse.Namespace) -> int:
    from policies.gpu_policies.offline import check_resources, format_violations

    if args.resources:
        data = read_json(Path(args.resources))
        label = args.resources
    else:
        data = [r.to_json() for r in _render(args.stack).custom]
        label = args.stack
        # What the pack cannot see in the resources (whether the cluster's CNI enforces the NetworkPolicies
        # of an `existing` cluster) the plan says: its warnings come first, and never fail the check.
        checked = load_plan(args.stack, None)[1]
        for w in (*checked.warnings, *checked.addons.monitoring.warnings):
            print(f"warning: {w}")
    violations = check_resources(data)
    sys.stdout.write(format_violations(violations, label))
    return EXIT_VIOLATIONS if any(v.mandatory for v in violations) else EXIT_OK


def cmd_nodes(args: argparse.Namespace) -> int:
    from gpu_platform.nodes import fake_nodes

    _, plan = load_plan(args.stack, None)
    # Every pool at capacity.max: the cluster these go to (kind, a dev cluster) has no autoscaler to add them.
    print(json.dumps(fake_nodes(plan, autoscaled=False), indent=2, sort_keys=True))
    return EXIT_OK


def cmd_job(args: argparse.Namespace) -> int:
    from gpu_platform.jobs import JobError, JobRequest
    from gpu_platform.workload_templates import template

    _, plan = load_plan(args.stack, None)
    req = JobRequest(team=args.team, pool=args.pool, gpus=args.gpus, nodes=args.nodes, priority=args.priority,
                     image=args.image, duration=args.duration, name=args.name, namespace=args.namespace,
                     kind=args.kind, replicas=args.replicas, gpu_busy=args.gpu_busy)
    try:
        objects = template(plan, req)
    except JobError as err:
        raise InputError(str(err)) from None
    doc: Any = objects[0] if len(objects) == 1 else {"apiVersion": "v1", "kind": "List", "items": objects}
    if args.output == "json":
        print(json.dumps(doc, indent=2))
    else:
        sys.stdout.write(yaml.safe_dump(doc, sort_keys=False))
    return EXIT_OK


def cmd_kueue_config(args: argparse.Namespace) -> int:
    from gpu_platform.kueue_config import chart_values, controller_config

    _, plan = load_plan(args.stack, None)
    doc = chart_values(plan) if args.values else controller_config(plan)
    sys.stdout.write(yaml.safe_dump(doc, sort_keys=False))
    return EXIT_OK


def cmd_plugins(args: argparse.Namespace) -> int:
    _, plan = load_plan(args.stack, None)
    packages = [KUBERNETES_PACKAGE] + ([AWS_PACKAGE] if plan.cluster.provider == "eks" else [])
    for package in packages:
        print(" ".join(plugin_of(package)))
    return EXIT_OK


def cmd_simulate(args: argparse.Namespace) -> int:
    from simulator.cli import run

    return run(args)


def cmd_report(args: argparse.Namespace) -> int:
    import os

    from localcluster.prometheus import local_url

    from . import pending_work, usage_report as ur
    from .prometheus_api import Prometheus, PrometheusError, amp_region, stderr_progress

    _, plan = load_plan(args.stack, None)
    state = Path(os.environ.get("LOCAL_CLUSTER_DIR") or Path(__file__).resolve().parents[1] / ".local" / "cluster")
    url = args.prometheus or os.environ.get("GPU_PLATFORM_PROMETHEUS_URL") or local_url(state)
    if not url:
        raise InputError(f"no --prometheus URL, no GPU_PLATFORM_PROMETHEUS_URL, and no local cluster in {state} "
                         "(scripts/local-cluster start runs one with its Prometheus)")
    region = None
    if args.sigv4 is not None:
        region = amp_region(url) if args.sigv4 == "auto" else args.sigv4
        if region is None:
            raise InputError(f"--sigv4 without a region and {url} is not an Amazon Managed Service for Prometheus "
                             "workspace URL (https://aps-workspaces.<region>.amazonaws.com/workspaces/<id>): "
                             "pass --sigv4 REGION")
    since = ur.duration(args.since, "--since")
    step = ur.duration(args.step, "--step") if args.step else None
    end = ur.timestamp(args.at, "--at") if args.at else time.time()
    prom = Prometheus(url, bearer_token_file=Path(args.bearer_token_file) if args.bearer_token_file else None,
                      sigv4_region=region, progress=stderr_progress)
    label = Path(args.stack).stem.removeprefix("Pulumi.") if "/" in args.stack else args.stack
    if args.check:
        from . import report_check

        try:
            checks = report_check.check(prom, plan, end)
        except PrometheusError as err:
            print(f"error: {err}", file=sys.stderr)
            return EXIT_INVALID
        sys.stdout.write(report_check.text(checks, label, url, end))
        return EXIT_VIOLATIONS if any(c.missing for c in checks) else EXIT_OK
    kubeconfig = Path(args.kubeconfig) if args.kubeconfig else (
        None if os.environ.get("KUBECONFIG") or not (state / "admin.kubeconfig").exists() else state / "admin.kubeconfig")
    pending = None if args.no_pending else (lambda: pending_work.read(plan, kubeconfig))
    try:
        report = ur.build(prom, plan, ur.window(end, since, step), pending)
    except (PrometheusError, ur.NoData) as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_INVALID
    if args.format == "json":
        sys.stdout.write(ur.to_json(report) + "\n")
    else:
        sys.stdout.write(ur.text(report, label, markdown=args.format == "markdown"))
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "report.json").write_text(ur.to_json(report))
        (out / "report.md").write_text(ur.text(report, label, markdown=True))
        written = ur.plots(report, out, label)
        print(f"wrote report.json, report.md, {', '.join(p.name for p in written)} to {out}", file=sys.stderr)
    return EXIT_OK


def cmd_acceptance(args: argparse.Namespace) -> int:
    from .acceptance import run

    return run(args)


def cmd_inventory(args: argparse.Namespace) -> int:
    from .inventory import run_inventory

    return run_inventory(args.stack, args.config_file, args.ignore)


def cmd_deployer_policy(args: argparse.Namespace) -> int:
    from .deployer_policy import run

    return run(args)


def cmd_config_reference(args: argparse.Namespace) -> int:
    from .config_reference import stale, write

    if args.check:
        out_of_date = stale(parser())
        for path in out_of_date:
            print(f"{path.name} is out of date with the spec models: run python -m platform_cli config-reference",
                  file=sys.stderr)
        return EXIT_VIOLATIONS if out_of_date else EXIT_OK
    written = write(parser())
    print(f"wrote {', '.join(p.name for p in written)}" if written else "config reference up to date")
    return EXIT_OK


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m platform_cli", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)

    def source(sp: argparse.ArgumentParser, allow_file: bool = True) -> None:
        g = sp.add_mutually_exclusive_group(required=True)
        g.add_argument("--stack", help=STACK_HELP)
        if allow_file:
            g.add_argument("file", nargs="?", help="a Pulumi.<stack>.yaml or a file with the platform value")

    v = sub.add_parser("validate", help="validate a stack config; exit 2 with every error and its path")
    source(v)
    v.add_argument("--deploy", action="store_true",
                   help="also refuse the placeholders a stack must not be deployed with (the documentation's "
                        "account, example names, subnet ids that are not ids), as `pulumi up` does")
    v.set_defaults(func=cmd_validate)
    pl = sub.add_parser("plan", help="print the derived plan: pools, quotas, allocation, cost, warnings")
    source(pl)
    pl.add_argument("--format", choices=["table", "markdown", "json"], default="table", help=FORMAT_HELP)
    pl.set_defaults(func=cmd_plan)
    r = sub.add_parser("render", help="run the program under mocks; write resources.json and manifests/")
    r.add_argument("--stack", required=True, help=STACK_HELP)
    r.add_argument("--out", required=True, help="output directory")
    r.set_defaults(func=cmd_render)
    c = sub.add_parser("check", help="run the policy pack over a stack's resources without the engine")
    g = c.add_mutually_exclusive_group(required=True)
    g.add_argument("--stack", help=STACK_HELP + ": rendered here, its plan's warnings printed first")
    g.add_argument("--resources", help="a resources.json written by render")
    c.set_defaults(func=cmd_check)
    n = sub.add_parser("nodes", help="fake Node objects for a stack's pools at capacity.max (a cluster without the local autoscaler)")
    n.add_argument("--stack", required=True, help=STACK_HELP)
    n.set_defaults(func=cmd_nodes)
    j = sub.add_parser("job", help="print a team's Job (or JobSet, TrainJob, RayJob, LeaderWorkerSet) for a pool, "
                                   "ready for kubectl create -f -")
    j.add_argument("--stack", required=True, help=STACK_HELP)
    j.add_argument("--kind", default="job", help="job | jobset | trainjob | rayjob | lws (docs/submitting-work.md)")
    j.add_argument("--replicas", type=int, default=1, help="lws: serving groups, each of --nodes pods")
    j.add_argument("--team", required=True, help="a team of the stack (teams[].name)")
    j.add_argument("--pool", required=True, help="a pool the team has a quota entry for (teams[].quotas)")
    j.add_argument("--gpus", type=int, required=True, help="units per pod, in the pool's units")
    j.add_argument("--nodes", type=int, default=1, help="pods (one per node) of an indexed, all-or-nothing job")
    j.add_argument("--priority", help="a platform priority the team is granted")
    j.add_argument("--image", help="container image (default: a shell image that sleeps for --duration)")
    j.add_argument("--duration", default="10m", help="how long the job runs (90s, 10m, 2h)")
    j.add_argument("--gpu-busy", type=float, metavar="FRACTION",
                   help="simulated nodes: the fraction of the time the pods keep their GPUs busy, 0..1 "
                        "(default: all the time); what the live cluster's GPU telemetry reports")
    j.add_argument("--name", help="Job name (default: <pool>-<random>)")
    j.add_argument("--namespace", help="one of the team's namespaces (default: its first)")
    j.add_argument("--output", choices=["yaml", "json"], default="yaml", help="the printed objects' format")
    j.set_defaults(func=cmd_job)
    k = sub.add_parser("kueue-config", help="print the Kueue controller Configuration (or --values) of a stack")
    k.add_argument("--stack", required=True, help=STACK_HELP)
    k.add_argument("--values", action="store_true", help="the Helm values of the Kueue chart instead")
    k.set_defaults(func=cmd_kueue_config)
    sim = sub.add_parser("simulate", help="replay a workload trace through the live local platform and report")
    add_simulate_arguments(sim)
    sim.set_defaults(func=cmd_simulate)
    rp = sub.add_parser("report", help="a running platform's useful work from its Prometheus: allocated, busy and idle "
                                       "GPU-hours per team and pool, failed and preempted runs, waits, requeues, "
                                       "pending reasons, cost per finished job (docs/report.md)")
    rp.add_argument("--stack", required=True, help="the stack the cluster runs (its plan names teams, pools, prices)")
    rp.add_argument("--prometheus", metavar="URL", help="Prometheus (or Amazon Managed Service for Prometheus "
                    "workspace) URL; default $GPU_PLATFORM_PROMETHEUS_URL, else the local cluster's")
    rp.add_argument("--since", default="24h", help="the window before --at (90m, 24h, 7d; default 24h)")
    rp.add_argument("--at", help="the window's end, RFC 3339 or unix seconds (default now)")
    rp.add_argument("--step", help="sample spacing (default 60s, the recording rules'; grows for long windows)")
    rp.add_argument("--format", choices=["table", "markdown", "json"], default="table", help=FORMAT_HELP)
    rp.add_argument("--out", metavar="DIR", help="also write report.json, report.md and the PNG plots there")
    rp.add_argument("--kubeconfig", help="for the pending workloads (default $KUBECONFIG, else the local cluster's)")
    rp.add_argument("--no-pending", action="store_true", help="do not read the pending workloads from the API server")
    rp.add_argument("--bearer-token-file", help="send this token to Prometheus (Authorization: Bearer)")
    rp.add_argument("--check", action="store_true",
                    help="instead of the report, check that every input it reads is in the Prometheus (rules, Kueue, "
                         "kube-state-metrics, dcgm-exporter and its profiling field, node pool labels, Workload states, "
                         "prices); exit 1 naming each missing one and what to fix (docs/report.md)")
    rp.add_argument("--sigv4", nargs="?", const="auto", metavar="REGION",
                    help="sign queries with AWS SigV4 (Amazon Managed Service for Prometheus) using the default AWS "
                         "credential chain; the region defaults to the workspace URL's")
    rp.set_defaults(func=cmd_report)
    ac = sub.add_parser("acceptance", help="the design guide's acceptance test on the stack's cluster: a queued job as "
                                           "the team, data pull, all-reduce, training, checkpoint and restore, labels, "
                                           "useful work against a baseline; a verdict per step, exit 0 only when all "
                                           "seven pass (docs/acceptance.md)")
    add_acceptance_arguments(ac)
    ac.set_defaults(func=cmd_acceptance)
    iv = sub.add_parser("inventory", help="after a recovery (docs/runbook.md): the platform objects of the cluster of "
                                          "KUBECONFIG that stack S's state does not list, and what the state or the "
                                          "program declares that the cluster lacks; exit 1 when any")
    iv.add_argument("--stack", required=True, help="the Pulumi stack whose state is read (pulumi stack export)")
    iv.add_argument("--config-file", help="the stack file (default Pulumi.<stack>.yaml)")
    iv.add_argument("--ignore", action="append", default=[], metavar="KIND/[NS/]NAME",
                    help="labelled objects that are not the stack's, e.g. Namespace/kueue-system on the local "
                         "cluster (scripts/local-cluster makes it in place of the Kueue release)")
    iv.set_defaults(func=cmd_inventory)
    cr = sub.add_parser("config-reference",
                        help="write docs/config-reference.md and the JSON Schemas from the spec models, and "
                             "docs/cli.md's flag tables from this parser")
    cr.add_argument("--check", action="store_true", help="exit 1 when a committed file differs, write nothing")
    cr.set_defaults(func=cmd_config_reference)
    dp = sub.add_parser("deployer-policy", help="the IAM policy document whoever runs `pulumi up` for a stack needs, "
                                                "derived from the AWS resources and data sources the stack uses "
                                                "(rendered under mocks); exit 2 naming any type with no known actions")
    dp.add_argument("--stack", required=True, help=STACK_HELP)
    dp.add_argument("--explain", action="store_true",
                    help="instead of the document, each AWS type the stack uses, its actions and where they come from")
    dp.set_defaults(func=cmd_deployer_policy)
    pg = sub.add_parser("plugins", help="the provider plugins (kind name version) a stack's program needs")
    pg.add_argument("--stack", required=True, help=STACK_HELP)
    pg.set_defaults(func=cmd_plugins)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    interrupt_on_sigterm()  # `simulate` starts a cluster: a SIGTERM runs its clean-up, as Ctrl-C does
    try:
        return args.func(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except SpecError as err:
        print(f"error: invalid {CONFIG_KEY}: {len(err.problems)} problem(s)", file=sys.stderr)
        for problem in err.problems:
            print(f"  {problem}", file=sys.stderr)
        return EXIT_INVALID
    except InputError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_INVALID
