"""`python -m platform_cli report` against canned Prometheus API answers (a local HTTP server), with the
figures worked out by hand; and against an unreachable or empty Prometheus (exit 2, saying what it could not
read).

The stack is `local` (Pulumi.local.yaml): pool train is p5.48xlarge (8 H100, $55.04 a node-hour, so $6.88 a
GPU-hour), infer g6.12xlarge (4 L4, $4.602, so $1.1505 a GPU-hour); teams vision and nlp own the namespaces and
ClusterQueues of their names.
"""

from __future__ import annotations

import json
import math
import re
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterator

import pytest

from platform_cli import usage_report as ur
from platform_cli.cli import main
from platform_cli.prometheus_api import Prometheus
from tests.conftest import plan_of

END = 1_800_000_000.0          # a multiple of 60
STEP = 60.0
GRID = [END - 3600 + STEP * (i + 1) for i in range(60)]   # (end - 1h, end]


def matrix(metric: dict[str, str], values: Callable[[int], float | None]) -> dict[str, Any]:
    """A range-query series: values(i) at grid point i, None for no sample."""
    return {"metric": metric, "values": [[t, str(v)] for i, t in enumerate(GRID) if (v := values(i)) is not None]}


def vector(metric: dict[str, str], value: float) -> dict[str, Any]:
    return {"metric": metric, "value": [END, str(value)]}


def wl(namespace: str, name: str, kind: str, reason: str) -> dict[str, str]:
    """The labels of a Workload's Finished condition series as the report asks for them."""
    return {"namespace": namespace, "workload": name, "owner_kind": kind, "reason": reason}


def canned() -> dict[tuple[str, str], list[dict[str, Any]]]:
    """(query name, range | end | start) -> result."""
    first_half, second_half = (lambda v: lambda i: v if i < 30 else None), (lambda v: lambda i: v if i >= 30 else None)
    return {
        ("rules", "end"): [vector({"cluster_queue": "vision", "team": "vision"}, 1)],
        # vision holds 8 GPUs all hour and keeps 2 busy; nlp 4 GPUs for the second half hour, all busy.
        ("allocated", "range"): [matrix({"team": "vision", "pool": "train"}, lambda i: 8),
                                 matrix({"team": "nlp", "pool": "train"}, second_half(4)),
                                 matrix({"team": "serving", "pool": "infer"}, lambda i: 0)],
        ("busy", "range"): [matrix({"team": "vision", "pool": "train"}, lambda i: 2),
                            matrix({"team": "nlp", "pool": "train"}, second_half(4))],
        # two train nodes (16 GPUs), one infer node (4 L4s)
        ("capacity", "range"): [matrix({"pool": "train"}, lambda i: 16), matrix({"pool": "infer"}, lambda i: 4)],
        # vision: one pod finished after the first half hour, the next still runs; nlp: a run that crashed
        # after 15 minutes, then one deleted by Kueue after 15 minutes (preempted).
        ("pods", "range"): [
            matrix({"team": "vision", "pool": "train", "namespace": "vision", "pod": "p-done"}, first_half(8)),
            matrix({"team": "vision", "pool": "train", "namespace": "vision", "pod": "p-run"}, second_half(8)),
            matrix({"team": "nlp", "pool": "train", "namespace": "nlp", "pod": "n-crash"}, lambda i: 4 if 30 <= i < 45 else None),
            matrix({"team": "nlp", "pool": "train", "namespace": "nlp", "pod": "n-pre"}, lambda i: 4 if i >= 45 and i < 59 else None),
        ],
        ("pod_phases", "range"): [
            matrix({"namespace": "vision", "pod": "p-done", "phase": "Succeeded"}, lambda i: 1 if i >= 30 else None),
            matrix({"namespace": "nlp", "pod": "n-crash", "phase": "Failed"}, lambda i: 1 if i >= 45 else None),
        ],
        ("pod_deleted", "range"): [matrix({"namespace": "nlp", "pod": "n-pre"}, lambda i: 1 if i == 58 else None)],
        # Workloads Finished: vision's Job completed in the window, an older one was complete before it; nlp's
        # Job "crash" failed before the window, was deleted, and was created again and failed again.
        ("jobs_finished", "range"): [
            matrix(wl("vision", "job-done-1", "Job", "Succeeded"), lambda i: 1 if i >= 30 else None),
            matrix(wl("vision", "job-old-2", "Job", "Succeeded"), lambda i: 1 if i < 10 else None),
            matrix(wl("nlp", "job-crash-3", "Job", "Failed"), lambda i: 1 if i < 5 or i >= 45 else None),
        ],
        # vision's admission waits: 9 in the window (10 at the end, 1 before), 1 of them within 1 s, 5 within
        # 2.5 s, all within 5 s.
        ("waits", "end"): [vector({"cluster_queue": "vision", "le": le}, n)
                           for le, n in (("1", 2), ("2.5", 6), ("5", 10), ("+Inf", 10))],
        ("waits", "start"): [vector({"cluster_queue": "vision", "le": le}, 1) for le in ("1", "2.5", "5", "+Inf")],
        ("evictions", "end"): [vector({"cluster_queue": "nlp", "reason": "Preempted", "underlying_cause": ""}, 3),
                               vector({"cluster_queue": "nlp", "reason": "PodsReadyTimeout",
                                       "underlying_cause": "WaitForStart"}, 1)],
        ("evictions", "start"): [vector({"cluster_queue": "nlp", "reason": "Preempted", "underlying_cause": ""}, 1)],
        ("admissions", "end"): [vector({"cluster_queue": "vision"}, 5), vector({"cluster_queue": "nlp"}, 4)],
        ("admissions", "start"): [vector({"cluster_queue": "vision"}, 3)],
        ("workload_states", "end"): [vector({}, 9)],
    }


class FakePrometheus:
    """Answers the report's queries from `answers`; records what was asked."""

    def __init__(self, answers: dict[tuple[str, str], list[dict[str, Any]]]):
        names = {expr: name for name, expr in ur.queries(plan_of("local")).items()}
        answers_ = answers
        asked: list[tuple[str, str]] = []
        self.asked = asked

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                url = urllib.parse.urlparse(self.path)
                q = dict(urllib.parse.parse_qsl(url.query))
                name = names.get(q["query"], q["query"])
                if url.path.endswith("query_range"):
                    key, rtype = (name, "range"), "matrix"
                else:
                    key = (name, "end" if float(q["time"]) >= END - STEP else "start")
                    rtype = "vector"
                asked.append(key)
                body = json.dumps({"status": "success", "data": {"resultType": rtype, "result": answers_.get(key, [])}})
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(body.encode())

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def fake() -> Iterator[FakePrometheus]:
    f = FakePrometheus(canned())
    yield f
    f.close()


@pytest.fixture(scope="module")
def report(fake: FakePrometheus) -> dict[str, Any]:
    win = ur.window(END, 3600)
    assert win.grid == GRID
    return ur.build(Prometheus(fake.url), plan_of("local"), win, pending=None)


def test_allocated_busy_and_idle_gpu_hours_per_team_and_pool(report) -> None:
    vision, nlp = report["teams"]["vision"]["pools"]["train"], report["teams"]["nlp"]["pools"]["train"]
    assert (vision["allocated_gpu_hours"], vision["busy_gpu_hours"], vision["idle_gpu_hours"]) == (8.0, 2.0, 6.0)
    assert vision["busy_share"] == 0.25
    assert (nlp["allocated_gpu_hours"], nlp["busy_gpu_hours"], nlp["idle_gpu_hours"]) == (2.0, 2.0, 0.0)
    assert report["teams"]["serving"]["pools"]["infer"]["busy_share"] is None


def test_runs_are_counted_by_how_their_pods_ended(report) -> None:
    vision, nlp = report["teams"]["vision"], report["teams"]["nlp"]
    assert vision["runs"] == {"finished": 1, "running": 1, "failed": 0, "preempted": 0}
    assert (vision["finished_gpu_hours"], vision["running_gpu_hours"]) == (4.0, 4.0)
    assert nlp["runs"] == {"finished": 0, "running": 0, "failed": 1, "preempted": 1}
    # 4 GPUs for 15 samples of a minute; 4 GPUs for 14
    assert nlp["failed_gpu_hours"] == 1.0
    assert nlp["preempted_gpu_hours"] == pytest.approx(14 * 4 / 60)
    assert (vision["jobs_finished"], vision["jobs_failed"], nlp["jobs_finished"], nlp["jobs_failed"]) == (1, 0, 0, 1)


def test_the_report_reads_every_source_it_needs_from_a_complete_prometheus(report) -> None:
    assert report["unavailable"] == []


def test_a_prometheus_without_the_workload_states_says_finished_jobs_are_not_counted() -> None:
    """A cluster's kube-state-metrics without the Workload configuration: the report says so, not 'no job done'."""
    answers = {k: v for k, v in canned().items() if k[0] != "workload_states"}
    f = FakePrometheus(answers)
    try:
        r = ur.build(Prometheus(f.url), plan_of("local"), ur.window(END, 3600), pending=None)
    finally:
        f.close()
    [why] = r["unavailable"]
    assert why.startswith("finished jobs: ") and "has no kube_kueue_workload_status_condition series" in why
    assert "custom resource state of Kueue's Workloads" in why
    assert "could not read finished jobs: " in ur.text(r, "local")


def test_finished_jobs_count_every_job_kind_once_and_no_server() -> None:
    """Workloads Finished in the window, one per object Kueue ran: a JobSet, a TrainJob and a RayJob count as a
    Job does (their child Jobs have no Workload of their own); a LeaderWorkerSet is no job."""
    plan = plan_of("local")
    empty: dict[str, Any] = {name: [] for name in ur.RANGE}
    raw = {**empty, **{name: {"end": [], "start": []} for name in ur.COUNTERS},
           "jobs_finished": [
               matrix(wl("vision", "jobset-a-1", "JobSet", "Succeeded"), lambda i: 1 if i >= 10 else None),
               matrix(wl("vision", "trainjob-b-2", "TrainJob", "Succeeded"), lambda i: 1 if i >= 20 else None),
               matrix(wl("vision", "rayjob-c-3", "RayJob", "Succeeded"), lambda i: 1 if i >= 30 else None),
               matrix(wl("vision", "lws-d-4", "LeaderWorkerSet", "Succeeded"), lambda i: 1 if i >= 40 else None),
               matrix(wl("nlp", "jobset-e-5", "JobSet", "Failed"), lambda i: 1 if i >= 50 else None),
               matrix(wl("nlp", "job-f-6", "Job", "Succeeded"), lambda i: 1 if i >= 55 else None),
           ]}
    report = ur.compute(raw, plan, ur.window(END, 3600))
    vision, nlp = report["teams"]["vision"], report["teams"]["nlp"]
    assert (vision["jobs_finished"], vision["jobs_failed"], nlp["jobs_finished"], nlp["jobs_failed"]) == (3, 0, 1, 1)
    assert report["jobs_finished"] == 4


def test_waits_requeues_and_admissions_are_the_counters_increase_over_the_window(report) -> None:
    vision, nlp = report["teams"]["vision"], report["teams"]["nlp"]
    # increase: 1 within 1 s, 5 within 2.5 s, 9 within 5 s. p50: rank 4.5 in (1, 2.5]: 1 + 1.5 * 3.5/4;
    # p95: rank 8.55 in (2.5, 5]: 2.5 + 2.5 * 3.55/4
    assert vision["wait_p50_s"] == pytest.approx(2.3125)
    assert vision["wait_p95_s"] == pytest.approx(4.71875)
    assert vision["wait_buckets"] == [(1.0, 1.0), (2.5, 5.0), (5.0, 9.0), (math.inf, 9.0)]
    assert nlp["wait_p50_s"] is None
    assert nlp["requeues"] == {"Preempted": 2, "PodsReadyTimeout/WaitForStart": 1}
    assert (vision["admissions"], nlp["admissions"]) == (2, 4)


def test_pools_and_the_cost_per_finished_job(report) -> None:
    train, infer = report["pools"]["train"], report["pools"]["infer"]
    assert (train["capacity_gpu_hours"], train["allocated_gpu_hours"], train["busy_gpu_hours"],
            train["unallocated_gpu_hours"], train["allocation"]) == (16.0, 10.0, 4.0, 6.0, 0.625)
    assert (infer["capacity_gpu_hours"], infer["unallocated_gpu_hours"]) == (4.0, 4.0)
    # lost: nlp's failed 1 + preempted 0.9333 GPU-h at $6.88; running: vision's 4 GPU-h; compute: the 10
    # allocated GPU-h less those; unallocated: 6 train GPU-h at $6.88 + 4 infer GPU-h at $1.1505.
    lost = (1.0 + 14 * 4 / 60) * 6.88
    assert report["cost"] == {
        "useful_usd": round(10 * 6.88 - lost - 4 * 6.88, 2), "lost_usd": round(lost, 2), "running_usd": 27.52,
        "idle_usd": round(6 * 6.88 + 4 * 1.1505, 2), "spare_usd": 0.0, "total_usd": round(16 * 6.88 + 4 * 1.1505, 2),
        "usd_per_finished_job": round(16 * 6.88 + 4 * 1.1505, 2),
    }
    assert report["cost"]["total_usd"] == 114.68


def test_the_table_and_markdown_say_it_in_words(report) -> None:
    out = ur.text(report, "local")
    assert re.search(r"\nvision +train +8\.00 +2\.00 +6\.00 +25\.0%\n", out)
    assert "Cost per finished job: $114.68 = capacity $114.68" in out
    assert "/ 1 jobs finished" in out
    md = ur.text(report, "local", markdown=True)
    assert "| vision | train | 8.00 | 2.00 | 6.00 | 25.0% |" in md


def test_the_cli_writes_json_markdown_and_plots(fake: FakePrometheus, tmp_path, capsys) -> None:
    assert main(["report", "--stack", "local", "--prometheus", fake.url, "--since", "1h", "--at", str(END),
                 "--no-pending", "--format", "json", "--out", str(tmp_path)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["teams"]["vision"]["pools"]["train"]["allocated_gpu_hours"] == 8.0
    assert doc["window"] == {"start": "2027-01-15T07:00:00Z", "end": "2027-01-15T08:00:00Z", "hours": 1.0,
                             "step_s": 60.0, "data_from": "2027-01-15T07:01:00Z"}
    assert {p.name for p in tmp_path.iterdir()} == {"report.json", "report.md", "utilization.png", "wait-cdf.png"}
    assert (tmp_path / "utilization.png").read_bytes()[:4] == b"\x89PNG"


def test_an_unreachable_prometheus_says_what_it_could_not_read_and_exits_2(capsys) -> None:
    import socket

    with socket.socket() as s:   # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert main(["report", "--stack", "local", "--prometheus", f"http://127.0.0.1:{port}", "--no-pending"]) == 2
    err = capsys.readouterr().err
    assert "could not read the platform's recording rules (gpu_platform:cluster_queue_team:info)" in err
    assert f"http://127.0.0.1:{port} is unreachable" in err


def test_an_empty_prometheus_says_the_rules_are_missing_and_exits_2(capsys) -> None:
    empty = FakePrometheus({})
    try:
        assert main(["report", "--stack", "local", "--prometheus", empty.url, "--no-pending", "--at", str(END)]) == 2
    finally:
        empty.close()
    err = capsys.readouterr().err
    assert "could not read the platform's recording rules" in err and "PrometheusRule is not loaded" in err


def test_rules_without_kueue_data_say_kueue_is_not_scraped(capsys) -> None:
    rules_only = FakePrometheus({("rules", "end"): canned()[("rules", "end")]})
    try:
        assert main(["report", "--stack", "local", "--prometheus", rules_only.url, "--no-pending", "--at", str(END)]) == 2
    finally:
        rules_only.close()
    assert "is Kueue scraped (kueue_cluster_queue_resource_usage)?" in capsys.readouterr().err


def test_a_prometheus_error_is_reported_with_its_message(capsys) -> None:
    class Failing(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            body = json.dumps({"status": "error", "errorType": "bad_data", "error": "invalid parameter"}).encode()
            self.send_response(400)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Failing)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        assert main(["report", "--stack", "local", "--prometheus", f"http://127.0.0.1:{server.server_address[1]}",
                     "--no-pending"]) == 2
    finally:
        server.shutdown()
        server.server_close()
    assert "HTTP 400" in (err := capsys.readouterr().err) and "invalid parameter" in err


@pytest.mark.parametrize("args, message", [
    (["--since", "yesterday"], "--since 'yesterday' is not a positive duration"),
    (["--at", "noon"], "--at 'noon' is neither unix seconds nor an RFC 3339 time"),
    (["--sigv4"], "pass --sigv4 REGION"),
])
def test_bad_options_name_themselves(args, message, capsys) -> None:
    assert main(["report", "--stack", "local", "--prometheus", "http://127.0.0.1:1", "--no-pending", *args]) == 2
    assert message in capsys.readouterr().err


def test_the_window_is_the_grid_a_subquery_samples_and_long_windows_widen_the_step() -> None:
    w = ur.window(1000.0, 300.0, 60.0)
    assert w.grid == [720.0, 780.0, 840.0, 900.0, 960.0]     # (700, 1000] on multiples of 60
    assert ur.window(END, 30 * 86400).step == 240.0            # 30 days: 10,800 points of 4 minutes
