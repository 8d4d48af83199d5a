"""Benchmark 2, validation and plan: parse + cross-check + plan a 1000-team spec; target under one second.

Reported as the ratio to the one-second budget, with the 100-team time for scale. The same spec with
errors in it (a team in a cohort that does not exist, one asking for more GPUs than its pool has) must be
rejected, with every path, within the same budget: the error path may not be the slow one. (This is the
timing that tests/unit/gpu_platform/test_spec.py used to assert per bad config; correctness tests assert no times.)

    python -m bench.validate_plan [--teams 1000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import sys
import time

from bench.common import verdict
from bench.synth import platform
from gpu_platform.plan import build_plan
from gpu_platform.spec import SpecError, load_platform


def best(teams: int, repeat: int) -> float:
    raw = platform(teams)
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        build_plan(load_platform(raw, "us-east-1"), "us-east-1")
        times.append(time.perf_counter() - started)
    return min(times)


def best_rejected(teams: int, repeat: int) -> float:
    raw = platform(teams)
    raw["teams"][0]["cohort"] = "nowhere"
    quota = next(iter(raw["teams"][-1]["quotas"].values()))
    quota["units"] = 10**6
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        try:
            load_platform(raw, "us-east-1")
        except SpecError as err:
            paths = {p.path for p in err.problems}
            assert any(p.startswith("teams[0].cohort") for p in paths), paths
        else:
            raise AssertionError("the broken spec was accepted")
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
    rejected = best_rejected(args.teams, args.repeat)
    print(f"rejecting a broken N={args.teams} spec: {rejected / 1.0:.3f} of the 1 s budget")
    ok = big < 1.0 and rejected < 1.0
    print(f"target under one second: {verdict(ok)}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
