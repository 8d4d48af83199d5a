"""`python -m platform_cli simulate`: check the trace, start a live cluster per configuration, replay, report.

Everything the user supplies is checked before anything starts: the stacks, the trace against each
stack's plan (every problem with its line number), the tools. Exit codes: 0 done, 2 bad input or a
missing tool, 3 a step of the replay failed (its output is shown).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from gpu_platform.errors import InputError
from gpu_platform.stack_files import load_plan, stack_file
from gpu_platform.plan import Plan
from gpu_platform.spec import SpecError
from localcluster.autoscaler import (
    DEFAULT_SCALE_DOWN_DELAY, DEFAULT_SCALE_UP_DELAY, SCALE_DOWN_DELAY_ENV, SCALE_UP_DELAY_ENV,
)
from localcluster.session import CACHE, Session, SessionError

from . import failures as node_failures
from . import direct_workloads, fidelity, kinds, metrics, report, synthetic
from .failures import NodeFailure
from .options import DEFAULT_HOURS, DEFAULT_SCALE_UP_S, MAX_WALL_S, TARGET_WALL_S
from .progress import Printer
from .replay import replay, terminal_progress
from .stackfile import write_kubernetes_layer
from .trace import TraceError, TraceJob, dump_csv, load

TOOLS = ("pulumi", "pulumi-language-python", "pulumi-resource-kubernetes", "etcd", "kube-apiserver",
         "kube-controller-manager", "kube-scheduler", "kueue", "kwok", "helm")
_GO_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")
_GO_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def _resolve(stack: str) -> tuple[str, Path]:
    """(label, file) of a stack name or a stack file path."""
    if "/" in stack or stack.endswith((".yaml", ".yml")):
        path = Path(stack)
        if not path.exists():
            raise InputError(f"{stack}: no such stack file")
        return path.stem.removeprefix("Pulumi."), path
    return stack, stack_file(stack)


# What decides how work queues; a change anywhere else (names of groups, egress, tags) cannot change a replay.
QUEUEING_FIELDS = ("pools", "cohorts", "teams", "priorities", "defaultPreemption")
TEAM_FIELDS_IGNORED = ("groups", "egress", "podSecurity", "costCenter")


def queueing(path: Path) -> dict:
    import yaml

    platform = yaml.safe_load(path.read_text())["config"]["gpu-platform:platform"]
    out = {k: platform.get(k) for k in QUEUEING_FIELDS}
    out["teams"] = [{k: v for k, v in t.items() if k not in TEAM_FIELDS_IGNORED} for t in platform.get("teams", [])]
    out["kueue"] = (platform.get("addons") or {}).get("kueue")
    return out


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


def _failures(args: argparse.Namespace, plans: dict[str, Plan], horizon: float) -> list[NodeFailure] | None:
    """The replay's node failures (None: none asked for), checked against every config's pools."""
    if args.spare_nodes is not None and args.node_failure_rate is None and not args.failures:
        raise InputError("--spare-nodes needs node failures (--node-failure-rate or --failures): spares matter "
                         "only when nodes fail")
    if args.node_failure_rate is None and not args.failures:
        return None
    repair = node_failures.check_repair(args.repair_time)
    first = next(iter(plans.values()))
    out: list[NodeFailure] = []
    if args.node_failure_rate is not None:
        out += node_failures.schedule(first, node_failures.check_rate(args.node_failure_rate), horizon,
                                      args.failure_seed, repair)
    if args.failures:
        out += node_failures.load(Path(args.failures), first, repair)
    if args.spare_nodes is not None:
        node_failures.check_spares(args.spare_nodes)
        if args.compare:
            raise InputError("--spare-nodes replays the stack with and without spares: it cannot be combined "
                             "with --compare")
    for name, plan in list(plans.items())[1:]:
        problems = [f"{f.pool}{'/' + f.node if f.node else ''} at {f.at:g} s" for f in out
                    if f.pool not in plan.pools_by_name
                    or (f.node and f.node not in node_failures.pool_nodes(plan.pools_by_name[f.pool]))]
        if problems:
            raise InputError(f"node failures on pools or nodes {name} does not have: {', '.join(problems)}")
    return sorted(out, key=lambda f: f.at)


def cluster_key(plan: Plan, workloads: str = "none", delays: tuple[str | None, str | None] | None = None) -> str:
    """What a cluster is made of for a stack: its simulated nodes, Kueue's Configuration, the workload
    controllers it runs and the autoscaler's delays. Two configs with the same key replay on the same
    cluster, redeployed (quotas, cohorts, weights may differ)."""
    import hashlib

    from gpu_platform.kueue_config import controller_config
    from gpu_platform.nodes import fake_nodes

    blob = json.dumps([fake_nodes(plan), controller_config(plan), workloads, delays], sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def go_duration_s(value: str, what: str) -> float:
    """Seconds of a Go duration (90s, 10m, 1h30m, 500ms); InputError naming `what` otherwise."""
    text = value.strip()
    parts = _GO_DURATION_PART.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise InputError(f"{what} {value!r} is not a duration such as 30s, 10m or 1h30m")
    return sum(float(n) * _GO_UNITS[u] for n, u in parts)


def stack_scale_down_s(plan: Plan) -> float:
    """How long an empty elastic node stays on the stack's EKS cluster: its Karpenter pools' consolidateAfter
    when every pool that scales is Karpenter's (the shortest: one setting serves them all locally), else
    the Cluster Autoscaler's scaleDownUnneededTime (addons.clusterAutoscaler, its default when it is off)."""
    from gpu_platform.nodes import scales_locally

    scaling = [p for p in plan.pools if scales_locally(p)]
    if scaling and all(p.karpenter is not None for p in scaling):
        return min(go_duration_s(p.karpenter.consolidate_after, f"pools[{p.name}].karpenter.consolidateAfter")
                   for p in scaling if p.karpenter is not None)
    return go_duration_s(plan.addons.scale_down_unneeded_time,
                         "addons.clusterAutoscaler.scaleDownUnneededTime")


@dataclass(frozen=True)
class ScaleDelays:
    """The autoscaler's delays a replay runs with, in trace seconds: a node added after `up`, an emptied added
    node removed after `down` (None: the stack's, stack_scale_down_s)."""
    up: float = DEFAULT_SCALE_UP_S
    down: float | None = None


def compressed_delay(trace_s: float, speed: float) -> int:
    """A delay of the autoscaler as the local cluster takes it: wall seconds, whole (Karpenter's and its KWOK
    provider's fields take s/m/h only), at least one."""
    return max(1, round(trace_s / speed))


def _show_cluster(session: Session) -> None:
    """What the cluster looked like when a replay failed, before it is stopped and its state removed: which
    processes run, and the end of each component's log (`scripts/local-cluster status` and `logs`)."""
    cluster = session.cluster()
    for command in ("status", "logs"):
        out = cluster.script(command, check=False, timeout=60)
        print(f"simulate: the replay failed; scripts/local-cluster {command}:\n{out.stdout}{out.stderr}", file=sys.stderr)


def simulate_all(configs: list[tuple[str, Path, Plan]], jobs: list[TraceJob], horizon: float, speed: float,
                 out: Path, keep: bool = False, progress=terminal_progress,
                 traces: dict[str, tuple[list[TraceJob], float]] | None = None, correct: bool = True,
                 speeds: dict[str, float] | None = None, failures: list[NodeFailure] | None = None,
                 failure_seed: int = 1, failure_rate: float | None = None,
                 spares: dict[str, dict[str, int]] | None = None,
                 delays: ScaleDelays | None = None, mode: str = "pods") -> dict[str, dict]:
    """Replay the trace against each (name, stack file, plan) in turn and write each report under out/name.
    Consecutive configs with the same cluster_key share a cluster: drained and redeployed between them.
    `traces` gives a config its own (jobs, horizon) instead of the common ones (tests replay only what a
    variant is asserted on), `speeds` its own speed (tests replay one trace at two speeds on one cluster).
    `failures` fail nodes in every replay (simulator/failures.py), `spares` adds spare nodes to a config's
    pools for its replay (pool -> how many; removed again when the cluster is reused).

    Each cluster runs the workload controllers its trace's kinds need (simulator/kinds.py) and, with `delays`,
    the autoscaler's delays given in trace seconds, compressed by the speed (the command always gives them);
    without, the local cluster's own (LOCAL_CLUSTER_SCALE_UP_DELAY and _DOWN_DELAY or their defaults, wall
    time: the constructed traces of tests/simulate keep the cluster they were measured on).

    `mode` "workloads" replays Kueue Workloads directly (simulator/direct_workloads.py) instead of Jobs."""
    from .fault_injection import remove_spares
    from .replay import drain

    reports: dict[str, dict] = {}
    session: Session | None = None
    key = previous_plan = None
    previous_spares: dict[str, int] = {}
    try:
        common = (jobs, horizon)
        for name, layer, plan in configs:
            jobs, horizon = (traces or {}).get(name, common)
            speed_here = (speeds or {}).get(name, speed)
            workloads = kinds.workloads_setting({j.kind for j in jobs})
            if delays is not None:
                down_s = stack_scale_down_s(plan) if delays.down is None else delays.down
                wall = (compressed_delay(delays.up, speed_here), compressed_delay(down_s, speed_here))
                settings: tuple[str | None, str | None] = (f"{wall[0]}s", f"{wall[1]}s")
            else:
                settings = (None, None)
                wall = (go_duration_s(os.environ.get(SCALE_UP_DELAY_ENV) or DEFAULT_SCALE_UP_DELAY, SCALE_UP_DELAY_ENV),
                        go_duration_s(os.environ.get(SCALE_DOWN_DELAY_ENV) or DEFAULT_SCALE_DOWN_DELAY,
                                      SCALE_DOWN_DELAY_ENV))
            t0 = time.perf_counter()
            started = deployed = 0.0
            if session is not None and cluster_key(plan, workloads, settings) == key:
                if mode == "workloads":
                    direct_workloads.drain(session.client(), previous_plan)
                drain(session.client(), previous_plan)
                if previous_spares:
                    remove_spares(session.client(), previous_plan, previous_spares)
                session.use_config(layer)
            else:
                if session is not None:
                    session.stop()
                    shutil.rmtree(session.state, ignore_errors=True)
                session = Session(Path(tempfile.mkdtemp(prefix=f"gpu-platform-sim-{name}-")), layer,
                                  workloads=workloads, scale_up_delay=settings[0], scale_down_delay=settings[1])
                started = session.start()
                key = cluster_key(plan, workloads, settings)
            deployed = session.deploy()
            print(f"simulate: {name}: {len(jobs)} jobs over {horizon / 3600:g} h at {speed_here:g}x "
                  f"(about {horizon / speed_here / 60:.1f} min of replay); cluster {'reused' if not started else f'up in {started:.0f} s'}, "
                  f"stack deployed in {deployed:.0f} s", file=sys.stderr)
            spares_here = (spares or {}).get(name, {})
            if mode == "workloads":
                result = direct_workloads.replay(session.client(), plan, jobs, speed_here, horizon, progress)
            else:
                try:
                    result = replay(session.client(), plan, jobs, speed_here, horizon, progress, correct=correct,
                                    failures=failures, failure_seed=failure_seed, spares=spares_here,
                                    failure_rate=failure_rate, scale_up_delay_s=wall[0] * speed_here,
                                    scale_down_delay_s=wall[1] * speed_here)
                except Exception:
                    with contextlib.suppress(Exception):   # never in place of the replay's own error
                        _show_cluster(session)
                    raise
            r = metrics.compute(result, plan)
            r["simulator"]["setup_s"] = round(started + deployed, 1)
            r["simulator"]["total_s"] = round(time.perf_counter() - t0, 1)
            report.write(r, out / name, name)
            (out / name / "events.jsonl").write_text("".join(
                json.dumps({"t": round(e.t, 3), "job": e.job, "kind": e.kind, "flavor": e.flavor, "units": e.units,
                            "reason": e.reason}) + "\n" for e in result.events))
            reports[name] = r
            previous_plan, previous_spares = plan, spares_here
    finally:
        if session is not None:
            if keep:
                print(f"simulate: cluster kept running: KUBECONFIG={session.kubeconfig}", file=sys.stderr)
            else:
                session.stop()
                shutil.rmtree(session.state, ignore_errors=True)
    return reports


def run(args: argparse.Namespace) -> int:
    try:
        configs = [_resolve(args.stack)] + ([_resolve(args.compare)] if args.compare else [])
        if args.spare_nodes is not None and not args.compare and (args.node_failure_rate is not None or args.failures):
            configs.append((f"{configs[0][0]}+{args.spare_nodes}-spare", configs[0][1]))
        if args.skip_unless_queues_changed and len(configs) == 2 and queueing(configs[0][1]) == queueing(configs[1][1]):
            print(f"simulate: {configs[0][0]} and {configs[1][0]} queue alike (pools, cohorts, teams, priorities, "
                  "preemption, Kueue): nothing to compare", file=sys.stderr)
            return 0
        if len(configs) == 2 and configs[0][0] == configs[1][0]:
            configs[1] = (configs[1][0] + "-other", configs[1][1])
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        layers = {name: write_kubernetes_layer(path, out / f"{name}.stack.yaml") for name, path in configs}
        plans = {name: _plan_of(f) for name, f in layers.items()}
        mode = direct_workloads.check_mode(args.mode)
        if not args.progress_every > 0:
            raise InputError(f"--progress-every {args.progress_every:g} is not a positive number of seconds")
        jobs, horizon = _trace(args, plans)
        failures = _failures(args, plans, horizon)
        if mode == "workloads":
            direct_workloads.check_trace(jobs)
            if failures is not None:
                raise InputError("--mode workloads has no pods for a node failure to strike: node failures "
                                 "(--node-failure-rate, --failures, --spare-nodes) need --mode pods")
        delays = ScaleDelays(
            go_duration_s(args.scale_up_delay, "--scale-up-delay") if args.scale_up_delay else DEFAULT_SCALE_UP_S,
            go_duration_s(args.scale_down_delay, "--scale-down-delay") if args.scale_down_delay else None)
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
    speed = args.speed
    if not speed:
        speed, note = fidelity.default_speed([j.duration for j in jobs if j.submit < horizon], horizon,
                                             TARGET_WALL_S, MAX_WALL_S,
                                             **({"overhead_s": direct_workloads.PRIOR_OVERHEAD_S}
                                                if mode == "workloads" else {}))
        if note:
            print(f"simulate: {note}", file=sys.stderr)
    (out / "trace.csv").write_text(dump_csv(jobs))
    spares = None
    if args.spare_nodes and failures is not None:
        # Where failures can strike: every pool for a rate, the pools a schedule names.
        struck = [p.name for p in plans[configs[0][0]].pools
                  if args.node_failure_rate is not None or any(f.pool == p.name for f in failures)]
        spares = {configs[1][0]: {pool: args.spare_nodes for pool in struck}}
    if failures is not None:
        print(f"simulate: {sum(1 for f in failures if f.at < horizon)} node failures within the horizon"
              + (f" ({args.node_failure_rate:g} per node-hour, seed {args.failure_seed})" if args.node_failure_rate else "")
              + (f"; then again with {args.spare_nodes} spare node(s) in each of "
                 f"{', '.join(next(iter(spares.values())))}" if spares else ""), file=sys.stderr)
    try:
        reports = simulate_all([(name, layers[name], plans[name]) for name, _ in configs], jobs, horizon, speed,
                               out, keep=args.keep, correct=not args.no_correction, failures=failures,
                               failure_seed=args.failure_seed, failure_rate=args.node_failure_rate, spares=spares,
                               delays=delays, mode=mode, progress=Printer(every=args.progress_every))
    except (SessionError, TimeoutError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 3
    for name, _ in configs:
        sys.stdout.write(report.text(reports[name], name))
        print(f"simulate: wrote {out / name}/report.json, report.md and plots", file=sys.stderr)
    if len(configs) == 2:
        (a, _), (b, _) = configs
        cmp = report.compare_text(reports[a], reports[b], a, b)
        sys.stdout.write("\n" + cmp)
        (out / "compare.md").write_text(report.compare_text(reports[a], reports[b], a, b, markdown=True))
        (out / "compare.json").write_text(json.dumps({a: reports[a], b: reports[b]}, indent=2))
    return 0
