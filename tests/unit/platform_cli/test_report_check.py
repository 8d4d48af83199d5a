"""`python -m platform_cli report --check` against a fake Prometheus: every input the report reads, each taken away
in turn, is named as missing with what to fix (exit 1); a Prometheus with all of them passes (exit 0); one that
cannot be read is exit 2. Stack `local`: teams vision, nlp and serving (their ClusterQueues of the same names),
pools train, infer and notebooks."""

from __future__ import annotations

import copy
import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from platform_cli import report_check as rc
from platform_cli.cli import main
from tests.conftest import plan_of

AT = 1767225600.0  # 2026-01-01T00:00:00Z
NODES = ("gpu-0", "gpu-1")


def vector(label: str | None, values: dict[str, float]) -> list[dict[str, Any]]:
    if label is None:
        return [{"metric": {}, "value": [AT, str(v)]} for v in values.values()]
    return [{"metric": {label: k}, "value": [AT, str(v)]} for k, v in values.items()]


def healthy() -> dict[str, list[dict[str, Any]]]:
    """What the live local cluster's Prometheus answers with every input there: two GPU nodes."""
    return {
        "rules": vector("team", {"vision": 1, "nlp": 1, "serving": 1}),
        "kueue": vector("cluster_queue", {"vision": 1, "nlp": 1, "serving": 1}),
        "kueue_resources": vector(None, {"": 27}),
        "ksm": vector(None, {"": 4}),
        "gpu_nodes": vector("node", {n: 1 for n in NODES}),
        "dcgm_up": vector("node", {n: 1 for n in NODES}),
        "dcgm_busy": vector("node", {n: 8 for n in NODES}),
        "pool_label": vector("node", {n: 1 for n in NODES}),
        "workload_states": vector(None, {"": 12}),
        "kueue_workloads": vector(None, {"": 3}),
    }


class FakePrometheus:
    """Answers --check's instant queries by name from `answers` (an unknown query: an empty vector)."""

    def __init__(self, answers: dict[str, list[dict[str, Any]]]):
        names = {expr: name for name, expr in rc.queries(plan_of("local")).items()}

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                q = dict(urllib.parse.parse_qsl(urllib.parse.urlparse(self.path).query))
                result = answers.get(names.get(q["query"], ""), [])
                body = json.dumps({"status": "success", "data": {"resultType": "vector", "result": result}})
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


def check(answers: dict[str, list[dict[str, Any]]], capsys) -> tuple[int, str]:
    fake = FakePrometheus(answers)
    try:
        code = main(["report", "--stack", "local", "--check", "--prometheus", fake.url, "--at", str(AT)])
    finally:
        fake.close()
    return code, capsys.readouterr().out


def test_a_prometheus_with_every_input_passes(capsys) -> None:
    code, out = check(healthy(), capsys)
    assert code == 0
    assert "report --check: stack local, Prometheus http://127.0.0.1:" in out
    assert "at 2026-01-01T00:00:00Z" in out
    for line in ("ok  rules loaded: gpu_platform:cluster_queue_team:info for all 3 teams",
                 "ok  Kueue scraped: all 3 ClusterQueues, with resource metrics",
                 "ok  kube-state-metrics scraped: 4 nodes",
                 "ok  dcgm-exporter up: 2 GPU nodes, each with DCGM_FI_PROF_GR_ENGINE_ACTIVE",
                 "ok  node pool labels: 2 nodes with label_gpu_platform_io_pool",
                 "ok  Workload states: 12 kube_kueue_workload_status_condition series",
                 "ok  prices known: all 3 pools"):
        assert line in out
    assert out.rstrip().endswith("every input the report reads is there (7 checked)")


def test_without_the_rules_it_names_the_rule_and_the_release_label(capsys) -> None:
    code, out = check({**healthy(), "rules": []}, capsys)
    assert code == 1
    assert "MISSING  rules loaded: no gpu_platform:cluster_queue_team:info series: the stack's PrometheusRule is not loaded" in out
    assert "fix: mode external: your Prometheus must select PrometheusRules labelled release=kube-prometheus-stack" in out
    assert "1 of 7 inputs missing: rules loaded; the report would read 0 for what they feed" in out


def test_rules_of_another_plan_name_the_teams_they_lack(capsys) -> None:
    code, out = check({**healthy(), "rules": vector("team", {"vision": 1})}, capsys)
    assert code == 1
    assert "gpu_platform:cluster_queue_team:info has no series for team nlp, serving: the rules loaded are another plan's" in out


def test_without_the_kueue_target_it_names_kueue(capsys) -> None:
    code, out = check({**healthy(), "kueue": [], "kueue_resources": [], "kueue_workloads": []}, capsys)
    assert code == 1
    assert "MISSING  Kueue scraped: no kueue_pending_workloads series: Kueue's metrics endpoint is not scraped" in out
    assert "the Kueue ServiceMonitor (monitoring/kueue, label release=kube-prometheus-stack) must be selected" in out


def test_kueue_without_its_resource_metrics_names_the_setting(capsys) -> None:
    code, out = check({**healthy(), "kueue_resources": []}, capsys)
    assert code == 1
    assert "no kueue_cluster_queue_nominal_quota series: Kueue runs without its ClusterQueue resource metrics" in out
    assert "metrics.enableClusterQueueResources: true" in out


def test_a_gpu_node_without_dcgm_exporter_is_named(capsys) -> None:
    code, out = check({**healthy(), "dcgm_up": vector("node", {"gpu-0": 1, "gpu-1": 0})}, capsys)
    assert code == 1
    assert "MISSING  dcgm-exporter up: GPU node gpu-1 has no dcgm-exporter target up (job nvidia-dcgm-exporter)" in out


def test_without_the_profiling_field_it_names_the_field_and_the_nodes(capsys) -> None:
    code, out = check({**healthy(), "dcgm_busy": vector("node", {"gpu-0": 8})}, capsys)
    assert code == 1
    assert ("MISSING  dcgm-exporter profiling field: dcgm-exporter on gpu-1 reports no DCGM_FI_PROF_GR_ENGINE_ACTIVE: "
            "busy GPU time is not measured there") in out
    assert "Skipping line N ('DCGM_FI_PROF_GR_ENGINE_ACTIVE'): metric not enabled" in out


def test_without_the_node_pool_label_it_names_the_allowlist(capsys) -> None:
    code, out = check({**healthy(), "pool_label": []}, capsys)
    assert code == 1
    assert "MISSING  node pool labels: no node has label_gpu_platform_io_pool in kube_node_labels" in out
    assert ("fix: kube-state-metrics --metric-labels-allowlist=nodes=[gpu-platform.io/pool],"
            "pods=[gpu-platform.io/team,kueue.x-k8s.io/queue-name]") in out


def test_workloads_without_their_states_name_the_custom_resource_state(capsys) -> None:
    code, out = check({**healthy(), "workload_states": []}, capsys)
    assert code == 1
    assert ("MISSING  Workload states: Kueue has 3 Workloads and there is no kube_kueue_workload_status_condition: "
            "jobs finished and cost per finished job would read 0") in out
    assert "workloads.kueue.x-k8s.io" in out


def test_every_input_missing_is_named_at_once(capsys) -> None:
    answers = {**healthy(), "rules": [], "pool_label": [], "workload_states": [],
               "dcgm_busy": vector("node", {"gpu-0": 8})}
    code, out = check(answers, capsys)
    assert code == 1
    assert ("4 of 7 inputs missing: rules loaded, dcgm-exporter profiling field, node pool labels, Workload states"
            in out)


def test_an_idle_cluster_is_not_a_missing_input(capsys) -> None:
    """No GPU node up and no Workload: nothing to judge those inputs by; the check passes, saying so."""
    answers = {**healthy(), "gpu_nodes": [], "dcgm_up": [], "dcgm_busy": [], "pool_label": [], "workload_states": [],
               "kueue_workloads": vector(None, {"": 0})}
    code, out = check(answers, capsys)
    assert code == 0
    assert "UNKNOWN  dcgm-exporter up: no GPU node advertises GPUs and no dcgm-exporter target is known" in out
    assert "UNKNOWN  Workload states: no Workload exists right now: submit a job and check again" in out


def test_a_prometheus_that_cannot_be_read_is_exit_2(capsys) -> None:
    fake = FakePrometheus({})
    url = fake.url
    fake.close()
    code = main(["report", "--stack", "local", "--check", "--prometheus", url, "--at", str(AT)])
    assert code == 2
    assert "could not read --check: rules" in capsys.readouterr().err


def test_with_the_managed_collector_the_kueue_fix_names_its_job() -> None:
    """World: mocks (an object answering --check's queries, the prod stack in mode managed). Mode managed has no
    ServiceMonitor: the fix names the collector's job and the Service it keeps."""
    from gpu_platform.plan import build_plan
    from gpu_platform.spec import load_stack_config
    from tests.conftest import stack_doc

    doc = copy.deepcopy(stack_doc("prod"))  # shared by the session: never change the cached one
    doc["config"]["gpu-platform:platform"]["addons"]["monitoring"] = {"install": True, "mode": "managed"}
    plan = build_plan(*load_stack_config(doc))
    names = {expr: name for name, expr in rc.queries(plan).items()}
    answers = {**healthy(), "kueue": []}

    class Prom:
        def query(self, expr: str, at: float, what: str) -> list[dict[str, Any]]:
            return answers.get(names[expr], [])

    (kueue,) = [c for c in rc.check(Prom(), plan, AT) if c.input == "Kueue scraped"]
    assert kueue.status == rc.MISSING
    assert kueue.fix.startswith("the managed collector's job kueue-controller-manager-metrics-service keeps the "
                                "endpoints of Service kueue-system/kueue-controller-manager-metrics-service on port "
                                "https")
    assert "ServiceMonitor" not in kueue.fix
