"""Benchmark 3, policy check: the pack's resource and stack rules over rendered 100- and 1000-team stacks.

Targets: t(1000)/t(100) <= 11 (no quadratic stack rules) and the 1000-team check under five seconds.
Rendering is not timed; only `check_resources`, the function `python -m platform_cli check` runs.

Each size is rendered once, written as `render` writes resources.json, and checked in a fresh interpreter
that reads it back (the `check --resources resources.json` path of CI): checking both sizes in the
process that rendered them measured the heap the 1000-team render leaves behind as much as the rules
(t(1000)/t(100) 12.9-13.8 in-process, 11.6 in fresh interpreters, same code, same quiet machine).
Rounds alternate the sizes so that other load drifting over the run reaches both; the best time counts.
The number of Python function calls per check is printed too: it is deterministic and tells an
algorithm that grows faster than the stack apart from the memory hierarchy (the 100-team resources
take ~5 MiB of Python objects, the 1000-team ones ~49 MiB: one fits this machine's 32 MiB L3 cache,
the other does not, and every call gets a little slower).

    python -m bench.policy_check [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from bench.common import child, emit, verdict
from bench.synth import stack_config

INNER = 3  # checks per child; the best counts


def render(teams: int, out: Path) -> int:
    from components.program import run
    from harness.render import run_program

    data = [r.to_json() for r in run_program(run, f"bench{teams}", stack_config(teams)).custom]
    out.write_text(json.dumps(data))
    return len(data)


def _check_child(path: str) -> None:
    import cProfile
    import pstats

    from policies.gpu_policies.offline import check_resources

    data = json.loads(Path(path).read_text())
    times, found = [], 0
    for _ in range(INNER):
        started = time.perf_counter()
        found = len(check_resources(data))
        times.append(time.perf_counter() - started)
    profile = cProfile.Profile()
    profile.runcall(check_resources, data)
    calls = sum(row[1] for row in pstats.Stats(profile).stats.values())  # type: ignore[attr-defined]
    emit({"seconds": min(times), "violations": found, "resources": len(data), "calls": calls})


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3, help=f"rounds, each a fresh interpreter per size ({INNER} checks each)")
    ap.add_argument("--child")
    args = ap.parse_args()
    if args.child:
        return _check_child(args.child)

    with tempfile.TemporaryDirectory() as tmp:
        paths = {n: Path(tmp) / f"resources-{n}.json" for n in (100, 1000)}
        for n, path in paths.items():
            render(n, path)
        runs: dict[int, list[dict]] = {100: [], 1000: []}
        for _ in range(args.repeat):
            for n, path in paths.items():
                runs[n].append(child(["bench.policy_check", "--child", str(path)]))
    small, big = (min(runs[n], key=lambda r: r["seconds"]) for n in (100, 1000))
    growth = big["seconds"] / small["seconds"]
    print(f"check N=100: {small['resources']} resources, {small['violations']} violations, {small['seconds']:.3f} s; "
          f"N=1000: {big['resources']} resources, {big['violations']} violations, {big['seconds']:.3f} s")
    print(f"t(1000)/t(100) = {growth:.2f} for {big['resources'] / small['resources']:.2f}x the resources; "
          f"target <= 11: {verdict(growth <= 11)}")
    print(f"function calls c(1000)/c(100) = {big['calls'] / small['calls']:.2f} (deterministic; a quadratic rule "
          f"would make ~100)")
    print(f"N=1000 check: {big['seconds'] / 5.0:.3f} of the 5 s budget: {verdict(big['seconds'] < 5.0)}")
    sys.exit(0 if growth <= 11 and big["seconds"] < 5.0 else 1)


if __name__ == "__main__":
    main()
