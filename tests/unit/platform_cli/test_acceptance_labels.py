"""Step 6's runner (platform_cli/acceptance_labels.py): the queries it sends for the live test's job, and the step
against a Prometheus that answers as Prometheus' HTTP API does (GET /api/v1/query: {"status": "success", "data":
{"resultType": "vector", "result": [{"metric": {...}, "value": [<unix time>, "<value>"]}]}}, prometheus/prometheus
v3.16.0 docs/querying/api.md, "Instant queries"), with the series the platform exports: the pods' team and queue
from kube-state-metrics' allowlist, their pool from their node's label, and their team's cost center from the info
series the platform's rules record for the stack's plan (components/alerts/plan_series.py).
World: mocks (no Prometheus, no cluster, a fake clock)."""

from __future__ import annotations

import functools
import re
from dataclasses import replace
from typing import Any, Callable

import pytest

from components import alerts
from gpu_platform import acceptance as acc
from gpu_platform.stack_files import load_plan
from localcluster import objectstore
from platform_cli import acceptance as ac, acceptance_labels as al
from platform_cli.acceptance_run import Observed, PodSeen
from platform_cli.cli import parser
from platform_cli.prometheus_api import PrometheusError

STACK = str(ac.REPOSITORY / "examples" / "acceptance-stack.yaml")
NODE = "small-real"


def request(name: str = "acceptance-abc123") -> ac.Request:
    store = objectstore.Store("http://10.244.0.1:18333", {"zeta": "local-data-zeta"},
                              {"zeta": objectstore.Keys("AK", "SK")}, {"zeta": objectstore.Keys("RO", "RS")},
                              objectstore.Keys("ADM", "ADS"))
    args = parser().parse_args(["acceptance", "--stack", STACK, "--team", "zeta", "--pool", "small", "--image",
                                "localhost/gpu-platform/acceptance-trainer:torch-1.13.1", "--window", "60s"])
    return replace(ac.validate(load_plan(None, STACK)[1], args, store), name=name)


def vector(*metrics: dict[str, str]) -> dict[str, Any]:
    return {"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": m, "value": [1780000000.5, "1"]} for m in metrics]}}


@functools.cache
def plan_series() -> tuple[alerts.Record, ...]:
    """The acceptance stack's plan as the platform's rules record it (components/alerts/plan_series.py)."""
    return tuple(r for r in alerts.plan_rules(load_plan(None, STACK)[1]).rules if isinstance(r, alerts.Record))


def recorded(record: str, **on: str) -> dict[str, str]:
    """The labels of the one series RECORD of the acceptance stack's plan whose labels ON match."""
    (labels,) = [dict(r.labels) for r in plan_series()
                 if r.record == record and all(r.labels.get(k) == v for k, v in on.items())]
    return labels


def exports(pods: tuple[str, ...], cost_center: bool = True) -> dict[str, dict[str, Any]]:
    """What the local cluster's Prometheus answers, by the metric name a query reads: the namespace's and the
    ClusterQueue's info series as the rules record them. Without COST_CENTER: as rules that give them the team only
    (before the cost center was added, or another Prometheus's own) would."""
    owner = {"namespace_team": recorded(alerts.NAMESPACE_TEAM, namespace="zeta"),
             "cluster_queue_team": recorded(alerts.CLUSTER_QUEUE_TEAM, cluster_queue="zeta")}
    if not cost_center:
        owner = {k: {n: v for n, v in labels.items() if n != "cost_center"} for k, labels in owner.items()}
    pod_series = [{"namespace": "zeta", "pod": p, "node": NODE} for p in pods]
    return {
        "DCGM_FI_DEV_FB_USED": vector(*({**s, "gpu": "0", "UUID": "GPU-1", "vgpu": str(i), "gpu_platform_io_team": "zeta",
                                         "kueue_x_k8s_io_queue_name": "default", "job": "nvidia-dcgm-exporter"}
                                        for i, s in enumerate(pod_series))),
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE": vector(),
        "container_network_receive_bytes_total": vector(*({**s, "interface": "eth0", "job": "kubelet"}
                                                          for s in pod_series)),
        "container_network_transmit_bytes_total": vector(),
        "container_fs_reads_bytes_total": vector({**pod_series[0], "device": "/dev/vda", "job": "kubelet"}),
        "container_fs_writes_bytes_total": vector(),
        "kueue_cluster_queue_resource_usage": vector({"cluster_queue": "zeta", "flavor": "small",
                                                      "resource": "nvidia.com/gpu.shared", "replica_role": "standalone"}),
        "gpu_platform:pod_attribution:info": vector(*({"namespace": "zeta", "pod": p, "gpu_platform_io_team": "zeta",
                                                       "kueue_x_k8s_io_queue_name": "default"} for p in pods)),
        "gpu_platform:node_pool:info": vector({"node": NODE, "pool": "small"}, {"node": "train-0", "pool": "train"}),
        "gpu_platform:namespace_team:info": vector(owner["namespace_team"]),
        "gpu_platform:cluster_queue_team:info": vector(owner["cluster_queue_team"]),
        "gpu_platform:flavor_pool:info": vector({"flavor": "small", "pool": "small"}),
    }


class FakePrometheus:
    """Answers each query with the answer for the metric it reads; ANSWERS may change between looks."""

    url = "http://127.0.0.1:31663"

    def __init__(self, answers: Callable[[int], dict[str, dict[str, Any]]]):
        self.answers, self.looks, self.queries = answers, 0, []

    def query(self, expr: str, at: float, what: str) -> list[dict[str, Any]]:
        self.queries.append((expr, at))
        name = re.match(r"^\w+_over_time\(([\w:]+)", expr).group(1)  # type: ignore[union-attr]
        if name == "DCGM_FI_DEV_FB_USED":
            self.looks += 1
        doc = self.answers(self.looks)[name]
        assert doc["status"] == "success"
        return doc["data"]["result"]


class State:
    """The run's state when step 6 starts: submitted 120 s ago; the last gang's two pods ran (attempt 1), the
    first gang's were deleted by step 5."""

    def __init__(self, r: ac.Request) -> None:
        self.request, self.now, self.submitted_at, self.lines = r, 1000.0, 880.0, []
        self.observed = Observed()
        for name, attempt in (("acceptance-abc123-workers-0-0-old", 0), (POD0, 1), (POD1, 1)):
            self.observed.pods[name] = PodSeen(name, attempt, 0, first_running=900.0)

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds

    def progress(self, line: str) -> None:
        self.lines.append(line)


POD0, POD1 = "acceptance-abc123-workers-0-0-x7k2p", "acceptance-abc123-workers-0-1-q9z4m"


def test_the_queries_read_the_jobs_pods_and_its_queue_over_its_life() -> None:
    q = al.queries(request(), 300)
    assert q["gpu"] == {
        "DCGM_FI_DEV_FB_USED": 'last_over_time(DCGM_FI_DEV_FB_USED{namespace="zeta", pod=~"acceptance-abc123-.+"}[300s])',
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE":
            'last_over_time(DCGM_FI_PROF_GR_ENGINE_ACTIVE{namespace="zeta", pod=~"acceptance-abc123-.+"}[300s])'}
    assert q["network"]["container_network_transmit_bytes_total"] == (
        'last_over_time(container_network_transmit_bytes_total{namespace="zeta", pod=~"acceptance-abc123-.+"}[300s])')
    assert list(q["storage"]) == ["container_fs_reads_bytes_total", "container_fs_writes_bytes_total"]
    assert q["queue"] == {"kueue_cluster_queue_resource_usage": (
        'max_over_time(kueue_cluster_queue_resource_usage{cluster_queue="zeta", flavor="small", '
        'resource="nvidia.com/gpu.shared", replica_role!="follower"}[300s]) > 0')}
    assert q["joins"] == {
        "gpu_platform:pod_attribution:info": 'last_over_time(gpu_platform:pod_attribution:info{namespace="zeta"}[300s])',
        "gpu_platform:node_pool:info": "last_over_time(gpu_platform:node_pool:info[300s])",
        "gpu_platform:namespace_team:info": 'last_over_time(gpu_platform:namespace_team:info{namespace="zeta"}[300s])',
        "gpu_platform:cluster_queue_team:info":
            'last_over_time(gpu_platform:cluster_queue_team:info{cluster_queue="zeta"}[300s])',
        "gpu_platform:flavor_pool:info": 'last_over_time(gpu_platform:flavor_pool:info{flavor="small"}[300s])'}


def test_the_jobs_values_under_every_label_name_that_carries_them() -> None:
    assert [(d.key, dict(d.expected)) for d in al.dimensions(request())] == [
        ("team", {"team": "zeta", "gpu_platform_io_team": "zeta"}),
        ("pool", {"pool": "small", "gpu_platform_io_pool": "small"}),
        ("queue", {"kueue_x_k8s_io_queue_name": "default", "cluster_queue": "zeta"}),
        ("cost-center", {"cost_center": "cc-106", "gpu_platform_io_cost_center": "cc-106"})]


def test_the_rules_give_the_teams_namespace_and_clusterqueue_its_cost_center() -> None:
    """The acceptance stack's zeta (costCenter cc-106 in examples/acceptance-stack.yaml), as step 6 joins it."""
    assert recorded(alerts.NAMESPACE_TEAM, namespace="zeta") == {"namespace": "zeta", "team": "zeta",
                                                                  "cost_center": "cc-106"}
    assert recorded(alerts.CLUSTER_QUEUE_TEAM, cluster_queue="zeta") == {"cluster_queue": "zeta", "team": "zeta",
                                                                          "cost_center": "cc-106"}


def test_info_series_without_the_cost_center_fail_step_6_naming_it_on_every_family() -> None:
    """A Prometheus whose rules give a namespace and a ClusterQueue their team only: no series of the job is
    attributed to a cost center, and step 6 says so per family."""
    state = State(request())
    prom = FakePrometheus(lambda look: exports((POD0, POD1), cost_center=False))
    result = al.SeriesLabels(prom, wall=lambda: 1780000000.0).run(state)
    assert result.status == acc.FAILED
    assert [p.split(" (")[0] for p in result.seen.split("; ")] == [
        "gpu: 2 of 2 series carry no cost-center", "network: 2 of 2 series carry no cost-center",
        "storage: 1 of 1 series carry no cost-center", "queue: 1 of 1 series carry no cost-center"]
    assert {f.name: f.value for f in result.figures} == {
        "gpu_series": 2, "network_series": 2, "storage_series": 1, "queue_series": 1,
        "metrics": "DCGM_FI_DEV_FB_USED, container_fs_reads_bytes_total, container_network_receive_bytes_total, "
                   "kueue_cluster_queue_resource_usage", "not_exercised": None}
    # read over the job's life (120 s since it was submitted) and the margin, at the wall clock's now; looked at
    # once more in case the run's last scrapes had not landed, and the answer is the same: the platform's
    assert prom.queries[0] == ('last_over_time(DCGM_FI_DEV_FB_USED{namespace="zeta", pod=~"acceptance-abc123-.+"}'
                               '[240s])', 1780000000.0)
    assert prom.looks == 2 and state.now == 1010.0
    assert state.lines[0] == "step 6: reading the job's series of the last 240s from http://127.0.0.1:31663"


def test_every_series_attributed_passes_once_the_last_scrape_lands() -> None:
    """With the team's cost center on the plan's info series, every family is attributed; the last gang's second
    pod's series arrive with the scrape after the first look: the step looks again and passes."""
    state = State(request())
    prom = FakePrometheus(lambda look: exports((POD0,) if look == 1 else (POD0, POD1)))
    result = al.SeriesLabels(prom, wall=lambda: 1780000000.0).run(state)
    assert result.status == acc.PASSED, result.seen
    assert {f.name: f.value for f in result.figures}["gpu_series"] == 2
    assert "cost-center 'cc-106'" in (result.expected or "")
    assert prom.looks == 2 and state.lines[1] == (
        f"step 6: not yet (gpu: no series of pod {POD1} (of the 2 that ran to the end) and 1 more); looking again in "
        "10s")


def test_without_a_prometheus_the_step_says_where_to_point_it() -> None:
    result = al.SeriesLabels(None).run(State(request()))
    assert (result.status, result.reason) == (acc.SKIPPED, (
        "not available on this cluster: no Prometheus to read the job's series from: set GPU_PLATFORM_PROMETHEUS_URL "
        "to its URL (an Amazon Managed Service for Prometheus workspace's is signed with SigV4); the local cluster "
        "runs one unless LOCAL_CLUSTER_PROMETHEUS=0"))


def test_a_prometheus_that_cannot_be_read_fails_the_step_with_its_reason() -> None:
    class Down(FakePrometheus):
        def query(self, expr: str, at: float, what: str) -> list[dict[str, Any]]:
            raise PrometheusError(what, f"{self.url} is unreachable ([Errno 111] Connection refused)")

    result = al.SeriesLabels(Down(lambda look: {})).run(State(request()))
    assert (result.status, result.expected, result.seen) == (
        acc.FAILED, "the job's series read from Prometheus at http://127.0.0.1:31663",
        "could not read step 6: DCGM_FI_DEV_FB_USED: http://127.0.0.1:31663 is unreachable ([Errno 111] Connection "
        "refused)")


def test_the_prometheus_is_the_environment_s_else_the_local_clusters(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCAL_CLUSTER_DIR", str(tmp_path))
    monkeypatch.delenv("GPU_PLATFORM_PROMETHEUS_URL", raising=False)
    assert al.prometheus_of(print) is None
    (tmp_path / "cluster.env").write_text("APISERVER_PORT=31643\nPROMETHEUS_PORT=31663\n")
    local = al.prometheus_of(print)
    assert local is not None and (local.url, local.sigv4_region) == ("http://127.0.0.1:31663", None)
    amp = "https://aps-workspaces.eu-west-1.amazonaws.com/workspaces/ws-1a2b3c"
    monkeypatch.setenv("GPU_PLATFORM_PROMETHEUS_URL", amp)
    signed = al.prometheus_of(print)
    assert signed is not None and (signed.url, signed.sigv4_region) == (amp, "eu-west-1")
