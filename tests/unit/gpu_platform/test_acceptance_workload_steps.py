"""Steps 2, 3, 4 and 5's verdicts from the workload's events (gpu_platform/acceptance/workload.py, recovery.py),
with literal figures; no cluster (the events are what train.py prints)."""

from __future__ import annotations

from gpu_platform import acceptance as acc

DATA = [{"event": "data", "rank": 0, "bytes": 1_180_672, "seconds": 0.5},
        {"event": "data", "rank": 1, "bytes": 1_180_672, "seconds": 0.8}]
ALLREDUCE = [{"event": "allreduce", "rank": r, "bytes": 16_777_216, "seconds": 0.1, "algbw_gb_per_s": 0.168,
              "busbw_gb_per_s": 0.168, "ranks": 2, "correct": True} for r in (0, 1)]
REPORT_ONLY = acc.BusbwExpectation("g6.xlarge", None, reason="no EFA")


def test_step_2_reports_all_bytes_and_the_slowest_pod() -> None:
    r = acc.evaluate_data_pull(DATA, 2)
    assert r.status == acc.PASSED
    assert [(f.name, f.value) for f in r.figures] == [("bytes", 2_361_344), ("seconds", 0.8), ("throughput", 1.48)]


def test_step_2_fails_with_the_workloads_own_error_and_later_steps_say_it_stopped_there() -> None:
    events = [DATA[0], {"event": "error", "rank": 1, "phase": "data-pull",
                        "message": "ClientError: An error occurred (AccessDenied) when calling the GetObject operation"}]
    r = acc.evaluate_data_pull(events, 2)
    assert (r.status, r.seen) == (acc.FAILED, "rank 1 failed in data-pull: ClientError: An error occurred "
                                              "(AccessDenied) when calling the GetObject operation")
    for step, result in ((3, acc.evaluate_allreduce_run(events, 2, REPORT_ONLY)),
                         (4, acc.evaluate_training(events, 2, 60)), (5, acc.stopped_before(5, events))):
        assert result is not None and result.status == acc.SKIPPED
        assert result.reason.startswith("the workload stopped before this step (step 2): rank 1 failed in data-pull")


def test_step_2_fails_when_a_pod_read_nothing() -> None:
    r = acc.evaluate_data_pull(DATA[:1], 2)
    assert (r.status, r.seen) == (acc.FAILED, "a data event from 1 pod(s) (ranks ['0'])")


def test_step_3_names_the_rendezvous_that_never_met() -> None:
    events = [*DATA, {"event": "error", "rank": 1, "phase": "allreduce",
                      "message": "RuntimeError: Socket Timeout"}]
    r = acc.evaluate_allreduce_run(events, 2, REPORT_ONLY)
    assert (r.status, r.expected, r.seen) == (acc.FAILED, "an all-reduce across the 2 pods",
                                              "rank 1 failed in allreduce: RuntimeError: Socket Timeout")
    assert acc.evaluate_allreduce_run([*DATA, *ALLREDUCE], 2, REPORT_ONLY).status == acc.PASSED


DONE = [{"event": "done", "rank": r, "first_step": 101, "last_step": 400, "steps": 300, "tokens": 307_200,
         "samples": 4_800, "seconds": 40.0, "trained_s": 60.2, "step_time_s": 0.133, "tokens_per_s": 7680.0}
        for r in (0, 1)]


def test_step_4_reports_the_whole_runs_steps_and_both_ranks_throughput() -> None:
    r = acc.evaluate_training(DONE, 2, 60)
    assert r.status == acc.PASSED
    assert [(f.name, f.value) for f in r.figures] == [
        ("steps", 400), ("step_time", 0.133), ("throughput", 15360.0), ("tokens", 614_400), ("samples", 9_600)]


def test_step_4_fails_a_window_cut_short() -> None:
    short = [{**d, "trained_s": 41.5} for d in DONE]
    r = acc.evaluate_training(short, 2, 60)
    assert (r.status, r.seen) == (acc.FAILED, "the window ended after 41.5 s of training")


def test_step_4_takes_the_window_as_over_when_it_is_over_for_any_rank() -> None:
    """The ranks stop at the same step, each timing its own window: a live run's done events said 60.001 and
    59.996 s of a 60 s window."""
    ranks = [{**DONE[0], "trained_s": 60.001}, {**DONE[1], "trained_s": 59.996}]
    assert acc.evaluate_training(ranks, 2, 60).status == acc.PASSED


CHECKPOINT = {"event": "checkpoint", "rank": 0, "step": 100, "key": "checkpoints/j/step-00000100.pt",
              "bytes": 398_000, "seconds": 0.09, "ok": True}
RESTORES = tuple({"event": "restore", "rank": r, "step": 100, "seconds": 0.05 + r / 100} for r in (0, 1))


def test_step_5_passes_when_the_recovered_gang_resumes_from_the_checkpoint() -> None:
    r = acc.evaluate_recovery(acc.Recovery((CHECKPOINT,), "j-workers-0-1-abcde", 21.4, RESTORES), 2)
    assert r.status == acc.PASSED
    assert [(f.name, f.value) for f in r.figures] == [
        ("checkpoint_write", 0.09), ("checkpoint_step", 100), ("recovery", 21.4), ("restore", 0.06),
        ("resumed_step", 100)]


def test_step_5_fails_a_restart_from_zero() -> None:
    from_zero = tuple({**e, "step": 0} for e in RESTORES)
    r = acc.evaluate_recovery(acc.Recovery((CHECKPOINT,), "pod", 20.0, from_zero), 2)
    assert (r.status, r.seen) == (acc.FAILED, "restored step(s) [0]")
    assert r.expected == "training resumed from the checkpoint's step (100 or a later checkpoint), not from zero"


def test_step_5_fails_a_checkpoint_that_could_not_be_written_naming_it() -> None:
    refused = {**CHECKPOINT, "ok": False, "message": "ClientError: An error occurred (AccessDenied) when calling "
                                                     "the PutObject operation: Access Denied"}
    r = acc.evaluate_recovery(acc.Recovery((refused,), None, None, (), None), 2)
    assert (r.status, r.expected) == (acc.FAILED, "a checkpoint written to the data path before the pod is deleted")
    assert r.seen == ("rank 0 could not write its checkpoint of step 100 to checkpoints/j/step-00000100.pt: "
                      "ClientError: An error occurred (AccessDenied) when calling the PutObject operation: Access Denied")


def test_step_5_fails_a_job_that_did_not_come_back() -> None:
    r = acc.evaluate_recovery(acc.Recovery((CHECKPOINT,), "pod", None, (), "JobSet failed: FailedJobs: ..."), 2)
    assert (r.status, r.seen) == (acc.FAILED, "JobSet failed: FailedJobs: ...")
    assert r.expected == "the job running again on 2 pods after pod was deleted"
