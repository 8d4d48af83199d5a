"""Step 6's verdict (gpu_platform/acceptance/labels.py) on literal series: each is one result's `metric` of an
instant query of Prometheus' HTTP API ({"status": "success", "data": {"resultType": "vector", "result":
[{"metric": {...}, "value": [<unix time>, "<value>"]}]}}: prometheus/prometheus v3.16.0 docs/querying/api.md,
"Instant vectors"), as the local cluster's Prometheus answers them for the live test's job (team zeta on pool small,
cost center cc-106). World: none (pure).
"""

from __future__ import annotations

from typing import Any

import pytest

from gpu_platform import acceptance as acc

POD0, POD1 = "acceptance-abc123-workers-0-0-x7k2p", "acceptance-abc123-workers-0-1-q9z4m"
NODE = "small-real"
WHERE = "of pods acceptance-abc123-* in namespace zeta"
DIMS = (
    acc.Dimension("team", {"team": "zeta", "gpu_platform_io_team": "zeta"}),
    acc.Dimension("pool", {"pool": "small", "gpu_platform_io_pool": "small"}),
    acc.Dimension("queue", {"kueue_x_k8s_io_queue_name": "default", "cluster_queue": "zeta"}),
    acc.Dimension("cost-center", {"cost_center": "cc-106", "gpu_platform_io_cost_center": "cc-106"}),
)


def answer(*metrics: dict[str, str]) -> dict[str, Any]:
    """What GET /api/v1/query answers with these series (values as Prometheus writes them: strings)."""
    return {"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": m, "value": [1780000000.123, "1"]} for m in metrics]}}


def series(name: str, doc: dict[str, Any]) -> tuple[tuple[str, dict[str, str]], ...]:
    assert doc["status"] == "success" and doc["data"]["resultType"] == "vector"
    return tuple((name, r["metric"]) for r in doc["data"]["result"])


def dcgm(pod: str) -> dict[str, str]:
    return {"UUID": "GPU-1b2c", "gpu": "0", "modelName": "NVIDIA L4", "hostname": NODE, "container": "trainer",
            "namespace": "zeta", "pod": pod, "vgpu": "0", "gpu_platform_io_team": "zeta",
            "kueue_x_k8s_io_queue_name": "default", "job": "nvidia-dcgm-exporter", "node": NODE,
            "instance": f"{NODE}:9400", "service": "nvidia-dcgm-exporter", "endpoint": "gpu-metrics"}


def cadvisor(pod: str, **extra: str) -> dict[str, str]:
    return {"id": f"/kubepods/burstable/pod-{pod}", "image": "registry.k8s.io/pause:3.10", "name": "", "container": "",
            "namespace": "zeta", "pod": pod, "job": "kubelet", "metrics_path": "/metrics/cadvisor", "node": NODE,
            "instance": "10.244.0.1:16465", "endpoint": "https-metrics", **extra}


USAGE = {"cluster_queue": "zeta", "cohort": "", "flavor": "small", "resource": "nvidia.com/gpu.shared",
         "replica_role": "standalone", "job": "kueue-controller-manager-metrics-service"}


def families(gpu=(POD0, POD1), network=(POD0, POD1), storage=(POD0,), queue=(USAGE,)) -> list[acc.Family]:
    return [
        acc.Family("gpu", ("DCGM_FI_DEV_FB_USED", "DCGM_FI_PROF_GR_ENGINE_ACTIVE"), WHERE,
                   series("DCGM_FI_DEV_FB_USED", answer(*(dcgm(p) for p in gpu)))),
        acc.Family("network", ("container_network_receive_bytes_total", "container_network_transmit_bytes_total"),
                   WHERE, series("container_network_receive_bytes_total",
                                 answer(*(cadvisor(p, interface="eth0") for p in network)))),
        acc.Family("storage", ("container_fs_reads_bytes_total", "container_fs_writes_bytes_total"), WHERE,
                   series("container_fs_reads_bytes_total", answer(*(cadvisor(p, device="/dev/vda") for p in storage))),
                   same_source_as="network"),
        acc.Family("queue", ("kueue_cluster_queue_resource_usage",),
                   "of ClusterQueue zeta on flavor small (nvidia.com/gpu.shared) above 0 since the job was submitted",
                   series("kueue_cluster_queue_resource_usage", answer(*queue))),
    ]


def attribution(*pods: str, team: str = "zeta") -> dict[str, Any]:
    """gpu_platform:pod_attribution:info's series: the pods' team and queue labels from kube-state-metrics, renamed
    by the rule."""
    return answer(*({"namespace": "zeta", "pod": p, "gpu_platform_io_team": team,
                     "kueue_x_k8s_io_queue_name": "default"} for p in pods))


def joins(pod_attribution: dict[str, Any] | None = None, node_pool: dict[str, Any] | None = None,
          cost_center: bool = True) -> list[acc.Join]:
    """The platform's info series; COST_CENTER: the plan's series of a namespace and a ClusterQueue carry the team's
    cost center beside the team (as the platform's rules record them: components/alerts/plan_series.py)."""
    pod_attribution = pod_attribution or attribution(POD0, POD1)
    node_pool = node_pool or answer({"node": NODE, "pool": "small"})
    cc = {"cost_center": "cc-106"} if cost_center else {}
    return [
        acc.Join("gpu_platform:pod_attribution:info", ("namespace", "pod"),
                 tuple(r["metric"] for r in pod_attribution["data"]["result"])),
        acc.Join("gpu_platform:node_pool:info", ("node",), tuple(r["metric"] for r in node_pool["data"]["result"])),
        acc.Join("gpu_platform:namespace_team:info", ("namespace",), ({"namespace": "zeta", "team": "zeta", **cc},)),
        acc.Join("gpu_platform:cluster_queue_team:info", ("cluster_queue",),
                 ({"cluster_queue": "zeta", "team": "zeta", **cc},)),
        acc.Join("gpu_platform:flavor_pool:info", ("flavor",), ({"flavor": "small", "pool": "small"},)),
    ]


def test_every_series_attributed_to_the_jobs_team_pool_queue_and_cost_center_passes() -> None:
    result = acc.evaluate_labels(families(), joins(), DIMS)
    assert result.status == acc.PASSED, result.seen
    assert {f.name: f.value for f in result.figures} == {
        "gpu_series": 2, "network_series": 2, "storage_series": 1, "queue_series": 1,
        "metrics": "DCGM_FI_DEV_FB_USED, container_fs_reads_bytes_total, container_network_receive_bytes_total, "
                   "kueue_cluster_queue_resource_usage", "not_exercised": None}
    assert result.expected == (
        "gpu, network, storage and queue series of the job, every one attributed to team 'zeta', pool 'small', "
        "queue 'default' (kueue_x_k8s_io_queue_name) or 'zeta' (cluster_queue), cost-center 'cc-106', on the series "
        "or through gpu_platform:pod_attribution:info, gpu_platform:node_pool:info, gpu_platform:namespace_team:info, "
        "gpu_platform:cluster_queue_team:info, gpu_platform:flavor_pool:info")


def test_a_label_no_series_carries_fails_naming_it_and_each_family() -> None:
    """Info series that give a namespace and a ClusterQueue their team only (rules before the cost center was
    added): the pods' team and queue (kube-state-metrics' allowlist), their node's pool, and nowhere the team's cost
    center."""
    result = acc.evaluate_labels(families(), joins(cost_center=False), DIMS)
    assert result.status == acc.FAILED
    through = "cost_center or gpu_platform_io_cost_center"
    assert result.seen.split("; ") == [
        f"gpu: 2 of 2 series carry no cost-center ({through}), e.g. DCGM_FI_DEV_FB_USED{{namespace=\"zeta\", "
        f"pod=\"{POD0}\", container=\"trainer\", node=\"small-real\", gpu=\"0\"}}",
        f"network: 2 of 2 series carry no cost-center ({through}), e.g. container_network_receive_bytes_total"
        f"{{namespace=\"zeta\", pod=\"{POD0}\", node=\"small-real\", interface=\"eth0\"}}",
        f"storage: 1 of 1 series carry no cost-center ({through}), e.g. container_fs_reads_bytes_total"
        f"{{namespace=\"zeta\", pod=\"{POD0}\", node=\"small-real\", device=\"/dev/vda\"}}",
        f"queue: 1 of 1 series carry no cost-center ({through}), e.g. kueue_cluster_queue_resource_usage"
        "{cluster_queue=\"zeta\", flavor=\"small\", resource=\"nvidia.com/gpu.shared\"}",
    ]
    assert result.line().startswith("step 6 (labels) failed: expected gpu, network, storage and queue series of the job")


def test_a_family_without_series_of_the_job_fails_naming_what_was_read() -> None:
    result = acc.evaluate_labels(families(network=()), joins(), DIMS)
    assert result.status == acc.FAILED
    assert result.seen == ("network: no container_network_receive_bytes_total or container_network_transmit_bytes_total "
                           "series of pods acceptance-abc123-* in namespace zeta")
    assert {f.name: f.value for f in result.figures}["network_series"] == 0


def test_no_block_io_of_the_job_is_not_exercised_when_the_same_scrape_gives_its_network_series() -> None:
    """cAdvisor gives block I/O series only for a device a pod read or wrote: a job that reads its bucket and keeps
    nothing on disk has none, while the same scrape gives its network series."""
    result = acc.evaluate_labels(families(storage=()), joins(), DIMS)
    assert result.status == acc.PASSED, result.seen
    figures = {f.name: f.value for f in result.figures}
    assert (figures["storage_series"], figures["not_exercised"]) == (
        0, "storage (no series of the job; its network series are there)")
    # without the network series, neither proves the kubelet is scraped: both fail
    result = acc.evaluate_labels(families(network=(), storage=()), joins(), DIMS)
    assert [p.split(" series ")[0] for p in result.seen.split("; ")] == [
        "network: no container_network_receive_bytes_total or container_network_transmit_bytes_total",
        "storage: no container_fs_reads_bytes_total or container_fs_writes_bytes_total"]


def test_a_pod_the_platform_attributes_to_another_team_fails_with_the_value_seen() -> None:
    other = answer({"namespace": "zeta", "pod": POD0, "gpu_platform_io_team": "zeta",
                    "kueue_x_k8s_io_queue_name": "default"},
                   {"namespace": "zeta", "pod": POD1, "gpu_platform_io_team": "eta",
                    "kueue_x_k8s_io_queue_name": "default"})
    result = acc.evaluate_labels(families(gpu=(POD0,)), joins(other), DIMS)
    assert result.status == acc.FAILED
    assert result.seen == (f"network: 1 of 2 series attributed to another team (gpu_platform_io_team='eta'), e.g. "
                           f"container_network_receive_bytes_total{{namespace=\"zeta\", pod=\"{POD1}\", "
                           "node=\"small-real\", interface=\"eth0\"}")


def test_a_pod_of_the_last_gang_without_gpu_series_fails_naming_it() -> None:
    """The pods that ran to the end each have GPU and network series: one without is GPU time nobody is charged for."""
    fams = families(gpu=(POD0,))
    fams[0] = acc.Family(fams[0].key, fams[0].metrics, fams[0].where, fams[0].series, every_pod=(POD0, POD1))
    result = acc.evaluate_labels(fams, joins(), DIMS)
    assert result.seen == f"gpu: no series of pod {POD1} (of the 2 that ran to the end)"


def test_series_without_a_node_the_pool_rule_knows_carry_no_pool() -> None:
    """cAdvisor's series get `node` from the kubelet's target; a node without the pool label in kube-state-metrics
    has no gpu_platform:node_pool:info, so nothing gives its series a pool."""
    result = acc.evaluate_labels(families(), joins(node_pool=answer()), DIMS)
    assert [p.split(" (")[0] for p in result.seen.split("; ")] == [
        "gpu: 2 of 2 series carry no pool", "network: 2 of 2 series carry no pool", "storage: 1 of 1 series carry no pool"]


def test_a_series_whose_own_label_and_the_rules_disagree_is_misattributed() -> None:
    """dcgm-exporter copies the pod's team label itself, and the rules join the namespace's team: where the two
    disagree the series is counted under both teams, so it is not the job's alone."""
    own = acc.attribution({"namespace": "zeta", "pod": POD0, "node": NODE, "gpu_platform_io_team": "eta"}, joins())
    assert (own["gpu_platform_io_team"], own["pool"], own["team"]) == ("eta", "small", "zeta")
    assert acc.misattributed(DIMS[0], own) == "gpu_platform_io_team='eta'"
    assert acc.misattributed(DIMS[0], {"team": "zeta"}) is None
    assert acc.misattributed(DIMS[3], {"team": "zeta"}) == ""


def test_the_families_are_the_guides_four_in_order() -> None:
    with pytest.raises(ValueError, match="step 6 judges the families gpu, network, storage, queue, in that order"):
        acc.evaluate_labels(list(reversed(families())), joins(), DIMS)
