"""The shared definitions of useful work (gpu_platform/useful_work.py), with hand-computed values."""

from __future__ import annotations

import math

import pytest

from gpu_platform import useful_work as uw


def test_a_step_function_integrates_to_its_area() -> None:
    # 4 units from t=10 to t=70, 8 from 40 to 100: 4*60 + 8*60 = 720 unit-seconds.
    points = uw.steps([(10, 4), (70, -4), (40, 8), (100, -8)])
    assert points == [(10, 4.0), (40, 12.0), (70, 8.0), (100, 0.0)]
    assert uw.step_integral(points, 0, 200) == 720.0
    assert uw.step_integral(points, 40, 70) == 360.0
    assert uw.integrate(points, 200) == 720.0
    assert uw.integrate(points, 200, lambda v: max(0.0, v - 8)) == 120.0  # above 8: 4 units for 30 s
    assert uw.at(points, 5) == 0.0 and uw.at(points, 40) == 12.0


def test_samples_stand_for_the_step_before_them() -> None:
    # 8 GPUs for 30 one-minute samples is 4 GPU-hours; the PromQL sum_over_time(x[W:1m]) * 60 / 3600.
    assert uw.sampled_hours([8.0] * 30, 60) == 4.0
    assert uw.idle_series([8, 8, 4], [6, 9, 0]) == [2, 0.0, 4]


def test_nearest_rank_percentile() -> None:
    assert uw.percentile([5, 1, 4, 2, 3], 0.5) == 3
    assert uw.percentile([5, 1, 4, 2, 3], 0.95) == 5
    assert uw.percentile([], 0.5) is None


def test_histogram_quantile_interpolates_as_prometheus_does() -> None:
    # 10 observations: 2 at or below 1 s, 6 at or below 2.5 s, 10 at or below 5 s.
    buckets = [(1.0, 2), (2.5, 6), (5.0, 10), (math.inf, 10)]
    assert uw.histogram_quantile(0.5, buckets) == pytest.approx(1.0 + 1.5 * (5 - 2) / 4)   # 2.125
    assert uw.histogram_quantile(0.1, buckets) == pytest.approx(0.5)
    # a rank in +Inf answers the highest finite bound
    assert uw.histogram_quantile(0.99, [(1.0, 1), (math.inf, 5)]) == 1.0
    assert uw.histogram_quantile(0.5, [(1.0, 0), (math.inf, 0)]) is None
    assert uw.histogram_quantile(0.5, [(1.0, 3)]) is None  # no +Inf bucket: not a histogram


def test_cost_per_finished_job_is_the_whole_capacity_over_successful_jobs() -> None:
    cost = uw.cost_summary({"useful_usd": 100.0, "lost_usd": 25.0, "running_usd": 15.0, "idle_usd": 60.0}, 4)
    assert cost == {"useful_usd": 100.0, "lost_usd": 25.0, "running_usd": 15.0, "idle_usd": 60.0, "spare_usd": 0.0,
                    "total_usd": 200.0, "usd_per_finished_job": 50.0}
    assert uw.cost_summary({"idle_usd": 10.0}, 0)["usd_per_finished_job"] is None
    with pytest.raises(ValueError, match="unknown cost buckets \\['compute_usd'\\]"):
        uw.cost_summary({"compute_usd": 1.0}, 1)


def test_runs_that_did_not_finish_are_lost() -> None:
    assert [uw.cost_key(e) for e in ("finished", "running", "failed", "preempted", "evicted")] == [
        "useful_usd", "running_usd", "lost_usd", "lost_usd", "lost_usd"]


def test_jain_index() -> None:
    assert uw.jain([1.0, 1.0]) == 1.0
    assert uw.jain([1.0, 0.0]) == 0.5
    assert uw.jain([None, 0.0]) is None


def test_a_run_ends_as_its_pod_shows() -> None:
    def outcome(**kw):
        return uw.run_outcome(**{"holds_at_end": False, "succeeded": False, "failed": False, "deleted": False, **kw})
    assert outcome(holds_at_end=True, succeeded=True) == "running"
    assert outcome(succeeded=True) == "finished"
    assert outcome(failed=True) == "failed"
    # deleted first, then Failed (a SIGTERM'd container on a real kubelet): the platform stopped it
    assert outcome(failed=True, deleted=True) == "preempted"
    assert outcome() == "preempted"   # gone while running (KWOK deletes at once)


def test_a_finished_job_is_a_job_kind_whose_workload_finished_succeeded() -> None:
    # Every kind the platform runs to an end counts once, by its Workload's Finished reason.
    assert [uw.job_end(k, "Succeeded") for k in ("Job", "JobSet", "TrainJob", "RayJob")] == ["finished"] * 4
    assert [uw.job_end(k, "Failed") for k in ("Job", "JobSet", "TrainJob", "RayJob")] == ["failed"] * 4
    # A server is no job; nor is a kind the platform does not run, nor a Finished reason of neither kind.
    assert uw.job_end("LeaderWorkerSet", "Succeeded") is None
    assert uw.job_end("Pod", "Succeeded") is None
    assert uw.job_end("Job", "OwnerNotFound") is None


def test_busy_gpus_follow_the_declared_fraction_and_default_to_all_the_time() -> None:
    assert uw.busy_gpus(4, 0.25) == 1.0
    assert uw.busy_gpus(2, None) == 2.0
    assert uw.busy_gpus(2, 1.5) == 2.0 and uw.busy_gpus(2, -1) == 0.0


def test_the_replays_run_endings_are_the_live_reports_outcomes() -> None:
    assert {k: uw.REPLAY_OUTCOME[k] for k in ("finished", "running", "failed", "evicted", "interrupted")} == {
        "finished": "finished", "running": "running", "failed": "failed", "evicted": "preempted",
        "interrupted": "preempted"}


def test_the_documented_kube_state_metrics_configuration_is_the_one_the_report_reads() -> None:
    import re

    import yaml

    from tests.conftest import ROOT

    text = (ROOT / "docs" / "report.md").read_text()
    block = re.search(r"```yaml\n(kind: CustomResourceStateMetrics\n.*?)```", text, re.S)
    assert block, "docs/report.md shows no CustomResourceStateMetrics"
    assert yaml.safe_load(block.group(1)) == uw.KSM_WORKLOAD_CONDITIONS
    # what the configuration makes is what the report asks for: prefix + "_" + the metric's name
    resource = uw.KSM_WORKLOAD_CONDITIONS["spec"]["resources"][0]
    assert f"{resource['metricNamePrefix']}_{resource['metrics'][0]['name']}" == uw.WORKLOAD_CONDITION_METRIC
