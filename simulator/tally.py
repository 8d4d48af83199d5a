"""Tallying what Kueue does with a replay's Workloads: each admission, eviction and finish as an event in
trace seconds, the counts the progress line shows, and whether an admission waited on freed capacity (a
hand-over) or on Kueue alone. Both replay modes tally through here, so their figures are measured alike."""

from __future__ import annotations

import threading
import time
from typing import Any

from gpu_platform import conventions as cv

from .records import Event, Run


def assignment(obj: dict[str, Any]) -> tuple[str, int]:
    """A Workload's admission: the flavor of its GPU resource and the units it holds (else the first flavor, 0)."""
    admission = obj.get("status", {}).get("admission") or {}
    for ps in admission.get("podSetAssignments", []):
        for resource, flavor in ps.get("flavors", {}).items():
            if cv.is_gpu_resource(resource):
                usage = ps.get("resourceUsage", {}).get(resource, "0")
                return flavor, int(float(str(usage)))
    for ps in admission.get("podSetAssignments", []):
        flavors = ps.get("flavors", {})
        if flavors:
            return next(iter(flavors.values())), 0
    return "", 0


class Tally:
    """What both replay modes record of a Workload's admission and finish: the event (in trace seconds), the
    count the progress line shows, when its flavor's capacity was last freed, and whether an admission waited
    on freed capacity (handoff) or on Kueue alone (admission). A base of the pods mode's watcher here and the
    workloads mode's replay (simulator/direct_workloads.py), so the two modes' figures are measured alike."""

    run: Run
    start: float
    lock: threading.Lock
    counts: dict[str, int]
    last_free: dict[str, float]      # flavor -> wall time capacity was last freed
    pending_since: dict[int, float]

    def clock(self) -> float:
        return time.perf_counter() - self.start

    def _record(self, kind: str, index: int, **kw: Any) -> None:
        with self.lock:
            self.run.events.append(Event(self.clock() * self.run.speed, index, kind, **kw))

    def _finished(self, index: int, flavor: str, units: int, reason: str, now: float) -> None:
        self._record("finished", index, flavor=flavor, units=units, reason=reason)
        self.counts["finished"] += 1
        if flavor:
            self.last_free[flavor] = now

    def _evicted(self, index: int, flavor: str, units: int, reason: str, preempted: bool, now: float) -> None:
        """A preemption frees capacity only for the workload Kueue preempted for: its admission is Kueue's own
        time to admit a job (deciding the preemption included), not a reaction to capacity a run gave back."""
        self._record("evicted", index, flavor=flavor, units=units, reason=reason)
        self.pending_since[index] = now
        self.counts["evicted"] += 1
        if flavor and not preempted:
            self.last_free[flavor] = now

    def _admitted(self, index: int, flavor: str, units: int, now: float) -> None:
        self._record("admitted", index, flavor=flavor, units=units)
        self.counts["admitted"] += 1
        freed = self.last_free.get(flavor)
        since = self.pending_since.get(index, now)
        if freed is not None and freed >= since:
            self.run.handoff.append(now - freed)
        else:   # nothing was freed while it waited: Kueue's own time to admit it (a burst queues)
            self.run.admission.append(now - since)
