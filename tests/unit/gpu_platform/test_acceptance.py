"""The acceptance test's spec layer (gpu_platform/acceptance/): the seven steps, the verdict, step 3's expected bus
bandwidth and step 7's comparison against a baseline, with literal figures."""

from __future__ import annotations

import pytest

from gpu_platform import acceptance as acc
from gpu_platform.errors import InputError
from tests.conftest import plan_of as plan_for


def _all_passed() -> list[acc.StepResult]:
    return [acc.StepResult.passed(n) for n in range(1, 8)]


def test_the_steps_are_the_guides_seven_in_order() -> None:
    assert [(s.number, s.key) for s in acc.STEPS] == [
        (1, "queued-job"), (2, "data-pull"), (3, "all-reduce"), (4, "train"), (5, "checkpoint-restore"),
        (6, "labels"), (7, "useful-work")]
    assert all(s.proves and s.figures and s.criteria for s in acc.STEPS)


def test_the_verdict_passes_with_exit_0_only_when_every_step_passed() -> None:
    v = acc.verdict(_all_passed())
    assert (v.passed, v.exit_code, v.problems()) == (True, 0, [])
    assert v.summary() == "PASSED: 7 passed, 0 failed, 0 skipped of 7"


def test_a_failed_step_names_itself_what_was_expected_and_what_was_seen() -> None:
    results = _all_passed()
    results[2] = acc.StepResult.failed(3, "busbw >= 354.98 GB/s", "busbw 120.50 GB/s")
    v = acc.verdict(results)
    assert (v.passed, v.exit_code) == (False, 1)
    assert v.problems() == ["step 3 (all-reduce) failed: expected busbw >= 354.98 GB/s; seen busbw 120.50 GB/s"]
    assert v.summary() == "NOT PASSED: 6 passed, 1 failed, 0 skipped of 7"


def test_a_skipped_step_keeps_the_verdict_from_passing_and_says_why() -> None:
    results = _all_passed()
    results[5] = acc.StepResult.not_available(6, "no Prometheus")
    v = acc.verdict(reversed(results))  # any order in, step order out
    assert [r.step for r in v.results] == [1, 2, 3, 4, 5, 6, 7]
    assert (v.passed, v.exit_code) == (False, 1)
    assert v.problems() == ["step 6 (labels) skipped: not available on this cluster: no Prometheus"]


def test_a_verdict_refuses_a_missing_or_repeated_step() -> None:
    with pytest.raises(ValueError, match=r"one result per step 1..7; got steps \[1, 2, 3, 4, 5, 6\]"):
        acc.verdict(_all_passed()[:6])
    with pytest.raises(ValueError, match=r"got steps \[1, 1, 2"):
        acc.verdict([acc.StepResult.passed(1), *_all_passed()])


def test_a_result_refuses_a_failure_without_expected_and_seen_or_a_skip_without_reason() -> None:
    with pytest.raises(ValueError, match="must say what was expected and what was seen"):
        acc.StepResult(3, acc.FAILED, expected="x")
    with pytest.raises(ValueError, match="must say why"):
        acc.StepResult(4, acc.SKIPPED)
    with pytest.raises(ValueError, match="status 'ok' is not one of passed, failed, skipped"):
        acc.StepResult(1, "ok")
    with pytest.raises(ValueError, match="step 8 is not one of 1..7"):
        acc.StepResult.passed(8)


# --- the baseline ------------------------------------------------------------------------------------


@pytest.mark.parametrize("text,kind,usd,per,unit,per_text", [
    ("gpu-hour=2.50", "gpu-hour", 2.5, 1.0, "GPU-hour", "GPU-hour"),
    ("gpu-hour=3", "gpu-hour", 3.0, 1.0, "GPU-hour", "GPU-hour"),
    ("api=0.002/1k-tokens", "api", 0.002, 1000.0, "tokens", "1k tokens"),
    ("api=2.50/1M-tokens", "api", 2.5, 1_000_000.0, "tokens", "1M tokens"),
    ("api=0.01/samples", "api", 0.01, 1.0, "samples", "sample"),
    ("api=0.5/100-sample", "api", 0.5, 100.0, "samples", "100 samples"),
])
def test_baselines_the_flag_accepts(text: str, kind: str, usd: float, per: float, unit: str, per_text: str) -> None:
    b = acc.parse_baseline(text)
    assert (b.kind, b.usd, b.per, b.unit, b.per_text) == (kind, usd, per, unit, per_text)


@pytest.mark.parametrize("text,why", [
    ("rent=3", "kind 'rent' is not a baseline; kinds: gpu-hour, api"),
    ("2.50", "not a baseline"),
    ("gpu-hour=abc", "not a baseline"),
    ("gpu-hour=-1", "not a baseline"),
    ("gpu-hour=0", "the price must be above 0 USD"),
    ("api=0.002/1k-words", "unit 'words' is not a unit of work the acceptance run reports; units: tokens, samples"),
    ("api=0.002/0k-tokens", "the count of tokens must be above 0"),
    ("api=0.002", "not a baseline"),
])
def test_a_bad_baseline_is_refused_naming_the_flag_and_the_valid_forms(text: str, why: str) -> None:
    with pytest.raises(InputError) as refused:
        acc.parse_baseline(text)
    message = str(refused.value)
    assert message.startswith(f"--baseline {text!r}: ")
    assert why in message
    if "units:" not in why:
        assert "gpu-hour=USD" in message and "api=USD/[N[k|M]-]UNIT" in message


# A job of 2 pods x 8 GPUs that finished after 600 s, and one run of 8 GPUs lost after 120 s (the pod step 5
# deletes), on p5.48xlarge at 55.04 USD per node-hour: 6.88 USD per GPU-hour.
RUNS = [acc.Run("w-0", 8, 600, "finished"), acc.Run("w-1", 8, 600, "finished"), acc.Run("w-1-lost", 8, 120, "preempted")]
PRICE = 55.04 / 8
WORK = acc.Work(tokens=3_000_000, samples=46_875)


def test_the_jobs_cost_is_useful_works_cost_table() -> None:
    # 16 GPUs x 600 s = 2.6667 GPU-h = 18.35 USD useful; 8 x 120 s = 0.2667 GPU-h = 1.83 USD lost.
    assert acc.job_cost(RUNS, PRICE) == {"useful_usd": 18.35, "lost_usd": 1.83, "running_usd": 0.0, "idle_usd": 0.0,
                                         "spare_usd": 0.0, "total_usd": 20.18, "usd_per_finished_job": 20.18}


def test_against_a_gpu_rental_the_cluster_pays_per_useful_gpu_hour() -> None:
    # 20.1813 USD (unrounded: 18.3467 + 1.8347) over 2.6667 useful GPU-hours: 7.568 USD per useful GPU-hour,
    # against 2.50 to rent.
    lost = acc.evaluate_useful_work(acc.parse_baseline("gpu-hour=2.50"), RUNS, PRICE, WORK)
    assert lost.status == acc.FAILED
    assert lost.expected == "the cluster's cost below 2.5 USD/GPU-hour (gpu-hour=2.50)"
    assert lost.seen == "7.568 USD/GPU-hour"
    figures = {f.name: (f.value, f.unit) for f in lost.figures}
    assert figures == {"cluster_cost": (7.568, "USD/GPU-hour"), "baseline_cost": (2.5, "USD/GPU-hour"),
                       "total_usd": (20.181333, "USD"), "useful_gpu_hours": (2.6667, "GPU-h")}
    won = acc.evaluate_useful_work(acc.parse_baseline("gpu-hour=8"), RUNS, PRICE, WORK)
    assert won.status == acc.PASSED


def test_against_an_api_the_cluster_pays_per_unit_of_output() -> None:
    # 20.1813 USD for 3,000,000 tokens: 0.0067271 USD per 1k tokens.
    c = acc.compare(acc.parse_baseline("api=0.002/1k-tokens"), RUNS, PRICE, WORK)
    assert round(c.cluster_usd_per_unit, 7) == 0.0067271 and c.work_units == 3000 and not c.beats
    assert acc.compare(acc.parse_baseline("api=0.01/1k-tokens"), RUNS, PRICE, WORK).beats
    # 46,875 samples: 0.4305 USD per 1k samples.
    c = acc.compare(acc.parse_baseline("api=0.5/1k-samples"), RUNS, PRICE, WORK)
    assert round(c.cluster_usd_per_unit, 4) == 0.4305 and c.beats


def test_no_useful_work_fails_and_no_baseline_skips() -> None:
    nothing = acc.evaluate_useful_work(acc.parse_baseline("api=0.002/1k-tokens"), RUNS, PRICE, acc.Work(0, 0))
    assert (nothing.status, nothing.expected, nothing.seen) == (acc.FAILED, "useful work to price (tokens trained)", "none")
    lost_only = acc.evaluate_useful_work(acc.parse_baseline("gpu-hour=2"), RUNS[2:], PRICE, WORK)
    assert (lost_only.status, lost_only.expected) == (acc.FAILED, "useful work to price (GPU time of finished runs)")
    skipped = acc.evaluate_useful_work(None, RUNS, PRICE, WORK)
    assert skipped.status == acc.SKIPPED and skipped.reason.startswith("no --baseline to compare against")


# --- step 3 ------------------------------------------------------------------------------------------


def test_the_expected_bus_bandwidth_is_the_published_figure_on_efa_pools_and_report_only_elsewhere() -> None:
    prod = plan_for("prod").pools_by_name
    p5 = acc.busbw_expectation(prod["h100-train"])
    # 80% of AWS's 443.72 GB/s (2 x p5.48xlarge, 2 GiB).
    assert (p5.min_gb_per_s, p5.published_gb_per_s, p5.message_bytes) == (354.98, 443.72, 2147483648)
    p5en = acc.busbw_expectation(prod["h200-train"])
    assert p5en.min_gb_per_s is None
    assert p5en.reason == ("no published nccl-tests all_reduce figure for p5en.48xlarge "
                           "(published: p4de.24xlarge, p5.48xlarge)")
    local = acc.busbw_expectation(plan_for("local").pools_by_name["train"])
    assert local.min_gb_per_s is None and "pool 'train' has no EFA" in local.reason
    assert local.text().startswith("report only: ")


def _allreduce(rank: int, busbw: float, correct: bool = True) -> dict[str, object]:
    return {"event": "allreduce", "rank": rank, "ranks": 2, "bytes": 16777216, "busbw_gb_per_s": busbw,
            "algbw_gb_per_s": busbw, "correct": correct}


def test_the_all_reduce_passes_on_the_slowest_rank_against_the_threshold() -> None:
    p5 = acc.busbw_expectation(plan_for("prod").pools_by_name["h100-train"])
    ok = acc.evaluate_allreduce([_allreduce(0, 450.0), _allreduce(1, 360.0)], 2, p5)
    assert ok.status == acc.PASSED
    assert {f.name: f.value for f in ok.figures}["busbw"] == 360.0
    slow = acc.evaluate_allreduce([_allreduce(0, 450.0), _allreduce(1, 300.0)], 2, p5)
    assert (slow.status, slow.seen) == (acc.FAILED, "busbw 300.00 GB/s")
    assert slow.expected.startswith("busbw >= 355.0 GB/s (80% of 443.72 GB/s, 2 x p5.48xlarge at 2147483648 B")


def test_the_all_reduce_fails_on_a_missing_rank_or_a_wrong_sum_and_skips_one_pod() -> None:
    report_only = acc.busbw_expectation(plan_for("local").pools_by_name["train"])
    assert acc.evaluate_allreduce([_allreduce(0, 0.9), _allreduce(1, 0.8)], 2, report_only).status == acc.PASSED
    missing = acc.evaluate_allreduce([_allreduce(0, 0.9)], 2, report_only)
    assert (missing.status, missing.expected, missing.seen) == (acc.FAILED, "an allreduce event from each of 2 pods",
                                                                "1 (ranks ['0'])")
    wrong = acc.evaluate_allreduce([_allreduce(0, 0.9), _allreduce(1, 0.9, correct=False)], 2, report_only)
    assert (wrong.status, wrong.seen) == (acc.FAILED, "a wrong sum on rank(s) 1")
    one = acc.evaluate_allreduce([], 1, report_only)
    assert one.status == acc.SKIPPED and "pass --nodes 2 or more" in one.reason


def test_events_are_read_from_a_log_with_other_lines_in_it() -> None:
    log = ("Warning: something from a library\n"
           '{"event": "start", "rank": 0}\n'
           "{not json\n"
           '{"event": "unknown", "rank": 0}\n'
           '  {"event": "allreduce", "rank": 0, "busbw_gb_per_s": 1.5}  \n'
           "Traceback (most recent call last):\n")
    assert acc.events_from_log(log) == [{"event": "start", "rank": 0},
                                        {"event": "allreduce", "rank": 0, "busbw_gb_per_s": 1.5}]


def test_a_short_runs_cost_is_not_rounded_away() -> None:
    """A local run of a minute on an eighth of a 0.805 USD GPU costs 0.0035 USD: the cost table rounds it to 0.00,
    the comparison must not (it would beat any baseline for free)."""
    runs = [acc.Run("a", 0.125, 60, "finished"), acc.Run("b", 0.125, 60, "finished")]
    c = acc.compare(acc.parse_baseline("gpu-hour=0.50"), runs, 0.805, acc.Work(0, 0))
    assert acc.job_cost(runs, 0.805)["total_usd"] == 0.0
    assert round(c.total_usd, 7) == 0.0033542 and round(c.cluster_usd_per_unit, 3) == 0.805 and not c.beats
