"""A trace of two kinds (a Job and JobSets) replayed on an elastic pool: the replay follows the nodes that ran.

tests/simulate/elastic-kinds.csv on tests/simulate/stack.yaml: solo's 2-pod JobSet (2 x 8 H100, 10 min) on the
topology-aware `fill` pool, whole from the start; left's Job (8 L40S, 5 min) at 0 and right's 1-pod JobSet
(8 L40S, 5 min) at 1 min on `share`, which starts with no node. The session runs the JobSet controller (the
trace needs it, simulator/kinds.py) and Karpenter's KWOK provider with the delays given in trace time (5 min
each) compressed by the speed.

Known by construction, in trace time: Kueue admits both share jobs at once (the quota is there, the nodes are
not); no share node exists before the scale-up delay (300 s) has passed since left's pod asked for the first,
so left's pod waits at least that, and right's (a minute later) at least that less the minute: the scheduler
may give it the node launched for left's pod, and left's pod the next one (seen). Each run starts when its
pod runs; each share node then serves 300 s and stays empty the scale-down delay (300 s) before Karpenter
removes it: 2 nodes x 8 GPUs x 300 s = 1.333 GPU-h of elastic idle, at least 0.333 node-hours up for share and
never more than the 2 nodes allow. What the local controllers add on top is wall time, times the speed: Karpenter's
batching of pending pods, the scheduler and KWOK (SLACK_WALL at most, measured below), and, before an empty node
goes, Karpenter's own disruption loop (REMOVAL_WALL: it looks for empty nodes every 10 s and validates the command
15 s later), which does not shrink with the speed.

The horizon leaves room for all of it: solo's 10-minute JobSet (30 s of wall time) once took more than the 20
minutes then given under CI load (JobSet controller, Kueue and KWOK on two loaded cores), and the share nodes go
about 20 minutes in (added after 5, 5 of work, 5 empty, then Karpenter's loop, 25 s of wall = 500 s). With 20
minutes the horizon cut the nodes' last minutes off, so the cost bounds below held only because of the cut: at 30
they must hold for the nodes as they ran, and do with Karpenter's loop counted (REMOVAL_WALL).
"""

from __future__ import annotations

import pytest

from gpu_platform.stack_files import load_plan
from simulator.cli import ScaleDelays, simulate_all
from simulator.stackfile import write_kubernetes_layer
from simulator.trace import load
from tests.conftest import ROOT
from tests.realtools import CLUSTER_TOOLS, ENGINE_TOOLS, TIMINGS, require

HERE = ROOT / "tests" / "simulate"
STACK, TRACE = HERE / "stack.yaml", HERE / "elastic-kinds.csv"
SPEED = 20.0
HORIZON = 30 * 60.0
SCALE_UP = SCALE_DOWN = 300.0          # trace seconds: 15 s of wall time each at 20x
RUN = 300.0
RIGHT_AT = 60.0                        # right's submission
NODE_GPUS = 8
# Wall seconds the local controllers may add to a delay: Karpenter batches pending pods (1 s idle, 10 s at most)
# and checks empty nodes on a loop of its own; the scheduler binds, KWOK runs the pod.
SLACK_WALL = 20.0
# Wall seconds between an empty node's consolidateAfter running out and its removal, by Karpenter's constants:
# the disruption controller's polling period (10 s) and the delay before it validates and executes an emptiness
# command (commandValidationDelay, 15 s); kubernetes-sigs/karpenter v1.15.0 pkg/controllers/disruption/
# controller.go pollingPeriod, consolidation.go commandValidationDelay, emptiness.go Validate.
REMOVAL_WALL = 10.0 + 15.0
ROUNDING = 0.01


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict:
    require(CLUSTER_TOOLS + ENGINE_TOOLS + ("karpenter-kwok", "jobset-controller"))
    tmp = tmp_path_factory.mktemp("simulate-elastic-kinds")
    layer = write_kubernetes_layer(STACK, tmp / "stack.yaml")
    plan = load_plan(None, str(layer))[1]
    jobs = load(TRACE, plan)
    assert [(j.team, j.pool, j.kind) for j in jobs] == [("solo", "fill", "jobset"), ("left", "share", "job"),
                                                        ("right", "share", "jobset")]
    out = simulate_all([("elastic-kinds", layer, plan)], jobs, HORIZON, SPEED, tmp / "out", progress=lambda line: None,
                       delays=ScaleDelays(SCALE_UP, SCALE_DOWN))
    TIMINGS["simulate (elastic-kinds): wall"] = out["elastic-kinds"]["simulator"]["total_s"]
    return out["elastic-kinds"]


def test_a_job_and_jobsets_run_and_finish_on_whole_and_elastic_pools(report: dict) -> None:
    assert report["jobs_finished"] == 3, report["teams"]
    for team in ("solo", "left", "right"):
        t = report["teams"][team]
        assert (t["finished"], t["failed"], t["preemptions"]) == (1, 0, 0), (team, t)
    # The JobSet on the whole pool: 16 GPUs for its 10 minutes (plus the chain a real cluster adds, once).
    added = report["simulator"]["overhead"]["added_per_run_s"]
    assert report["teams"]["solo"]["gpu_hours_used"] == pytest.approx(16 * (600 + added) / 3600, abs=ROUNDING)


def test_pods_on_an_empty_pool_wait_for_their_nodes_and_the_wait_shows(report: dict) -> None:
    n = report["nodes"]
    share, fill = n["pools"]["share"], n["pools"]["fill"]
    assert (fill["nodes_at_start"], fill["nodes_peak"], fill["nodes_added"]) == (2, 2, 0), fill
    assert (share["nodes_at_start"], share["nodes_peak"], share["nodes_added"]) == (0, 2, 2), share
    assert n["scale_up_delay_s"] == n["scale_down_delay_s"] == 300.0, n
    # Both share pods ran on a node added after their job's submission: the first pod created waited at least the
    # scale-up delay, the other at least the delay less the minute between them (two pods: p50 is the shorter).
    assert (share["scale_up_pods"], share["scale_up_jobs"], fill["scale_up_pods"]) == (2, 2, 0), share
    assert SCALE_UP - RIGHT_AT <= share["scale_up_p50_s"], share
    assert SCALE_UP <= share["scale_up_max_s"] <= RIGHT_AT + SCALE_UP + SLACK_WALL * SPEED, share
    # Admitted at once (Kueue's quota does not wait for nodes), running only once a node came.
    for team, floor in (("left", SCALE_UP), ("right", SCALE_UP - RIGHT_AT)):
        t = report["teams"][team]
        assert t["wait_p50_h"] * 3600 <= SLACK_WALL * SPEED, (team, t)
        assert floor <= t["wait_to_run_p50_h"] * 3600 + 3.6 <= RIGHT_AT + SCALE_UP + 2 * SLACK_WALL * SPEED, (team, t)
    # ... so the quota was held while the nodes were added: 8 GPUs each, at least the scale-up delay.
    assert share["held_without_node_gpu_hours"] >= 2 * NODE_GPUS * SCALE_UP / 3600 - ROUNDING, share
    # ... and each run counts its whole duration from when its pod ran (it was not cut by the wait).
    left = report["teams"]["left"]
    assert left["gpu_hours_used"] >= NODE_GPUS * (SCALE_UP + RUN) / 3600 - ROUNDING, left


def test_cost_and_idle_follow_the_nodes_that_ran(report: dict) -> None:
    share = report["nodes"]["pools"]["share"]
    # Each share node: its run (300 s) and the scale-down delay (300 s) at least; at most that plus, in wall
    # time, the wait for its pod to be bound and run (SLACK_WALL), and Karpenter's loop before it removes an
    # empty node (REMOVAL_WALL) with SLACK_WALL again for the removal itself; never the whole horizon.
    floor_h = 2 * (RUN + SCALE_DOWN) / 3600
    ceiling_h = floor_h + 2 * (2 * SLACK_WALL + REMOVAL_WALL) * SPEED / 3600
    assert floor_h - ROUNDING <= share["node_hours"] <= ceiling_h, share
    assert share["node_hours"] < 2 * HORIZON / 3600, share
    assert share["usd"] == pytest.approx(share["node_hours"] * 30.131, abs=0.05), share
    assert share["usd"] < share["usd_at_max"] == round(2 * 30.131 * HORIZON / 3600, 2), share
    # Empty nodes up for the scale-down delay (and Karpenter's loop): elastic idle, no reserved idle on on-demand pools.
    elastic = 2 * NODE_GPUS * SCALE_DOWN / 3600
    elastic_ceiling = elastic + 2 * NODE_GPUS * (SLACK_WALL + REMOVAL_WALL) * SPEED / 3600
    assert elastic - ROUNDING <= share["elastic_idle_gpu_hours"] <= elastic_ceiling, share
    assert report["nodes"]["reserved_idle_gpu_hours"] == 0.0
    # The cost is what the nodes up cost (share's and fill's), not every pool at capacity.max.
    c, n = report["cost"], report["nodes"]
    assert c["total_usd"] == pytest.approx(n["usd"], abs=0.05) and c["total_usd"] < n["usd_at_max"], (c, n)
