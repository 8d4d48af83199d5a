"""The documented recovery of a killed `pulumi up` (docs/runbook.md) and the inventory that says whether a
stack converged: what the cluster holds under the platform's managed-by label against what the state lists
and the program declares (`python -m platform_cli inventory`, which renders the program for the last).
The fault scenarios that exercise it are test and benchmark rigging (tests/faults/scenarios.py).

Facts this relies on, checked in the sources of the versions we build (Pulumi v3.260.0, pulumi-kubernetes v4):
- A killed CLI leaves its lock: the file ("diy") backend writes `.pulumi/locks/<stack>/<uuid>.json` per process
  and refuses an update while another process's lock exists ("the stack is currently locked by N lock(s) ...
  delete the lock file with `pulumi cancel`", pulumi/pulumi pkg/backend/diy/lock.go checkForLock); `pulumi
  cancel` on that backend deletes every lock file of the stack (pkg/backend/diy/backend.go CancelCurrentUpdate).
- With checkpoints, an operation in flight at the kill is a pending operation in the state; the next `up` only
  warns about it and carries it forward (pkg/resource/deploy/deployment_executor.go
  printPendingOperationsWarning; pkg/engine/journal_snapshot.go copies base.PendingOperations), and `pulumi
  refresh` clears them, pending CREATEs only with `--clear-pending-creates` when not interactive
  (pkg/cmd/pulumi/operations/refresh.go filterMapPendingCreates). `pulumi stack import` drops them too
  (pkg/cmd/pulumi/stack/io.go).
- With PULUMI_SKIP_CHECKPOINTS the state is written once, when the update ends (pkg/backend/snapshot.go
  unsafeServiceLoop): after a kill the state is the previous update's, and objects created since are in the
  cluster only.
- Either way a dropped create is not lost: with server-side apply a create is a PATCH of type apply, "we
  currently always upsert the object" (pulumi/pulumi-kubernetes provider/pkg/await/await.go Creation), so
  the next `up` adopts the object; a delete of an object already gone succeeds (await.go Deletion,
  nilIfGVKDeleted).
"""

from __future__ import annotations

import json
import subprocess
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from gpu_platform import conventions as cv

MANAGED_SELECTOR = f"{cv.MANAGED_BY}={cv.MANAGED_BY_VALUE}"

Key = tuple[str, str, str, str]   # (API group, kind, namespace, name)

Pulumi = Callable[..., subprocess.CompletedProcess]   # pulumi(*args, check=..., timeout=...) -> result


def key_of(obj: dict[str, Any]) -> Key:
    api = obj.get("apiVersion", "")
    group = api.rsplit("/", 1)[0] if "/" in api else ""
    meta = obj.get("metadata") or {}
    return group, obj.get("kind", ""), meta.get("namespace") or "", meta.get("name", "")


def state_objects(deployment: dict[str, Any]) -> list[tuple[str, Key]]:
    """(URN, object key) of every Kubernetes object a `pulumi stack export` lists (pending operations aside)."""
    out = []
    for r in (deployment.get("deployment") or {}).get("resources") or []:
        if not r["type"].startswith("kubernetes:") or r["type"].startswith("pulumi:providers:"):
            continue
        obj = r.get("outputs") or r.get("inputs") or {}
        if "kind" in obj:
            out.append((r["urn"], key_of(obj)))
    return out


def pending_operations(deployment: dict[str, Any]) -> list[dict[str, Any]]:
    return (deployment.get("deployment") or {}).get("pending_operations") or []


def kinds_of(keys: Iterable[Key]) -> list[str]:
    """kubectl resource arguments (Kind.group) for the keys' kinds."""
    return sorted({f"{kind}.{group}" if group else kind for group, kind, _, _ in keys})


def cluster_objects(kubectl: Callable[..., subprocess.CompletedProcess], kinds: list[str]) -> list[Key]:
    """Every object of those kinds in the cluster that carries the platform's managed-by label."""
    out = kubectl("get", ",".join(kinds), "-A", "-l", MANAGED_SELECTOR, "-o", "json").stdout
    return [key_of(o) for o in json.loads(out)["items"]]


@dataclass
class Inventory:
    """Cluster against state against what the program declares. Converged: every count 0."""

    orphans: list[Key]       # in the cluster (platform label) and not in the state
    missing: list[Key]       # in the state or declared, and not in the cluster
    duplicates: list[Key]    # one object under two URNs, or one URN twice, in the state
    undeclared: list[Key]    # in the state and not declared by the program
    pending: int             # pending operations left in the state
    objects: int             # objects in the cluster under the label

    @property
    def converged(self) -> bool:
        return not (self.orphans or self.missing or self.duplicates or self.undeclared or self.pending)

    def summary(self) -> dict[str, int]:
        return {"objects": self.objects, "orphans": len(self.orphans), "missing": len(self.missing),
                "duplicates": len(self.duplicates), "undeclared": len(self.undeclared), "pending": self.pending}

    def __str__(self) -> str:
        parts = [f"{k} {v}" for k, v in self.summary().items()]
        for label, keys in (("orphans", self.orphans), ("missing", self.missing), ("duplicates", self.duplicates),
                            ("undeclared", self.undeclared)):
            if keys:
                parts.append(f"{label}: " + ", ".join("/".join(p for p in k if p) for k in keys[:8]))
        return "; ".join(parts)


def inventory(deployment: dict[str, Any], kubectl: Callable[..., subprocess.CompletedProcess],
              declared: Iterable[Key] | None = None, extra_kinds: Iterable[str] = (),
              baseline: Iterable[Key] = ()) -> Inventory:
    """BASELINE: labelled objects that are not the stack's (local-cluster's kueue-system namespace stands in
    for the Kueue release a real cluster's stack makes)."""
    in_state = state_objects(deployment)
    keys = [k for _, k in in_state]
    declared_set = set(declared) if declared is not None else set(keys)
    kinds = sorted(set(kinds_of(set(keys) | declared_set)) | set(extra_kinds))
    in_cluster = (set(cluster_objects(kubectl, kinds)) if kinds else set()) - set(baseline)
    counts = Counter(keys)
    urns = Counter(u for u, _ in in_state)
    dupes = sorted({k for k, n in counts.items() if n > 1} | {k for u, k in in_state if urns[u] > 1})
    state_set = set(keys)
    return Inventory(
        orphans=sorted(in_cluster - state_set),
        missing=sorted((state_set | declared_set) - in_cluster),
        duplicates=dupes,
        undeclared=sorted(state_set - declared_set),
        pending=len(pending_operations(deployment)),
        objects=len(in_cluster),
    )


class RecoveryError(RuntimeError):
    """A step of the recovery failed; the message carries the command's output."""


# ---------------------------------------------------------------------------------------------------
# recovery (docs/runbook.md, "A killed `pulumi up`")


@dataclass
class Recovery:
    lock_refused: bool         # the `up` right after the kill was refused with the dead process's lock named
    lock_message: str          # what that refusal said
    pending_before: int        # pending operations the kill left in the state
    seconds: float
    steps: list[str] = field(default_factory=list)


def repair_state_sidecars(env: dict[str, str]) -> list[str]:
    """Remove the empty metadata sidecars a SIGKILLed CLI can leave in a file backend; their names.

    gocloud.dev's fileblob (v0.46.1 blob/fileblob/fileblob.go, writerWithSidecar.Close) writes a blob's
    `<key>.attrs` sidecar in place and only then renames the new blob over the old: a kill in between leaves
    the stack's `<stack>.json.attrs` empty beside an intact checkpoint, and every read of the stack then fails
    with "failed to load checkpoint: EOF". fileblob reads a missing sidecar as no attributes, so removing the
    empty one is the repair (docs/runbook.md, a killed `pulumi up`: step 0). Found by the faults suite."""
    url = env.get("PULUMI_BACKEND_URL", "")
    if not url.startswith("file://"):
        return []
    stacks = Path(url[len("file://"):]) / ".pulumi" / "stacks"
    removed = []
    for sidecar in stacks.rglob("*.attrs") if stacks.is_dir() else []:
        if sidecar.stat().st_size == 0:
            sidecar.unlink()
            removed.append(sidecar.name)
    return sorted(removed)


def recover(pulumi: Pulumi, stack_args: list[str], pid: int | None = None) -> Recovery:
    """The documented recovery after a killed `up` (docs/runbook.md), as an operator meets it:
    0. the next `up` is refused: "the stack is currently locked by 1 lock(s)", the lock file naming the dead
       process (user@host, pid); once that process is known gone,
    1. `pulumi cancel --yes` deletes the stale lock (file backend: every lock file of the stack);
    2. when `pulumi stack export` lists pending operations (checkpointed stacks only):
       `pulumi refresh --clear-pending-creates --yes` reads every object back and drops them (a dropped
       create is adopted by the next `up`: server-side apply upserts);
    3. `pulumi up` of the same program (the caller's next step)."""
    started = time.perf_counter()
    steps: list[str] = []
    refused = pulumi("up", "--yes", "--skip-preview", *stack_args, check=False, timeout=900)
    text = refused.stdout + refused.stderr
    lock_refused = refused.returncode != 0 and "currently locked" in text and (pid is None or f"pid {pid})" in text)
    message = next((line.strip() for line in text.splitlines() if "currently locked" in line), "")
    if refused.returncode == 0:   # no lock was left: that `up` was the converging one
        return Recovery(False, "", 0, round(time.perf_counter() - started, 1), ["up (not refused)"])
    if not lock_refused:
        raise RecoveryError(f"the `up` after the kill failed for another reason than the lock:\n{text[-4000:]}")
    pulumi("cancel", "--yes", *stack_args[:2])
    steps.append("cancel")
    exported = json.loads(pulumi("stack", "export", *stack_args[:2]).stdout)
    pending = len(pending_operations(exported))
    if pending:
        pulumi("refresh", "--yes", "--clear-pending-creates", "--skip-preview", *stack_args, timeout=900)
        steps.append("refresh --clear-pending-creates")
    return Recovery(lock_refused, message, pending, round(time.perf_counter() - started, 1), steps)
