"""Benchmark 2, validation and plan: parse + cross-check + plan a 1000-team spec; target under one second.

Reported as the ratio to the one-second budget, with the 100-team time for scale.

    python -m bench.validate_plan [--teams 1000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import sys
import time

from bench.common import verdict
from bench.synth import platform
from gpu_platform.plan import build_plan
from gpu_platform.spec import load_platform


def best(teams: int, repeat: int) -> float:
    raw = platform(teams)
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        build_plan(load_platform(raw, "us-east-1"), "us-east-1")
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--teams", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    small, big = best(args.teams // 10, args.repeat), best(args.teams, args.repeat)
    print(f"validate+plan N={args.teams}: {big / 1.0:.3f} of the 1 s budget; "
          f"t({args.teams})/t({args.teams // 10}) = {big / small:.2f}")
    ok = big < 1.0
    print(f"target under one second: {verdict(ok)}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
