"""Useful work measured live: the cluster's Prometheus (scripts/local-cluster's, localcluster/prometheus.py)
scrapes the real Kueue and the simulated nodes' GPU telemetry (localcluster/telemetry.py) and evaluates the
platform's own rule files; the report (platform_cli/usage_report.py) reads it.

Uses the `live` fixture's `prometheus_url` (the session cluster's Prometheus, on the port cluster.env records)
with the gpu-telemetry process running beside it, both started by scripts/local-cluster.

Sizes refer to tests/live/stack.yaml: beta holds 8 train GPUs and may borrow 8 (H100s, $6.88 a GPU-hour);
gamma alone holds 14 MIG slices (2 GPUs) of the mig pool, whose one node (56 slices) Karpenter adds on demand.
"""

from __future__ import annotations

import json
import time
import urllib.parse
import urllib.request
from typing import Any

import pytest

from components import alerts
from gpu_platform import conventions as cv
from gpu_platform.jobs import JobRequest, job
from platform_cli import pending_work, usage_report as ur
from platform_cli.prometheus_api import Prometheus
from tests.live.conftest import Live, condition, is_true, wait_for
from tests.metric_sources import KUEUE_SERIES, SCRAPE_SERIES, recorded_names, used_names

# The local Prometheus evaluates its rules every 15 s (localcluster.prometheus.EVALUATION_INTERVAL): the
# known-answer test samples on that grid rather than the rules' 60 s one, so a run's edges are not rounded
# to a minute.
STEP = 15.0
# How far a run's measured GPU time may be from its declared one, per run: the telemetry reads the cluster
# every 5 s, Prometheus scrapes every 15 s and evaluates the rules every 15 s, and the report samples every
# 15 s; a run's start and its end are each seen that much late, which mostly cancels, so a run's length is
# off by at most one scrape, one evaluation and one sample (45 s), times its GPUs (and its busy fraction).
EDGE_S = 45.0
BUSY_RUN_S, CRASH_RUN_S = 180, 90
MIG = cv.mig_resource("1g.10gb")


# How far before the test's start the report's window begins (a scrape's alignment, and then some).
WINDOW_LEAD_S = 60

def query(url: str, expr: str, at: float | None = None) -> list[dict[str, Any]]:
    params = {"query": expr, **({"time": f"{at:.3f}"} if at is not None else {})}
    with urllib.request.urlopen(f"{url}/api/v1/query?{urllib.parse.urlencode(params)}", timeout=30) as resp:
        return json.load(resp)["data"]["result"]


def value(url: str, expr: str, at: float | None = None) -> float:
    res = query(url, expr, at)
    return sum(float(r["value"][1]) for r in res)


def submit(lv: Live, team: str, pool: str, gpus: int, name: str, *, busy: float, duration: int,
           priority: str | None = None, failed: bool = False) -> None:
    objs = job(lv.plan, JobRequest(team=team, pool=pool, gpus=gpus, name=name, priority=priority,
                                   duration=f"{duration}s", gpu_busy=busy))
    if failed:
        objs[0]["spec"]["template"]["metadata"]["annotations"][cv.SIM_OUTCOME_ANNOTATION] = cv.SIM_OUTCOME_FAILED
    lv.create(objs, as_team=team)


def within(measured: float, expected: float, tolerance: float, what: str) -> None:
    assert abs(measured - expected) <= tolerance, f"{what}: {measured:.4f} GPU-h, expected {expected:.4f} ± {tolerance:.4f}"


@pytest.fixture(scope="module")
def prom(live: Live) -> str:
    url = live.prometheus_url
    wait_for(lambda: value(url, f"count({alerts.CLUSTER_QUEUE_TEAM})") == len(live.plan.teams), 90,
             "the platform's rules evaluated")
    return url


def test_every_rule_file_the_stack_deploys_loads_into_the_live_prometheus(live: Live, prom: str) -> None:
    with urllib.request.urlopen(f"{prom}/api/v1/rules", timeout=30) as resp:
        groups = json.load(resp)["data"]["groups"]
    deployed = alerts.rule_groups(live.plan)
    # every group, with every rule (the API lists groups by name)
    assert {g["name"]: [r["name"] for r in g["rules"]] for g in groups} == \
        {g["name"]: [r.get("record") or r["alert"] for r in g["rules"]] for g in deployed}
    # after an evaluation every rule is healthy: no query the live Prometheus refuses
    wait_for(lambda: all(r["health"] == "ok" for g in
                         json.load(urllib.request.urlopen(f"{prom}/api/v1/rules", timeout=30))["data"]["groups"]
                         for r in g["rules"]), 60, "every rule evaluated once")
    errors = [(r["name"], r.get("lastError")) for g in groups for r in g["rules"] if r.get("lastError")]
    assert errors == []


def test_a_known_workload_gives_the_reports_figures(platform: Live, prom: str) -> None:
    """beta: two 4-GPU runs of 180 s at 25% busy and one of 90 s at 50% that fails; gamma: a research run
    preempted by a training run in its own ClusterQueue, then waiting for the quota it lost."""
    lv = platform
    gpu_h = lambda seconds, gpus: seconds * gpus / 3600  # noqa: E731
    # Start from a settled Prometheus: nothing of earlier tests still allocated in its samples.
    wait_for(lambda: value(prom, f'{alerts.TEAM_POOL_ALLOCATED_GPUS}{{team=~"beta|gamma"}}') == 0, 90,
             "no allocation left in Prometheus")
    # The report's window starts a minute before `started` (scrape alignment): earlier tests' runs of these
    # teams, deleted by their cleanup moments ago, must be older than that, or they count as preempted here.
    time.sleep(WINDOW_LEAD_S + 15)
    started = time.time()
    submit(lv, "beta", "train", 4, "steady-0", busy=0.25, duration=BUSY_RUN_S)
    submit(lv, "beta", "train", 4, "steady-1", busy=0.25, duration=BUSY_RUN_S)
    submit(lv, "beta", "train", 4, "crash", busy=0.5, duration=CRASH_RUN_S, failed=True)
    submit(lv, "gamma", "mig", 7, "research-0", busy=0.8, duration=3600, priority="research")
    submit(lv, "gamma", "mig", 7, "research-1", busy=0.8, duration=3600, priority="research")
    running = lambda team, name: [p for p in lv.pods(team, name) if p.get("status", {}).get("phase") == "Running"]  # noqa: E731
    wait_for(lambda: running("gamma", "research-0") and running("gamma", "research-1"), 120, "both research runs running")
    # when each research run's pod started (KWOK deletes a preempted pod at once: read it now)
    pod_started = {name: _seconds(running("gamma", name)[0]["status"]["startTime"]) for name in ("research-0", "research-1")}
    time.sleep(45)
    submit(lv, "gamma", "mig", 7, "urgent", busy=1.0, duration=60, priority="training")
    victim = wait_for(lambda: next((w for w in lv.workloads("gamma") if (c := condition(w, "Preempted"))
                                    and c["status"] == "True"), None), 90, "a research run preempted")
    victim_job = next(o["name"] for o in victim["metadata"]["ownerReferences"] if o["kind"] == "Job")
    # While urgent runs, the victim waits for the quota it lost, and the report's pending list says so.
    wait_for(lambda: is_true(lv.workload("gamma", "urgent"), "Admitted"), 60, "urgent admitted")
    pending = wait_for(lambda: [p for p in pending_work.read(lv.plan, lv.cluster.kubeconfig)[0] if p.team == "gamma"
                                and p.reason == "Pending"], 30, "the preempted run pending with Kueue's reason")
    assert [p.workload for p in pending] == [victim["metadata"]["name"]], pending
    assert pending[0].waits_for.startswith(f"insufficient unused quota for {MIG} in flavor mig"), pending[0]
    assert pending[0].position == 0 and pending[0].position_source == "estimated"
    for name in ("steady-0", "steady-1", "crash"):
        wait_for(lambda n=name: is_true(lv.workload("beta", n), "Finished"), BUSY_RUN_S + 120, f"beta/{name} finished")
    wait_for(lambda: is_true(lv.workload("gamma", "urgent"), "Finished"), 180, "gamma/urgent finished")
    # The last ends reach the recorded series: nothing of beta's and nothing of urgent's held any more, as the
    # rules recorded it (telemetry, scrape and evaluation take up to EDGE_S on a quiet machine; a loaded CI
    # machine took longer), then one more step so that the report's last sample is past them.
    gamma_ns = lv.namespace("gamma")
    wait_for(lambda: value(prom, f'{alerts.POD_ALLOCATED_GPUS}{{team="beta"}}') == 0
             and value(prom, f'{alerts.POD_ALLOCATED_GPUS}{{namespace="{gamma_ns}", pod=~"urgent-.*"}}') == 0,
             180, "the runs' ends recorded")
    time.sleep(STEP)
    end = time.time()
    win = ur.window(end, end - started + WINDOW_LEAD_S, STEP)
    report = ur.build(Prometheus(prom), lv.plan, win, pending=lambda: pending_work.read(lv.plan, lv.cluster.kubeconfig))

    beta, gamma = report["teams"]["beta"], report["teams"]["gamma"]
    runs = [(2, BUSY_RUN_S, 4, 0.25), (1, CRASH_RUN_S, 4, 0.5)]
    tolerance = sum(n * gpu_h(EDGE_S, g) for n, _, g, _ in runs)
    within(beta["pools"]["train"]["allocated_gpu_hours"], sum(n * gpu_h(s, g) for n, s, g, _ in runs), tolerance,
           "beta's allocated GPU-hours")
    within(beta["pools"]["train"]["busy_gpu_hours"], sum(n * gpu_h(s, g) * b for n, s, g, b in runs),
           sum(n * gpu_h(EDGE_S, g) * b for n, _, g, b in runs), "beta's busy GPU-hours")
    within(beta["pools"]["train"]["idle_gpu_hours"], sum(n * gpu_h(s, g) * (1 - b) for n, s, g, b in runs), tolerance,
           "beta's allocated-but-idle GPU-hours")
    within(beta["failed_gpu_hours"], gpu_h(CRASH_RUN_S, 4), gpu_h(EDGE_S, 4), "beta's failed run")
    assert beta["runs"] == {"finished": 2, "running": 0, "failed": 1, "preempted": 0}, runs_seen(lv, prom, win, "beta")
    assert (beta["jobs_finished"], beta["jobs_failed"]) == (2, 1)

    # The preempted run held 1 GPU (7 slices) from its pod's start to the preemption, as the API server saw it.
    held_s = _seconds(condition(victim, "Preempted")["lastTransitionTime"]) - pod_started[victim_job]
    within(gamma["preempted_gpu_hours"], gpu_h(held_s, 1), gpu_h(EDGE_S, 1), "gamma's preempted run")
    # urgent finished; the other research run and the victim's second run (readmitted once urgent ended) run on
    assert gamma["runs"] == {"finished": 1, "running": 2, "failed": 0, "preempted": 1}, runs_seen(lv, prom, win, "gamma")
    assert gamma["requeues"] == {"Preempted": 1} and gamma["jobs_finished"] == 1

    cost = report["cost"]
    assert report["jobs_finished"] == 3
    assert cost["usd_per_finished_job"] == round(cost["total_usd"] / 3, 2)
    assert cost["lost_usd"] == pytest.approx((beta["failed_gpu_hours"] * 6.88 + gamma["preempted_gpu_hours"] * 3.43125),
                                             abs=0.02)


def runs_seen(lv: Live, prom: str, win: ur.Window, team: str) -> list[str]:
    """A failure's evidence: each of the team's pods as the report read it from Prometheus (when its GPUs were
    held, its recorded phases, whether a deletion was seen), beside the pods the API server has now."""
    raw = ur.gather(Prometheus(prom), lv.plan, win)
    phases: dict[str, set[str]] = {}
    for s in raw["pod_phases"]:
        phases.setdefault(s["metric"]["pod"], set()).add(s["metric"]["phase"])
    deleted = {s["metric"]["pod"] for s in raw["pod_deleted"]}
    out = []
    for s in raw["pods"]:
        if s["metric"].get("team") == team:
            pod, held = s["metric"]["pod"], [float(t) - win.first for t, v in s["values"] if float(v) > 0]
            out.append(f"{pod}: held {min(held, default=0):.0f}-{max(held, default=0):.0f} s of the window "
                       f"({win.last - win.first:.0f} s), phases {sorted(phases.get(pod, ()))}, deleted {pod in deleted}")
    out += [f"now: {p['metadata']['name']} {p.get('status', {}).get('phase')}"
            for p in lv.get("pods", "-n", lv.namespace(team))["items"]]
    return out


def _seconds(stamp: str) -> float:
    import datetime

    return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def test_the_recording_rules_equal_the_report(live: Live, prom: str) -> None:
    """The rules' GPU-hours over the last hour, at the time they were recorded, and the report over that same
    hour on the rules' grid: the same samples summed the same way (gpu_platform/useful_work.sampled_hours)."""
    (sample,) = query(prom, f'timestamp({alerts.TEAM_POOL_ALLOCATED_GPU_HOURS}{{team="beta", pool="train"}})')
    at = float(sample["value"][1])
    report = ur.build(Prometheus(prom), live.plan, ur.window(at, 3600), pending=None)
    compared = set()
    for team in live.plan.teams:
        for q in team.quotas:
            labels = f'{{team="{team.name}", pool="{q.pool}"}}'
            figures = report["teams"][team.name]["pools"][q.pool]
            for rule, key in ((alerts.TEAM_POOL_ALLOCATED_GPU_HOURS, "allocated_gpu_hours"),
                              (alerts.TEAM_POOL_BUSY_GPU_HOURS, "busy_gpu_hours"),
                              (alerts.TEAM_POOL_IDLE_GPU_HOURS, "idle_gpu_hours")):
                recorded = query(prom, f"{rule}{labels}", at)
                if recorded:   # busy GPU-hours exist only for teams whose pods ever held a GPU in the hour
                    assert float(recorded[0]["value"][1]) == pytest.approx(figures[key], abs=1e-9), (team.name, q.pool, key)
                    compared.add((team.name, q.pool, key))
                elif key != "busy_gpu_hours":
                    pytest.fail(f"no {rule}{labels} recorded")
    assert {("beta", "train", k) for k in ("allocated_gpu_hours", "busy_gpu_hours", "idle_gpu_hours")} <= compared
    assert report["teams"]["beta"]["pools"]["train"]["allocated_gpu_hours"] > 0, "the known workload ran in the hour"


def test_every_series_a_rule_dashboard_or_the_report_reads_exists_live(live: Live, prom: str) -> None:
    """After the known workload (admissions, a preemption, a failure): each name is in the live Prometheus, or
    declared in the telemetry's exposition (a family emitted only on an event, such as XID counts)."""
    with urllib.request.urlopen(f"{prom}/api/v1/targets", timeout=30) as resp:
        targets = json.load(resp)["data"]["activeTargets"]
    exposed = ""
    for job_name in (alerts.DCGM_JOB, "kube-state-metrics"):
        url = next(t["scrapeUrl"] for t in targets if t["labels"]["job"] == job_name)
        exposed += urllib.request.urlopen(url, timeout=30).read().decode()
    declared = {line.split()[2] for line in exposed.splitlines() if line.startswith("# TYPE ")}
    recorded = recorded_names(live.plan)
    missing = {}
    for name, where in used_names(live.plan).items():
        if name in recorded or name in declared:
            continue
        if value(prom, f'count(count_over_time({{__name__="{name}"}}[1h]))') == 0:
            missing[name] = where
    assert missing == {}, "read but provided by nothing live"
    kueue = {n for n in used_names(live.plan) if n.startswith("kueue_")}
    assert kueue <= KUEUE_SERIES and "up" in SCRAPE_SERIES
