"""Ending the kinds that end by deletion (simulator/kinds.py: rayjob, lws): their pods get no end time; the
replay deletes a job's objects when its run is up (a deadline per admission or restart, void once the job is
evicted), and its Workload's deletion is its finish. A part of the Watcher (simulator/watch.py), whose state
it reads."""

from __future__ import annotations

import heapq
import threading

from localcluster.api import ApiError, Client

from . import kinds
from .fidelity import OverheadEstimate, end_time
from .records import Run


class Deadlines:
    """When each admitted job of a kind that ends by deletion is deleted, for the Watcher it is a part of: the
    attributes below are the Watcher's (clock() is its Tally's)."""

    client: Client
    run: Run
    correct: bool
    lock: threading.Lock
    state: dict[int, str]
    generation: dict[int, int]
    deadlines: list[tuple[float, int, int]]
    ending: set[int]
    object_paths: dict[int, list[str]]
    end_chain: OverheadEstimate
    _stop: threading.Event

    def _ends_by_deletion(self, index: int) -> bool:
        return index >= 0 and self.run.jobs[index].kind in kinds.ENDS_BY_DELETION

    def _new_deadline(self, index: int, start: float) -> None:
        """A job ended by deletion is deleted when its run, from `start` (clock), is up."""
        if not self._ends_by_deletion(index):
            return
        with self.lock:
            generation = self.generation.get(index, 0) + 1
            self.generation[index] = generation
            chain = self.end_chain.value() if self.correct else 0.0
            at = end_time(start, self.run.jobs[index].duration, self.run.speed, chain)
            heapq.heappush(self.deadlines, (at, index, generation))

    def _deleter(self) -> None:
        while not self._stop.wait(0.05):
            due: list[int] = []
            with self.lock:
                while self.deadlines and self.deadlines[0][0] <= self.clock():
                    _, index, generation = heapq.heappop(self.deadlines)
                    if self.generation.get(index) == generation and self.state.get(index) == "admitted":
                        self.ending.add(index)
                        due.append(index)
            for index in due:
                for path in self.object_paths.get(index, []):   # the object of the kind, then its Service, PDB
                    try:
                        self.client.delete(path, propagationPolicy="Background")
                    except (ApiError, OSError) as err:
                        if not (isinstance(err, ApiError) and err.status == 404):
                            with self.lock:
                                self.run.patch_failures += 1
