"""`python -m gpu_platform simulate`: check the trace, start a live cluster per configuration, replay, report.

Everything the user supplies is checked before anything starts: the stacks, the trace against each
stack's plan (every problem with its line number), the tools. Exit codes: 0 done, 2 bad input or a
missing tool, 3 a step of the replay failed (its output is shown).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from gpu_platform.cli import InputError, load_plan, stack_file
from gpu_platform.plan import Plan
from gpu_platform.spec import SpecError
from localcluster.session import CACHE, Session, SessionError

from . import metrics, report, synthetic
from .replay import replay, terminal_progress
from .stackfile import write_kubernetes_layer
from .trace import TraceError, TraceJob, dump_csv, load

TOOLS = ("pulumi", "pulumi-language-python", "pulumi-resource-kubernetes", "etcd", "kube-apiserver",
         "kube-controller-manager", "kube-scheduler", "kueue", "kwok", "helm")
# The compressed replay aims at this many wall seconds unless --speed says otherwise (the PR check and
# the README's 10-minute budget for 2,000 jobs on 2 cores).
TARGET_WALL_S = 360.0
DEFAULT_HOURS = 12.0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--stack", required=True, help="stack name (Pulumi.<stack>.yaml) or a stack file")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--trace", help="trace file (CSV with a header, or JSON Lines)")
    src.add_argument("--synthetic", type=int, metavar="SEED", help="a synthetic trace (Helios profile) from SEED")
    p.add_argument("--hours", type=float, help=f"trace hours to replay (default: {DEFAULT_HOURS:g} for --synthetic, "
                   "the trace's last submission plus its duration for --trace)")
    p.add_argument("--load", type=float, default=1.2, help="--synthetic: work offered per pool, times its capacity")
    p.add_argument("--speed", type=float, help=f"time compression (default: to fit {TARGET_WALL_S:g} s of wall time)")
    p.add_argument("--compare", metavar="OTHER", help="replay the same trace against another stack (name or file)")
    p.add_argument("--out", default=".local/simulate", help="output directory (default .local/simulate)")
    p.add_argument("--keep", action="store_true", help="leave the last cluster running")


def _resolve(stack: str) -> tuple[str, Path]:
    """(label, file) of a stack name or a stack file path."""
    if "/" in stack or stack.endswith((".yaml", ".yml")):
        path = Path(stack)
        if not path.exists():
            raise InputError(f"{stack}: no such stack file")
        return path.stem.removeprefix("Pulumi."), path
    return stack, stack_file(stack)


def _plan_of(path: Path) -> Plan:
    return load_plan(None, str(path))[1]


def _trace(args: argparse.Namespace, plans: dict[str, Plan]) -> tuple[list[TraceJob], float]:
    first = next(iter(plans.values()))
    if args.synthetic is not None:
        hours = args.hours or DEFAULT_HOURS
        jobs = synthetic.generate(first, args.synthetic, hours, args.load)
        horizon = hours * 3600
    else:
        jobs = load(Path(args.trace), first)
        horizon = (args.hours * 3600) if args.hours else max((j.submit + j.duration for j in jobs), default=0.0)
    for name, plan in list(plans.items())[1:]:
        try:
            from .trace import parse
            parse(dump_csv(jobs), plan, f"the trace against {name}")
        except TraceError as err:
            raise TraceError(f"{args.trace or 'the synthetic trace'} (against {name})", err.problems) from None
    if not jobs:
        raise InputError("the trace has no jobs")
    return jobs, horizon


def run(args: argparse.Namespace) -> int:
    try:
        configs = [_resolve(args.stack)] + ([_resolve(args.compare)] if args.compare else [])
        if len(configs) == 2 and configs[0][0] == configs[1][0]:
            configs[1] = (configs[1][0] + "-other", configs[1][1])
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        layers = {name: write_kubernetes_layer(path, out / f"{name}.stack.yaml") for name, path in configs}
        plans = {name: _plan_of(f) for name, f in layers.items()}
        jobs, horizon = _trace(args, plans)
    except (InputError, TraceError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except SpecError as err:
        print("error: invalid stack:", file=sys.stderr)
        for p in err.problems:
            print(f"  {p}", file=sys.stderr)
        return 2
    missing = [t for t in TOOLS if not (CACHE / "bin" / t).exists()]
    if missing:
        print(f"error: missing {', '.join(missing)} in {CACHE / 'bin'}: run scripts/toolchain", file=sys.stderr)
        return 2
    speed = args.speed or max(1.0, round(horizon / TARGET_WALL_S, 1))
    (out / "trace.csv").write_text(dump_csv(jobs))
    reports = {}
    for n, (name, _path) in enumerate(configs):
        print(f"simulate: {name}: {len(jobs)} jobs over {horizon / 3600:g} h at {speed:g}x "
              f"(about {horizon / speed / 60:.1f} min of replay)", file=sys.stderr)
        state = Path(tempfile.mkdtemp(prefix=f"gpu-platform-sim-{name}-"))
        session = Session(state, layers[name])
        try:
            t0 = time.perf_counter()
            started = session.start()
            deployed = session.deploy()
            print(f"simulate: {name}: cluster up in {started:.0f} s, stack deployed in {deployed:.0f} s", file=sys.stderr)
            result = replay(session.client(), plans[name], jobs, speed, horizon, terminal_progress)
            r = metrics.compute(result, plans[name])
            r["simulator"]["setup_s"] = round(started + deployed, 1)
            r["simulator"]["total_s"] = round(time.perf_counter() - t0, 1)
        except SessionError as err:
            print(f"error: {err}", file=sys.stderr)
            return 3
        finally:
            if not (args.keep and n == len(configs) - 1):
                session.stop()
                shutil.rmtree(state, ignore_errors=True)
            else:
                print(f"simulate: cluster kept running: KUBECONFIG={session.kubeconfig}", file=sys.stderr)
        written = report.write(r, out / name, name)
        reports[name] = r
        sys.stdout.write(report.text(r, name))
        print(f"simulate: wrote {', '.join(str(p) for p in written)}", file=sys.stderr)
    if len(configs) == 2:
        (a, _), (b, _) = configs
        cmp = report.compare_text(reports[a], reports[b], a, b)
        sys.stdout.write("\n" + cmp)
        (out / "compare.md").write_text(report.compare_text(reports[a], reports[b], a, b, markdown=True))
        (out / "compare.json").write_text(json.dumps({a: reports[a], b: reports[b]}, indent=2))
    return 0
