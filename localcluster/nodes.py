"""The simulated nodes as the script applies them: objects, their status, and the names to keep.

A Node's status can only be written through the status subresource, so the list is split in two
(objects without status, then status); a fresh node also gets the TaintNodesByCondition not-ready taint,
which the script clears by re-applying the objects (their taint list is owned by its field manager).
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

from gpu_platform import conventions as cv

REGISTERED_BY = f"{cv.PREFIX}/registered-by"
REGISTERED_BY_VALUE = "local-cluster"


def split(node_list: dict[str, Any], kube_version: str, now: datetime.datetime | None = None) -> tuple[list, list]:
    """(objects, statuses) to apply; raises ValueError when the input is not a v1 List of named Nodes."""
    items = node_list.get("items") if isinstance(node_list, dict) and node_list.get("kind") == "List" else None
    if items is None:
        raise ValueError("expected a v1 List of Node objects")
    stamp = (now or datetime.datetime.now(datetime.timezone.utc)).strftime("%Y-%m-%dT%H:%M:%SZ")
    objects, statuses = [], []
    for i, node in enumerate(items):
        if node.get("kind") != "Node" or not node.get("metadata", {}).get("name"):
            raise ValueError(f"items[{i}] is not a named Node")
        name = node["metadata"]["name"]
        status = dict(node.get("status") or {})
        obj = {k: v for k, v in node.items() if k != "status"}
        obj["apiVersion"] = "v1"
        obj.setdefault("metadata", {}).setdefault("annotations", {})[REGISTERED_BY] = REGISTERED_BY_VALUE
        objects.append(obj)
        status.setdefault("allocatable", status.get("capacity") or {})
        conditions = [c for c in status.get("conditions", []) if c.get("type") != "Ready"]
        conditions.append({
            "type": "Ready", "status": "True", "reason": "KubeletReady",
            "message": "simulated node registered by scripts/local-cluster (KWOK plays its kubelet)",
            "lastHeartbeatTime": stamp, "lastTransitionTime": stamp,
        })
        status["conditions"] = conditions
        # Loopback addresses: a kubectl logs/exec against a simulated node must not leave the machine.
        status.setdefault("addresses", [{"type": "InternalIP", "address": f"127.0.100.{i % 254 + 1}"},
                                        {"type": "Hostname", "address": name}])
        info = status.setdefault("nodeInfo", {})
        for key, value in (("kubeletVersion", kube_version), ("kubeProxyVersion", ""), ("operatingSystem", "linux"),
                           ("architecture", "amd64"), ("osImage", "simulated GPU node (KWOK)"),
                           ("containerRuntimeVersion", "kwok://0"), ("kernelVersion", ""), ("machineID", ""),
                           ("systemUUID", ""), ("bootID", "")):
            info.setdefault(key, value)
        statuses.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "status": status})
    return objects, statuses


def write(node_list: dict[str, Any], kube_version: str, out: Path) -> int:
    objects, statuses = split(node_list, kube_version)
    for name, items in (("nodes.json", objects), ("status.json", statuses)):
        (out / name).write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    (out / "names").write_text("".join(o["metadata"]["name"] + "\n" for o in objects))
    return len(objects)


def stale(live_nodes: dict[str, Any], keep: set[str]) -> list[str]:
    """Nodes this script registered earlier that the current list no longer has."""
    out = []
    for n in live_nodes.get("items", []):
        meta = n["metadata"]
        if meta.get("annotations", {}).get(REGISTERED_BY) == REGISTERED_BY_VALUE and meta["name"] not in keep:
            out.append(meta["name"])
    return out
