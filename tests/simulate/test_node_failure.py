"""A node failure replayed on the live local cluster: the what-if's failure injection drives
the real controllers, and the report's GPU-hours lost are the answer known by construction.

tests/simulate/node-failure.csv: solo's 2-node gang (2 x 8 H100, 10 minutes) fills tests/simulate/stack.yaml's
topology-aware `fill` pool; left's job runs on `share`. node-failure-schedule.csv: a node of `fill` fails 4
minutes in (the replay picks a busy one: both are the gang's) and is down 4 minutes. The node lifecycle
controller taints it, the taint eviction controller evicts the gang's pod there once its toleration of a
lost node runs out (the template's 60 s, compressed with the replay), and Kueue, with no free node to
replace it, evicts the whole gang and requeues it; once the node is back the gang runs again from the start.

Known answer, in trace time: the run lost 16 GPUs x 240 s of work, its other node's 8 GPUs waited 60 s (the
toleration) until the gang was stopped, and the failed node's 8 GPUs were down 240 s: (3,840 + 480 + 1,920)
GPU-s = 1.733 GPU-h. The replay's differs by what the controllers take on top of the toleration (the node
lifecycle controller's 5 s monitor period, the eviction, Kueue's reaction: DETECTION_SLACK_WALL of wall
time at most, times the speed, on the healthy node's 8 GPUs) and by Kueue's admission of the gang (the run
starts that much after 0, measured: the report's admission time, times the speed, on 16 GPUs).
"""

from __future__ import annotations

import pytest

from gpu_platform.jobs import NODE_LOST_TOLERATION_SECONDS
from gpu_platform.stack_files import load_plan
from simulator import failures as node_failures
from simulator.cli import simulate_all
from simulator.stackfile import write_kubernetes_layer
from simulator.trace import load
from tests.conftest import ROOT
from tests.realtools import CLUSTER_TOOLS, ENGINE_TOOLS, TIMINGS, require

HERE = ROOT / "tests" / "simulate"
STACK, TRACE, SCHEDULE = HERE / "stack.yaml", HERE / "node-failure.csv", HERE / "node-failure-schedule.csv"
SPEED = 10.0               # the template's 60 s toleration is 6 s of wall time
HORIZON = 20 * 60.0        # the gang's second run ends at about 8 + 10 minutes
FAILURE_AT = REPAIR = 240.0
GANG_GPUS, NODE_GPUS = 16, 8
DURATION = 600.0
# Wall seconds the controllers may add to the toleration before the gang is stopped, and to a repaired node
# before Kueue admits onto it: the node lifecycle controller's 5 s monitor period, Kueue's reaction (about
# 1 s, 2-3 s on loaded cores); measured here: 4.5 s and 2 s on a quiet machine, 10.1 s to the stop while
# CI's three cluster lanes shared the two cores.
DETECTION_SLACK_WALL = 15.0
# The injector fails and repairs on the replay's clock: its thread wakes within this much wall time.
INJECTOR_JITTER_WALL = 1.0
# The report's rounding (3 decimals of GPU-hours, of hours for the delay) and the submission's own lag.
ROUNDING_GPU_H = 0.005


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict:
    require(CLUSTER_TOOLS + ENGINE_TOOLS)
    tmp = tmp_path_factory.mktemp("simulate-node-failure")
    layer = write_kubernetes_layer(STACK, tmp / "stack.yaml")
    plan = load_plan(None, str(layer))[1]
    failures = node_failures.load(SCHEDULE, plan, node_failures.DEFAULT_REPAIR_S)
    assert [(f.at, f.pool, f.node, f.repair_s) for f in failures] == [(FAILURE_AT, "fill", None, REPAIR)]
    out = simulate_all([("node-failure", layer, plan)], load(TRACE, plan), HORIZON, SPEED, tmp / "out",
                       progress=lambda line: None, failures=failures)
    TIMINGS["simulate (node-failure): wall"] = out["node-failure"]["simulator"]["total_s"]
    return out["node-failure"]


def test_a_gang_that_loses_a_node_is_requeued_not_failed_and_completes(report: dict) -> None:
    f = report["failures"]
    (event,) = f["events"]
    # The failure struck a node of the gang (both are) and only the gang: left's job on `share` ran on.
    assert event["pool"] == "fill" and event["node"] in ("fill-0", "fill-1"), event
    assert event["jobs"] == [{"job": 0, "line": 9, "units": NODE_GPUS}], event
    assert abs((event["repaired_h"] - event["t_h"]) * 3600 - REPAIR) <= INJECTOR_JITTER_WALL * SPEED + 1, event
    # Requeued whole (Kueue's NodeFailures eviction), not restarted in place, not failed; it ran again.
    assert (f["jobs_hit"], f["requeued"], f["restarted"], f["not_recovered"]) == (1, 1, 0, 0), f
    solo, left = report["teams"]["solo"], report["teams"]["left"]
    assert (solo["finished"], solo["failed"], solo["preemptions"]) == (1, 0, 0), solo
    assert (left["finished"], left["gpu_hours_lost"]) == (1, 0), left
    # Stopped after the toleration and what the controllers add to it; running again once the node was back.
    toleration = NODE_LOST_TOLERATION_SECONDS
    assert toleration <= f["stopped_p50_s"] <= toleration + DETECTION_SLACK_WALL * SPEED, f
    admission = report["simulator"]["kueue_admission_max_s"] * SPEED
    delay = f["delay_max_h"] * 3600
    # (the report rounds the delay to 3.6 s)
    assert FAILURE_AT + REPAIR - admission - 4 <= delay <= FAILURE_AT + REPAIR + DETECTION_SLACK_WALL * SPEED + 4, f


def test_the_gpu_hours_lost_are_the_known_answer(report: dict) -> None:
    f = report["failures"]
    admission = report["simulator"]["kueue_admission_max_s"] * SPEED    # trace s before the gang's run started
    redone = GANG_GPUS * FAILURE_AT / 3600
    stalled = (GANG_GPUS - NODE_GPUS) * NODE_LOST_TOLERATION_SECONDS / 3600
    down = NODE_GPUS * REPAIR / 3600
    jitter = INJECTOR_JITTER_WALL * SPEED
    assert redone - GANG_GPUS * admission / 3600 - ROUNDING_GPU_H <= f["work_redone_gpu_hours"] \
        <= redone + GANG_GPUS * jitter / 3600 + ROUNDING_GPU_H, f
    assert stalled - ROUNDING_GPU_H <= f["stalled_gpu_hours"] \
        <= stalled + NODE_GPUS * DETECTION_SLACK_WALL * SPEED / 3600 + ROUNDING_GPU_H, f
    assert abs(f["capacity_down_gpu_hours"] - down) <= NODE_GPUS * jitter / 3600 + ROUNDING_GPU_H, f
    known = redone + stalled + down    # 1.733 GPU-h
    assert known - GANG_GPUS * admission / 3600 - NODE_GPUS * jitter / 3600 - ROUNDING_GPU_H <= f["gpu_hours_lost"] \
        <= known + (GANG_GPUS * jitter + NODE_GPUS * DETECTION_SLACK_WALL * SPEED) / 3600 + ROUNDING_GPU_H, f
    # The gang's GPU-hours: the lost run and the whole second one (16 GPUs x 10 minutes, plus the idle chain).
    o = report["simulator"]["overhead"]
    second = GANG_GPUS * (DURATION + o["added_per_run_s"]) / 3600
    assert report["teams"]["solo"]["gpu_hours_used"] == pytest.approx(
        second + report["teams"]["solo"]["gpu_hours_lost"], abs=0.01), (report["teams"]["solo"], o)
