"""The acceptance workload's events (workloads/acceptance/train.py prints them, one JSON object per line), read
back from the pods' logs."""

from __future__ import annotations

import json

EVENTS: tuple[str, ...] = ("start", "data", "allreduce", "restore", "train", "checkpoint", "done", "error")


def events_from_log(text: str) -> list[dict[str, object]]:
    """The workload's events in a pod's log, in order. Other lines (a library's warnings, a traceback) are not
    events and are left out, as is a JSON line without a known `event`."""
    out: list[dict[str, object]] = []
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict) and value.get("event") in EVENTS:
            out.append(value)
    return out
