"""Nodes that come and go: pools that scale start at their minimum, a real autoscaler (Karpenter's core
with its KWOK provider) adds nodes for the pods Kueue admits and removes them once empty, and the pools
that do not scale (topology-aware, reserved) are there whole from the start.

Figures: time from submission to all pods Running on an empty pool (scale-up latency) is recorded in the
run's timings; bench/elastic.py reports its distribution over 20 jobs.
"""

from __future__ import annotations

import time

from tests.live.conftest import Live, TIMINGS, cv, wait_for

KARPENTER_NODEPOOL_LABEL = "karpenter.sh/nodepool"   # sigs.k8s.io/karpenter pkg/apis/v1/labels.go NodePoolLabelKey
REGISTERED_BY = f"{cv.PREFIX}/registered-by"         # localcluster/nodes.py: nodes the script registered itself


def pool_nodes(live: Live, pool: str) -> list[dict]:
    return live.get("nodes", "-l", f"{cv.POOL}={pool}")["items"]


def test_pools_start_at_min_and_the_pools_that_cannot_scale_are_there_whole(live: Live) -> None:
    registered = {}
    for n in live.get("nodes")["items"]:
        if n["metadata"].get("annotations", {}).get(REGISTERED_BY):
            pool = n["metadata"]["labels"].get(cv.POOL, "cpu")
            registered[pool] = registered.get(pool, 0) + 1
    # train is topology-aware (4 x p5.48xlarge, whole); mig, shared and burst scale from min 0.
    assert registered == {"train": 4, "cpu": 2}
    nodepools = {p["metadata"]["name"]: p for p in live.get("nodepools.karpenter.sh")["items"]}
    assert sorted(nodepools) == ["burst", "mig", "shared"]
    assert nodepools["burst"]["spec"]["limits"] == {"nvidia.com/gpu": "8"}
    assert nodepools["mig"]["spec"]["limits"] == {"nvidia.com/mig-1g.10gb": "56"}
    assert nodepools["burst"]["spec"]["disruption"]["consolidateAfter"] == "30s"


def test_a_two_node_job_on_an_empty_pool_gets_two_nodes_runs_and_the_pool_returns_to_min(platform: Live) -> None:
    live = platform
    wait_for(lambda: not pool_nodes(live, "burst"), 120, "pool burst empty (at its min, 0)")
    t0 = time.monotonic()
    live.submit("epsilon", "burst", 4, "two-nodes", nodes=2, duration="20s")

    def running() -> bool:
        pods = live.pods("epsilon", "two-nodes")
        return len(pods) == 2 and all(p["status"].get("phase") == "Running" for p in pods)

    wait_for(running, 90, "both pods of two-nodes Running")
    TIMINGS["live: scale-up, submission to 2 pods Running on an empty pool"] = round(time.monotonic() - t0, 1)
    nodes = pool_nodes(live, "burst")
    assert len(nodes) == 2
    # Karpenter made them, for this pool, with the pool's labels and taints: what Kueue's flavor selects.
    for n in nodes:
        labels = n["metadata"]["labels"]
        assert labels[KARPENTER_NODEPOOL_LABEL] == "burst"
        # pool shared is g6.12xlarge too, with time-sliced units: the provider's types are global, so each
        # pool offers its own (localcluster/autoscaler.py instance_type_name).
        assert labels["node.kubernetes.io/instance-type"] == "g6.12xlarge-burst"
        assert labels[cv.WORKLOAD] == "batch"
        assert {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"} in n["spec"]["taints"]
    assert {p["spec"]["nodeName"] for p in live.pods("epsilon", "two-nodes")} == {n["metadata"]["name"] for n in nodes}

    job = live.get("job", "two-nodes", "-n", live.namespace("epsilon"))
    wait_for(lambda: live.get("job", "two-nodes", "-n", live.namespace("epsilon"))["status"].get("succeeded") == 2,
             90, "two-nodes Succeeded on both nodes")
    assert job["metadata"]["name"] == "two-nodes"
    # Emptied, the nodes go after the scale-down delay (30 s here): the pool is back at its minimum.
    t1 = time.monotonic()
    wait_for(lambda: not pool_nodes(live, "burst"), 150, "pool burst back at min (0 nodes)", interval=1)
    TIMINGS["live: scale-down, job done to pool at min"] = round(time.monotonic() - t1, 1)
