"""The simulator's pure parts: the trace format and its checks, the synthetic generator, the stack's
Kubernetes layer, and the metrics computed from recorded events. The replay itself runs in tests/simulate."""

from __future__ import annotations

import json

import pytest
import yaml

from gpu_platform.stack_files import load_plan
from gpu_platform.spec import load_stack_config
from simulator import synthetic
from simulator.metrics import compute
from simulator.records import Event, Run, Timing
from simulator.submit import objects_for
from simulator.stackfile import kubernetes_layer
from simulator.trace import TraceError, TraceJob, dump_csv, parse
from tests.conftest import ROOT, plan_of, stack_doc

SIM_STACK = ROOT / "tests" / "simulate" / "stack.yaml"


@pytest.fixture(scope="module")
def sim_plan():
    return load_plan(None, str(SIM_STACK))[1]


def test_csv_and_json_lines_traces_read_the_same(sim_plan) -> None:
    csv_text = "submit,team,pool,units,pods,duration,priority\n0,solo,fill,8,1,1h,\n90s,left,share,2,1,600,\n"
    jsonl = ('{"submit": 0, "team": "solo", "pool": "fill", "units": 8, "duration": "1h"}\n'
             '# a comment\n{"submit": "90s", "team": "left", "pool": "share", "units": 2, "duration": 600}\n')
    a, b = parse(csv_text, sim_plan), parse(jsonl, sim_plan)
    assert [(j.submit, j.team, j.pool, j.units, j.pods, j.duration) for j in a] == \
        [(j.submit, j.team, j.pool, j.units, j.pods, j.duration) for j in b] == \
        [(0.0, "solo", "fill", 8, 1, 3600.0), (90.0, "left", "share", 2, 1, 600.0)]


def test_a_bad_trace_names_every_problem_with_its_line(sim_plan) -> None:
    text = "\n".join([
        "submit,team,pool,units,pods,duration",
        "0,solo,fill,8,1,1h",            # line 2: fine
        "0,nobody,fill,1,1,1h",          # 3: unknown team
        "0,solo,nowhere,1,1,1h",         # 4: unknown pool
        "0,solo,fill,9,1,1h",            # 5: more units than a node of the pool holds
        "0,solo,fill,8,3,1h",            # 6: more than the team (and the pool) can ever hold
        "0,solo,fill,1,1,-5",            # 7: negative duration
        "0,left,fill,1,1,1h",            # 8: no quota on that pool
        "-1,solo,fill,1,1,1h",           # 9: negative submit
    ])
    with pytest.raises(TraceError) as err:
        parse(text, sim_plan, "t.csv")
    problems = err.value.problems
    assert [p.split(":")[0] for p in problems] == [f"line {n}" for n in (3, 4, 5, 6, 7, 8, 9)]
    assert "unknown team 'nobody'" in problems[0] and "solo" in problems[0]
    assert "no quota on pool 'nowhere'" in problems[1]
    assert "outside 1..8" in problems[2]
    assert "can never be admitted" in problems[3]
    assert "duration -5 must be positive" in problems[4]
    assert "team 'left' has no quota on pool 'fill'; its pools: share" in problems[5]
    assert "submit -1 is negative" in problems[6]


def test_a_bad_header_is_one_problem_naming_the_columns(sim_plan) -> None:
    with pytest.raises(TraceError, match="missing column\\(s\\) duration"):
        parse("submit,team,pool,units,size\n0,solo,fill,1,1\n", sim_plan)


def test_the_cli_refuses_a_bad_trace_before_starting_anything(tmp_path, capsys, monkeypatch) -> None:
    from platform_cli.cli import main
    import localcluster.session

    def no_cluster(*a, **k):
        raise AssertionError("a cluster was started for a bad trace")

    monkeypatch.setattr(localcluster.session.Session, "start", no_cluster)
    trace = tmp_path / "t.csv"
    trace.write_text("submit,team,pool,units,duration\n0,nobody,fill,1,1h\n")
    code = main(["simulate", "--stack", str(SIM_STACK), "--trace", str(trace), "--out", str(tmp_path / "out")])
    assert code == 2
    assert "line 2: unknown team 'nobody'" in capsys.readouterr().err


def test_the_trace_check_counts_what_the_cohort_can_lend_not_the_borrowing_limit() -> None:
    """What the cohort can lend, in a trace: the job `job` refuses is refused in a trace too, before any cluster
    starts, in the trace's words."""
    plan = plan_of("local")
    with pytest.raises(TraceError) as err:
        parse("submit,team,pool,units,pods,duration\n0,vision,train,8,2,1h\n", plan, "t.csv")
    (problem,) = err.value.problems
    assert problem == (
        "line 2: 2 x 8 = 16 nvidia.com/gpu can never be admitted: team 'vision' can hold at most 12 on pool 'train', "
        "min(nominal 8 + borrowingLimit 8 = 16, nominal 8 + 4 lendable through cohort 'research' = 12, "
        "pool capacity 16) = 12; lenders: nlp lends 4 of its 8 (lendingLimit 4); "
        "what fits: pods 1 with units 8, or pods 2 with units 6")
    (job,) = parse("submit,team,pool,units,pods,duration\n0,vision,train,6,2,1h\n", plan)
    assert job.total_units == 12


def test_simulate_refuses_a_job_the_cohort_cannot_lend_for_before_starting_a_cluster(tmp_path, capsys,
                                                                                     monkeypatch) -> None:
    from platform_cli.cli import main
    import localcluster.session

    def no_cluster(*a, **k):
        raise AssertionError("a cluster was started for a job that can never be admitted")

    monkeypatch.setattr(localcluster.session.Session, "start", no_cluster)
    trace = tmp_path / "t.csv"
    trace.write_text("submit,team,pool,units,pods,duration\n0,vision,train,8,2,1h\n")
    code = main(["simulate", "--stack", "local", "--trace", str(trace), "--out", str(tmp_path / "out")])
    assert code == 2
    assert "line 2: 2 x 8 = 16 nvidia.com/gpu can never be admitted: team 'vision' can hold at most 12" in \
        capsys.readouterr().err


def test_the_synthetic_trace_is_deterministic_and_follows_its_source() -> None:
    plan = plan_of("prod")
    a = synthetic.generate(plan, 7, 6)
    assert a == synthetic.generate(plan, 7, 6)
    assert a != synthetic.generate(plan, 8, 6)
    parse(dump_csv(a), plan)  # every synthetic job is one the platform accepts
    p = synthetic.profile(a, plan)
    # Helios (SC'21 artifacts): 72% single-GPU jobs (here higher: MIG and shared pools run single-pod work),
    # median run time ~206 s, 15.5% failed.
    assert 0.70 <= p.single_gpu_share <= 0.85
    assert 120 <= p.median_duration_s <= 260
    assert 0.13 <= p.failed_share <= 0.18


@pytest.mark.parametrize("load", [0.5, 1.2])
def test_the_synthetic_load_is_the_offered_work_per_pool(load: float) -> None:
    plan = plan_of("prod")
    hours = 6
    jobs = synthetic.generate(plan, 3, hours, load)
    for pool in plan.pools:
        offered = sum(j.total_units * min(j.duration, hours * 3600 - j.submit) for j in jobs if j.pool == pool.name)
        target = load * pool.capacity_units * hours * 3600
        # the last job drawn may overshoot the target by at most one job's work
        biggest = max(j.total_units * min(j.duration, hours * 3600 - j.submit) for j in jobs if j.pool == pool.name)
        assert target <= offered <= target + biggest, pool.name


def test_the_kubernetes_layer_keeps_every_queueing_decision_and_nothing_that_needs_a_cloud() -> None:
    doc = stack_doc("prod")
    layer = kubernetes_layer(doc)
    platform = layer["config"]["gpu-platform:platform"]
    assert platform["cluster"]["provider"] == "existing" and "subnetIds" not in platform["cluster"]
    assert all(platform["addons"][a]["install"] is False for a in ("gpuOperator", "kueue", "monitoring"))
    assert set(layer["config"]) <= {"gpu-platform:platform", "aws:region"}
    original = doc["config"]["gpu-platform:platform"]
    for key in ("pools", "cohorts"):
        assert platform[key] == original[key]
    # Teams as written, less the EKS access entries (IAM roles mean nothing to a local cluster).
    assert platform["teams"] == [{k: v for k, v in t.items() if k != "accessEntries"} for t in original["teams"]]
    spec, _ = load_stack_config(layer)
    assert spec.cluster.provider == "existing"


def test_replayed_jobs_are_the_job_template_with_the_compressed_run_time(sim_plan) -> None:
    j = TraceJob(1, 0.0, "solo", "fill", 8, 2, 3600.0, outcome="failed")
    job, svc = objects_for(sim_plan, j, 42, speed=120)
    ann = job["spec"]["template"]["metadata"]["annotations"]
    assert ann["sim.gpu-platform.io/duration"] == "30000ms" and ann["sim.gpu-platform.io/outcome"] == "failed"
    assert job["metadata"]["name"] == svc["metadata"]["name"] == "j00042"
    assert job["spec"]["backoffLimit"] == 0 and job["spec"]["parallelism"] == 2


def _run(jobs: list[TraceJob], events: list[tuple[float, int, str, str, int, str]], horizon: float) -> Run:
    run = Run(jobs=jobs, speed=1, horizon=horizon)
    run.events = [Event(t, i, k, f, u, r) for t, i, k, f, u, r in events]
    return run


def test_metrics_of_jobs_that_exactly_fill_a_pool(sim_plan) -> None:
    jobs = [TraceJob(i, 0.0, "solo", "fill", 8, 1, 3600.0) for i in range(4)]
    ev = []
    for i in range(2):                       # two fill it at once, two wait an hour
        ev += [(0, i, "submitted", "", 0, ""), (0, i, "admitted", "fill", 8, ""), (3600, i, "finished", "fill", 8, "Succeeded")]
    for i in (2, 3):
        ev += [(0, i, "submitted", "", 0, ""), (3600, i, "admitted", "fill", 8, ""), (7200, i, "finished", "fill", 8, "Succeeded")]
    r = compute(_run(jobs, ev, 7200), sim_plan)
    fill = r["pools"]["fill"]
    assert fill["utilization"] == 1.0 and fill["utilization_saturated"] == 1.0 and fill["idle_gpu_hours"] == 0
    solo = r["teams"]["solo"]
    assert (solo["submitted"], solo["finished"], solo["wait_p50_h"], solo["wait_max_h"]) == (4, 4, 0.0, 1.0)
    assert solo["gpu_hours_used"] == 32.0 and solo["gpu_hours_nominal"] == 32.0
    assert r["pools"]["share"]["utilization"] == 0.0 and r["pools"]["share"]["idle_gpu_hours"] == 32.0


def test_borrowed_and_lent_hours_and_what_preemption_throws_away(sim_plan) -> None:
    jobs = [TraceJob(0, 0.0, "borrower", "lend", 8, 1, 7200.0), TraceJob(1, 0.0, "borrower", "lend", 8, 1, 7200.0),
            TraceJob(2, 1800.0, "owner", "lend", 8, 1, 1800.0)]
    ev = [(0, 0, "submitted", "", 0, ""), (0, 0, "admitted", "lend", 8, ""),
          (0, 1, "submitted", "", 0, ""), (0, 1, "admitted", "lend", 8, ""),        # borrowing owner's 8
          (1800, 2, "submitted", "", 0, ""), (1800, 1, "evicted", "lend", 8, "InCohortReclamation"),
          (1800, 2, "admitted", "lend", 8, ""), (3600, 2, "finished", "lend", 8, "Succeeded"),
          (3600, 1, "admitted", "lend", 8, "")]
    r = compute(_run(jobs, ev, 3600), sim_plan)
    b, o = r["teams"]["borrower"], r["teams"]["owner"]
    assert b["borrowed_gpu_hours"] == 4.0 and o["lent_gpu_hours"] == 4.0    # 8 GPUs for half an hour
    assert b["preemptions"] == 1 and b["gpu_hours_lost"] == 4.0
    assert r["pools"]["lend"]["utilization"] == 1.0
    assert r["cost"]["lost_usd"] > 0 and r["cost"]["usd_per_finished_job"] == r["cost"]["total_usd"]


def test_report_files(tmp_path, sim_plan) -> None:
    from simulator import report

    jobs = [TraceJob(0, 0.0, "solo", "fill", 8, 1, 3600.0)]
    r = compute(_run(jobs, [(0, 0, "submitted", "", 0, ""), (0, 0, "admitted", "fill", 8, "")], 3600), sim_plan)
    written = report.write(r, tmp_path, "t")
    assert {p.name for p in written} == {"report.json", "report.md", "utilization.png", "queue-depth.png", "wait-cdf.png"}
    assert json.loads((tmp_path / "report.json").read_text())["pools"]["fill"]["utilization"] == 0.5
    assert "| solo |" in (tmp_path / "report.md").read_text()
    assert all(p.stat().st_size > 1000 for p in written if p.suffix == ".png")



# ---- the simulator's own overhead: the correction's arithmetic --------------------------------------------


def test_a_pod_ends_when_its_quota_should_come_back_less_the_end_of_the_chain() -> None:
    from simulator.fidelity import end_time
    from simulator.pod_ends import kwok_time

    # The job: 30 minutes at 30x is 60 s of wall time from its admission (at 100 s on the replay's
    # clock); the quota comes back 1.5 s after the pod ends, so the pod ends at 158.5 s, however long its
    # start took.
    assert end_time(100.0, 1800, 30, 1.5) == 158.5
    # A 60 s job at 30x (2 s of wall time) ends 0.5 s after its admission: if its pod is not Running by
    # then, it ends as soon as it is (the replay cannot be trusted there).
    assert end_time(100.0, 60, 30, 1.5) == 100.5
    # KWOK takes an RFC 3339 time (Go's RFC3339Nano) in the duration annotation and waits until then.
    assert kwok_time(1_796_083_200.25) == "2026-12-01T00:00:00.250000Z"


def test_replayed_pods_run_the_compressed_duration_until_given_an_end(sim_plan) -> None:
    job, = objects_for(sim_plan, TraceJob(1, 0.0, "solo", "fill", 8, 1, 1800.0), 7, speed=30)
    assert job["spec"]["template"]["metadata"]["annotations"]["sim.gpu-platform.io/duration"] == "60000ms"


def test_the_overhead_estimate_is_the_median_of_the_latest_measurements() -> None:
    from simulator.fidelity import OverheadEstimate

    est = OverheadEstimate([2.0, 3.0, 2.5], window=3)
    assert est.value() == 2.5                    # the calibration until the run measures its own
    est.add(4.0)
    assert est.value() == 4.0
    for x in (1.0, 2.0, 3.0, 10.0):              # only the last 3 count: a slow job does not swing it
        est.add(x)
    assert est.value() == 3.0
    est.add(-0.5)                                # a job released before its pod's time counts as no overhead
    assert est.value() == 3.0 and list(est.recent) == [3.0, 10.0, 0.0]
    assert OverheadEstimate([]).value() == 0.0


def test_jobs_shorter_than_two_chains_in_trace_time_are_untrusted() -> None:
    from simulator.fidelity import fastest_trusted_speed, untrusted

    # 2 x 2 s x 30 = 120 s of trace time
    assert untrusted([60, 119, 120, 1800], overhead_s=2.0, speed=30) == [True, True, False, False]
    # At 1x the simulator's chain is the chain a real cluster runs: nothing is a multiple of it.
    assert untrusted([1, 60], overhead_s=2.0, speed=1) == [False, False]
    durations = [60] * 2 + [600] * 8
    # At most 10% (one job) may be untrusted: the second-shortest, 60 s, must be >= 2 x 2 s x speed.
    assert fastest_trusted_speed(durations, 2.0, share=0.1) == 15.0
    assert fastest_trusted_speed(durations, 2.0, share=0.2) == 150.0
    assert fastest_trusted_speed([1, 1, 1], 2.0) == 1.0        # never below real time
    assert fastest_trusted_speed([], 2.0) == float("inf")


def test_the_default_speed_is_lowered_for_short_jobs_or_warns() -> None:
    from simulator.fidelity import default_speed

    eight_hours = 8 * 3600.0
    # Long jobs: the horizon in 360 s (80x), as before.
    assert default_speed([3600.0] * 20, eight_hours, 360, 600, overhead_s=2.3) == (80.0, None)
    # 300 s jobs: trusted up to 300 / (2 x 2.3) = 65.2x, within the 600 s budget's 48x: lowered.
    speed, note = default_speed([300.0] * 20, eight_hours, 360, 600, overhead_s=2.3)
    assert speed == 65.2 and note.startswith("speed 65.2x instead of 80x: at 80x 100% of the jobs")
    # 200 s jobs need 43.4x, below the budget's 48x: the target speed, and a warning naming 43.4.
    speed, note = default_speed([200.0] * 20, eight_hours, 360, 600, overhead_s=2.3)
    assert speed == 80.0 and note.startswith("warning: at 80x 100% of the jobs") and "--speed 43.4 " in note


def test_quota_held_while_the_pods_wait_for_a_node_is_counted_and_named(sim_plan) -> None:
    # Kueue admits on quota, not on free nodes: the 8-GPU job's quota was there at 60 s, but the two 2-GPU
    # jobs still running sat on different nodes, so its pod was Unschedulable until 75 s (the "started" event).
    jobs = [TraceJob(0, 0.0, "borrower", "lend", 8, 1, 60.0), TraceJob(1, 0.0, "borrower", "lend", 2, 1, 75.0)]
    ev = [(0, 0, "submitted", "", 0, ""), (0, 1, "submitted", "", 0, ""), (0, 1, "admitted", "lend", 2, ""),
          (60, 0, "admitted", "lend", 8, ""), (75, 0, "started", "lend", 8, "unschedulable"),
          (75, 1, "finished", "lend", 2, "Succeeded"), (135, 0, "finished", "lend", 8, "Succeeded")]
    b = compute(_run(jobs, ev, 200), sim_plan)["teams"]["borrower"]
    # 8 GPUs x 75 s (15 s waiting + 60 s run) + 2 GPUs x 75 s = 750 GPU-seconds, of which 8 x 15 s waiting.
    assert (b["gpu_hours_used"], b["gpu_hours_waiting_for_nodes"]) == (0.21, 0.0333)


def _timed_run(jobs: list[TraceJob], finish_after: float, speed: float, corrected: bool) -> Run:
    """Jobs of 8 GPUs on the 16-GPU `fill` pool, two at a time, each wave admitted when the last ended
    and holding the quota `finish_after` trace seconds."""
    from simulator.records import Timing

    run = Run(jobs=jobs, speed=speed, horizon=4 * finish_after, corrected=corrected,
              calibration=[2.0, 2.0, 2.0] if corrected else [])
    for i in range(len(jobs)):
        start = (i // 2) * finish_after
        run.events += [Event(0.0, i, "submitted"), Event(start, i, "admitted", "fill", 8),
                       Event(start + finish_after, i, "finished", "fill", 8, "Succeeded")]
        # wall seconds: Running 1 s after the admission, 60 s of run, the quota back 1.3 s after
        a = start / speed
        run.timings.append(Timing(i, a, a + finish_after / speed, 60.0, running=a + 1.0, ended=a + 61.0))
    run.events.sort(key=lambda e: e.t)
    return run


def test_gpu_hours_count_the_trace_duration_not_the_simulators_overhead_times_the_speed(sim_plan) -> None:
    # The trace: eight whole-node 30-minute jobs on 16 GPUs at 30x; each held its quota 2.3 s of
    # wall time (69 s of trace time) beyond its run.
    jobs = [TraceJob(i, 0.0, "solo", "fill", 8, 1, 1800.0) for i in range(8)]
    before = compute(_timed_run(jobs, 1869.0, 30, corrected=False), sim_plan)
    assert before["teams"]["solo"]["gpu_hours_used"] == 33.23           # 64 GPUs x 1869 s
    after = compute(_timed_run(jobs, 1869.0, 30, corrected=True), sim_plan)
    # 64 GPUs x (1800 s + the 2 s an idle cluster's chain adds), whatever the replay held.
    assert after["teams"]["solo"]["gpu_hours_used"] == 32.04
    o = after["simulator"]["overhead"]
    assert (o["gpu_hours_held"], o["gpu_hours_counted"], o["added_per_run_s"]) == (33.23, 32.04, 2.0)
    assert (o["per_job_p50_s"], o["per_job_trace_s"]) == (2.3, 69.0)
    assert (o["admission_to_running_p50_s"], o["end_to_release_p50_s"]) == (1.0, 1.3)
    # No pod was given an end in this run: the quota came back the whole chain late.
    assert o["residual_p95_s"] == 2.3
    # Nothing exceeds the pool: 100% while saturated, not more.
    assert after["pools"]["fill"]["utilization_saturated"] <= 1.0


def test_a_correction_that_overlaps_the_next_admission_does_not_exceed_the_pool(sim_plan) -> None:
    # Two 8-GPU jobs of 1800 s fill the pool; the next two are admitted at 1790 s (their pods were cut
    # 10 s short): counted for 1800 s, the first two overlap them, and the pool stays at its capacity.
    jobs = [TraceJob(i, 0.0, "solo", "fill", 8, 1, 1800.0) for i in range(4)]
    run = Run(jobs=jobs, speed=30, horizon=3590.0, corrected=True, calibration=[0.0])
    for i in range(4):
        start = 0.0 if i < 2 else 1790.0
        run.events += [Event(0.0, i, "submitted"), Event(start, i, "admitted", "fill", 8),
                       Event(start + 1790.0, i, "finished", "fill", 8, "Succeeded")]
    run.events.sort(key=lambda e: e.t)
    r = compute(run, sim_plan)
    assert r["pools"]["fill"]["utilization"] == 1.0
    assert r["teams"]["solo"]["gpu_hours_used"] == 16.0       # four runs of 8 GPUs x 1800 s, not 32 GPUs more


def test_the_report_warns_when_short_jobs_cannot_be_replayed_at_the_speed(sim_plan) -> None:
    from simulator import report
    from simulator.records import Timing

    # The synthetic profile's median job (206 s) at 80x, with the 2.3 s chain (1 s to Running, 1.3 s
    # from the pod's end): 2 x 2.3 x 80 = 368 s of trace time, so all ten are untrusted; 206 / 4.6 = 44.8x
    # would trust them.
    jobs = [TraceJob(i, 0.0, "solo", "fill", 1, 1, 206.0) for i in range(10)]
    run = Run(jobs=jobs, speed=80, horizon=3600, corrected=True, calibration=[2.0])
    run.events = [Event(0.0, i, "submitted") for i in range(10)]
    run.timings = [Timing(0, 0.0, 2.575 + 2.3, 2.575, running=1.0, ended=2.575 + 1.0)]
    o = compute(run, sim_plan)["simulator"]["overhead"]
    assert (o["untrusted_jobs"], o["untrusted_share"], o["untrusted_below_trace_s"], o["speed_to_trust"]) == \
        (10, 1.0, 368.0, 44.7)
    assert o["warning"].startswith("100% of the jobs run shorter than 2x the simulator's own 2.30 s per job")
    assert "--speed 44.7 would keep them under 10%" in o["warning"]
    text = report.overhead_text(o, 80)
    assert "184.00 s of trace time at 80x" in text and "warning: 100% of the jobs" in text


# ---- node failures ------------------------------------------------------------------------------------------


def test_a_failure_rate_gives_the_same_schedule_for_the_same_seed(sim_plan) -> None:
    from simulator.failures import schedule

    got = schedule(sim_plan, 0.25, 4 * 3600, seed=7, repair_s=600)
    # Exponential gaps at 0.25 per node-hour x 2 nodes per pool, one random stream per pool.
    assert [(f.at, f.pool) for f in got] == [
        (658.011, "share"), (853.093, "lend"), (4896.994, "lend"), (6149.452, "share"), (9011.409, "lend"),
        (12826.224, "fill"), (13036.766, "share"), (13647.545, "lend")]
    assert all(f.repair_s == 600 and f.node is None for f in got)
    assert schedule(sim_plan, 0.25, 4 * 3600, seed=7, repair_s=600) == got
    assert schedule(sim_plan, 0.25, 4 * 3600, seed=8, repair_s=600) != got
    # Twice the rate: the same draws, at half the times (and more of them fit in the horizon).
    assert [f.at for f in schedule(sim_plan, 0.5, 4 * 3600, seed=7, repair_s=600)][:3] == [329.006, 426.547, 2448.497]


def test_a_failure_strikes_a_busy_node_when_there_is_one(sim_plan) -> None:
    from simulator.failures import NodeFailure, pick

    any_node = NodeFailure(100.0, "fill", 600)
    up = ["fill-0", "fill-1", "fill-2"]
    # Busy nodes first, chosen by the failure's own stream: the same choice for the same seed and index.
    assert pick(any_node, 0, 7, up, busy=["fill-1", "fill-2"]) == "fill-2"
    assert pick(any_node, 0, 7, up, busy=["fill-1", "fill-2"]) == "fill-2"
    assert pick(any_node, 0, 7, up, busy=["fill-1"]) == "fill-1"
    assert pick(any_node, 1, 7, ["fill-0", "fill-1"], busy=[]) == "fill-1"        # nothing busy: any node up
    assert pick(any_node, 0, 7, [], busy=[]) is None                               # every node down already
    named = NodeFailure(100.0, "fill", 600, node="fill-0")
    assert pick(named, 0, 7, up, busy=["fill-1"]) == "fill-0"
    assert pick(named, 0, 7, ["fill-1"], busy=["fill-1"]) is None                  # it is down already


def test_a_failure_schedule_file_is_read_and_every_bad_line_named(sim_plan) -> None:
    from simulator.failures import parse

    ok = parse("at,pool,node,repair\n10m,fill,fill-1,\n90,share,,5m\n", sim_plan, repair_s=600)
    assert [(f.at, f.pool, f.node, f.repair_s, f.line) for f in ok] == [
        (90.0, "share", None, 300.0, 3), (600.0, "fill", "fill-1", 600.0, 2)]
    assert parse('{"at": "1h", "pool": "lend"}\n', sim_plan, repair_s=60)[0].at == 3600.0
    text = "\n".join([
        "at,pool,node,repair",
        "0,fill,fill-0,10m",      # 2: fine
        "-5,fill,,",              # 3: negative time
        "1h,nowhere,,",           # 4: unknown pool
        "1h,fill,fill-2,",        # 5: not a node of the pool (it has two)
        "1h,fill,,0",             # 6: repair not positive
        "soon,fill,,",            # 7: not a time
    ])
    with pytest.raises(TraceError) as err:
        parse(text, sim_plan, repair_s=600, source="f.csv")
    problems = err.value.problems
    assert [p.split(":")[0] for p in problems] == [f"line {n}" for n in (3, 4, 5, 6, 7)]
    assert problems[0] == "line 3: at -5 is negative"
    assert problems[1] == "line 4: pool 'nowhere' is not a pool of the stack; pools: fill, share, lend"
    assert problems[2] == "line 5: node 'fill-2' is not a node of pool 'fill'; its nodes: fill-0, fill-1"
    assert problems[3] == "line 6: repair 0 must be positive"
    assert problems[4].startswith("line 7: at: 'soon' is not a number of seconds")
    with pytest.raises(TraceError, match="missing column\\(s\\) pool"):
        parse("at,node\n0,fill-0\n", sim_plan, repair_s=600)


@pytest.mark.parametrize("argv, message", [
    (["--node-failure-rate", "0"], "--node-failure-rate 0.0: failures per node-hour must be > 0 and at most 1 "
                                   "(Llama 3's pre-training: 0.000158)"),
    (["--node-failure-rate", "2"], "--node-failure-rate 2.0: failures per node-hour must be > 0 and at most 1"),
    (["--node-failure-rate", "0.01", "--repair-time", "0"], "--repair-time '0': a duration > 0"),
    (["--node-failure-rate", "0.01", "--spare-nodes", "0"], "--spare-nodes 0: spare nodes per pool must be 1..16"),
    (["--spare-nodes", "1"], "--spare-nodes needs node failures (--node-failure-rate or --failures)"),
    (["--node-failure-rate", "0.01", "--spare-nodes", "1", "--compare", str(SIM_STACK)],
     "--spare-nodes replays the stack with and without spares: it cannot be combined with --compare"),
])
def test_simulate_refuses_bad_failure_options_before_starting_anything(tmp_path, capsys, monkeypatch, argv,
                                                                       message) -> None:
    from platform_cli.cli import main
    import localcluster.session

    def no_cluster(*a, **k):
        raise AssertionError("a cluster was started for bad failure options")

    monkeypatch.setattr(localcluster.session.Session, "start", no_cluster)
    trace = tmp_path / "t.csv"
    trace.write_text("submit,team,pool,units,duration\n0,solo,fill,8,1h\n")
    code = main(["simulate", "--stack", str(SIM_STACK), "--trace", str(trace), "--out", str(tmp_path / "out"), *argv])
    assert code == 2
    assert message in capsys.readouterr().err


def test_a_bad_failure_schedule_is_refused_by_line_before_starting_anything(tmp_path, capsys, monkeypatch) -> None:
    from platform_cli.cli import main
    import localcluster.session

    monkeypatch.setattr(localcluster.session.Session, "start", lambda *a, **k: pytest.fail("a cluster started"))
    trace, schedule = tmp_path / "t.csv", tmp_path / "f.csv"
    trace.write_text("submit,team,pool,units,duration\n0,solo,fill,8,1h\n")
    schedule.write_text("at,pool\n10m,fill\n20m,gpu-pool\n")
    code = main(["simulate", "--stack", str(SIM_STACK), "--trace", str(trace), "--failures", str(schedule),
                 "--out", str(tmp_path / "out")])
    assert code == 2
    assert "line 3: pool 'gpu-pool' is not a pool of the stack; pools: fill, share, lend" in capsys.readouterr().err


def test_replayed_pods_tolerate_a_lost_node_the_templates_minute_compressed(sim_plan) -> None:
    for speed, seconds in ((1, 60), (10, 6), (30, 2), (80, 1), (1000, 1)):
        job, = objects_for(sim_plan, TraceJob(1, 0.0, "solo", "fill", 8, 1, 1800.0), 7, speed=speed)
        lost = [t for t in job["spec"]["template"]["spec"]["tolerations"] if t.get("effect") == "NoExecute"]
        assert [t["key"] for t in lost] == ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"]
        assert {t["tolerationSeconds"] for t in lost} == {seconds}, speed


def _failure_run(spares: dict[str, int] | None = None) -> Run:
    """Two jobs a node failure struck, on the simulator's test stack (8 GPUs a node, 2 nodes a pool):
    - job 0, a 2-node gang on the topology-aware `fill` (16 GPUs, 1 h): fill-0 fails at 1200 s, Kueue evicts
      the whole job at 1300 s (no free node), fill-0 is back at 1800 s, the job is admitted again at 1810 s;
    - job 1, 2 pods of 4 GPUs on `share` (30 min): share-0 fails at 600 s, its lost pod runs again on another
      node at 700 s while the job stays admitted (restarted in place); share-0 is back at 1200 s."""
    from simulator.failures import Injected, NodeFailure

    jobs = [TraceJob(2, 0.0, "solo", "fill", 8, 2, 3600.0), TraceJob(3, 0.0, "left", "share", 4, 2, 1800.0)]
    fill, share = NodeFailure(1200.0, "fill", 600.0), NodeFailure(600.0, "share", 600.0)
    run = Run(jobs=jobs, speed=1, horizon=7200, corrected=True, calibration=[0.0], failure_schedule=[share, fill],
              failure_seed=1, spares=spares or {}, toleration_s=60.0)
    run.events = [Event(*e) for e in [
        (0, 0, "submitted"), (0, 0, "admitted", "fill", 16), (0, 1, "submitted"), (0, 1, "admitted", "share", 8),
        (700, 1, "restarted", "share", 8, "share-0"), (1300, 0, "evicted", "fill", 16, "NodeFailures"),
        (1810, 0, "admitted", "fill", 16), (2500, 1, "finished", "share", 8, "Succeeded"),
        (5410, 0, "finished", "fill", 16, "Succeeded")]]
    run.failures = [Injected(share, 600.0, "share-0", 1200.0, [(1, 4)]), Injected(fill, 1200.0, "fill-0", 1800.0, [(0, 8)])]
    return run


def test_gpu_hours_lost_to_node_failures_are_work_redone_stalled_and_capacity_down(sim_plan) -> None:
    f = compute(_failure_run(), sim_plan)["failures"]
    fill, share = f["pools"]["fill"], f["pools"]["share"]
    # The gang: 16 GPUs x 1200 s redone, its other node's 8 GPUs idle 100 s until Kueue evicted it, fill-0's 8
    # GPUs down 600 s: 5.333 + 0.222 + 1.333 GPU-h.
    assert (fill["work_redone_gpu_hours"], fill["stalled_gpu_hours"], fill["capacity_down_gpu_hours"]) == \
        (5.333, 0.222, 1.333)
    assert fill["gpu_hours_lost"] == 6.889 and fill["uncovered_down_gpu_hours"] == 1.333
    assert (fill["requeued"], fill["restarted"], fill["jobs_hit"]) == (1, 0, 1)
    # Running again 610 s after the failure, finished 1810 s later than its first run would have.
    assert (fill["recovery_p50_h"], fill["delay_max_h"]) == (0.169, 0.503)
    # The restarted job: 8 GPUs x 600 s redone, its healthy pod's 4 GPUs idle 100 s, share-0 down 600 s.
    assert (share["work_redone_gpu_hours"], share["stalled_gpu_hours"], share["capacity_down_gpu_hours"]) == \
        (1.333, 0.111, 1.333)
    assert (share["requeued"], share["restarted"], share["recovery_p50_h"], share["delay_max_h"]) == (0, 1, 0.028, 0.194)
    assert (f["failures"], f["scheduled"], f["jobs_hit"], f["requeued"], f["restarted"]) == (2, 2, 2, 1, 1)
    assert f["gpu_hours_lost"] == 9.667 and f["stopped_p50_s"] == 100.0     # (24,800 + 10,000 GPU-s) / 3600
    assert f["events"][0] == {"t_h": 0.1667, "pool": "share", "node": "share-0", "repaired_h": 0.3333,
                              "jobs": [{"job": 1, "line": 3, "units": 4}]}


def test_a_requeue_after_a_node_failure_is_not_a_preemption_and_a_restart_counts_both_runs(sim_plan) -> None:
    r = compute(_failure_run(), sim_plan)
    solo, left = r["teams"]["solo"], r["teams"]["left"]
    assert solo["preemptions"] == 0 and solo["finished"] == 1
    # The gang's lost run (16 GPUs x 1300 s) and its whole run (16 GPUs x 3600 s).
    assert (solo["gpu_hours_lost"], solo["gpu_hours_used"]) == (5.78, 21.78)
    # The restarted job held its 8 GPUs from 0 to 700 s (lost) and 700 s to 2500 s (its run).
    assert (left["gpu_hours_lost"], left["gpu_hours_used"], left["finished"]) == (1.56, 5.56, 1)


def test_spare_nodes_cover_capacity_down_at_their_own_cost(sim_plan) -> None:
    r = compute(_failure_run(spares={"fill": 1, "share": 1}), sim_plan)
    f = r["failures"]
    # One spare in each pool a failure struck covers its one down node: the capacity down is no longer lost ...
    assert (f["capacity_down_gpu_hours"], f["uncovered_down_gpu_hours"]) == (2.667, 0.0)
    assert f["gpu_hours_lost"] == 7.0       # (19,200 + 800 + 4,800 + 400 GPU-s redone and stalled) / 3600
    # ... and costs 8 GPUs x 2 h in each: a p5.48xlarge and a g6e.48xlarge for the horizon.
    assert f["spare_gpu_hours"] == 32.0 and f["spare_nodes"] == {"fill": 1, "share": 1}
    no_spare = compute(_failure_run(), sim_plan)["cost"]
    assert r["cost"]["spare_usd"] == round(2 * (55.04 + 30.131), 2) and no_spare["spare_usd"] == 0
    assert r["cost"]["total_usd"] == pytest.approx(no_spare["total_usd"] + r["cost"]["spare_usd"], abs=0.02)
    # A spare in one pool covers only that pool.
    fill_only = compute(_failure_run(spares={"fill": 1}), sim_plan)["failures"]
    pools = fill_only["pools"]
    assert (pools["fill"]["uncovered_down_gpu_hours"], pools["share"]["uncovered_down_gpu_hours"]) == (0.0, 1.333)


def test_a_job_admitted_onto_a_down_nodes_quota_runs_its_whole_duration_once_it_starts(sim_plan) -> None:
    from simulator.allocations import intervals

    # Admitted at 900 s while its node was down, its pod ran at 1200 s: counted to 1200 + 600 s.
    run = Run(jobs=[TraceJob(2, 0.0, "left", "share", 8, 1, 600.0)], speed=1, horizon=3600, corrected=True,
              calibration=[0.0], failure_schedule=[])
    run.events = [Event(*e) for e in [(900, 0, "submitted"), (900, 0, "admitted", "share", 8),
                                      (1200, 0, "started", "share", 8, "unschedulable"),
                                      (1250, 0, "finished", "share", 8, "Succeeded")]]
    (iv,) = intervals(run)
    assert (iv.start, iv.end, iv.ended) == (900, 1800, "finished")
    assert compute(run, sim_plan)["failures"]["started_late"] == 1


def test_the_report_shows_the_failures_in_every_format(sim_plan) -> None:
    from simulator import report

    r = compute(_failure_run(spares={"fill": 1, "share": 1}), sim_plan)
    # report.json and report.md as report.write writes them (without the plots, which test_report_files draws)
    assert json.loads(json.dumps(r, indent=2))["failures"]["gpu_hours_lost"] == 7.0
    md = report.text(r, "t", markdown=True)
    assert "| pool | node failures | jobs hit | requeued | restarted | redone GPU-h |" in md
    assert "| fill | 1 | 1 | 1 | 0 | 5.33 | 0.22 | 1.33 | 0.00 | 16.00 | 5.56 | 0.17 | 0.50 |" in md
    text = report.text(r, "t")
    assert ("node failures: 2 of 2 scheduled (from a schedule); 2 runs of 2 jobs lost work: 1 requeued whole, "
            "1 restarted in place") in text
    assert ("7.00 GPU-h lost = 6.67 redone + 0.33 stalled + 0.00 of capacity down (of 2.67: spare nodes covered the "
            "rest, 1 in fill, 1 in share, 32.00 GPU-h of spare capacity)") in text
    cmp = report.compare_text(compute(_failure_run(), sim_plan), r, "prod", "prod+1spare")
    assert "GPU-h lost to node failures" in cmp and "9.67 -> 7.00 (-2.67)" in cmp


def test_spare_nodes_are_each_pools_next_nodes_with_its_labels_and_taints(sim_plan) -> None:
    from gpu_platform.nodes import fake_nodes, spare_nodes

    spares = spare_nodes(sim_plan, {"fill": 1, "share": 2})
    assert [n["metadata"]["name"] for n in spares] == ["fill-2", "share-2", "share-3"]
    first = {n["metadata"]["name"]: n for n in fake_nodes(sim_plan)["items"]}["fill-0"]
    spare = spares[0]
    hostname = "kubernetes.io/hostname"
    assert {k: v for k, v in spare["metadata"]["labels"].items() if k != hostname} == \
        {k: v for k, v in first["metadata"]["labels"].items() if k != hostname}   # same pool, same rack
    assert spare["spec"]["taints"] == first["spec"]["taints"] and spare["status"] == first["status"]


# ---- kinds in a trace (the workload controllers') -----------------------------------------------------------


def test_a_trace_may_name_a_kind_and_every_kind_it_cannot_replay_is_named(sim_plan) -> None:
    ok = parse("submit,team,pool,units,pods,duration,kind\n0,solo,fill,8,2,1h,jobset\n0,left,share,2,1,10m,\n"
               "0,left,share,2,1,10m,rayjob\n", sim_plan)
    assert [j.kind for j in ok] == ["jobset", "job", "rayjob"]
    assert dump_csv(ok).splitlines()[1] == "0.0,solo,fill,8,2,3600.0,,succeeded,,,jobset"  # name, busy empty
    text = "\n".join([
        "submit,team,pool,units,pods,duration,outcome,kind",
        "0,solo,fill,8,1,1h,,deployment",     # line 2: not a kind
        "0,solo,fill,8,1,1h,failed,rayjob",   # 3: a RayJob ends by deletion: it cannot fail
        "0,solo,fill,8,1,1h,failed,trainjob", # 4: Trainer's runtime retries a failed pod
        "0,left,share,2,2,1h,,lws",           # 5: serving on a batch pool (the template's own refusal)
        "0,solo,fill,8,1,1h,failed,jobset",   # 6: fine
    ])
    with pytest.raises(TraceError) as err:
        parse(text, sim_plan, "t.csv")
    problems = err.value.problems
    assert [p.split(":")[0] for p in problems] == ["line 2", "line 3", "line 4", "line 5"]
    assert problems[0] == "line 2: kind 'deployment'; valid: job, jobset, trainjob, rayjob, lws"
    assert "outcome 'failed' cannot be replayed for kind 'rayjob' (it ends when the replay deletes it)" in problems[1]
    assert "kind 'trainjob' (Trainer's torch runtime retries a failed pod" in problems[2]
    assert "pool 'share' is a batch pool; a LeaderWorkerSet serves on inference pools" in problems[3]


def test_replayed_kinds_carry_the_trace_job_and_end_as_their_kind_does(sim_plan) -> None:
    from simulator import kinds

    label, duration = "sim.gpu-platform.io/job", "sim.gpu-platform.io/duration"
    jobset, = objects_for(sim_plan, TraceJob(1, 0.0, "solo", "fill", 8, 2, 3600.0, outcome="failed", kind="jobset"),
                          7, speed=120)
    (pod,) = kinds.pod_templates(jobset)
    assert jobset["metadata"]["name"] == pod["metadata"]["labels"][label] == "j00007"
    assert pod["metadata"]["annotations"][duration] == "30000ms"
    assert pod["metadata"]["annotations"]["sim.gpu-platform.io/outcome"] == "failed"
    assert {t["tolerationSeconds"] for t in pod["spec"]["tolerations"] if t.get("effect") == "NoExecute"} == {1}
    assert jobset["spec"]["ttlSecondsAfterFinished"] == sim_plan.job_max_ttl_seconds
    trainjob, = objects_for(sim_plan, TraceJob(1, 0.0, "solo", "fill", 8, 2, 3600.0, kind="trainjob"), 8, speed=60)
    (pod,) = kinds.pod_templates(trainjob)
    assert pod["metadata"]["annotations"][duration] == "60000ms" and pod["metadata"]["labels"][label] == "j00008"
    # A RayJob's pods (head, workers, submitter) run until the replay deletes it: no end of their own.
    rayjob, = objects_for(sim_plan, TraceJob(1, 0.0, "left", "share", 4, 2, 600.0, kind="rayjob"), 9, speed=10)
    pods = list(kinds.pod_templates(rayjob))
    assert len(pods) == 3 and all(p["metadata"]["labels"][label] == "j00009" for p in pods)
    assert not any(duration in p["metadata"].get("annotations", {}) for p in pods)
    assert [kinds.units_of(p) for p in pods] == [0, 4, 0]
    assert kinds.managed([rayjob]) is rayjob and kinds.PLURALS[rayjob["kind"]] == "rayjobs"


def test_a_serving_line_is_a_leaderworkerset_without_an_end_of_its_own() -> None:
    from simulator import kinds

    live_plan = load_plan(None, str(ROOT / "tests" / "live" / "stack.yaml"))[1]
    objs = objects_for(live_plan, TraceJob(1, 0.0, "delta", "shared", 1, 2, 600.0, kind="lws"), 3, speed=10)
    assert [o["kind"] for o in objs] == ["LeaderWorkerSet", "Service", "PodDisruptionBudget"]
    leader, worker = kinds.pod_templates(objs[0])
    for pod in (leader, worker):
        assert pod["metadata"]["labels"]["sim.gpu-platform.io/job"] == "j00003"
        assert "sim.gpu-platform.io/duration" not in pod["metadata"]["annotations"]
        assert kinds.units_of(pod) == 1


def test_a_replay_runs_the_controllers_its_kinds_need() -> None:
    from simulator.kinds import workloads_setting

    assert workloads_setting({"job"}) == "none"
    assert workloads_setting({"job", "jobset"}) == "jobset"
    assert workloads_setting({"trainjob"}) == "jobset,trainer"      # Trainer runs a TrainJob as a JobSet
    assert workloads_setting({"lws", "rayjob", "job"}) == "leaderWorkerSet,kuberay"


# ---- elastic pools: the nodes that ran ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def reserved_plan():
    """The simulator's test stack with `fill` a capacity reservation (2 x p5.48xlarge, paid whole); share and
    lend stay on demand, 0-2 nodes."""
    from gpu_platform.plan import build_plan

    doc = yaml.safe_load(SIM_STACK.read_text())
    doc["config"]["gpu-platform:platform"]["pools"][0]["capacity"] = {
        "type": "capacity-reservation", "reservationId": "cr-0123456789abcdef0", "min": 2, "max": 2}
    return build_plan(*load_stack_config(doc))


def _elastic_run() -> Run:
    """An hour, not corrected (runs as observed), three pools:
    - fill (reserved, 2 nodes up throughout): job 0 holds 8 of its 16 units for 30 min;
    - share (0-2 nodes): job 1, 2 pods of 8, admitted at 0 while share has no node; two nodes come at 300 s, its
      pods run at 300 and 310 s; it ends at 1500 s and the nodes stay empty until 2400 s (the scale-down delay);
    - lend (0-2 nodes): a node from 1800 to 3000 s; job 2 holds 4 of its 8 units from 1800 to 2400 s."""
    from simulator.records import NodeSample, ScaleUp

    jobs = [TraceJob(2, 0.0, "solo", "fill", 8, 1, 1800.0), TraceJob(3, 0.0, "left", "share", 8, 2, 1200.0),
            TraceJob(4, 1800.0, "borrower", "lend", 4, 1, 600.0)]
    run = Run(jobs=jobs, speed=1, horizon=3600, node_samples=[], scale_up_delay_s=240.0, scale_down_delay_s=900.0)
    run.events = [Event(*e) for e in [
        (0, 0, "submitted"), (0, 0, "admitted", "fill", 8), (0, 0, "running", "fill", 8),
        (0, 1, "submitted"), (0, 1, "admitted", "share", 16), (310, 1, "started", "share", 16, "unschedulable"),
        (310, 1, "running", "share", 16), (1500, 1, "finished", "share", 16, "Succeeded"),
        (1800, 0, "finished", "fill", 8, "Succeeded"),
        (1800, 2, "submitted"), (1800, 2, "admitted", "lend", 4), (1800, 2, "running", "lend", 4),
        (2400, 2, "finished", "lend", 4, "Succeeded")]]
    fill_busy, fill_idle = (("fill-0", 8), ("fill-1", 0)), (("fill-0", 0), ("fill-1", 0))
    run.node_samples = [
        NodeSample(0, {"fill": fill_busy}),
        NodeSample(300, {"fill": fill_busy, "share": (("share-k2x4p", 8), ("share-q7zr9", 8))}),
        NodeSample(1500, {"fill": fill_busy, "share": (("share-k2x4p", 0), ("share-q7zr9", 0))}),
        NodeSample(1800, {"fill": fill_idle, "share": (("share-k2x4p", 0), ("share-q7zr9", 0)), "lend": (("lend-m4n8c", 4),)}),
        NodeSample(2400, {"fill": fill_idle, "lend": (("lend-m4n8c", 0),)}),
        NodeSample(3000, {"fill": fill_idle}),
        NodeSample(3700, {"fill": fill_idle}),   # after the horizon: not counted
    ]
    run.scale_ups = [ScaleUp(1, "share", "share-k2x4p", 5.0, 300.0), ScaleUp(1, "share", "share-q7zr9", 5.0, 310.0)]
    return run


def test_node_hours_cost_and_idle_follow_the_nodes_that_ran(reserved_plan) -> None:
    r = compute(_elastic_run(), reserved_plan)
    fill, share, lend = (r["nodes"]["pools"][p] for p in ("fill", "share", "lend"))
    # fill: 2 nodes for the hour, all of it paid; its idle (8 units for 30 min, 16 for 30 min) is reserved idle.
    assert (fill["node_hours"], fill["usd"], fill["idle_gpu_hours"], fill["reserved_idle_gpu_hours"],
            fill["elastic_idle_gpu_hours"]) == (2.0, 110.08, 12.0, 12.0, 0.0)
    # share: 2 nodes from 300 to 2400 s (1.167 node-h of a possible 2); 16 units of quota held 300 s before any
    # node came (1.33 GPU-h, not billed); 2 empty nodes for the 900 s scale-down delay: 4 GPU-h of elastic idle.
    assert (share["node_hours"], share["usd"], share["usd_at_max"]) == (1.167, 35.15, 60.26)
    assert (share["held_without_node_gpu_hours"], share["elastic_idle_gpu_hours"], share["idle_gpu_hours"]) == \
        (1.33, 4.0, 4.0)
    assert (share["nodes_at_start"], share["nodes_peak"], share["nodes_max"], share["nodes_added"]) == (0, 2, 2, 2)
    assert (share["scale_up_pods"], share["scale_up_jobs"], share["scale_up_p50_s"], share["scale_up_p95_s"]) == \
        (2, 1, 295.0, 305.0)
    # lend: one node for 20 min, half used for 10 (partly used idle 4 units x 600 s), then empty for 10.
    assert (lend["node_hours"], lend["partly_used_idle_gpu_hours"], lend["elastic_idle_gpu_hours"]) == \
        (0.333, 0.67, 1.33)
    n = r["nodes"]
    assert (n["node_hours"], n["usd"], n["usd_at_max"]) == (3.5, 155.28, 230.6)
    assert (n["idle_gpu_hours"], n["reserved_idle_gpu_hours"], n["elastic_idle_gpu_hours"],
            n["partly_used_idle_gpu_hours"]) == (18.0, 12.0, 5.33, 0.67)
    # The cost is what the nodes up cost: useful runs on them, the rest idle (not capacity.max's $230.60).
    c = r["cost"]
    assert (c["useful_usd"], c["idle_usd"], c["total_usd"]) == (50.12, 105.16, 155.28)
    assert c["usd_per_finished_job"] == round(155.2765 / 3, 2)
    assert r["pools"]["share"]["idle_gpu_hours"] == 4.0
    # The wait to run counts the scale-up: left was admitted at once and ran 310 s later.
    left = r["teams"]["left"]
    assert (left["wait_p50_h"], left["wait_to_run_p50_h"]) == (0.0, 0.086)
    assert r["series"]["nodes_up"]["share"][:3] == [0.0, 0.0, 0.0] and max(r["series"]["nodes_up"]["share"]) == 2.0


def test_a_run_without_node_samples_assumes_every_pool_at_capacity_max(reserved_plan) -> None:
    run = _elastic_run()
    run.node_samples = None
    r = compute(run, reserved_plan)
    assert r["nodes"] is None
    # 16 units x 3 pools for the hour, at their unit prices: what the report charged before elastic pools.
    assert r["cost"]["total_usd"] == 230.6 and r["pools"]["share"]["idle_gpu_hours"] == round(16 - 16 * 1500 / 3600, 2)


def test_the_report_shows_the_nodes_in_every_format(reserved_plan, tmp_path) -> None:
    from simulator import report

    r = compute(_elastic_run(), reserved_plan)
    md = report.text(r, "t", markdown=True)
    assert ("| pool | capacity | nodes start/peak/max | node-h up | cost $ | cost at max $ | idle GPU-h | "
            "reserved idle GPU-h | elastic idle GPU-h | partly used idle GPU-h | held, no node GPU-h | scale-up pods | "
            "scale-up p50/p95 s |") in md
    assert "| share | on-demand | 0/2/2 | 1.17 | 35.15 | 60.26 | 4.00 | 0.00 | 4.00 | 0.00 | 1.33 | 2 | 295/305 |" in md
    assert "| fill | capacity-reservation, whole | 2/2/2 | 2.00 | 110.08 | 110.08 | 12.00 | 12.00 | 0.00 |" in md
    text = report.text(r, "t")
    assert ("nodes that ran: 3.50 node-hours, $155 (every pool at capacity.max: $231); idle (up, not allocated) 18.00 "
            "GPU-h = reserved 12.00 (paid anyway) + elastic 5.33") in text
    assert ("2 pods ran on a node added after their job's submission: pod created -> Running p50/p95/max "
            "295.00/305.00/305.00 s of trace time") in text
    assert "a node added after 240.00 s, an empty one removed after 900.00 s" in text
    written = report.plots(r, tmp_path, "t")
    assert (tmp_path / "nodes-up.png") in written and (tmp_path / "nodes-up.png").stat().st_size > 1000
    cmp = report.compare_text(compute(_elastic_run(), reserved_plan), r, "a", "b")
    assert "node-hours up" in cmp and "3.50 -> 3.50 (+0.00)" in cmp


def test_the_autoscalers_delays_are_compressed_like_every_other_time(sim_plan) -> None:
    from gpu_platform.errors import InputError
    from simulator.cli import compressed_delay, go_duration_s, stack_scale_down_s

    # The stack's scale-down delay: the Cluster Autoscaler's scaleDownUnneededTime, 10m by default.
    assert stack_scale_down_s(sim_plan) == 600.0
    assert (compressed_delay(600, 120), compressed_delay(300, 60), compressed_delay(10, 120)) == (5, 5, 1)
    assert (go_duration_s("1h30m", "x"), go_duration_s("90s", "x"), go_duration_s("500ms", "x")) == (5400.0, 90.0, 0.5)
    with pytest.raises(InputError, match="--scale-up-delay '5 minutes' is not a duration such as 30s, 10m or 1h30m"):
        go_duration_s("5 minutes", "--scale-up-delay")


def test_finished_jobs_busy_and_idle_are_counted_as_the_live_report_counts_them(sim_plan) -> None:
    """Every kind that runs to an end counts as a job once (its Workload Finished); a server (lws) ended by the
    replay does not. A run's GPU time is its pods' hold; busy that at the run's trace busy fraction."""
    jobs = [TraceJob(0, 0.0, "solo", "fill", 8, 1, 3600.0, busy=0.25, kind="jobset"),
            TraceJob(1, 0.0, "solo", "fill", 8, 1, 1800.0, kind="trainjob"),
            TraceJob(2, 0.0, "left", "share", 8, 1, 1800.0, kind="rayjob"),
            TraceJob(3, 0.0, "right", "share", 8, 1, 3600.0, busy=0.5, kind="lws"),
            TraceJob(4, 1800.0, "left", "share", 8, 1, 1800.0, outcome="failed")]
    ev = [(0, i, "submitted", "", 0, "") for i in range(4)] + [(0, i, "admitted", f, 8, "") for i, f in
                                                                 ((0, "fill"), (1, "fill"), (2, "share"), (3, "share"))]
    ev += [(60, 0, "running", "fill", 8, ""), (0, 1, "running", "fill", 8, ""), (0, 2, "running", "share", 8, ""),
           (0, 3, "running", "share", 8, ""),
           (1800, 1, "finished", "fill", 8, "Succeeded"), (1800, 2, "finished", "share", 8, "Succeeded"),
           (1800, 4, "submitted", "", 0, ""), (1800, 4, "admitted", "share", 8, ""), (1800, 4, "running", "share", 8, ""),
           (3600, 0, "finished", "fill", 8, "Succeeded"), (3600, 3, "finished", "share", 8, "Succeeded"),
           (3600, 4, "finished", "share", 8, "Failed")]
    run = _run(jobs, sorted(ev), 3600)
    # left's failed run: its pod ended at 3000 s, Kueue gave the quota back at 3600 s
    run.timings = [Timing(4, 1800.0, 3600.0, 1800.0, running=1800.0, ended=3000.0)]
    r = compute(run, sim_plan)
    solo, left, right = r["teams"]["solo"], r["teams"]["left"], r["teams"]["right"]
    assert (solo["finished"], left["finished"], left["failed"], right["finished"], r["jobs_finished"]) == (2, 1, 1, 0, 3)
    # solo: 8 GPUs for the hour, 8 for half of it; busy 8 x 0.25 from the minute its pod ran, 8 x 1 for half an hour
    assert (solo["allocated_gpu_hours"], solo["busy_gpu_hours"], solo["idle_gpu_hours"]) == (12.0, 5.9667, 6.0333)
    # a run's own GPU time is its pod's hold (1800 to 3000 s), not the quota it held (to 3600 s)
    assert (left["allocated_gpu_hours"], left["busy_gpu_hours"], left["failed_gpu_hours"]) == (8.0, 6.6667, 2.6667)
    assert left["idle_gpu_hours"] == 1.3333
    assert (right["busy_gpu_hours"], right["finished_gpu_hours"]) == (4.0, 8.0)
    # every pool at capacity for the hour: fill 2 x $55.04, share and lend 2 x $30.131 each, over 3 finished jobs
    assert r["cost"]["usd_per_finished_job"] == round((2 * 55.04 + 4 * 30.131) / 3, 2)
