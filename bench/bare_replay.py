"""Kueue's scheduler baseline replayed on bare Kueue: Workloads created directly, finished by the replay as
Kueue's own runner finishes them, measured as its recorder measures them (bench/kueue_baseline.py figures).

Per ClusterQueue three generators, one per class, each sleeping the class's creation interval before every
create (kubernetes-sigs/kueue v0.19.2 test/performance/scheduler/runner/generator/generator.go generateWlSet;
all 90 at once, as its `concurrent` starts them). One watch of the Workloads plays both the runner's recorder
(first event, admission, finish per Workload: runner/recorder/recorder.go) and its controller
(runner/controller/controller.go): an admitted Workload is finished once it has run its class's time,
counted from when the watch saw it admitted; an evicted one gets its quota given back at once. The status
writes run on 5 workers, the runner's concurrency for Workloads (runner/main.go GroupKindConcurrency).
"""

from __future__ import annotations

import heapq
import http.client
import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from bench.bare_kueue import (ADMISSION_MANAGER, CLASS_LABEL, FINISHED_MANAGER, RUNNING_TIME_LABEL, apply_status,
                              evicted_patch, finished_patch, queue_names, workload, workloads_path)
from bench.kueue_baseline import CLASSES, Record, WorkloadClass, counts_at, expected_at, figures
from bench.scale import load, progress
from localcluster.api import ApiError, Client

WORKLOADS = "/apis/kueue.x-k8s.io/v1beta2/workloads"
STATUS_WORKERS = 5


def _conditions(obj: dict[str, Any]) -> dict[str, bool]:
    return {c["type"]: c.get("status") == "True" for c in obj.get("status", {}).get("conditions", [])}


@dataclass
class BareReplay:
    client: Client
    fraction: float
    records: dict[tuple[str, str], Record] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)         # creates that failed
    patch_errors: list[str] = field(default_factory=list)   # the runner's status writes that failed
    lock: threading.Lock = field(default_factory=threading.Lock)
    # The runner's controller: per Workload the admission it is timing (a counter, so a finish scheduled
    # for an admission that was since evicted is dropped), the Workloads whose eviction is being completed.
    epoch: dict[tuple[str, str], int] = field(default_factory=dict)
    evicting: set[tuple[str, str]] = field(default_factory=set)
    due: list[tuple[float, int, tuple[str, str], int]] = field(default_factory=list)
    work: queue.Queue = field(default_factory=queue.Queue)
    patches: dict[str, int] = field(default_factory=lambda: {"finished": 0, "evicted": 0, "errors": 0})
    _seq: int = 0

    def counts(self) -> dict[str, int]:
        return counts_at(self.fraction)

    def expected(self) -> int:
        return expected_at(self.fraction)

    # -- the generator ----------------------------------------------------------------------------------

    def _generate(self, ns: str, c: WorkloadClass, count: int) -> None:
        for i in range(count):
            time.sleep(c.interval_ms / 1000)
            obj = workload(ns, c, i)
            key = (ns, obj["metadata"]["name"])
            with self.lock:
                self.records[key] = Record(c.name)
            try:
                self.client.create(workloads_path(ns), obj)
            except (ApiError, OSError, http.client.HTTPException) as err:
                with self.lock:
                    self.errors.append(str(err)[:300])
                    del self.records[key]
                continue
            with self.lock:
                self.records[key].created = time.perf_counter()

    # -- the recorder and the controller ----------------------------------------------------------------

    def _observe(self, obj: dict[str, Any], now: float) -> None:
        meta = obj["metadata"]
        key = (meta.get("namespace", ""), meta.get("name", ""))
        conds = _conditions(obj)
        with self.lock:
            rec = self.records.get(key)
            if rec is None:
                return
            if rec.first_seen is None:
                rec.first_seen = now
            if conds.get("Finished"):
                if rec.finished is None:
                    rec.finished = now
                return
            if conds.get("Admitted"):
                if rec.admitted is None:
                    rec.admitted = now
                    self.epoch[key] = self.epoch.get(key, 0) + 1
                    runtime = int(meta.get("labels", {}).get(RUNNING_TIME_LABEL, "0")) / 1000
                    self._seq += 1
                    heapq.heappush(self.due, (now + runtime, self._seq, key, self.epoch[key]))
                if conds.get("Evicted") and key not in self.evicting:
                    self.evicting.add(key)
                    self.work.put(("evicted", key, obj))
            elif rec.admitted is not None:
                rec.evictions += 1   # admitted again later: counts from its creation to the last admission
                rec.admitted = None
                self.epoch[key] = self.epoch.get(key, 0) + 1
                self.evicting.discard(key)

    def _watch(self, rv: str, stop: threading.Event) -> None:
        mine = set(queue_names())
        while not stop.is_set():
            try:
                for event in self.client.watch(WORKLOADS, rv, timeout_seconds=60):
                    obj = event["object"]
                    rv = obj["metadata"].get("resourceVersion", rv)
                    if event["type"] in ("ADDED", "MODIFIED") and obj["metadata"].get("namespace") in mine:
                        self._observe(obj, time.perf_counter())
                    if stop.is_set():
                        return
            except (ApiError, OSError, http.client.HTTPException, ValueError):
                # Expired or broken: list again (what happened meanwhile is in the list) and go on from there.
                time.sleep(0.5)
                try:
                    listed = self.client.get(WORKLOADS, labelSelector=CLASS_LABEL)
                except (ApiError, OSError, http.client.HTTPException):
                    continue
                now = time.perf_counter()
                for obj in listed["items"]:
                    if obj["metadata"].get("namespace") in mine:
                        self._observe(obj, now)
                rv = listed["metadata"]["resourceVersion"]

    def _timer(self, stop: threading.Event) -> None:
        while not stop.is_set():
            now = time.perf_counter()
            with self.lock:
                ready = []
                while self.due and self.due[0][0] <= now:
                    ready.append(heapq.heappop(self.due))
            for _, _, key, epoch in ready:
                self.work.put(("finished", key, epoch))
            time.sleep(0.02)

    def _worker(self, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                kind, key, arg = self.work.get(timeout=0.5)
            except queue.Empty:
                continue
            ns, name = key
            try:
                if kind == "finished":
                    with self.lock:
                        rec = self.records.get(key)
                        live = rec is not None and rec.finished is None and self.epoch.get(key) == arg \
                            and key not in self.evicting
                    if not live:
                        continue
                    obj = self.client.get(f"{workloads_path(ns)}/{name}")
                    if _conditions(obj).get("Admitted") and not _conditions(obj).get("Evicted"):
                        apply_status(self.client, obj, finished_patch(obj, time.time()), FINISHED_MANAGER)
                        with self.lock:
                            self.patches["finished"] += 1
                else:
                    obj = self.client.get(f"{workloads_path(ns)}/{name}")
                    if _conditions(obj).get("Evicted") and _conditions(obj).get("Admitted"):
                        apply_status(self.client, obj, evicted_patch(obj, time.time()), ADMISSION_MANAGER)
                        with self.lock:
                            self.patches["evicted"] += 1
            except (ApiError, OSError, http.client.HTTPException) as err:
                with self.lock:
                    self.patches["errors"] += 1
                    self.patch_errors.append(f"{kind} {ns}/{name}: {str(err)[:240]}")
                    if kind == "evicted":
                        self.evicting.discard(key)   # the next event of it tries again

    # -- the run -----------------------------------------------------------------------------------------

    def run(self, timeout: float) -> dict[str, Any]:
        counts = self.counts()
        stop = threading.Event()
        rv = self.client.get(WORKLOADS, limit="1")["metadata"]["resourceVersion"]
        helpers = [threading.Thread(target=self._watch, args=(rv, stop), daemon=True),
                   threading.Thread(target=self._timer, args=(stop,), daemon=True)]
        helpers += [threading.Thread(target=self._worker, args=(stop,), daemon=True) for _ in range(STATUS_WORKERS)]
        for t in helpers:
            t.start()
        start = time.perf_counter()
        gens = [threading.Thread(target=self._generate, args=(ns, c, counts[c.name]), daemon=True)
                for ns in queue_names() for c in CLASSES]
        for g in gens:
            g.start()
        expected = self.expected()
        last = 0.0
        timed_out = None
        while True:
            time.sleep(1)
            now = time.perf_counter()
            with self.lock:
                recs = list(self.records.values())
            done = sum(r.finished is not None for r in recs)
            if not any(g.is_alive() for g in gens) and done >= len(recs):
                break
            if now - start > timeout:
                timed_out = f"timed out after {timeout:.0f}s with {len(recs) - done} workloads unfinished"
                break
            if now - last >= 10:
                last = now
                rate = done / (now - start)
                eta = (expected - done) / rate if rate > 0 else float("inf")
                progress(f"replay bare: created {sum(r.created is not None for r in recs)}/{expected}, "
                         f"admitted {sum(r.admitted is not None for r in recs)}, finished {done}, "
                         f"{now - start:.0f}s, ETA {eta:.0f}s (load {load()})")
        stop.set()
        return {**figures(recs, start, now, self.fraction, expected), "create_errors": len(self.errors),
                "first_errors": self.errors[:3], "timed_out": timed_out, "status_patches": dict(self.patches),
                "first_patch_errors": self.patch_errors[:3]}
