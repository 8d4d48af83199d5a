"""Bare Kueue vs the platform on Kueue's scheduler baseline (bench/kueue_compare.py): the generator's counts and
intervals at a fraction, the objects bare Kueue gets as Kueue's runner makes them, Kueue's figures from
timestamps, the runner's status writes, and the ratio and time-split tables. World: none (pure functions on
literal inputs; no cluster)."""

from __future__ import annotations

import argparse
import os

import pytest

from bench import bare_kueue, time_split
from bench.kueue_baseline import CLASSES, Record, compare, counts_at, creation_offsets, expected_at, figures, \
    format_table
from bench.kueue_compare import parse_phases
from bench.scale import parse_metrics
from gpu_platform import conventions as cv

SMALL, MEDIUM, LARGE = CLASSES


def test_the_generator_scales_every_class_by_the_fraction_keeping_one_of_each() -> None:
    assert counts_at(1.0) == {"small": 350, "medium": 100, "large": 50}
    assert expected_at(1.0) == 15000
    assert counts_at(0.1) == {"small": 35, "medium": 10, "large": 5}
    assert expected_at(0.1) == 1500
    # 0.005: 1.75 small round to 2; medium's 0.5 and large's 0.25 round to 0 and are kept at 1
    assert counts_at(0.005) == {"small": 2, "medium": 1, "large": 1}
    assert expected_at(0.005) == 120


def test_a_generator_sleeps_its_interval_before_every_creation() -> None:
    assert creation_offsets(LARGE, 3) == [1.2, 2.4, 3.6]
    assert creation_offsets(SMALL, 2) == [0.1, 0.2]
    assert [(c.interval_ms, c.runtime_ms, c.units, c.kueue_priority) for c in CLASSES] == \
        [(100, 200, 1, 50), (500, 500, 5, 100), (1200, 1000, 20, 200)]


def test_bare_kueue_gets_the_runners_queues_in_namespaces_no_platform_policy_selects() -> None:
    assert bare_kueue.queue_name(2, 3) == "cq-0-3-cohort-2"
    assert len(bare_kueue.queue_names()) == 30
    cq = bare_kueue.cluster_queue(2, 3)
    assert cq["spec"]["cohortName"] == "cohort-2"
    assert cq["spec"]["resourceGroups"] == [{"coveredResources": ["cpu"], "flavors": [{"name": "rf", "resources": [
        {"name": "cpu", "nominalQuota": "20", "borrowingLimit": "100"}]}]}]
    assert cq["spec"]["preemption"] == {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}
    ns = bare_kueue.namespace(2, 3)
    # the tenant policies, Kueue's Job management and the quotas select namespaces by the team label
    assert ns["metadata"]["labels"] == {"kueue.x-k8s.io/performance-scheduler-cleanup": "true"}
    assert cv.TEAM not in ns["metadata"]["labels"]
    assert bare_kueue.local_queue(2, 3)["spec"] == {"clusterQueue": "cq-0-3-cohort-2"}


def test_a_bare_workload_is_the_runners_one_pod_asking_its_class_cpu() -> None:
    wl = bare_kueue.workload("cq-0-0-cohort-0", LARGE, 7)
    assert wl["metadata"]["name"] == "large-2-7-0"
    assert wl["metadata"]["labels"] == {"kueue.x-k8s.io/performance-scheduler-running-ms": "1000",
                                        "kueue.x-k8s.io/performance-scheduler-class": "large"}
    assert wl["spec"]["queueName"] == "cq-0-0-cohort-0"
    assert wl["spec"]["priority"] == 200
    (ps,) = wl["spec"]["podSets"]
    assert (ps["name"], ps["count"]) == ("main", 1)
    assert ps["template"]["spec"]["containers"] == [{"name": "c", "resources": {"requests": {"cpu": "20"}}}]


ADMITTED_WL = {
    "metadata": {"name": "small-0-1-0", "namespace": "cq-0-0-cohort-0", "uid": "u-1", "generation": 1},
    "status": {
        "admission": {"clusterQueue": "cq-0-0-cohort-0"},
        "conditions": [
            {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "lastTransitionTime": "2026-12-07T08:00:00Z"},
            {"type": "Admitted", "status": "True", "reason": "Admitted", "lastTransitionTime": "2026-12-07T08:00:00Z"},
            {"type": "Evicted", "status": "True", "reason": "Preempted", "lastTransitionTime": "2026-12-07T08:00:03Z"},
            {"type": "Preempted", "status": "True", "reason": "InCohortReclamation", "lastTransitionTime": "2026-12-07T08:00:03Z"},
        ],
    },
}
T_0804 = 1796630640.0  # 2026-12-07T08:04:00Z


def test_the_runners_finish_is_a_finished_condition_by_test() -> None:
    patch = bare_kueue.finished_patch(ADMITTED_WL, T_0804)
    assert patch["metadata"] == {"name": "small-0-1-0", "namespace": "cq-0-0-cohort-0", "uid": "u-1"}
    assert patch["status"] == {"conditions": [{"type": "Finished", "status": "True", "reason": "ByTest",
                                               "message": "By test runner", "observedGeneration": 1,
                                               "lastTransitionTime": "2026-12-07T08:04:00Z"}]}


def test_an_evicted_workload_gets_its_quota_back_without_its_admission() -> None:
    patch = bare_kueue.evicted_patch(ADMITTED_WL, T_0804)
    status = patch["status"]
    assert "admission" not in status  # applied by kueue-admission, which owns it: the apply removes it
    assert [(c["type"], c["status"], c["reason"]) for c in status["conditions"]] == [
        ("QuotaReserved", "False", "Pending"), ("Evicted", "True", "Preempted"),
        ("Admitted", "False", "NoReservation"), ("Preempted", "True", "InCohortReclamation")]
    assert status["accumulatedPastExecutionTimeSeconds"] == 240  # admitted 08:00:00, evicted at 08:04:00


def test_kueues_figures_from_timestamps() -> None:
    recs = [
        Record("small", created=1.0, first_seen=1.5, admitted=3.5, finished=4.0),
        Record("small", created=2.0, first_seen=2.0, admitted=8.0, finished=9.0, evictions=1),
        Record("large", created=1.0, first_seen=1.2, admitted=2.2, finished=12.0),
        Record("medium", created=5.0, first_seen=5.5),  # never admitted
    ]
    fig = figures(recs, start=0.0, now=20.0, fraction=0.1, expected=4)
    assert fig["wall_s"] == 12.0 and fig["wall_budget_s"] == 42.5 and fig["wall_ratio_to_budget"] == 0.28
    assert (fig["workloads"], fig["finished"], fig["evictions"]) == (4, 3, 1)
    assert fig["classes"]["small"] == {"workloads": 2, "admitted": 2, "avg_time_to_admission_s": 4.0,
                                       "avg_submit_to_admitted_s": 4.25, "budget_s": 26.0, "ratio_to_budget": 0.15}
    assert fig["classes"]["large"]["avg_time_to_admission_s"] == 1.0
    assert fig["classes"]["medium"]["avg_time_to_admission_s"] is None


def test_the_ratio_table_is_platform_over_bare_against_the_target() -> None:
    bare = {"wall_s": 40.0, "classes": {"small": {"avg_time_to_admission_s": 10.0, "avg_submit_to_admitted_s": 10.0},
                                        "medium": {"avg_time_to_admission_s": 0.0}, "large": {}}}
    platform = {"wall_s": 50.0, "classes": {"small": {"avg_time_to_admission_s": 20.0,
                                                      "avg_submit_to_admitted_s": 30.0},
                                            "medium": {"avg_time_to_admission_s": 3.0}, "large": {}}}
    rows = {r["figure"]: (r["ratio"], r["within_target"]) for r in compare(bare, platform)}
    assert rows["wall, first creation to last finished (s)"] == (1.25, True)
    assert rows["avg time to admission, small (s)"] == (2.0, False)
    assert rows["avg submit to admitted, small (s)"] == (3.0, False)
    assert rows["avg time to admission, medium (s)"] == (None, None)  # bare's 0: no ratio
    assert rows["avg time to admission, large (s)"] == (None, None)
    table = format_table(compare(bare, platform)).splitlines()
    assert table[2] == "| wall, first creation to last finished (s) | 40.0 | 50.0 | 1.25x |"
    assert table[3] == "| avg time to admission, small (s) | 10.0 | 20.0 | 2.0x (over 1.5x) |"


def test_the_time_split_reads_seconds_per_webhook_policy_and_etcd_call() -> None:
    d = parse_metrics("\n".join([
        'apiserver_admission_webhook_admission_duration_seconds_sum{name="vworkload.kb.io",type="validating"} 3',
        'apiserver_admission_webhook_admission_duration_seconds_count{name="vworkload.kb.io",type="validating"} 300',
        'apiserver_validating_admission_policy_check_duration_seconds_sum{policy="tenant-workloads",policy_binding="b"} 0.5',
        'apiserver_validating_admission_policy_check_duration_seconds_count{policy="tenant-workloads",policy_binding="b"} 100',
        'apiserver_admission_controller_admission_duration_seconds_sum{name="ValidatingAdmissionPolicy",type="validate"} 0.75',
        'etcd_request_duration_seconds_sum{operation="create",type="/registry/batch/jobs"} 2',
        'etcd_request_duration_seconds_count{operation="create",type="/registry/batch/jobs"} 40',
        'apiserver_request_duration_seconds_sum{resource="jobs",subresource="",verb="POST"} 6',
        'apiserver_request_duration_seconds_count{resource="jobs",subresource="",verb="POST"} 12',
        'apiserver_request_duration_seconds_sum{resource="pods",subresource="",verb="WATCH"} 900',
    ]), time_split.API_NAMES)
    api = time_split.api_split(d)
    # a watch's seconds are how long it stayed open, not time served
    assert api["request_s"] == 6.0
    assert api["requests"] == {"POST jobs ": {"s": 6.0, "count": 12, "mean_ms": 500.0}}
    assert api["webhooks"] == {"vworkload.kb.io": {"s": 3.0, "count": 300, "mean_ms": 10.0}}
    assert api["policies"] == {"tenant-workloads": {"s": 0.5, "count": 100, "mean_ms": 5.0}}
    assert api["etcd"] == {"create /registry/batch/jobs": {"s": 2.0, "count": 40, "mean_ms": 50.0}}
    s = time_split.summary({"api": api, "kueue": {"reconcile_s": 1.5}}, {"kube-apiserver": 9.0})
    assert s["cpu kube-apiserver (s)"] == 9.0
    assert s["  ValidatingAdmissionPolicy plugin (s)"] == 0.75
    assert s["etcd request time (s)"] == 2.0
    assert s["Kueue reconcile time (s)"] == 1.5


def test_a_webhooks_seconds_outside_kueues_handler_are_the_api_servers_less_the_handlers() -> None:
    # The smoke run's Job mutating webhook (docs/performance.md, "Where the time went: the webhook gap").
    paths = time_split.webhook_paths([
        {"webhooks": [{"name": "mjob.kb.io",
                       "clientConfig": {"url": "https://127.0.0.1:24444/mutate-batch-v1-job", "caBundle": "x"}}]},
        {"webhooks": [{"name": "vjob.kb.io", "clientConfig": {"service": {
            "name": "kueue-webhook-service", "namespace": "kueue-system", "path": "/validate-batch-v1-job"}}}]},
    ])
    assert paths == {"mjob.kb.io": "/mutate-batch-v1-job", "vjob.kb.io": "/validate-batch-v1-job"}
    api = parse_metrics("\n".join([
        'apiserver_admission_webhook_admission_duration_seconds_sum{name="mjob.kb.io",operation="CREATE"} 260.28',
        'apiserver_admission_webhook_admission_duration_seconds_count{name="mjob.kb.io",operation="CREATE"} 120',
        'apiserver_admission_webhook_admission_duration_seconds_sum{name="vjob.kb.io",operation="CREATE"} 1.2',
        'apiserver_admission_webhook_admission_duration_seconds_count{name="vjob.kb.io",operation="CREATE"} 120',
        'apiserver_admission_webhook_admission_duration_seconds_sum{name="vjob.kb.io",operation="UPDATE"} 0.8',
        'apiserver_admission_webhook_admission_duration_seconds_count{name="vjob.kb.io",operation="UPDATE"} 80',
        'go_sched_latencies_seconds_sum 12.5',
        'go_sched_latencies_seconds_count 2500',
    ]), time_split.API_NAMES)
    kueue = parse_metrics("\n".join([
        'controller_runtime_webhook_latency_seconds_sum{webhook="/mutate-batch-v1-job"} 3',
        'controller_runtime_webhook_latency_seconds_count{webhook="/mutate-batch-v1-job"} 120',
        'controller_runtime_webhook_latency_seconds_sum{webhook="/validate-batch-v1-job"} 0.4',
        'controller_runtime_webhook_latency_seconds_count{webhook="/validate-batch-v1-job"} 200',
    ]), time_split.KUEUE_NAMES)
    gaps = time_split.outside_handler(api, kueue, paths)
    assert gaps == {"mjob.kb.io": {"api_mean_ms": 2169.0, "handler_mean_ms": 25.0, "outside_s": 257.28},
                    "vjob.kb.io": {"api_mean_ms": 10.0, "handler_mean_ms": 2.0, "outside_s": 1.6}}
    split = {"api": time_split.api_split(api), "kueue": {}, "webhooks_outside_handler": gaps}
    s = time_split.summary(split, {"kube-apiserver": 68.1, "kueue": 15.4},
                           {"kube-apiserver": 140.2, "kueue": 30.5, "kwok": 1.0})
    assert s["waiting for a CPU, kube-apiserver (s)"] == 140.2
    assert s["waiting for a CPU, kueue (s)"] == 30.5
    assert "waiting for a CPU, kwok (s)" not in s
    assert s["API server goroutines' wait to run, mean (ms)"] == 5.0
    assert s["    of it outside Kueue's handler (s)"] == 258.88


def test_a_webhook_kueue_did_not_serve_in_the_window_has_no_gap() -> None:
    api = parse_metrics("\n".join([
        'apiserver_admission_webhook_admission_duration_seconds_sum{name="vpod.kb.io"} 2',
        'apiserver_admission_webhook_admission_duration_seconds_count{name="vpod.kb.io"} 4',
    ]), time_split.API_NAMES)
    assert time_split.outside_handler(api, {}, {"vpod.kb.io": "/validate--v1-pod"}) == {}


def test_the_cpu_wait_is_read_per_running_component(tmp_path) -> None:
    run = tmp_path / "cluster" / "run"
    run.mkdir(parents=True)
    (run / "kueue.pid").write_text(f"{os.getpid()}\n")   # this process stands in for a running component
    (run / "etcd.pid").write_text("0\n")                  # no such process: left out
    waits = time_split.run_queue_seconds(tmp_path)
    assert list(waits) == ["kueue"] and waits["kueue"] >= 0


def test_phases_refuses_an_unknown_or_repeated_phase_naming_the_choices() -> None:
    assert parse_phases("platform,bare") == ["platform", "bare"]
    for bad in ("bare,bare", "bare,kueue", ""):
        with pytest.raises(argparse.ArgumentTypeError, match="--phases .*: a comma-separated order of bare, platform"):
            parse_phases(bad)
