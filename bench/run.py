"""Every benchmark, one after the other (never two at once: they measure a 2-core machine), then a summary.

    python -m bench.run [--only program_cost validate_plan policy_check engine] [--repeat N]

Each benchmark runs as `python -m bench.<name>` in its own interpreter and prints its own ratio lines;
the summary repeats every line that states a target with its verdict. Exit status is non-zero when a
target fails or a benchmark errors; a skipped one (engine without the tool chain) does not fail the run.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from dataclasses import dataclass

from bench.common import ROOT
from localcluster.signals import interrupt_on_sigterm

BENCHMARKS = ("program_cost", "validate_plan", "policy_check", "engine")
TITLES = {
    "program_cost": "1 program cost (mocks, ours vs floor, N=10/100/1000)",
    "validate_plan": "2 validation and plan (N=1000)",
    "policy_check": "3 policy check (N=100 vs 1000)",
    "engine": "4 real engine (pulumi vs kubectl, N=100)",
}
SKIPPED = 3  # bench.engine's exit status when the tool chain or local cluster is missing


@dataclass
class Outcome:
    name: str
    returncode: int
    seconds: float
    verdicts: list[str]

    @property
    def status(self) -> str:
        return {0: "ok", 1: "FAIL", SKIPPED: "skipped"}.get(self.returncode, f"ERROR (exit {self.returncode})")


def run_one(name: str, extra: list[str]) -> Outcome:
    """Stream the benchmark's output as it comes and keep the lines that carry a verdict."""
    print(f"\n=== benchmark {TITLES[name]}: python -m bench.{name} {' '.join(extra)}".rstrip(), flush=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", f"bench.{name}", *extra], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
    verdicts: list[str] = []
    assert proc.stdout is not None
    try:
        for line in proc.stdout:
            print(line, end="", flush=True)
            text = line.strip()
            if text.endswith((": ok", ": FAIL")) or "skipped" in text or "for comparison" in text:
                verdicts.append(text)
    except KeyboardInterrupt:
        # the benchmark stops the clusters it started on SIGTERM: give it the time to
        proc.terminate()
        proc.wait(timeout=180)
        raise
    rc = proc.wait()
    return Outcome(name, rc, time.perf_counter() - started, verdicts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", nargs="+", choices=BENCHMARKS, default=list(BENCHMARKS))
    ap.add_argument("--repeat", type=int, help="runs per measurement for benchmarks 1-3 (best counts; their defaults otherwise)")
    args = ap.parse_args()
    interrupt_on_sigterm()

    load = os.getloadavg()
    print(f"{os.cpu_count()} cores; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (1/5/15 min)")
    outcomes = []
    for name in args.only:
        extra = ["--repeat", str(args.repeat)] if args.repeat and name != "engine" else []
        outcomes.append(run_one(name, extra))

    load = os.getloadavg()
    print(f"\n=== summary (load average now {load[0]:.2f} {load[1]:.2f} {load[2]:.2f})")
    for o in outcomes:
        print(f"{TITLES[o.name]:<55} {o.status:<8} {o.seconds:7.0f} s")
        for v in o.verdicts:
            print(f"    {v}")
    failed = [o.name for o in outcomes if o.returncode not in (0, SKIPPED)]
    if failed:
        print(f"failed: {', '.join(failed)}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
