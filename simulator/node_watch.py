"""Watching a replay's GPU nodes: every Node labelled with a pool as it comes and goes (registered, the
autoscaler's, spares), stamped with the replay's clock, so that a pod that runs on a node first seen after its
job's submission is a scale-up. A part of the Watcher (simulator/watch.py), whose state it reads."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

from gpu_platform import conventions as cv
from localcluster.api import ApiError, Client

NODES = "/api/v1/nodes"


@dataclass
class NodeSeen:
    """A GPU node as the node watch last saw it: its pool, and when it came (clock; None: before the watch)."""
    pool: str
    first_seen: float | None


class NodeWatch:
    """The GPU nodes as the node watch last saw them, for the Watcher it is a part of: the attributes below are
    the Watcher's (clock() is its Tally's)."""

    client: Client
    lock: threading.Lock
    nodes: dict[str, NodeSeen]
    _stop: threading.Event

    def _list_nodes(self) -> str:
        """Every GPU node now (kept: their first sighting stays); the list's resourceVersion."""
        listing = self.client.get(NODES)
        names = set()
        with self.lock:
            initial = not self.nodes
            for n in listing["items"]:
                pool = n["metadata"].get("labels", {}).get(cv.POOL)
                if pool is None:
                    continue
                names.add(n["metadata"]["name"])
                self.nodes.setdefault(n["metadata"]["name"], NodeSeen(pool, None if initial else self.clock()))
            for name in set(self.nodes) - names:
                del self.nodes[name]
        return listing["metadata"]["resourceVersion"]

    def handle_node(self, kind: str, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        pool = meta.get("labels", {}).get(cv.POOL)
        if pool is None:
            return
        with self.lock:
            if kind == "DELETED":
                self.nodes.pop(meta["name"], None)
            elif meta["name"] not in self.nodes:
                self.nodes[meta["name"]] = NodeSeen(pool, self.clock())

    def _node_loop(self, rv: str) -> None:
        while not self._stop.is_set():
            try:
                for event in self.client.watch(NODES, rv, timeout_seconds=600):
                    obj = event.get("object", {})
                    rv = obj.get("metadata", {}).get("resourceVersion", rv)
                    if event.get("type") in ("ADDED", "MODIFIED", "DELETED"):
                        self.handle_node(event["type"], obj)
                    if self._stop.is_set():
                        return
            except (ApiError, OSError):
                if self._stop.is_set():
                    return
                time.sleep(0.5)
                rv = self._list_nodes()   # events were missed: start again from what is there

    def pool_nodes(self, pool: str) -> list[str]:
        """The pool's nodes up now (registered, the autoscaler's, spares)."""
        with self.lock:
            return sorted(name for name, n in self.nodes.items() if n.pool == pool)
