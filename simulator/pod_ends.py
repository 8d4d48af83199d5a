"""Giving each pod of a trace job its end: KWOK's duration annotation set to an instant (the job's admission
plus its compressed run, less the end of the simulator's chain as measured so far), by a few patcher threads
off the watch's thread. A part of the Watcher (simulator/watch.py), whose state it reads."""

from __future__ import annotations

import queue
import threading
import time
from datetime import datetime, timezone

from gpu_platform import conventions as cv
from localcluster.api import ApiError, Client

from .fidelity import OverheadEstimate, end_time
from .records import Run

# Pods are given their end time by this many threads, off the watch's thread (a PATCH each).
PATCHERS = 2
# A pod seen before its workload's admission (two watches, no order between them) waits this long for it;
# then its own first sighting stands in for the admission (a little late, never early).
ADMISSION_WAIT_S = 2.0


def kwok_time(epoch_s: float) -> str:
    """An instant as KWOK's duration annotation takes it (Go's time.RFC3339Nano, UTC)."""
    return datetime.fromtimestamp(epoch_s, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class PodEnds:
    """Each trace pod's end, for the Watcher it is a part of: the attributes below are the Watcher's."""

    client: Client
    run: Run
    lock: threading.Lock
    start: float
    epoch_offset: float
    state: dict[int, str]
    admitted_at: dict[int, float]
    evicted_at: dict[int, float]
    restarted_at: dict[int, float]
    end_chain: OverheadEstimate
    patches: list[queue.Queue[tuple[str, str, int, float, str | None] | None]]
    _stop: threading.Event

    def epoch(self, t: float) -> float:
        """The Unix time of a reading of clock()."""
        return self.start + t + self.epoch_offset

    def end_of(self, index: int, seen: float) -> float:
        """When a pod of the job should end (clock): its admission plus the compressed run, less the end of
        the chain as measured so far. A pod can be seen before its workload's admission is: wait a little
        for it, then take the pod's sighting (later than the admission, so the run is never cut short)."""
        deadline = time.monotonic() + ADMISSION_WAIT_S
        while True:
            admitted = self.admitted_at.get(index)
            if (self.state.get(index) in ("admitted", "finished") and admitted is not None
                    and admitted > self.evicted_at.get(index, -1.0)):
                break
            if time.monotonic() > deadline or self._stop.is_set():
                admitted = seen
                break
            time.sleep(0.02)
        # A run that started over (a restart after a lost node, a late start) counts from then.
        start = max(admitted, self.restarted_at.get(index, -1.0))
        return end_time(start, self.run.jobs[index].duration, self.run.speed, self.end_chain.value())

    def patch(self, namespace: str, name: str, index: int, seen: float, value: str | None) -> None:
        """Set a pod's duration annotation: `value`, or (None) its end on the trace's time (end_of)."""
        self.patches[hash((namespace, name)) % PATCHERS].put((namespace, name, index, seen, value))

    def _patcher(self, patches: queue.Queue) -> None:
        while True:
            item = patches.get()
            if item is None:
                return
            namespace, name, index, seen, value = item
            if value is None:
                value = kwok_time(self.epoch(self.end_of(index, seen)))
            body = {"metadata": {"annotations": {cv.SIM_DURATION_ANNOTATION: value}}}
            try:
                self.client.request("PATCH", f"/api/v1/namespaces/{namespace}/pods/{name}", body,
                                    content_type="application/merge-patch+json")
            except ApiError as err:
                if err.status != 404:   # a pod already gone needs no end
                    with self.lock:
                        self.run.patch_failures += 1
            except OSError:
                with self.lock:
                    self.run.patch_failures += 1
