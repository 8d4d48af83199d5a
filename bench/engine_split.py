"""Benchmark 4b, real engine at 100+ teams: the whole stack's `pulumi up` against the same platform split
into a platform stack and tenant stacks (`stackSplit`, gpu_platform/stack_split.py), each as a ratio to
`kubectl apply --server-side` of the same objects, with checkpoints on (the CLI's default).

Per team count: the kubectl floor into a fresh cluster; the whole stack's `up` into a fresh cluster; the
split into a fresh cluster, the platform stack's `up` and then the tenant stacks' one after another
(`--side-by-side`: and in another fresh cluster all tenant stacks at once after the platform). All stacks
of a split share one temporary file backend, so the tenant stacks' StackReference reads the platform
stack there (organization/gpu-platform/<stack>). Everything else as bench/engine.py (whose helpers this
reuses): addons off, the repository untouched, one cluster at a time on the bench ports.

    python -m bench.engine_split [--teams 100 200] [--tenant-stacks 4] [--side-by-side] [--json out.json]

Target: the split's `up` (platform + tenant stacks) within 2x the kubectl floor, as for benchmark 4.
Exit status: 0 target holds at every N, 1 it fails, 2 a step failed, 3 skipped (no tool chain or cluster).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.common import ROOT, verdict
from bench.engine import (
    NO_ADDONS, UP_OVER_FLOOR, Cluster, Results, Stack, Timing, _children_cpu, _count,
    available, kubectl_floor, manifests, run_in_workdir, timed,
)
from bench.synth import stack_config
from localcluster.signals import interrupt_on_sigterm

PROJECT = "gpu-platform"
ENV_STACK = "bench"


@dataclass
class Split:
    """The split environment's one config and each part's expected resource count."""

    config: dict[str, Any]
    platform: str
    tenants: dict[str, int] = field(default_factory=dict)  # stack -> resources
    platform_resources: int = 0


def split_config(teams: int, tenant_stacks: int) -> dict[str, Any]:
    """The synthetic stack with `stackSplit`: its second-level cohorts dealt round-robin to the tenant stacks
    (a cohort subtree per group, as a real split would go)."""
    cfg = stack_config(teams, addons=NO_ADDONS)
    p = cfg["gpu-platform:platform"]
    leaves = [c["name"] for c in p["cohorts"] if c.get("parent")]
    k = min(tenant_stacks, len(leaves))
    groups = [{"stack": f"{ENV_STACK}-tenants-{i}", "cohorts": leaves[i::k]} for i in range(k)]
    p["stackSplit"] = {"platformStack": f"{ENV_STACK}-platform", "tenantStacks": groups}
    return cfg


def plan_split(teams: int, tenant_stacks: int) -> Split:
    """Render every part under mocks: how many resources each `up` must create, and that the parts add up to
    the whole stack's Kubernetes objects exactly (else the comparison would be unfair)."""
    from components.program import run
    from harness.render import run_program
    from harness.split import render_parts

    cfg = split_config(teams, tenant_stacks)
    split = Split(cfg, cfg["gpu-platform:platform"]["stackSplit"]["platformStack"])
    rendered = render_parts(run, cfg, PROJECT)
    split.platform_resources = len(rendered[split.platform].custom)
    split.tenants = {name: len(r.custom) for name, r in rendered.items() if name != split.platform}
    key = lambda o: (o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"])  # noqa: E731
    objects = sorted(key(o) for r in rendered.values() for o in r.kubernetes_objects())
    whole = run_program(run, ENV_STACK, stack_config(teams, addons=NO_ADDONS))
    expected = sorted(key(o) for o in whole.kubernetes_objects())
    if objects != expected:
        raise RuntimeError(f"the split's {len(objects)} objects are not the whole stack's {len(expected)}")
    return split


def _timed_together(label: str, stacks: list[Stack], cluster: Cluster, units: int) -> Timing:
    """Every stack's `up` at once; wall time until the last is done, CPU of all of them."""
    load0 = os.getloadavg()[0]
    client0, server0 = _children_cpu(), cluster.server_cpu()
    started = time.perf_counter()
    procs = [subprocess.Popen(s.cmd("up", "--yes", "--skip-preview"), env=s.env, cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for s in stacks]
    outs = [p.communicate(timeout=3600)[0] for p in procs]
    seconds = time.perf_counter() - started
    for s, p, out in zip(stacks, procs, outs):
        if p.returncode != 0:
            raise RuntimeError(f"{s.name}: up exited {p.returncode}\n{out[-3000:]}")
    t = Timing(label, seconds, _children_cpu() - client0, cluster.server_cpu() - server0, (load0, os.getloadavg()[0]), units)
    print(t.line(), flush=True)
    return t


def split_runs(res: Results, tmp: Path, split: Split, together: bool) -> None:
    tag = "side-by-side" if together else "sequential"
    with Cluster(tmp / f"cluster-split-{tag}") as cluster:
        backend = tmp / f"backend-{tag}"
        platform = Stack(tmp / f"stack-{tag}-platform", res.teams, cluster, {}, name=split.platform,
                         config=split.config, backend=backend)
        tenants = [Stack(tmp / f"stack-{tag}-{name}", res.teams, cluster, {}, name=name, config=split.config,
                         backend=backend) for name in split.tenants]
        t, out = timed(f"pulumi up, platform stack ({split.platform_resources} resources)",
                       platform.cmd("up", "--yes", "--skip-preview"), platform.env, cluster, split.platform_resources)
        if _count(out, "created") < split.platform_resources:
            raise RuntimeError(f"platform up created {_count(out, 'created')}, expected {split.platform_resources}")
        res.timings[f"split-{tag}-platform"] = t
        if together:
            total = sum(split.tenants.values())
            res.timings[f"split-{tag}-tenants"] = _timed_together(
                f"pulumi up, {len(tenants)} tenant stacks at once ({total} resources)", tenants, cluster, total)
            return
        for stack in tenants:
            n = split.tenants[stack.name]
            t, out = timed(f"pulumi up, {stack.name} ({n} resources)", stack.cmd("up", "--yes", "--skip-preview"),
                           stack.env, cluster, n)
            if _count(out, "created") < n:
                raise RuntimeError(f"{stack.name} up created {_count(out, 'created')}, expected {n}")
            res.timings[f"split-{tag}-{stack.name}"] = t


def whole_run(res: Results, tmp: Path) -> None:
    with Cluster(tmp / "cluster-whole") as cluster:
        stack = Stack(tmp / "stack-whole", res.teams, cluster, {})
        t, out = timed("pulumi up, whole stack", stack.cmd("up", "--yes", "--skip-preview"), stack.env, cluster,
                       res.resources)
        if _count(out, "created") < res.resources:
            raise RuntimeError(f"up created {_count(out, 'created')} resources, expected {res.resources}")
        res.timings["whole"] = t


def report(res: Results, split: Split) -> tuple[bool, dict[str, Any]]:
    t = res.timings
    floor = t["kubectl"].seconds
    figures: dict[str, Any] = {"teams": res.teams, "resources": res.resources, "objects": res.objects,
                               "tenantStacks": len(split.tenants), "floor_s": floor}
    print(f"\nN={res.teams} teams: {res.resources} resources ({res.objects} Kubernetes objects); split: platform "
          f"{split.platform_resources} + {len(split.tenants)} tenant stacks of "
          f"{min(split.tenants.values())}-{max(split.tenants.values())} resources")
    # CPU seconds (client + API server) as well as wall time: on a shared machine the load changes the wall
    # time of one step and not the next, while the work each does (above all, serializing the state) stays.
    cpu = lambda x: x.client_cpu + x.server_cpu  # noqa: E731
    floor_cpu = cpu(t["kubectl"])
    whole = t["whole"].seconds
    figures["whole_s"], figures["whole_ratio"] = whole, whole / floor
    figures["whole_cpu_ratio"] = cpu(t["whole"]) / floor_cpu
    print(f"whole stack up/floor = {whole / floor:.2f} ({whole:.1f} s / {floor:.1f} s); "
          f"CPU {cpu(t['whole']) / floor_cpu:.2f}")
    ok = True
    for tag in ("sequential", "side-by-side"):
        parts = [v for k, v in t.items() if k.startswith(f"split-{tag}-")]
        if not parts:
            continue
        total = sum(p.seconds for p in parts)
        figures[f"split_{tag}_s"], figures[f"split_{tag}_ratio"] = total, total / floor
        figures[f"split_{tag}_cpu_ratio"] = sum(cpu(p) for p in parts) / floor_cpu
        good = total / floor <= UP_OVER_FLOOR
        headline = tag == "sequential"
        print(f"split ({tag}) up/floor = {total / floor:.2f} ({total:.1f} s: platform "
              f"{t[f'split-{tag}-platform'].seconds:.1f} s + tenants {total - t[f'split-{tag}-platform'].seconds:.1f} s); "
              f"CPU {figures[f'split_{tag}_cpu_ratio']:.2f}; whole/split = {whole / total:.2f}; target <= {UP_OVER_FLOOR:g}: "
              f"{verdict(good) if headline else 'for comparison'}")
        if headline:
            ok = ok and good
    return ok, figures


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--teams", type=int, nargs="+", default=[100, 200])
    ap.add_argument("--tenant-stacks", type=int, default=4, help="tenant stacks the cohorts are dealt to")
    ap.add_argument("--side-by-side", action="store_true", help="also run the tenant stacks all at once")
    ap.add_argument("--no-whole", action="store_true", help="skip the whole stack's up (the slow part)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory (logs, state)")
    ap.add_argument("--json", help="write the figures here as JSON")
    args = ap.parse_args()
    interrupt_on_sigterm()
    why = available()
    if why:
        print(f"engine split benchmark skipped: {why}")
        sys.exit(3)

    def body(tmp: Path) -> bool:
        ok, figures = True, []
        for teams in args.teams:
            res = Results(teams=teams)
            sub = tmp / f"n{teams}"
            sub.mkdir()
            path, res.objects, res.resources = manifests(teams, sub)
            split = plan_split(teams, args.tenant_stacks)
            print(f"engine split N={teams}: {res.resources} resources, {res.objects} Kubernetes objects; "
                  f"{os.cpu_count()} cores; load {os.getloadavg()[0]:.1f}; work dir {sub}", flush=True)
            kubectl_floor(res, sub, path, "kubectl", [])
            split_runs(res, sub, split, together=False)
            if args.side_by_side:
                split_runs(res, sub, split, together=True)
            if not args.no_whole:
                whole_run(res, sub)
                good, fig = report(res, split)
                ok, _ = ok and good, figures.append(fig)
            else:
                for k, v in res.timings.items():
                    print(f"{k}: {v.seconds:.1f} s = {v.seconds / res.timings['kubectl'].seconds:.2f} of the floor")
        if args.json:
            Path(args.json).write_text(json.dumps(figures, indent=2))
        return ok

    run_in_workdir("gpu-platform-bench-split-", args.keep, body)


if __name__ == "__main__":
    main()
