"""Failing and repairing nodes during a replay, and the spare nodes beside it: the Injector fails a node of a
failure's pool at its time and repairs it its repair time later (localcluster/node_faults.py: NotReady, then
Ready again); spares are registered before the replay and removed after it; a replay with failures starts only
with every node healthy."""

from __future__ import annotations

import heapq
import threading
import time
from typing import Any

from gpu_platform.nodes import node_name, registered_nodes, spare_nodes
from gpu_platform.plan import Plan
from localcluster import node_faults
from localcluster.api import ApiError, Client

from .failures import Injected, NodeFailure, pick
from .records import Run
from .watch import Watcher

# Nodes (spares registered, failed ones repaired) must be Ready and untainted within this many seconds.
NODES_HEALTHY_TIMEOUT_S = 60.0


class Injector:
    """The node failures of a replay, on its clock: each node fails at its time (a node of its pool chosen
    by failures.pick from the nodes then up and busy) and is repaired its repair time later; what each did
    goes into run.failures. A thread of its own, stopped at the horizon; nodes still down then are repaired
    by `repair_all` (their repair is not recorded: they were down to the end of the replay)."""

    def __init__(self, client: Client, plan: Plan, watcher: Watcher, run: Run, errors: list[BaseException]):
        self.client, self.plan, self.watcher, self.run, self.errors = client, plan, watcher, run, errors
        self.down: dict[str, Injected] = {}
        self._stop = threading.Event()
        self.heap: list[tuple[float, int, str, Any]] = [
            (f.at / run.speed, k, "fail", (k, f)) for k, f in enumerate(run.failure_schedule or ()) if f.at < run.horizon]
        heapq.heapify(self.heap)
        self.seq = len(self.heap)
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def start(self) -> None:
        self.thread.start()

    def _loop(self) -> None:
        while self.heap:
            wall, _, action, payload = self.heap[0]
            if self._stop.wait(max(0.0, wall - self.watcher.clock())):
                return
            heapq.heappop(self.heap)
            try:
                if action == "fail":
                    self._fail(*payload)
                else:
                    self._repair(payload)
            except (ApiError, OSError) as err:
                self.errors.append(RuntimeError(f"node failure ({action} {payload}): {err}"))
                return

    def _fail(self, k: int, failure: NodeFailure) -> None:
        pool = self.plan.pools_by_name[failure.pool]
        # The pool's nodes up now: registered, the autoscaler's and spares (an elastic pool may have none).
        up = [n for n in self.watcher.pool_nodes(pool.name) if n not in self.down]
        node = pick(failure, k, self.run.failure_seed, up, self.watcher.busy_nodes())
        now = self.watcher.clock()
        record = Injected(failure, now * self.run.speed, node)
        self.run.failures.append(record)
        if node is None:
            return
        node_faults.fail(self.client, node)
        record.hits = self.watcher.fail_node(node, now)
        self.down[node] = record
        self.seq += 1
        heapq.heappush(self.heap, (now + failure.repair_s / self.run.speed, self.seq, "repair", node))

    def _repair(self, node: str) -> None:
        node_faults.repair(self.client, node)
        now = self.watcher.clock()
        record = self.down.pop(node)
        record.repaired = now * self.run.speed
        # Capacity is back: an admission now is Kueue's reaction to it, not its time to admit a job that
        # found room (the hand-over figures, metrics' simulator section).
        self.watcher.last_free[self.plan.pools_by_name[record.failure.pool].flavor] = now

    def stop(self) -> None:
        self._stop.set()
        if self.thread.is_alive():
            self.thread.join(timeout=10)

    def repair_all(self) -> None:
        for node in list(self.down):
            try:
                node_faults.repair(self.client, node)
            except (ApiError, OSError):
                pass   # the next replay waits for every node healthy, and names the ones that are not
            del self.down[node]


def wait_healthy(client: Client, names: list[str], timeout: float = NODES_HEALTHY_TIMEOUT_S) -> None:
    """Until every named node is Ready and untainted (node_faults.healthy); TimeoutError otherwise."""
    deadline = time.monotonic() + timeout
    while True:
        sick = [n for n in names if not node_faults.healthy(client, n)]
        if not sick:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"nodes not healthy after {timeout:.0f}s: {', '.join(sick)}")
        time.sleep(0.5)


def add_spares(client: Client, plan: Plan, per_pool: dict[str, int]) -> list[str]:
    """Register spare nodes in pools (gpu_platform.nodes.spare_nodes) and wait until they are Ready; their
    names."""
    nodes = spare_nodes(plan, per_pool)
    for node in nodes:
        node_faults.register_node(client, node)
    names = [n["metadata"]["name"] for n in nodes]
    wait_healthy(client, names)
    return names


def remove_spares(client: Client, plan: Plan, per_pool: dict[str, int]) -> None:
    """Delete the spare nodes add_spares registered (after a drain: no pod is left on them)."""
    for node in spare_nodes(plan, per_pool):
        try:
            node_faults.delete(client, node["metadata"]["name"])
        except ApiError as err:
            if err.status != 404:
                raise


def registered_node_names(plan: Plan) -> list[str]:
    """The GPU nodes the live cluster registers itself (gpu_platform.nodes.registered_nodes): those of a pool
    that scales beyond its minimum come and go with the autoscaler."""
    return [node_name(p, i) for p in plan.pools for i in range(registered_nodes(p))]
