"""Pending workloads for the report: Kueue's reason, what the message says the workload waits for, and its
position (the visibility API's, else Kueue's queue order worked out from the Workloads)."""

from __future__ import annotations

from platform_cli.pending_work import pending_from, waits_for
from tests.conftest import plan_of

MESSAGE = ("couldn't assign flavors to pod set main: insufficient quota for cpu in flavor cpu-only, previously "
           "considered podsets requests (0) + current podset request (11830m) > maximum capacity (8), insufficient "
           "unused quota for memory in flavor notebooks, 147000Mi more needed, insufficient unused quota for "
           "nvidia.com/mig-1g.10gb in flavor notebooks, 7 more needed")


def wl(name: str, ns: str, created: str, priority: int = 0, reserved: str | None = "False",
       evicted: tuple[str, str] | None = None, message: str = MESSAGE, active: bool = True) -> dict:
    conditions = []
    if reserved is not None:
        conditions.append({"type": "QuotaReserved", "status": reserved, "reason": "Pending", "message": message})
    if evicted:
        conditions.append({"type": "Evicted", "status": "True", "reason": evicted[0], "lastTransitionTime": evicted[1]})
    return {"metadata": {"name": name, "namespace": ns, "creationTimestamp": created},
            "spec": {"priority": priority, "active": active}, "status": {"conditions": conditions}}


def test_the_reason_keeps_the_clauses_about_the_pools_gpus() -> None:
    assert waits_for(MESSAGE, plan_of("local")) == \
        "insufficient unused quota for nvidia.com/mig-1g.10gb in flavor notebooks, 7 more needed"
    assert waits_for("the ClusterQueue is inactive", plan_of("local")) == "the ClusterQueue is inactive"


def test_positions_are_estimated_in_kueues_order_without_the_visibility_api() -> None:
    workloads = [
        wl("late", "vision", "2026-05-01T10:05:00Z"),
        wl("early", "vision", "2026-05-01T10:00:00Z"),
        wl("urgent", "vision", "2026-05-01T10:10:00Z", priority=1000),
        # requeued after a PodsReady timeout: it queues from its eviction
        wl("requeued", "vision", "2026-05-01T09:00:00Z", evicted=("PodsReadyTimeout", "2026-05-01T10:07:00Z")),
        wl("running", "vision", "2026-05-01T09:00:00Z", reserved="True"),
        wl("stopped", "vision", "2026-05-01T09:00:00Z", active=False),
        wl("nlp-one", "nlp", "2026-05-01T10:00:00Z", reserved=None),
        wl("not-a-team", "kube-system", "2026-05-01T10:00:00Z"),
    ]
    out = pending_from(workloads, plan_of("local"))
    assert [(p.cluster_queue, p.workload, p.position, p.position_source) for p in out] == [
        ("nlp", "nlp-one", 0, "estimated"),
        ("vision", "urgent", 0, "estimated"), ("vision", "early", 1, "estimated"),
        ("vision", "late", 2, "estimated"), ("vision", "requeued", 3, "estimated")]
    assert out[0].reason == "NotYetConsidered" and out[1].team == "vision"
    assert out[-1].since == "2026-05-01T10:07:00Z"


def test_positions_from_the_visibility_api_win() -> None:
    out = pending_from([wl("a", "vision", "2026-05-01T10:00:00Z"), wl("b", "vision", "2026-05-01T10:01:00Z")],
                       plan_of("local"), positions={("vision", "b"): 0, ("vision", "a"): 1})
    assert [(p.workload, p.position, p.position_source) for p in out] == [
        ("a", 1, "visibility-api"), ("b", 0, "visibility-api")]
