"""A simulated GPU node failing the ways a real one does, and coming back: the live tests
(tests/live/test_node_failure.py), the recovery benchmark (bench/recovery.py) and the what-if's node
failures (simulator/fault_injection.py).

- `fail`: the node reports NotReady, as a kubelet does when its container runtime, network or GPU driver
  breaks: annotated SIM_NODE_FAILED_ANNOTATION, KWOK (its kubelet) sets its Ready condition False and keeps
  it so (localcluster/kwok.py). The node lifecycle controller then does what it does on EKS: it taints the
  node node.kubernetes.io/not-ready (NoSchedule and NoExecute) and the taint eviction controller evicts its
  pods once their toleration runs out (DisruptionTarget, reason DeletionByTaintManager).
- `repair`: the annotation goes; KWOK sets the node Ready again and the lifecycle controller lifts the
  taints: a node rebooted by node repair.
- `delete` and `register`: the Node object goes (an instance terminated, or replaced by node repair) and a
  node of the same pool and name comes back, registered as scripts/local-cluster registers every node
  (server-side apply of the object, then its status, then the object again to drop the not-ready taint
  TaintNodesByCondition gives a new node). Reusing the name keeps the pool's node list the plan's.
  `register_node` registers any simulated node that way (the what-if's spare nodes, simulator/fault_injection.py).
"""

from __future__ import annotations

import urllib.parse
from typing import Any

from gpu_platform import conventions as cv
from gpu_platform.nodes import fake_nodes
from gpu_platform.plan import Plan

from .api import ApiError, Client
from .nodes import split

NODES = "/api/v1/nodes"
FIELD_MANAGER = "local-cluster"  # scripts/local-cluster register_nodes
STATUS_FIELD_MANAGER = "local-cluster-status"
NOT_READY_TAINT = "node.kubernetes.io/not-ready"


def _patch(client: Client, path: str, body: dict[str, Any], kind: str) -> Any:
    return client.request("PATCH", path, body, content_type=kind)


def fail(client: Client, name: str) -> None:
    """The node turns NotReady (at once: KWOK plays it) and stays so until `repair`."""
    _patch(client, f"{NODES}/{name}", {"metadata": {"annotations": {cv.SIM_NODE_FAILED_ANNOTATION: "true"}}},
           "application/merge-patch+json")


def not_ready(client: Client, name: str) -> bool:
    node = client.get(f"{NODES}/{name}")
    return any(c["type"] == "Ready" and c["status"] == "False" for c in node.get("status", {}).get("conditions", []))


def repair(client: Client, name: str) -> None:
    """The node's kubelet is back: KWOK sets it Ready again (and heartbeats it)."""
    _patch(client, f"{NODES}/{name}", {"metadata": {"annotations": {cv.SIM_NODE_FAILED_ANNOTATION: None}}},
           "application/merge-patch+json")


def delete(client: Client, name: str) -> None:
    client.delete(f"{NODES}/{name}")


def healthy(client: Client, name: str) -> bool:
    """Ready, heartbeating and free of the not-ready taint: a node the scheduler and Kueue place pods on."""
    try:
        node = client.get(f"{NODES}/{name}")
    except ApiError as err:
        if err.status == 404:
            return False
        raise
    if node["metadata"].get("annotations", {}).get(cv.SIM_NODE_FAILED_ANNOTATION) == "true":
        return False
    ready = any(c["type"] == "Ready" and c["status"] == "True" for c in node.get("status", {}).get("conditions", []))
    return ready and not any(t["key"] == NOT_READY_TAINT for t in node.get("spec", {}).get("taints", []))


def register(client: Client, plan: Plan, name: str) -> None:
    """(Re-)register the plan's node NAME, as scripts/local-cluster does."""
    items = [n for n in fake_nodes(plan)["items"] if n["metadata"]["name"] == name]
    if not items:
        raise ValueError(f"no simulated node {name!r} in the plan")
    register_node(client, items[0])


def register_node(client: Client, node: dict[str, Any]) -> None:
    """Register a simulated Node object (gpu_platform.nodes) as scripts/local-cluster registers its nodes."""
    name = node["metadata"]["name"]
    version = next((n["status"]["nodeInfo"]["kubeletVersion"] for n in client.get(NODES)["items"]
                    if n.get("status", {}).get("nodeInfo", {}).get("kubeletVersion")), "v0.0.0")
    (obj,), (status,) = split({"kind": "List", "items": [node]}, version)
    apply = "application/apply-patch+yaml"  # JSON is YAML

    def query(manager: str) -> str:
        return urllib.parse.urlencode({"fieldManager": manager, "force": "true"})

    _patch(client, f"{NODES}/{name}?{query(FIELD_MANAGER)}", obj, apply)
    _patch(client, f"{NODES}/{name}/status?{query(STATUS_FIELD_MANAGER)}", status, apply)
    _patch(client, f"{NODES}/{name}?{query(FIELD_MANAGER)}", obj, apply)


__all__ = ["fail", "not_ready", "repair", "delete", "register", "register_node", "healthy"]
