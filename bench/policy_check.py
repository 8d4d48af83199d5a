"""Benchmark 3, policy check: the pack's resource and stack rules over rendered 100- and 1000-team stacks.

Targets: t(1000)/t(100) <= 11 (no quadratic stack rules) and the 1000-team check under five seconds.
Rendering is not timed; only `check_resources`, the function `python -m gpu_platform check` runs.

    python -m bench.policy_check [--repeat 3]
"""

from __future__ import annotations

import argparse
import sys
import time

from bench.common import verdict
from bench.synth import stack_config


def resources(teams: int) -> list[dict]:
    from components.program import run
    from components.render import run_program

    return [r.to_json() for r in run_program(run, f"bench{teams}", stack_config(teams)).custom]


def best(data: list[dict], repeat: int) -> tuple[float, int]:
    from policies.gpu_policies.offline import check_resources

    times, found = [], 0
    for _ in range(repeat):
        started = time.perf_counter()
        found = len(check_resources(data))
        times.append(time.perf_counter() - started)
    return min(times), found


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    small_r, big_r = resources(100), resources(1000)
    small, v_small = best(small_r, args.repeat)
    big, v_big = best(big_r, args.repeat)
    growth = big / small
    print(f"check N=100: {len(small_r)} resources, {v_small} violations; N=1000: {len(big_r)} resources, {v_big} violations")
    print(f"t(1000)/t(100) = {growth:.2f} for {len(big_r) / len(small_r):.2f}x the resources; target <= 11: {verdict(growth <= 11)}")
    print(f"N=1000 check: {big / 5.0:.3f} of the 5 s budget: {verdict(big < 5.0)}")
    sys.exit(0 if growth <= 11 and big < 5.0 else 1)


if __name__ == "__main__":
    main()
