"""Benchmark 1, program cost: our program vs a floor program, under mocks, for N = 10, 100, 1000 teams.

The floor registers exactly the resources our program registers (same types, names, parents,
dependencies, providers and inputs, captured from our run, through the same SDK classes) with none of
our spec, plan or component logic: what the Pulumi SDK itself costs. Each run is a fresh interpreter; the best of `--repeat` runs counts.
Targets: ours / floor <= 1.3 at every N (time and peak memory); t(1000) / t(100) <= 11.

    python -m bench.program_cost [--teams 10 100 1000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.common import child, emit, measure, verdict


def _ours(teams: int, dump: str | None) -> None:
    from bench.synth import stack_config
    from components.program import run
    from harness.render import run_program

    # Warm-up on a one-team platform: imports and first-use caches are the SDK's, not per-run cost.
    run_program(run, "bench", stack_config(1))
    config = stack_config(teams)
    m = measure(lambda: run_program(run, "bench", config))
    rendered = m.pop("result")
    if dump:
        Path(dump).write_text(json.dumps([
            {"type": r.type, "name": r.name, "parent": r.parent, "custom": r.custom, "inputs": r.inputs,
             "dependencies": r.options.get("dependencies", []), "provider": r.options.get("provider")}
            for r in rendered.resources
        ]))
    emit({**m, "resources": len(rendered.resources)})


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name)


def sdk_class(token: str) -> Any:
    """The SDK class registering `token` (kubernetes:core/v1:Namespace -> pulumi_kubernetes.core.v1.Namespace),
    or None for objects of CRDs, which the floor registers as plain custom resources with the same token."""
    import importlib

    pkg, middle, cls = token.split(":")
    if pkg == "aws":
        return getattr(importlib.import_module(f"pulumi_aws.{middle.split('/')[0]}"), cls)
    if pkg == "kubernetes":
        group, version = middle.rsplit("/", 1)
        module = group.split(".")[0]
        try:
            return getattr(importlib.import_module(f"pulumi_kubernetes.{module}.{version}"), cls)
        except (ImportError, AttributeError):
            return None
    raise ValueError(token)


def _floor(dump: str) -> None:
    """Registers the recorded resources through the same SDK classes with the recorded inputs: the SDK's cost."""
    import pulumi
    import pulumi_kubernetes as k8s
    from harness.render import _Mocks, _RecordingMonitor
    from pulumi.runtime import mocks as pmocks
    from pulumi.runtime.stack import run_pulumi_func, wait_for_rpcs
    from pulumi.runtime.sync_await import _sync_await

    recorded: list[dict[str, Any]] = json.loads(Path(dump).read_text())
    classes = {r["type"]: sdk_class(r["type"]) for r in recorded if r["custom"] and not r["type"].startswith("pulumi:")}

    def program(resources: list[dict[str, Any]]) -> None:
        # The same graph as ours: parents, explicit dependencies and provider references.
        by_name: dict[str, pulumi.Resource] = {}
        for r in resources:
            opts = pulumi.ResourceOptions(
                parent=by_name.get(r["parent"]) if r["parent"] else None,
                depends_on=[by_name[d] for d in r.get("dependencies", []) if d in by_name],
                provider=by_name.get(r.get("provider") or ""),
            )
            inputs = {k: v for k, v in r["inputs"].items() if not k.startswith("__")}
            if not r["custom"]:
                res: pulumi.Resource = pulumi.ComponentResource(r["type"], r["name"], None, opts)
            elif r["type"] == "pulumi:providers:kubernetes":
                res = k8s.Provider(r["name"], **{_snake(k): v for k, v in inputs.items()}, opts=opts)
            elif classes[r["type"]] is None:
                res = pulumi.CustomResource(r["type"], r["name"], inputs, opts)
            else:
                inputs.pop("apiVersion", None), inputs.pop("kind", None)
                res = classes[r["type"]](r["name"], opts=opts, **{_snake(k): v for k, v in inputs.items()})
            by_name[r["name"]] = res

    def go(resources: list[dict[str, Any]]) -> int:
        # The same runtime setting as harness.render.run_program: the cyclic collector paused while
        # the graph is registered (a property of running the SDK, not of our logic, so the floor gets it too).
        monitor = _RecordingMonitor(_Mocks())
        pmocks.set_mocks(_Mocks(), project="gpu-platform", stack="bench", preview=False, monitor=monitor)
        gc.disable()
        try:
            _sync_await(run_pulumi_func(lambda: program(resources)))
            _sync_await(wait_for_rpcs())
        finally:
            gc.enable()
        return len(monitor.recorded)

    go(recorded[: max(1, len(recorded) // 100)])  # the same warm-up share as ours
    m = measure(lambda: go(recorded))
    emit({**m, "resources": m.pop("result")})


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--teams", type=int, nargs="*", default=[10, 100, 1000])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--child", choices=["ours", "floor"])
    ap.add_argument("--dump")
    args = ap.parse_args()
    if args.child == "ours":
        return _ours(args.teams[0], args.dump)
    if args.child == "floor":
        return _floor(args.dump)

    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.teams:
            dump = f"{tmp}/resources-{n}.json"
            ours = [child(["bench.program_cost", "--child", "ours", "--teams", str(n), "--dump", dump])
                    for _ in range(args.repeat)]
            floor = [child(["bench.program_cost", "--child", "floor", "--dump", dump]) for _ in range(args.repeat)]
            best_o = min(ours, key=lambda x: x["seconds"])
            best_f = min(floor, key=lambda x: x["seconds"])
            if best_o["resources"] != best_f["resources"]:
                raise SystemExit(f"floor registered {best_f['resources']} resources, ours {best_o['resources']}")
            rows[n] = (best_o, best_f)
            print(f"N={n:>5}: {best_o['resources']:>6} resources  time ours/floor = "
                  f"{best_o['seconds'] / best_f['seconds']:.2f} ({best_o['seconds']:.2f} s / {best_f['seconds']:.2f} s)  "
                  f"peak memory ours/floor = {best_o['peak_mib'] / best_f['peak_mib']:.2f} "
                  f"({best_o['peak_mib']:.0f} / {best_f['peak_mib']:.0f} MiB)", flush=True)
    ok = all(o["seconds"] / f["seconds"] <= 1.3 and o["peak_mib"] / f["peak_mib"] <= 1.3 for o, f in rows.values())
    print(f"target ours/floor <= 1.3 at every N: {verdict(ok)}")
    if 100 in rows and 1000 in rows:
        growth = rows[1000][0]["seconds"] / rows[100][0]["seconds"]
        res_growth = rows[1000][0]["resources"] / rows[100][0]["resources"]
        floor_growth = rows[1000][1]["seconds"] / rows[100][1]["seconds"]
        print(f"t(1000)/t(100) = {growth:.2f} for {res_growth:.2f}x the resources; target <= 11: {verdict(growth <= 11)}")
        # The floor is the SDK alone: growth it shares is the SDK's (or the machine's), not our program's.
        print(f"floor t(1000)/t(100) = {floor_growth:.2f} (the SDK alone, same resources)")
        ok = ok and growth <= 11
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
