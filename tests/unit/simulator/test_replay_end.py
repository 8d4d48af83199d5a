"""When a replay may end before its horizon (simulator/replay.py can_stop_early, nothing_left): only where nothing
could change afterwards. World: the plan of tests/simulate/stack.yaml and recorded events; the replay itself, and
its early end on the live cluster, run in tests/simulate/test_simulate.py."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest
import yaml

from gpu_platform.stack_files import load_plan
from simulator.failures import NodeFailure
from simulator.records import Event, Run
from simulator.replay import can_stop_early, nothing_left
from simulator.trace import TraceJob
from simulator.watch import _Pod
from tests.conftest import ROOT

SIM_STACK = ROOT / "tests" / "simulate" / "stack.yaml"


@pytest.fixture(scope="module")
def plans(tmp_path_factory):
    """The stack as shipped (pools of min 0, max 2: they scale) and with every pool whole (min = max)."""
    tmp_path = tmp_path_factory.mktemp("plans")
    doc = yaml.safe_load(SIM_STACK.read_text())
    for pool in doc["config"]["gpu-platform:platform"]["pools"]:
        pool["capacity"]["min"] = pool["capacity"]["max"]
    whole = tmp_path / "whole.yaml"
    whole.write_text(yaml.safe_dump(doc))
    return load_plan(None, str(SIM_STACK))[1], load_plan(None, str(whole))[1]


def test_only_a_replay_on_whole_pools_without_failures_or_spares_may_end_early(plans) -> None:
    scaling, whole = plans
    assert can_stop_early(whole, None, None) is True
    assert can_stop_early(whole, None, {}) is True
    # Karpenter would still remove empty nodes after its delay: the node-hours go on changing.
    assert can_stop_early(scaling, None, None) is False
    # A repair may come after the last job, and a schedule (even empty) is watched to the horizon.
    assert can_stop_early(whole, [NodeFailure(at=300.0, pool="fill", repair_s=600.0)], None) is False
    assert can_stop_early(whole, [], None) is False
    assert can_stop_early(whole, None, {"fill": 1}) is False


def _watch(*pods: _Pod, finished: int = 2) -> SimpleNamespace:
    return SimpleNamespace(lock=threading.Lock(), pods={str(k): p for k, p in enumerate(pods)},
                           counts={"finished": finished})


def test_nothing_is_left_once_every_due_job_finished_and_no_pod_is_pending_or_running() -> None:
    jobs = [TraceJob(1, 0.0, "solo", "fill", 8, 1, 60.0), TraceJob(2, 0.0, "left", "share", 4, 1, 60.0)]
    run = Run(jobs=jobs, speed=2.0, horizon=330.0)
    run.events = [Event(0.0, 0, "submitted"), Event(0.0, 1, "submitted"), Event(1.0, 0, "admitted", "fill", 8),
                  Event(62.0, 0, "finished", "fill", 8, "Succeeded")]
    done = _Pod(0, "solo", "job-0-a", "fill-0", "Succeeded", False, 8)
    assert nothing_left(run, _watch(done, finished=1), {0, 1}) is False   # job 1 has not finished
    assert nothing_left(run, _watch(done), {0, 1}) is False   # a count of 2 (say a probe's) is not job 1's finish
    run.events.append(Event(70.0, 1, "finished", "share", 4, "Failed"))   # a failed run holds no quota either
    assert nothing_left(run, _watch(done), {0, 1}) is True
    # A pod still Running (a RayJob's head before its deletion) or Pending keeps the replay going.
    assert nothing_left(run, _watch(done, _Pod(1, "left", "job-1-b", "share-0", "Running", False)), {0, 1}) is False
    assert nothing_left(run, _watch(_Pod(1, "left", "job-1-c", "", "Pending", False)), {0, 1}) is False
    # One being deleted is on its way out.
    assert nothing_left(run, _watch(_Pod(1, "left", "job-1-b", "share-0", "Running", True)), {0, 1}) is True


def test_the_report_counts_the_rest_of_the_horizon_idle_and_says_where_the_replay_stopped(plans) -> None:
    from simulator.metrics import compute
    from simulator.report import text

    _, whole = plans
    jobs = [TraceJob(1, 0.0, "solo", "fill", 8, 1, 60.0)]
    run = Run(jobs=jobs, speed=2.0, horizon=360.0, wall_seconds=33.0, idle_from=64.8)
    run.events = [Event(0.0, 0, "submitted"), Event(0.0, 0, "admitted", "fill", 8),
                  Event(60.0, 0, "finished", "fill", 8, "Succeeded")]
    r = compute(run, whole)
    assert r["simulator"]["stopped_idle_at_h"] == 0.018
    assert r["simulator"]["wall_over_compressed"] == 0.183         # 33 s of the horizon's 180 s of wall time
    # The pool's 16 GPUs over the whole 360 s horizon, 8 of them for 60 s: the stop changes no figure.
    assert r["pools"]["fill"]["utilization"] == round(8 * 60 / (16 * 360), 4) == 0.0833
    assert "stopped at 0.018 h: every job had finished and the rest of the horizon is idle" in text(r, "t")
    run.idle_from = None
    assert "stopped at" not in text(compute(run, whole), "t")
