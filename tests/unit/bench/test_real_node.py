"""The real node benchmark's own arithmetic and bookkeeping (bench/real_node.py), without a cluster: the figures'
shape, when the team's quota counts as free, and the pod times its watch records."""

from __future__ import annotations

import time
from typing import Any, Iterator

import pytest

from bench.real_node import TeamPods, quota_free, summary
from localcluster.session import SessionError


def test_a_figure_is_its_trials_nearest_rank_p50_p95_and_max() -> None:
    assert summary([3.0, 1.0, 2.0]) == {"trials": 3, "p50_s": 2.0, "p95_s": 3.0, "max_s": 3.0}
    # Of two trials the p50 is the lower (the nearest rank, as every live benchmark), rounded to DIGITS.
    assert summary([5.2, 5.123456], digits=3) == {"trials": 2, "p50_s": 5.123, "p95_s": 5.2, "max_s": 5.2}


def test_a_figure_of_no_trial_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one trial"):
        summary([])


def test_the_quota_is_free_only_when_every_resource_totals_zero() -> None:
    assert quota_free({}) is True  # Kueue has written no usage yet
    assert quota_free({"status": {"flavorsUsage": [{"name": "small", "resources": [
        {"name": "nvidia.com/gpu.shared", "total": "0"}, {"name": "cpu"}]}]}}) is True
    assert quota_free({"status": {"flavorsUsage": [{"name": "small", "resources": [
        {"name": "nvidia.com/gpu.shared", "total": "0"}, {"name": "cpu", "total": "730m"}]}]}}) is False


def _pod(uid: str, job: str | None, phase: str = "Pending", node: str = "", deleting: bool = False) -> dict[str, Any]:
    labels = {"batch.kubernetes.io/job-name": job} if job else {}
    meta: dict[str, Any] = {"uid": uid, "resourceVersion": "1", "labels": labels}
    if deleting:
        meta["deletionTimestamp"] = "2025-01-01T00:00:00Z"
    return {"metadata": meta, "spec": {"nodeName": node}, "status": {"phase": phase}}


class FakeClient:
    """A list, then one watch stream of EVENTS; later lists return RELIST, later watches nothing."""

    def __init__(self, listing: list[dict[str, Any]], events: list[dict[str, Any]],
                 relist: list[dict[str, Any]] | None = None) -> None:
        self.lists = [listing, relist if relist is not None else listing]
        self.events = events
        self.watches = 0

    def get(self, path: str, **query: str) -> Any:
        items = self.lists[0] if len(self.lists) > 1 else self.lists[-1]
        if len(self.lists) > 1:
            self.lists.pop(0)
        return {"metadata": {"resourceVersion": "1"}, "items": items}

    def watch(self, path: str, rv: str, timeout_seconds: int = 300) -> Iterator[dict[str, Any]]:
        self.watches += 1
        if self.watches == 1:
            yield from self.events
        else:
            time.sleep(0.02)


def test_the_watch_times_a_pods_running_its_deletion_and_its_end() -> None:
    client = FakeClient([_pod("a", "low-0", "Running", "small-real"), _pod("x", None, "Running")], [
        {"type": "MODIFIED", "object": _pod("a", "low-0", "Running", "small-real", deleting=True)},
        {"type": "DELETED", "object": _pod("a", "low-0", "Running", "small-real", deleting=True)},
        {"type": "ADDED", "object": _pod("b", "high-0", "Pending")},
        {"type": "MODIFIED", "object": _pod("b", "high-0", "Running", "small-real")},
    ])
    pods = TeamPods(client, "zeta")  # type: ignore[arg-type]
    try:
        high = pods.wait(lambda: pods.first_running("high-0"), 5, "high-0 Running")
        low = pods.pods["a"]
        assert set(pods.pods) == {"a", "b"}  # a pod of no Job is not one of the team's jobs
        assert (low.job, low.node, high.job, high.node) == ("low-0", "small-real", "high-0", "small-real")
        assert low.running_at is not None and low.deleting_at is not None and low.gone_at is not None
        assert low.running_at <= low.deleting_at <= low.gone_at <= (high.running_at or 0)
    finally:
        pods.stop()


def test_a_pod_missing_from_the_list_after_a_watch_error_is_gone() -> None:
    client = FakeClient([_pod("a", "low-0", "Running", "small-real")],
                        [{"type": "ERROR", "object": {"kind": "Status", "code": 410, "metadata": {}}}], relist=[])
    pods = TeamPods(client, "zeta")  # type: ignore[arg-type]
    try:
        assert pods.wait(lambda: pods.pods["a"].gone_at, 5, "a gone") > 0
    finally:
        pods.stop()


def test_a_wait_that_times_out_names_what_it_waited_for() -> None:
    pods = TeamPods(FakeClient([], []), "zeta")  # type: ignore[arg-type]
    try:
        with pytest.raises(SessionError, match="waiting for high-0's pod Running"):
            pods.wait(lambda: pods.first_running("high-0"), 0.1, "high-0's pod Running")
    finally:
        pods.stop()
