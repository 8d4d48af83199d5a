"""What the replay calls Kueue's reaction to freed capacity (a hand-over) and what its own time to admit a
job, read from Workloads as Kueue writes them. The what-if's tolerances (tests/simulate) are built from
these two figures: a preemption counted as freed capacity hid the time Kueue took to decide it."""

from __future__ import annotations

import queue
import threading

import pytest

from simulator.direct_workloads import _Replay
from simulator.records import Run
from simulator.submit import NAME_PREFIX
from simulator.trace import TraceJob


def workload(index: int, *conditions: tuple[str, str, str]) -> dict:
    """A Workload of trace job `index` with (type, status, reason) conditions, admitted to 2 GPUs of `share`
    while QuotaReserved is True (sigs.k8s.io/kueue apis/kueue/v1beta1 workload_types.go)."""
    conds = [{"type": t, "status": s, "reason": r} for t, s, r in conditions]
    reserved = any(t == "QuotaReserved" and s == "True" for t, s, _ in conditions)
    admission = {"podSetAssignments": [{"name": "main", "flavors": {"nvidia.com/gpu": "share"},
                                        "resourceUsage": {"nvidia.com/gpu": "2"}}]} if reserved else None
    return {"metadata": {"name": f"{NAME_PREFIX}{index}"}, "status": {"conditions": conds, "admission": admission}}


ADMITTED = (("QuotaReserved", "True", "QuotaReserved"), ("Admitted", "True", "Admitted"))
RECLAIMED = (("QuotaReserved", "True", "QuotaReserved"), ("Admitted", "True", "Admitted"),
             ("Evicted", "True", "Preempted"), ("Preempted", "True", "InCohortReclamation"))
TIMED_OUT = (("QuotaReserved", "True", "QuotaReserved"), ("Admitted", "True", "Admitted"),
             ("Evicted", "True", "PodsReadyTimeout"))
FINISHED = (("Finished", "True", "Succeeded"),)


@pytest.fixture
def replay(monkeypatch: pytest.MonkeyPatch) -> tuple[_Replay, list[float]]:
    """The workloads mode's watcher without its threads or API server, on a clock the test sets."""
    jobs = [TraceJob(i + 1, 0.0, "left", "share", 2, 1, 600.0) for i in range(4)]
    r = _Replay.__new__(_Replay)
    r.run, r.start, r.lock = Run(jobs, 1.0, 3600.0), 0.0, threading.Lock()
    r.state, r.generation, r.assignment, r.namespaces = {}, {}, {}, {}
    r.pending_since, r.last_free, r.deadlines = {i: 0.0 for i in range(4)}, {}, []
    r.counts = {"admitted": 0, "finished": 0, "evicted": 0}
    r.writes = queue.Queue()
    now = [0.0]
    monkeypatch.setattr(r, "clock", lambda: now[0])
    return r, now


def at(r: _Replay, now: list[float], t: float, obj: dict) -> None:
    now[0] = t
    r.handle(obj)


def test_an_admission_that_preempted_counts_the_preemption_as_kueues_time_to_admit(replay) -> None:
    r, now = replay
    at(r, now, 1.0, workload(0, *ADMITTED))
    # Job 1 reclaims its quota from job 0: Kueue evicts 0 at 6 s and admits 1 at 6.5 s, both for job 1's
    # sake; job 1 waited 6.5 s for Kueue, not 0.5 s for freed capacity.
    at(r, now, 6.0, workload(0, *RECLAIMED))
    at(r, now, 6.5, workload(1, *ADMITTED))
    assert r.run.admission == [1.0, 6.5]
    assert r.run.handoff == []
    assert [(e.kind, e.reason) for e in r.run.events if e.job == 0] == [
        ("admitted", ""), ("evicted", "InCohortReclamation")]
    # A run that ends gives capacity back: the next admission is a hand-over, timed from the end.
    at(r, now, 20.0, workload(1, *FINISHED))
    at(r, now, 20.25, workload(0, *ADMITTED))
    assert r.run.handoff == [0.25]


def test_an_eviction_that_is_not_a_preemption_frees_capacity_for_the_next_admission(replay) -> None:
    r, now = replay
    at(r, now, 1.0, workload(0, *ADMITTED))
    at(r, now, 5.0, workload(0, *TIMED_OUT))
    at(r, now, 5.75, workload(2, *ADMITTED))
    assert r.run.admission == [1.0]
    assert r.run.handoff == [0.75]
    assert [(e.kind, e.reason) for e in r.run.events if e.job == 0] == [
        ("admitted", ""), ("evicted", "PodsReadyTimeout")]
