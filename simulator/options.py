"""The `simulate` command's options and their defaults, apart from the replay: `python -m platform_cli` builds
its whole parser for every command (`plugins`, run by scripts/pulumi-env before each Pulumi command, among
them), and the replay's modules import the local cluster, the components and the Pulumi SDK."""

from __future__ import annotations

import argparse

from .failures import LLAMA3_RATE
from .progress import PLAIN_EVERY_S

# The compressed replay aims at this many wall seconds unless --speed says otherwise (the PR check and
# the README's 10-minute budget for 2,000 jobs on 2 cores).
TARGET_WALL_S = 360.0
# ... and the default speed may go down to this many wall seconds when short jobs need it (the README's
# 10-minute budget; simulator/fidelity.py).
MAX_WALL_S = 600.0
# 8 trace hours of the prod stack at load 1.2 are about 2,400 jobs: the README's budget (2,000 jobs in
# under 10 minutes on 2 cores) with room for the API server, the busiest process of the replay.
DEFAULT_HOURS = 8.0
# How long a node the autoscaler adds takes to come (trace time), unless --scale-up-delay says: an assumption
# of the order of an EC2 GPU instance's launch, boot and join, not a measured figure (docs/what-if.md,
# "Elastic pools": give your fleet's own).
DEFAULT_SCALE_UP_S = 300.0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--stack", required=True, help="stack name (Pulumi.<stack>.yaml) or a stack file")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--trace", help="trace file (CSV with a header, or JSON Lines)")
    src.add_argument("--synthetic", type=int, metavar="SEED", help="a synthetic trace (Helios profile) from SEED")
    p.add_argument("--hours", type=float, help=f"trace hours to replay (default: {DEFAULT_HOURS:g} for --synthetic, "
                   "the trace's last submission plus its duration for --trace)")
    p.add_argument("--load", type=float, default=1.2, help="--synthetic: work offered per pool, times its capacity")
    p.add_argument("--speed", type=float, help=f"time compression (default: to fit {TARGET_WALL_S:g} s of wall time, "
                   f"up to {MAX_WALL_S:g} s when short jobs need a lower speed)")
    p.add_argument("--no-correction", action="store_true",
                   help="do not take the simulator's own per-job overhead out (pods run duration / speed, runs count "
                        "as held): to measure what the correction does")
    p.add_argument("--mode", default="pods", help="pods: every job a real Job with pods on the simulated nodes "
                   "(default); workloads: Kueue Workloads created directly and finished by the replay, Kueue still "
                   "deciding every admission (docs/what-if.md, Modes: much faster at seed scale, no pods, no node "
                   "failures)")
    p.add_argument("--progress-every", type=float, default=PLAIN_EVERY_S, metavar="S",
                   help=f"without a terminal, print the progress line every S seconds (default {PLAIN_EVERY_S:g}); "
                        "on a terminal it is redrawn in place")
    p.add_argument("--compare", metavar="OTHER", help="replay the same trace against another stack (name or file)")
    fails = p.add_argument_group("node failures (docs/what-if.md, Node failures)")
    fails.add_argument("--node-failure-rate", type=float, metavar="RATE",
                       help=f"GPU node failures per node-hour on every pool (Llama 3's pre-training: "
                            f"{LLAMA3_RATE:.3g})")
    fails.add_argument("--failures", metavar="FILE", help="scheduled node failures (CSV or JSON Lines: at, pool, "
                       "node, repair)")
    fails.add_argument("--failure-seed", type=int, default=1, help="seed of the failure times and of the nodes "
                       "they strike (default 1)")
    fails.add_argument("--repair-time", default="10m", help="how long a failed node is down (default 10m: EKS node "
                       "repair acts on a GPU fault after 10 minutes)")
    fails.add_argument("--spare-nodes", type=int, metavar="N", help="replay twice, without and with N spare nodes "
                       "in each pool the failures can strike (beyond capacity.max, in no quota), and compare")
    elastic = p.add_argument_group("elastic pools (docs/what-if.md, Elastic pools)")
    elastic.add_argument("--scale-up-delay", metavar="D", help="trace time a node the autoscaler adds takes to "
                         f"register (default {DEFAULT_SCALE_UP_S / 60:g}m, an assumption: give your fleet's)")
    elastic.add_argument("--scale-down-delay", metavar="D", help="trace time an empty added node stays (default: "
                         "the stack's, addons.clusterAutoscaler.scaleDownUnneededTime or its Karpenter pools' "
                         "consolidateAfter)")
    p.add_argument("--out", default=".local/simulate", help="output directory (default .local/simulate)")
    p.add_argument("--keep", action="store_true", help="leave the last cluster running")
    p.add_argument("--skip-unless-queues-changed", action="store_true",
                   help="with --compare: do nothing (exit 0) when the two configs queue alike (same pools, "
                        "cohorts, teams, priorities, preemption and Kueue settings)")
