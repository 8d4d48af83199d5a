"""The what-if at seed scale: the progress line and its ETA, the workloads mode's Workloads (checked against
Kueue's Workload CRD), its status writes, the fidelity figures between two modes, and the CLI's refusals."""

from __future__ import annotations

import io
from datetime import datetime, timezone

import pytest

from simulator import direct_workloads as dw
from simulator.fidelity import compare_runs, kendall_tau, quantile, waits
from simulator.progress import Printer, Progress, bar, duration, line
from simulator.records import Event, Run
from simulator.submit import objects_for
from simulator.trace import TraceJob
from tests import crd_schema
from tests.conftest import ROOT, plan_of

SIM_STACK = ROOT / "tests" / "simulate" / "stack.yaml"

NOON = datetime(2026, 1, 2, 12, 0, 0, tzinfo=timezone.utc)


# ---- progress ---------------------------------------------------------------------------------------------

def test_the_progress_line_gives_trace_time_against_wall_time_jobs_and_the_eta_at_the_pace_so_far() -> None:
    p = Progress(trace_s=6 * 3600, horizon_s=24 * 3600, wall_s=90, submitted=300, due=1200, finished=210,
                 admitted=250, evicted=3)
    # 6 trace hours in 90 s: the 18 left take 270 s at that pace.
    assert line(p) == ("[#####...............]  25%  trace 6.00/24.00 h in 1m30s  submitted 300/1200  "
                       "admitted 250  finished 210  evicted 3  ETA 4m30s")


def test_the_eta_follows_a_replay_that_falls_behind_and_is_unknown_before_it_starts() -> None:
    # Nominally 100x, but only 1 trace hour done in 72 s (50x): the 3 hours left take 216 s, not 108 s.
    assert Progress(3600, 4 * 3600, 72, 10, 40, 5).eta_s == pytest.approx(216.0)
    assert Progress(0, 3600, 0, 0, 10, 0).eta_s is None
    assert line(Progress(0, 3600, 0, 0, 10, 0)).endswith("ETA ?")
    assert line(Progress(3600, 3600, 30, 10, 10, 10), "mode workloads").endswith("ETA 0s  mode workloads")


@pytest.mark.parametrize("seconds, text", [(0, "0s"), (42.4, "42s"), (185, "3m05s"), (3599, "59m59s"),
                                           (7620, "2h07m"), (90000, "25h00m")])
def test_durations_read_as_seconds_minutes_or_hours(seconds: float, text: str) -> None:
    assert duration(seconds) == text


def test_the_bar_fills_with_the_fraction_and_stays_within_its_width() -> None:
    assert bar(0.0, 10) == "[..........]"
    assert bar(0.55, 10) == "[#####.....]"
    assert bar(1.7, 4) == "[####]"


def test_without_a_terminal_a_line_every_interval_and_no_redraw() -> None:
    now = [0.0]
    out = io.StringIO()
    printer = Printer(out, every=15, clock=lambda: now[0], tty=False)
    for t, text in [(0, "a"), (5, "b"), (14.9, "c"), (15, "d"), (31, "e"), (32, "")]:
        now[0] = t
        printer(text)
    assert out.getvalue() == "a\nd\ne\n"


def test_on_a_terminal_the_line_is_redrawn_in_place_and_ended_by_an_empty_one() -> None:
    out = io.StringIO()
    printer = Printer(out, tty=True)
    printer("first")
    printer("second")
    printer("")
    assert out.getvalue() == "\r" + "first".ljust(120) + "\r" + "second".ljust(120) + "\r" + " " * 120 + "\n"


# ---- the workloads mode's objects ---------------------------------------------------------------------------

def _workload(priority: str | None = "training", pods: int = 2):
    plan = plan_of("prod")
    job = TraceJob(1, 0.0, "llm-pretrain", "h100-train", 8, pods, 100.0, priority=priority)
    return dw.workload_for(plan, objects_for(plan, job, 3, 10.0))


def test_a_workload_is_what_kueues_job_integration_makes_of_the_job_template() -> None:
    wl = _workload()
    assert wl["apiVersion"] == "kueue.x-k8s.io/v1beta2" and wl["kind"] == "Workload"
    assert wl["metadata"]["name"] == "j00003" and wl["metadata"]["namespace"] == "llm-pretrain"
    assert wl["metadata"]["labels"]["sim.gpu-platform.io/job"] == "j00003"
    spec = wl["spec"]
    assert spec["queueName"] == "default"
    # The team's training priority: the stack's WorkloadPriorityClass, value 1000 (prod's priorities).
    assert spec["priorityClassRef"] == {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "training"}
    assert spec["priority"] == 1000
    (ps,) = spec["podSets"]
    assert ps["name"] == "main" and ps["count"] == 2
    # An EFA pool's job prefers one network block (the template's podset annotation, read into the request).
    assert ps["topologyRequest"] == {"preferred": "topology.k8s.aws/network-node-layer-3",
                                     "podIndexLabel": "batch.kubernetes.io/job-completion-index"}
    assert ps["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "8"
    assert ps["template"]["spec"]["nodeSelector"] == {"gpu-platform.io/pool": "h100-train"}


def test_the_workload_is_valid_against_kueues_workload_crd_and_a_broken_copy_is_not() -> None:
    wl = _workload()
    assert crd_schema.validate(wl, rules=True) == []
    wl["spec"]["podSets"][0]["count"] = -1
    wl["spec"]["priorityClassRef"]["kind"] = "PriorityClass"
    assert crd_schema.validate(wl, rules=True) == [
        ".spec.podSets[0].count: -1 < minimum 0",
        ".spec.priorityClassRef: only the WorkloadPriorityClass kind is allowed for the kueue.x-k8s.io group"]


def test_a_workload_without_a_priority_has_none_and_is_still_valid() -> None:
    wl = _workload(priority=None, pods=1)
    assert "priorityClassRef" not in wl["spec"] and "priority" not in wl["spec"]
    assert wl["spec"]["podSets"][0]["count"] == 1
    assert crd_schema.validate(wl, rules=True) == []


def test_a_priority_the_stack_does_not_define_is_refused_naming_the_valid_ones() -> None:
    with pytest.raises(dw.InputError, match="priority class 'urgent' is not one of the stack's priorities: "
                                            "development, gpu-platform-system-critical, production-inference, research, "
                                            "training"):
        dw.priority_of(plan_of("prod"), {"kueue.x-k8s.io/priority-class": "urgent"}, {})


def test_the_finish_is_a_server_side_apply_of_one_finished_condition() -> None:
    assert dw.finished_patch("j00007", "alpha", "failed", NOON) == {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": "j00007", "namespace": "alpha"},
        "status": {"conditions": [{"type": "Finished", "status": "True", "reason": "Failed",
                                   "message": "By the simulator: the trace's run time passed since admission",
                                   "lastTransitionTime": "2026-01-02T12:00:00Z"}]}}
    assert dw.finished_patch("j1", "a", "succeeded", NOON)["status"]["conditions"][0]["reason"] == "Succeeded"


def test_an_eviction_is_finished_by_clearing_the_reservation_as_kueues_runner_does() -> None:
    obj = {"metadata": {"name": "j00001", "namespace": "a", "resourceVersion": "42"},
           "status": {"admission": {"clusterQueue": "a"}, "conditions": [
               {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": "",
                "lastTransitionTime": "2026-01-02T11:00:00Z"},
               {"type": "Admitted", "status": "True", "reason": "Admitted", "message": "",
                "lastTransitionTime": "2026-01-02T11:00:00Z"},
               {"type": "Evicted", "status": "True", "reason": "Preempted", "message": "",
                "lastTransitionTime": "2026-01-02T11:59:00Z"}]}}
    assert dw.evicted(obj)
    patch = dw.release_patch(obj, NOON)
    assert patch["metadata"] == {"resourceVersion": "42"}
    assert patch["status"]["admission"] is None
    assert [(c["type"], c["status"], c["reason"]) for c in patch["status"]["conditions"]] == [
        ("QuotaReserved", "False", "Pending"), ("Admitted", "False", "NoReservation"), ("Evicted", "True", "Preempted")]
    obj["status"]["conditions"][0]["status"] = "False"
    assert not dw.evicted(obj)   # released already: nothing to do


# ---- fidelity between the modes ----------------------------------------------------------------------------

def test_kendall_tau_over_the_jobs_both_admitted() -> None:
    assert kendall_tau({1: 0, 2: 1, 3: 2, 4: 3}, {1: 5, 2: 6, 3: 7, 4: 8}) == 1.0
    assert kendall_tau({1: 0, 2: 1, 3: 2, 4: 3}, {1: 8, 2: 7, 3: 6, 4: 5}) == -1.0
    # One swapped pair of six: (6 - 2 * 1) / 6.
    assert kendall_tau({1: 0, 2: 1, 3: 2, 4: 3}, {1: 0, 2: 2, 3: 1, 4: 3}) == pytest.approx(4 / 6)
    # Job 9 was admitted in one mode only: left out (and one job in common has no order to agree on).
    assert kendall_tau({1: 0, 2: 1, 9: 2}, {2: 0, 1: 1}) == -1.0
    assert kendall_tau({1: 0, 9: 1}, {1: 0}) is None


def test_the_fidelity_figures_of_two_replays_of_one_trace() -> None:
    jobs = [TraceJob(k + 2, 0.0, "left", "share", 1, 1, 60.0) for k in range(3)]

    def run(admits: list[float]) -> Run:
        r = Run(jobs=jobs, speed=10, horizon=600)
        r.events = [Event(0.0, k, "submitted") for k in range(3)] + [Event(t, k, "admitted") for k, t in enumerate(admits)]
        return r

    full, fast = run([10.0, 20.0, 300.0]), run([12.0, 40.0, 200.0])
    assert sorted(waits(full.events)) == [10.0, 20.0, 300.0]
    assert quantile([10.0, 20.0, 300.0], 0.5) == 20.0
    out = compare_runs(full, fast, {"left": 10.0, "right": 4.0, "tiny": 0.5}, {"left": 9.0, "right": 5.0})
    assert out == {"admitted": [3, 3], "admitted_in_both": 3, "order_kendall_tau": 1.0,
                   "wait_p50_s": [20.0, 40.0], "wait_p95_s": [300.0, 200.0], "gpu_hours_total": [14.5, 14.0],
                   "gpu_hours_team_max_diff": 0.25, "gpu_hours_team_max_diff_team": "right",
                   "gpu_hours_team_median_diff": 0.175}


# ---- the CLI ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("argv, message", [
    (["--mode", "jobs"], "--mode 'jobs' is not one of: pods, workloads"),
    (["--mode", "workloads", "--node-failure-rate", "0.01"],
     "--mode workloads has no pods for a node failure to strike"),
    (["--progress-every", "0"], "--progress-every 0 is not a positive number of seconds"),
])
def test_simulate_refuses_a_bad_mode_before_starting_anything(tmp_path, capsys, monkeypatch, argv, message) -> None:
    from platform_cli.cli import main
    import localcluster.session

    monkeypatch.setattr(localcluster.session.Session, "start", lambda *a, **k: pytest.fail("a cluster started"))
    trace = tmp_path / "t.csv"
    trace.write_text("submit,team,pool,units,duration\n0,solo,fill,8,1h\n")
    code = main(["simulate", "--stack", str(SIM_STACK), "--trace", str(trace), "--out", str(tmp_path / "out"), *argv])
    assert code == 2
    assert message in capsys.readouterr().err


def test_the_workloads_mode_refuses_kinds_other_than_job_naming_their_lines() -> None:
    jobs = [TraceJob(2, 0.0, "a", "p", 1, 1, 60.0), TraceJob(3, 0.0, "a", "p", 1, 1, 60.0, kind="rayjob")]
    with pytest.raises(dw.InputError, match=r"--mode workloads: kind 'rayjob' \(trace lines 3\) is not one of: job"):
        dw.check_trace(jobs)


def test_the_trace_time_done_is_held_back_to_the_first_job_not_yet_created() -> None:
    from simulator.progress import trace_done

    due = [(k, TraceJob(k + 2, 100.0 * k, "a", "p", 1, 1, 60.0)) for k in range(5)]
    assert trace_done(250.0, 1000.0, due, 3) == 250.0    # on schedule: jobs at 0, 100, 200 created
    assert trace_done(250.0, 1000.0, due, 1) == 100.0    # lagging: the job at 100 s is not created yet
    assert trace_done(5000.0, 1000.0, due, 5) == 1000.0  # all created: the clock, up to the horizon
