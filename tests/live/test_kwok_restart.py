"""KWOK plays every node's kubelet. A kubelet that comes back runs the pods bound to its node while it was away
and finishes the deletions that waited for it; KWOK back from a restart must do the same, or a job dispatched
again after an outage (MultiKueue's lost worker, a cluster restarted by `local-cluster start`) stays Pending
beside a first run that never goes (localcluster/kwok.py: the options a configuration file leaves undefaulted).
"""

from __future__ import annotations

from typing import Any

from .conftest import Live, wait_for

TEAM = "alpha"
POOL = "train"


def pod(lv: Live, job: str) -> dict[str, Any] | None:
    pods = lv.pods(TEAM, job)
    return pods[0] if pods else None


def phase(p: dict[str, Any] | None) -> str | None:
    return p["status"].get("phase") if p else None


def test_pods_bound_or_deleted_while_kwok_was_down_are_played_once_it_is_back(platform: Live) -> None:
    platform.submit(TEAM, POOL, 1, "before", duration="1h")
    wait_for(lambda: phase(pod(platform, "before")) == "Running", 90, "the first job running")
    driver = platform.cluster.driver
    driver.stop_component("kwok")
    try:
        # Kept short: the nodes' heartbeats stop with KWOK, and after the node lifecycle controller's grace
        # period their pods would be evicted, which is not what this test is about.
        platform.submit(TEAM, POOL, 1, "during", duration="1h")
        bound = wait_for(lambda: (p := pod(platform, "during")) and p["spec"].get("nodeName") and p, 30,
                         "the second job's pod bound to a node while KWOK is down")
        assert phase(bound) == "Pending", bound["status"]
        platform.kubectl("delete", "job", "before", "-n", platform.namespace(TEAM), "--wait=false")
        deleting = wait_for(lambda: (p := pod(platform, "before")) and "deletionTimestamp" in p["metadata"] and p,
                            30, "the first job's pod being deleted while KWOK is down")
        assert phase(deleting) == "Running", deleting["status"]
    finally:
        driver.restart("kwok")
    wait_for(lambda: phase(pod(platform, "during")) == "Running", 60,
             "the pod bound while KWOK was down running once it is back")
    wait_for(lambda: pod(platform, "before") is None, 60,
             "the pod deleted while KWOK was down gone once it is back")
