"""`python -m gpu_platform validate | plan | render | check | nodes | job | kueue-config | simulate | plugins`.

Exit codes: 0 ok, 1 policy violations (check), 2 invalid input (bad config, bad YAML, missing file).
No traceback reaches the user for any bad input: every error names the file or config path.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Sequence

import yaml

from .plan import Plan, PoolPlan, build_plan
from .spec import CONFIG_KEY, Platform, Problem, SpecError, load_platform, load_stack_config

EXIT_OK, EXIT_VIOLATIONS, EXIT_INVALID = 0, 1, 2
PACKAGE_ROOT = Path(__file__).resolve().parent.parent


class InputError(Exception):
    """Bad input that is not a spec problem: a missing file, unreadable YAML."""


def stack_file(stack: str) -> Path:
    """Pulumi.<stack>.yaml of a stack name, or the stack file a path names (fixture and generated stacks)."""
    if "/" in stack or stack.endswith((".yaml", ".yml")):
        path = Path(stack)
        if not path.is_file():
            raise InputError(f"{stack}: no such stack file")
        return path
    for root in (Path.cwd(), PACKAGE_ROOT):
        candidate = root / f"Pulumi.{stack}.yaml"
        if candidate.exists():
            return candidate
    known = sorted(p.name[len("Pulumi."):-len(".yaml")] for p in PACKAGE_ROOT.glob("Pulumi.*.yaml"))
    raise InputError(f"no stack {stack!r}: Pulumi.{stack}.yaml not found; stacks: {', '.join(known)}")


def read_yaml(path: Path) -> Any:
    try:
        text = path.read_text()
    except OSError as err:
        raise InputError(f"{path}: cannot read: {err.strerror}") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(err, "problem", None) or str(err)
        raise InputError(f"{path}: invalid YAML{where}: {problem}") from None


def load(path: Path) -> tuple[Platform, str | None]:
    """A Pulumi.<stack>.yaml, or a file holding just the `gpu-platform:platform` value."""
    doc = read_yaml(path)
    if isinstance(doc, dict) and "config" in doc:
        return load_stack_config(doc, str(path))
    if isinstance(doc, dict) and CONFIG_KEY in doc:
        return load_platform(doc[CONFIG_KEY]), None
    if doc is None:
        raise SpecError([Problem("", f"{path} is empty; expected config: {{{CONFIG_KEY}: ...}}")])
    return load_platform(doc), None


def load_plan(stack: str | None, file: str | None) -> tuple[str, Plan]:
    path = stack_file(stack) if stack else Path(file)  # type: ignore[arg-type]
    spec, region = load(path)
    return (stack or path.name), build_plan(spec, region)


# ---------------------------------------------------------------------------------------------------
# plan output


def _sharing(p: PoolPlan) -> str:
    if p.sharing_mode == "mig":
        return f"mig {p.mig_profile}"
    if p.sharing_mode == "time-slicing":
        return f"time-slicing x{p.replicas}"
    return "full"


def plan_data(plan: Plan) -> dict[str, Any]:
    pools = []
    for p in plan.pools:
        allocated = plan.allocated_units(p.name)
        pools.append({
            "name": p.name,
            "accelerator": p.accelerator,
            "instanceType": p.instance_type,
            "nodes": f"{p.min_nodes}-{p.max_nodes}",
            "gpus": p.capacity_gpus,
            "units": p.capacity_units,
            "resource": p.resource_name,
            "sharing": _sharing(p),
            "fabric": p.fabric,
            "efaDevicesPerNode": p.efa_interfaces,
            "capacityType": p.capacity_type,
            "provisioner": p.provisioner,
            "karpenterCapacityTypes": list(p.karpenter.capacity_types) if p.karpenter else None,
            "usdPerHourMax": p.usd_per_hour_max,
            "allocated": allocated,
            "allocation": round(allocated / p.capacity_units, 3) if p.capacity_units else 0.0,
            "cpuPerUnit": f"{p.cpu_millis_per_unit}m",
            "memoryPerUnit": f"{p.memory_mib_per_unit}Mi",
            "scratch": p.scratch,
        })
    teams = []
    for t in plan.teams:
        teams.append({
            "name": t.name,
            "cohort": t.cohort,
            "namespaces": list(t.namespaces),
            "usdPerHourNominal": t.usd_per_hour_nominal,
            "quotas": [
                {"pool": q.pool, "resource": q.resource_name, "nominal": q.nominal,
                 "borrowingLimit": q.borrowing, "lendingLimit": q.lending,
                 "cpu": q.cpu(q.nominal), "memory": q.memory(q.nominal)}
                for q in t.quotas
            ],
            "namespaceQuota": dict(t.namespace_quota),
        })
    return {
        "environment": plan.environment,
        "cluster": plan.cluster.name,
        "provider": plan.cluster.provider,
        "migStrategy": plan.mig_strategy,
        "systemPool": None if (sp := plan.cluster.system_pool) is None else {
            "nodeGroup": sp.node_group_name, "instanceType": sp.instance_type, "nodes": f"{sp.min_nodes}-{sp.max_nodes}"},
        "vpcCniNetworkPolicy": plan.cluster.manage_vpc_cni,
        "efaDevicePlugin": plan.installs_efa_device_plugin,
        "karpenter": None if plan.karpenter is None else plan.karpenter.version,
        "pools": pools,
        "teams": teams,
        "cohorts": [{"name": c.name, "parent": c.parent} for c in plan.cohorts],
        "usdPerHourMax": round(sum(p.usd_per_hour_max for p in plan.pools), 2),
        "warnings": list(plan.warnings),
    }


def _table(headers: list[str], rows: list[list[Any]], markdown: bool) -> str:
    cells = [[("-" if v is None else str(v)) for v in row] for row in rows]
    if markdown:
        out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
        out += ["| " + " | ".join(r) + " |" for r in cells]
        return "\n".join(out)
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    line = lambda r: "  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip()  # noqa: E731
    return "\n".join([line(headers), line(["-" * w for w in widths])] + [line(r) for r in cells])


def format_plan(plan: Plan, fmt: str, title: str) -> str:
    data = plan_data(plan)
    if fmt == "json":
        return json.dumps(data, indent=2, sort_keys=True)
    md = fmt == "markdown"
    h = (lambda s: f"### {s}") if md else (lambda s: f"{s}\n{'=' * len(s)}")
    parts = [
        (f"## gpu-platform plan: `{title}`" if md else f"gpu-platform plan: {title}")
        + f"\n\nenvironment {plan.environment}, cluster {plan.cluster.name} ({plan.cluster.provider}), "
        f"MIG strategy {plan.mig_strategy}, max ${data['usdPerHourMax']:,.2f}/h"
        + (f"; system pool {data['systemPool']['instanceType']} x {data['systemPool']['nodes']}" if data["systemPool"] else "")
        + ("; vpc-cni add-on with network policy" if data["vpcCniNetworkPolicy"] else "")
        + ("; EFA device plugin" if data["efaDevicePlugin"] else "")
        + (f"; Karpenter {data['karpenter']}" if data["karpenter"] else ""),
        h("Pools"),
        _table(
            ["pool", "accelerator", "instance type", "nodes", "GPUs", "units", "sharing", "fabric", "capacity", "$/h max"],
            [[p["name"], p["accelerator"], p["instanceType"], p["nodes"], p["gpus"], f"{p['units']} {p['resource']}",
              p["sharing"], p["fabric"] + (f" ({p['efaDevicesPerNode']}/node)" if p["efaDevicesPerNode"] else ""),
              p["capacityType"] + (f" (karpenter: {', '.join(p['karpenterCapacityTypes'])})"
                                   if p["karpenterCapacityTypes"] else ""),
              f"{p['usdPerHourMax']:,.2f}"] for p in data["pools"]],
            md,
        ),
        h("Node storage and checkpoints"),
        _table(["pool", "what a node's disks hold"], [[p["name"], p["scratch"]] for p in data["pools"]], md),
        h("Teams by pool"),
        _table(
            ["team", "cohort", "pool", "nominal", "borrowing", "lending", "cpu", "memory"],
            [[t["name"], t["cohort"], q["pool"], q["nominal"], q["borrowingLimit"], q["lendingLimit"], q["cpu"], q["memory"]]
             for t in data["teams"] for q in t["quotas"]],
            md,
        ),
        h("Allocation"),
        _table(
            ["pool", "nominal / capacity", "allocated"],
            [[p["name"], f"{p['allocated']} / {p['units']}", f"{p['allocation'] * 100:.0f}%"] for p in data["pools"]],
            md,
        ),
        h("Team cost at nominal quota"),
        _table(["team", "$/h"], [[t["name"], f"{t['usdPerHourNominal']:,.2f}"] for t in data["teams"]], md),
        h("Warnings"),
        "\n".join(f"- {w}" for w in data["warnings"]) or "none",
    ]
    return "\n\n".join(parts) + "\n"


# ---------------------------------------------------------------------------------------------------
# commands


def cmd_validate(args: argparse.Namespace) -> int:
    name, plan = load_plan(args.stack, args.file)
    gpus = sum(p.capacity_gpus for p in plan.pools)
    print(
        f"{name}: valid: {len(plan.pools)} pools ({gpus} GPUs at max), {len(plan.teams)} teams, "
        f"{len(plan.cohorts)} cohorts, environment {plan.environment}"
        + (f", {len(plan.warnings)} warning(s)" if plan.warnings else "")
    )
    for w in plan.warnings:
        print(f"warning: {w}")
    return EXIT_OK


def cmd_plan(args: argparse.Namespace) -> int:
    name, plan = load_plan(args.stack, args.file)
    sys.stdout.write(format_plan(plan, args.format, name))
    return EXIT_OK


def _render(stack: str) -> Any:
    stack_file(stack)  # a clear error for an unknown stack before pulumi is imported
    load_plan(stack, None)  # and for an invalid one
    from components.program import run
    from components.render import run_program, stack_config

    return run_program(run, stack, stack_config(stack, stack_file(stack).parent))


def cmd_render(args: argparse.Namespace) -> int:
    from components.render import write

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
        for w in load_plan(args.stack, None)[1].warnings:
            print(f"warning: {w}")
    violations = check_resources(data)
    sys.stdout.write(format_violations(violations, label))
    return EXIT_VIOLATIONS if any(v.mandatory for v in violations) else EXIT_OK


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except OSError as err:
        raise InputError(f"{path}: cannot read: {err.strerror}") from None
    except json.JSONDecodeError as err:
        raise InputError(f"{path}: invalid JSON at line {err.lineno}, column {err.colno}: {err.msg}") from None


def cmd_nodes(args: argparse.Namespace) -> int:
    from .nodes import fake_nodes

    _, plan = load_plan(args.stack, None)
    print(json.dumps(fake_nodes(plan), indent=2, sort_keys=True))
    return EXIT_OK


def cmd_job(args: argparse.Namespace) -> int:
    from .jobs import JobError, JobRequest, job

    _, plan = load_plan(args.stack, None)
    req = JobRequest(team=args.team, pool=args.pool, gpus=args.gpus, nodes=args.nodes, priority=args.priority,
                     image=args.image, duration=args.duration, name=args.name, namespace=args.namespace)
    try:
        objects = job(plan, req)
    except JobError as err:
        raise InputError(str(err)) from None
    doc: Any = objects[0] if len(objects) == 1 else {"apiVersion": "v1", "kind": "List", "items": objects}
    if args.output == "json":
        print(json.dumps(doc, indent=2))
    else:
        sys.stdout.write(yaml.safe_dump(doc, sort_keys=False))
    return EXIT_OK


def cmd_kueue_config(args: argparse.Namespace) -> int:
    from .kueue_config import chart_values, controller_config

    _, plan = load_plan(args.stack, None)
    doc = chart_values(plan) if args.values else controller_config(plan)
    sys.stdout.write(yaml.safe_dump(doc, sort_keys=False))
    return EXIT_OK


# The Pulumi packages whose provider plugins a stack's program loads: Kubernetes always, AWS where node
# pools are made (cluster.provider eks).
KUBERNETES_PACKAGE = "pulumi_kubernetes"
AWS_PACKAGE = "pulumi_aws"


def plugin_of(package: str) -> tuple[str, str, str]:
    """(kind, name, version) of the provider plugin an installed Pulumi package asks the engine for: its
    pulumi-plugin.json, which is exactly what the engine reads (so the version is the requirements.txt pin
    installed in the virtualenv, never a second copy of it). Read without importing the package."""
    from importlib import metadata

    try:
        dist = metadata.distribution(package)
    except metadata.PackageNotFoundError:
        raise InputError(f"{package} is not installed in this Python: run `make venv`") from None
    data = json.loads(Path(str(dist.locate_file(f"{package}/pulumi-plugin.json"))).read_text())
    return ("resource" if data.get("resource") else "language", data["name"], data["version"])


def cmd_plugins(args: argparse.Namespace) -> int:
    _, plan = load_plan(args.stack, None)
    packages = [KUBERNETES_PACKAGE] + ([AWS_PACKAGE] if plan.cluster.provider == "eks" else [])
    for package in packages:
        print(" ".join(plugin_of(package)))
    return EXIT_OK


def _simulate_arguments(p: argparse.ArgumentParser) -> None:
    from simulator.cli import add_arguments

    add_arguments(p)


def cmd_simulate(args: argparse.Namespace) -> int:
    from simulator.cli import run

    return run(args)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m gpu_platform", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)

    def source(sp: argparse.ArgumentParser, allow_file: bool = True) -> None:
        g = sp.add_mutually_exclusive_group(required=True)
        g.add_argument("--stack", help="stack name: reads Pulumi.<stack>.yaml")
        if allow_file:
            g.add_argument("file", nargs="?", help="a Pulumi.<stack>.yaml or a file with the platform value")

    v = sub.add_parser("validate", help="validate a stack config; exit 2 with every error and its path")
    source(v)
    v.set_defaults(func=cmd_validate)
    pl = sub.add_parser("plan", help="print the derived plan: pools, quotas, allocation, cost, warnings")
    source(pl)
    pl.add_argument("--format", choices=["table", "markdown", "json"], default="table")
    pl.set_defaults(func=cmd_plan)
    r = sub.add_parser("render", help="run the program under mocks; write resources.json and manifests/")
    r.add_argument("--stack", required=True)
    r.add_argument("--out", required=True, help="output directory")
    r.set_defaults(func=cmd_render)
    c = sub.add_parser("check", help="run the policy pack over a stack's resources without the engine")
    g = c.add_mutually_exclusive_group(required=True)
    g.add_argument("--stack")
    g.add_argument("--resources", help="a resources.json written by render")
    c.set_defaults(func=cmd_check)
    n = sub.add_parser("nodes", help="fake Node objects for a stack's pools (local API server)")
    n.add_argument("--stack", required=True)
    n.set_defaults(func=cmd_nodes)
    j = sub.add_parser("job", help="print a team's Job for a pool, ready for kubectl create -f -")
    j.add_argument("--stack", required=True)
    j.add_argument("--team", required=True)
    j.add_argument("--pool", required=True)
    j.add_argument("--gpus", type=int, required=True, help="units per pod, in the pool's units")
    j.add_argument("--nodes", type=int, default=1, help="pods (one per node) of an indexed, all-or-nothing job")
    j.add_argument("--priority", help="a platform priority the team is granted")
    j.add_argument("--image", help="container image (default: a shell image that sleeps for --duration)")
    j.add_argument("--duration", default="10m", help="how long the job runs (90s, 10m, 2h)")
    j.add_argument("--name", help="Job name (default: <pool>-<random>)")
    j.add_argument("--namespace", help="one of the team's namespaces (default: its first)")
    j.add_argument("--output", choices=["yaml", "json"], default="yaml")
    j.set_defaults(func=cmd_job)
    k = sub.add_parser("kueue-config", help="print the Kueue controller Configuration (or --values) of a stack")
    k.add_argument("--stack", required=True)
    k.add_argument("--values", action="store_true", help="the Helm values of the Kueue chart instead")
    k.set_defaults(func=cmd_kueue_config)
    sim = sub.add_parser("simulate", help="replay a workload trace through the live local platform and report")
    _simulate_arguments(sim)
    sim.set_defaults(func=cmd_simulate)
    pg = sub.add_parser("plugins", help="the provider plugins (kind name version) a stack's program needs")
    pg.add_argument("--stack", required=True)
    pg.set_defaults(func=cmd_plugins)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except SpecError as err:
        print(f"error: invalid {CONFIG_KEY}: {len(err.problems)} problem(s)", file=sys.stderr)
        for problem in err.problems:
            print(f"  {problem}", file=sys.stderr)
        return EXIT_INVALID
    except InputError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_INVALID
