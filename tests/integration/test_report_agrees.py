"""The what-if replay's report and the live report agree on a replayed trace: one trace, replayed by
the simulator (simulator/replay.py, simulator/metrics.py) on a local cluster that runs its Prometheus, then
read back by `python -m platform_cli report` (platform_cli/usage_report.py) over exactly the replay's window.
Both compute their figures with gpu_platform/useful_work.py; this test holds them to the same numbers.

The trace (tests/integration/report-agrees.csv, on tests/integration/report-agrees.yaml: one node of 8 H100 at
$6.88 a GPU-hour) is replayed at SPEED 4 for HORIZON 240 s of trace time (60 s of wall time). Prometheus samples
wall time: the live report reads the replay's wall window with `time_scale=SPEED`, so every GPU-hour (and its
cost) is in trace time, as the replay's are (docs/report.md, "A replay and the live report"). The replay is not
corrected (simulator/fidelity.py): both reports then measure the same runs, the quota as Kueue held it, and a
difference between them is a difference of definition or of sampling, nothing else.

Known by construction, in trace time: vision 2 GPUs x 120 s at 50% busy (0.0667 allocated, 0.0333 busy GPU-h),
finished; speech 2 GPUs x 60 s at 25% that fails (0.0333 allocated, 0.0083 busy, 0.0333 of a failed run), and
2 GPUs x 120 s busy throughout (0.0667, 0.0667), finished. Capacity 8 GPUs x 240 s = 0.5333 GPU-h, $3.67, over 2
finished jobs: $1.83 each. Each run also holds its quota for what the local cluster adds around it (admission to
the pod running, the pod's end to the release): what the replay measured of it, the largest residual of its
`overhead` section (the quota came back this much later than the trace says, wall seconds per run), which grows
with the machine's load (3.8 s per run at a load average of 23 on 2 cores, 9 s at 34). A run's own GPU time
(busy, failed) is its pods' hold on their GPUs in both reports (gpu_platform/useful_work.py), not that quota.
"""

from __future__ import annotations

import json
import os
import time
import urllib.parse
import urllib.request

import pytest

from components import alerts
from gpu_platform.stack_files import load_plan
from localcluster.prometheus import KSM_JOB, local_url
from localcluster.session import Session
from platform_cli import usage_report as ur
from platform_cli.prometheus_api import Prometheus
from simulator import kinds
from simulator.metrics import compute
from simulator.replay import replay
from simulator.stackfile import write_kubernetes_layer
from simulator.trace import load
from tests.conftest import ROOT
from tests.realtools import CLUSTER_TOOLS, ENGINE_TOOLS, TIMINGS, require

HERE = ROOT / "tests" / "integration"
STACK, TRACE = HERE / "report-agrees.yaml", HERE / "report-agrees.csv"
# Apart from every other lane's cluster (tests/integration/conftest.py's, the simulator's, the live layer's).
APISERVER_PORT = int(os.environ.get("GPU_PLATFORM_AGREE_APISERVER_PORT", "26543"))
ETCD_PORT = int(os.environ.get("GPU_PLATFORM_AGREE_ETCD_PORT", "24890"))
SPEED = 4.0
HORIZON = 240.0
PRICE = 6.88                 # p5.48xlarge: $55.04 a node-hour over 8 GPUs
CAPACITY_GPUS = 8
# Prometheus scrapes Kueue and the telemetry, and evaluates the rules, every SCRAPE_S; the telemetry reads the
# cluster as often (localcluster/prometheus.SCRAPE_INTERVAL_ENV); the report samples every STEP_S.
SCRAPE_S = 1
STEP_S = 1.0
# How far the live report's length of one run may be from the replay's, in wall seconds. Allocated (Kueue's
# usage): the live report sees each edge up to a scrape and an evaluation late, the replay's watch at once, and
# the two lags differ by at most that much; sampling rounds each edge to a step. Busy and a run's own GPU-hours
# (DCGM, per pod): the telemetry's read of the cluster comes first, and the telemetry holds a GPU for a pod from
# its binding, the replay from its watch seeing the pod Running, a second apart at most.
ALLOCATED_EDGE_WALL = 2 * SCRAPE_S + STEP_S
POD_EDGE_WALL = ALLOCATED_EDGE_WALL + SCRAPE_S + 1.0
# The replay's residuals are rounded to the millisecond; its team figures to 1e-4 GPU-h.
ROUNDING_WALL, ROUNDING_H = 0.001, 0.0001
# After the window: the last scrape, evaluation and telemetry read reach Prometheus.
SETTLE_S = 3 * SCRAPE_S + 1.0


def gpu_h(gpus: float, seconds: float) -> float:
    return gpus * seconds / 3600


def edge(gpus: float, wall_s: float) -> float:
    """GPU-hours (trace time) of `wall_s` wall seconds of `gpus` GPUs."""
    return gpu_h(gpus, wall_s * SPEED)


def prometheus_value(url: str, expr: str) -> float:
    query = urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(f"{url}/api/v1/query?{query}", timeout=10) as resp:
        return sum(float(r["value"][1]) for r in json.load(resp)["data"]["result"])


def wait_for(check, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except OSError:
            pass
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, dict]:
    require(CLUSTER_TOOLS + ENGINE_TOOLS + ("prometheus",))
    tmp = tmp_path_factory.mktemp("report-agrees")
    layer = write_kubernetes_layer(STACK, tmp / "stack.yaml")
    plan = load_plan(None, str(layer))[1]
    jobs = load(TRACE, plan)
    session = Session(tmp / "state", layer, apiserver_port=APISERVER_PORT, etcd_port=ETCD_PORT,
                      workloads=kinds.workloads_setting({j.kind for j in jobs}), prometheus=True,
                      scrape_interval=f"{SCRAPE_S}s")
    t0 = time.perf_counter()
    try:
        TIMINGS["report agrees: cluster start"] = session.start()
        TIMINGS["report agrees: deploy"] = session.deploy()
        url = local_url(session.cluster_dir)
        assert url, "the cluster runs no Prometheus"
        # Scraping Kueue (the platform's ClusterQueues known to the rules) and the telemetry before the first job.
        wait_for(lambda: prometheus_value(url, f"count({alerts.CLUSTER_QUEUE_TEAM})") == len(plan.teams)
                 and prometheus_value(url, f'up{{job="{KSM_JOB}"}}') == 1
                 and prometheus_value(url, f'count(up{{job="{alerts.DCGM_JOB}"}} == 1)') == 1, 60,
                 "Prometheus scraping Kueue and the GPU telemetry")
        # The whole wait: the live report reads Prometheus over the horizon's whole wall window.
        run = replay(session.client(), plan, jobs, SPEED, HORIZON, correct=False, stop_when_idle=False)
        assert run.idle_from is None
        simulated = compute(run, plan)
        time.sleep(SETTLE_S)
        wall = HORIZON / SPEED
        live = ur.build(Prometheus(url), plan, ur.window(run.started_epoch + wall, wall, STEP_S), pending=None,
                        time_scale=SPEED)
        (tmp / "reports.json").write_text(json.dumps({"simulated": simulated, "live": live}, indent=1, default=str))
    finally:
        session.stop()
        TIMINGS["report agrees: wall"] = time.perf_counter() - t0
    return simulated, live


RUNS = {  # team -> [(GPUs, trace seconds, busy fraction, ended)]
    "vision": [(2, 120, 0.5, "finished")],
    "speech": [(2, 60, 0.25, "failed"), (2, 120, 1.0, "finished")],
}


@pytest.mark.parametrize("team", sorted(RUNS))
def test_the_replay_measures_what_the_trace_declares(reports, team: str) -> None:
    simulated, _ = reports
    s, runs = simulated["teams"][team], RUNS[team]
    overhead = simulated["simulator"]["overhead"]
    assert overhead["runs_timed"] == 3, overhead
    # each run held its quota for its trace duration and at most the largest residual the replay measured
    over = sum(edge(g, overhead["residual_max_s"] + ROUNDING_WALL) for g, *_ in runs) + ROUNDING_H
    allocated = sum(gpu_h(g, d) for g, d, _, _ in runs)             # vision 0.0667, speech 0.1
    busy = sum(gpu_h(g, d) * b for g, d, b, _ in runs)              # vision 0.0333, speech 0.075
    failed = sum(gpu_h(g, d) for g, d, _, e in runs if e == "failed")   # speech 0.0333
    assert allocated - ROUNDING_H <= s["allocated_gpu_hours"] <= allocated + over, s
    assert busy - over <= s["busy_gpu_hours"] <= busy + over, s
    assert failed - over <= s["failed_gpu_hours"] <= failed + over, s
    assert (s["finished"], s["failed"]) == (sum(e == "finished" for *_, e in runs), sum(e == "failed" for *_, e in runs))


@pytest.mark.parametrize("team", sorted(RUNS))
def test_the_live_report_gives_the_replays_figures_per_team(reports, team: str) -> None:
    simulated, live = reports
    s, lv, runs = simulated["teams"][team], live["teams"][team], RUNS[team]
    allocated_tol = sum(edge(g, ALLOCATED_EDGE_WALL) for g, *_ in runs)
    busy_tol = sum(edge(g * b, POD_EDGE_WALL) for g, _, b, _ in runs)
    failed_tol = sum(edge(g, POD_EDGE_WALL) for g, _, _, e in runs if e == "failed")
    pool = lv["pools"]["train"]
    assert pool["allocated_gpu_hours"] == pytest.approx(s["allocated_gpu_hours"], abs=allocated_tol), (s, lv)
    assert pool["busy_gpu_hours"] == pytest.approx(s["busy_gpu_hours"], abs=busy_tol), (s, lv)
    assert pool["idle_gpu_hours"] == pytest.approx(s["idle_gpu_hours"], abs=allocated_tol + busy_tol), (s, lv)
    assert lv["failed_gpu_hours"] == pytest.approx(s["failed_gpu_hours"], abs=failed_tol), (s, lv)
    assert lv["preempted_gpu_hours"] == s["preempted_gpu_hours"] == 0.0, (s, lv)
    assert (lv["jobs_finished"], lv["jobs_failed"]) == (s["finished"], s["failed"]), (s, lv)


def test_both_give_the_same_cost_per_finished_job(reports) -> None:
    simulated, live = reports
    assert simulated["jobs_finished"] == live["jobs_finished"] == 2
    # The whole capacity over the window in both: 8 GPUs x 240 s at $6.88 = $3.67, over 2 finished jobs. The
    # live window's samples are the window's wall seconds (grid-aligned: the same count), the replay's node
    # samples its clock from its start: they may differ by a sample of the capacity, and each rounds to a cent.
    capacity_usd = gpu_h(CAPACITY_GPUS, HORIZON) * PRICE
    sample_usd = edge(CAPACITY_GPUS, STEP_S) * PRICE
    assert simulated["cost"]["total_usd"] == pytest.approx(capacity_usd, abs=sample_usd + 0.01), simulated["cost"]
    assert live["cost"]["total_usd"] == pytest.approx(capacity_usd, abs=sample_usd + 0.01), live["cost"]
    assert live["cost"]["usd_per_finished_job"] == pytest.approx(simulated["cost"]["usd_per_finished_job"],
                                                                 abs=sample_usd / 2 + 0.01)
    assert simulated["cost"]["usd_per_finished_job"] == pytest.approx(capacity_usd / 2, abs=sample_usd / 2 + 0.01)
