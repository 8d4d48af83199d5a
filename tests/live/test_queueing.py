"""Queues, quotas, borrowing, preemption and pool placement as the real Kueue and scheduler do them.

Every job is the one `python -m platform_cli job` prints, submitted by the team's member with a client
certificate. Sizes refer to tests/live/stack.yaml: train has 32 GPUs (lender 16 lending at most 8,
alpha and beta 8 each borrowing up to 8, weights 1 and 3), mig 56 slices (gamma 14), shared 16 replicas
(delta 16).
"""

from __future__ import annotations

import time

from gpu_platform import conventions as cv
from gpu_platform.nodes import cpu_node_name
from tests.live.conftest import PODS_READY_TIMEOUT_SECONDS, Live, condition, is_true, wait_for
from tests.realtools import TIMINGS

GPU = cv.GPU_RESOURCE


def admitted(lv: Live, team: str, job: str, timeout: float = 60) -> dict:
    return wait_for(lambda: (w := lv.workload(team, job)) and is_true(w, "Admitted") and w, timeout,
                    f"{team}/{job} admitted")


def test_a_job_within_quota_lands_on_its_pool_completes_and_gives_quota_back(platform: Live) -> None:
    lv = platform
    lv.submit("alpha", "train", 4, "within", duration="3s")
    wl = admitted(lv, "alpha", "within")
    (ps,) = wl["status"]["admission"]["podSetAssignments"]
    assert ps["flavors"][GPU] == "train"
    pods = wait_for(lambda: [p for p in lv.pods("alpha", "within") if p["spec"].get("nodeName")], 60, "pod bound")
    node = lv.get("node", pods[0]["spec"]["nodeName"])
    pool = lv.plan.pools_by_name["train"]
    for key, value in pool.labels.items():
        assert node["metadata"]["labels"][key] == value
    # Kueue injected the flavor's node labels and the workload taint's toleration; the template brought the
    # GPU toleration (the flavor lists the GPU taint as a node taint and is given only to pod sets with it).
    spec = pods[0]["spec"]
    assert all(spec.get("nodeSelector", {}).get(k) == v for k, v in pool.labels.items())
    assert cv.GPU_TOLERATION in spec.get("tolerations", [])
    assert any(t.get("key") == cv.WORKLOAD_TAINT_KEY and t.get("value") == pool.labels[cv.WORKLOAD]
               for t in spec.get("tolerations", []))
    wait_for(lambda: is_true(lv.workload("alpha", "within"), "Finished"), 60, "workload Finished")
    job = lv.get("job", "within", "-n", lv.namespace("alpha"))
    assert is_true(job, "Complete")
    wait_for(lambda: lv.usage("alpha", "train", GPU) == (0.0, 0.0), 30, "alpha's train quota released")


def test_a_job_beyond_nominal_plus_borrowing_waits_with_kueues_reason(platform: Live) -> None:
    lv = platform
    # alpha alone: 8 nominal + 8 borrowing (the cohort has 16 idle: lender's 8 lendable, beta's 8).
    for i in range(4):
        lv.submit("alpha", "train", 4, f"fill-{i}")
    wait_for(lambda: len(lv.admitted("alpha")) == 4, 60, "4 x 4 GPUs admitted")
    # The ClusterQueue's status follows admission a moment later.
    wait_for(lambda: lv.usage("alpha", "train", GPU) == (16.0, 8.0), 30, "alpha at 16, borrowing 8")
    lv.submit("alpha", "train", 4, "over")
    wl = wait_for(lambda: (w := lv.workload("alpha", "over")) and condition(w, "QuotaReserved") and w, 30,
                  "Kueue's verdict on the 5th job")
    time.sleep(3)  # give the scheduler another pass: it must still not admit
    wl = lv.workload("alpha", "over")
    reserved = condition(wl, "QuotaReserved")
    assert reserved["status"] == "False", reserved
    assert "insufficient" in reserved["message"].lower() and GPU in reserved["message"], reserved["message"]
    assert not is_true(wl, "Admitted")


def test_two_borrowers_share_the_lenders_lending_limit_by_their_weights(platform: Live) -> None:
    """lender keeps 8 of its 16 for itself (lendingLimit 8). alpha (weight 1) floods first and borrows all it
    may; beta (weight 3) arrives, reclaims its own nominal quota and, by fair-sharing preemption, a share
    of what the lender lends: with 2-GPU jobs the weighted shares balance at 2 and 6."""
    lv = platform
    for i in range(8):
        lv.submit("alpha", "train", 2, f"a-{i}", priority="research")
    wait_for(lambda: lv.usage("alpha", "train", GPU)[0] == 16.0, 60, "alpha borrowing 8")
    started = time.perf_counter()
    for i in range(8):
        lv.submit("beta", "train", 2, f"b-{i}", priority="research")
    wait_for(lambda: lv.usage("beta", "train", GPU)[0] >= 8.0, 90, "beta holding its nominal 8")
    TIMINGS["live: reclaim (nominal back to beta)"] = round(time.perf_counter() - started, 1)

    def settled():
        a, b = lv.usage("alpha", "train", GPU), lv.usage("beta", "train", GPU)
        return (a, b) if a[1] + b[1] == 8.0 and (a[1], b[1]) == (2.0, 6.0) else None

    (a, b) = wait_for(settled, 120, "borrowed GPUs split 2:6 by weight", interval=1)
    TIMINGS["live: fair share settled"] = round(time.perf_counter() - started, 1)
    assert a == (10.0, 2.0) and b == (14.0, 6.0)
    # The lender never lent more than its lendingLimit: 8 of its 16 stay unborrowed.
    assert a[1] + b[1] == 8.0
    preempted = [w for w in lv.workloads("alpha") if (c := condition(w, "Preempted")) and c["status"] == "True"]
    reasons = {condition(w, "Preempted")["reason"] for w in preempted}
    assert reasons <= {"InCohortReclamation", "InCohortFairSharing", "InCohortReclaimWhileBorrowing"}, reasons
    assert preempted, "alpha's borrowed jobs were preempted"


def test_the_lender_reclaims_what_it_lent_within_a_bounded_time(platform: Live) -> None:
    lv = platform
    # beta holds its own 8, so what alpha borrows can only be the lender's.
    lv.submit("beta", "train", 8, "own")
    wait_for(lambda: lv.usage("beta", "train", GPU) == (8.0, 0.0), 60, "beta at its nominal 8")
    # Node-sized jobs: Kueue picks reclaim victims by quota, then checks the topology fit, so two 4-GPU
    # victims on different nodes would free 8 GPUs but no node (README, Queues: reclaim on TAS pools).
    for i in range(2):
        lv.submit("alpha", "train", 8, f"borrow-{i}")
    wait_for(lambda: lv.usage("alpha", "train", GPU) == (16.0, 8.0), 60, "alpha borrowing the lender's 8")
    # The lender wants all 16 of its own: 8 are idle, 8 are lent to alpha and must come back.
    started = time.perf_counter()
    lv.submit("lender", "train", 8, "own-0")
    lv.submit("lender", "train", 8, "own-1")
    wait_for(lambda: len(lv.admitted("lender")) == 2, 90, "the lender's 16 GPUs admitted")
    TIMINGS["live: lender reclaims 8 GPUs"] = round(time.perf_counter() - started, 1)
    wait_for(lambda: lv.usage("alpha", "train", GPU)[1] == 0.0, 30, "alpha borrowing nothing")
    assert lv.usage("alpha", "train", GPU)[0] <= 8.0
    reclaimed = [w for w in lv.workloads("alpha") if (c := condition(w, "Preempted")) and c["status"] == "True"]
    assert reclaimed and all(condition(w, "Preempted")["reason"].startswith("InCohort") for w in reclaimed)


def test_a_higher_priority_job_preempts_inside_its_cluster_queue_on_the_mig_pool(platform: Live) -> None:
    lv = platform
    mig = cv.mig_resource("1g.10gb")
    lv.submit("gamma", "mig", 7, "research-0", priority="research")
    lv.submit("gamma", "mig", 7, "research-1", priority="research")
    wait_for(lambda: lv.usage("gamma", "mig", mig)[0] == 14.0, 60, "gamma's 14 slices in use")
    lv.submit("gamma", "mig", 7, "training", priority="training")
    wl = admitted(lv, "gamma", "training", timeout=90)
    assert wl["status"]["admission"]["podSetAssignments"][0]["flavors"][mig] == "mig"
    victims = [w for w in lv.workloads("gamma") if (c := condition(w, "Preempted")) and c["status"] == "True"]
    assert len(victims) == 1 and condition(victims[0], "Preempted")["reason"] == "InClusterQueue"
    pods = wait_for(lambda: [p for p in lv.pods("gamma", "training") if p["spec"].get("nodeName")], 60, "bound")
    assert lv.get("node", pods[0]["spec"]["nodeName"])["metadata"]["labels"][cv.POOL] == "mig"


def test_time_sliced_replicas_are_admitted_in_their_flavor_and_land_there(platform: Live) -> None:
    lv = platform
    # Four replicas are four pods of one (the device plugin gives a container at most one).
    lv.submit("delta", "shared", 1, "replicas", nodes=4, priority="production-inference")
    wl = admitted(lv, "delta", "replicas")
    assert wl["status"]["admission"]["podSetAssignments"][0]["flavors"][cv.SHARED_GPU_RESOURCE] == "shared"
    assert wl["status"]["admission"]["podSetAssignments"][0]["count"] == 4
    pods = wait_for(lambda: [p for p in lv.pods("delta", "replicas") if p["status"].get("phase") == "Running"],
                    60, "pod Running")
    node = lv.get("node", pods[0]["spec"]["nodeName"])
    assert node["metadata"]["labels"][cv.SHARING] == cv.sharing_value("time-slicing", replicas=4)


def test_a_job_whose_pods_never_get_ready_gives_its_quota_back_and_is_requeued(platform: Live) -> None:
    """All or nothing (waitForPodsReady): 2 pods that never become Ready (an image that never pulls) are
    evicted after the timeout, their quota released, and the workload requeued."""
    lv = platform
    objs = lv.job("gamma", "mig", 7, "stuck", nodes=2)
    objs[0]["spec"]["template"]["metadata"]["annotations"][cv.SIM_NEVER_READY_ANNOTATION] = "true"
    lv.create(objs, as_team="gamma")
    admitted(lv, "gamma", "stuck")
    wl = wait_for(lambda: (w := lv.workload("gamma", "stuck")) and is_true(w, "Evicted") and w,
                  PODS_READY_TIMEOUT_SECONDS + 60, "eviction after the pods-ready timeout")
    assert condition(wl, "Evicted")["reason"] == "PodsReadyTimeout"
    wait_for(lambda: lv.usage("gamma", "mig", cv.mig_resource("1g.10gb"))[0] == 0.0, 60, "quota released")
    requeued = wait_for(lambda: condition(lv.workload("gamma", "stuck"), "Requeued"), 30, "Requeued condition")
    assert requeued["reason"] in ("PodsReadyTimeout", "BackoffFinished"), requeued
    assert not is_true(lv.workload("gamma", "stuck"), "Admitted")


def test_cpu_only_work_runs_on_cpu_nodes_under_the_cpu_only_flavor(platform: Live) -> None:
    """Kueue defaults the queue name from the `default` LocalQueue; the CPU-only flavor comes first, so the
    job is charged there, gets no GPU pool's selector or tolerations, and runs on a CPU node."""
    lv = platform
    ns = lv.namespace("alpha")
    job = {
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "prep", "namespace": ns},
        "spec": {"ttlSecondsAfterFinished": lv.plan.job_ttl_seconds, "template": {
            "metadata": {"annotations": {cv.SIM_DURATION_ANNOTATION: "2s"}},
            "spec": {"restartPolicy": "Never", "containers": [{
                "name": "main", "image": "busybox:1.37", "command": ["true"],
                "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}}]},
        }},
    }
    lv.create(job, as_team="alpha")
    wl = admitted(lv, "alpha", "prep")
    # Kueue's job webhook gave it the namespace's `default` LocalQueue.
    created = lv.get("job", "prep", "-n", ns)
    assert created["metadata"]["labels"][cv.QUEUE_NAME_LABEL] == cv.LOCAL_QUEUE_NAME
    assert wl["spec"]["queueName"] == cv.LOCAL_QUEUE_NAME
    assert wl["status"]["admission"]["podSetAssignments"][0]["flavors"]["cpu"] == cv.CPU_FLAVOR
    pods = wait_for(lambda: [p for p in lv.pods("alpha", "prep") if p["spec"].get("nodeName")], 60, "pod bound")
    assert pods[0]["spec"]["nodeName"].startswith(cpu_node_name(0).rsplit("-", 1)[0])
    assert lv.usage("alpha", "train", GPU)[0] == 0.0
    wait_for(lambda: is_true(lv.workload("alpha", "prep"), "Finished"), 60, "CPU-only job finished")
