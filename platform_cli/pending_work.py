"""Why work is pending right now: each pending Kueue Workload's queue position and Kueue's own reason.

The reason is the Workload's QuotaReserved condition (False, with Kueue's message: "couldn't assign flavors to
pod set main: insufficient unused quota for nvidia.com/gpu in flavor train, 4 more needed"), read from the API
server. The position comes from Kueue's visibility API (visibility.kueue.x-k8s.io/v1beta2, ClusterQueue
`pendingworkloads`: positionInClusterQueue, apis/visibility/v1beta2/types.go at v0.19.2) when it is served. The
live local cluster runs Kueue with VisibilityOnDemand off (its server needs a certificate at a fixed path a
host process does not have, gpu_platform/kueue_config.LOCAL_ONLY_PATHS), and so may any cluster: then the
position is Kueue's queue order worked out from the Workloads, higher priority first, then the older queue
timestamp (creation, or the eviction for a workload requeued after a PodsReady timeout with requeuingStrategy
timestamp Eviction, as the stack configures; pkg/workload/workload.go GetQueueOrderTimestamp), and marked
`estimated`. Everything goes through kubectl, so any kubeconfig's authentication works (EKS's exec plugin
included).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from gpu_platform.plan import Plan

VISIBILITY = "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/{cq}/pendingworkloads"
KUBECTL_TIMEOUT = 60


class PendingUnavailable(RuntimeError):
    """The API server could not be read: the report says so and goes on."""


@dataclass(frozen=True)
class Pending:
    team: str
    namespace: str
    workload: str
    cluster_queue: str
    position: int | None
    position_source: str      # visibility-api | estimated
    priority: int
    reason: str
    message: str
    waits_for: str            # the message's clauses about the pools' GPUs (waits_for())
    since: str                # RFC 3339: when it joined the queue (creation or requeue)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


_CLAUSE = re.compile(r"insufficient (?:unused )?quota for (?P<resource>[^ ]+) in flavor (?P<flavor>[^ ,]+)")


def waits_for(message: str, plan: Plan) -> str:
    """The part of Kueue's message that names what the workload waits for: its clauses about the GPU
    resources of the pools' flavors (Kueue lists every flavor it tried, the CPU-only one too, and CPU and
    memory beside the GPUs); the whole message when it has none."""
    head, _, rest = message.partition(": ")
    clauses = [c.strip() for c in re.split(r", (?=insufficient )", rest or message)]
    flavors = {p.flavor for p in plan.pools}
    gpus = set(plan.gpu_resource_names)
    keep = [c for c in clauses if (m := _CLAUSE.match(c)) and m["flavor"] in flavors and m["resource"] in gpus]
    return "; ".join(keep) if keep else message


def _kubectl(kubeconfig: Path | None, *args: str) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("kubectl")
    if exe is None:
        raise PendingUnavailable("kubectl is not on PATH")
    cmd = [exe, *([f"--kubeconfig={kubeconfig}"] if kubeconfig else []), *args]
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=KUBECTL_TIMEOUT, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise PendingUnavailable(f"kubectl {' '.join(args[:3])} did not answer in {KUBECTL_TIMEOUT}s") from None


def _condition(wl: dict[str, Any], kind: str) -> dict[str, Any] | None:
    return next((c for c in wl.get("status", {}).get("conditions") or [] if c.get("type") == kind), None)


def is_pending(wl: dict[str, Any]) -> bool:
    """Waiting for quota: active, no quota reserved, not finished."""
    reserved, finished = _condition(wl, "QuotaReserved"), _condition(wl, "Finished")
    return (wl.get("spec", {}).get("active", True) is not False
            and not (reserved and reserved.get("status") == "True")
            and not (finished and finished.get("status") == "True"))


def queue_timestamp(wl: dict[str, Any]) -> str:
    evicted = _condition(wl, "Evicted")
    if evicted and evicted.get("status") == "True" and evicted.get("reason") == "PodsReadyTimeout":
        return evicted.get("lastTransitionTime") or wl["metadata"]["creationTimestamp"]
    return wl["metadata"]["creationTimestamp"]


def pending_from(workloads: list[dict[str, Any]], plan: Plan,
                 positions: dict[tuple[str, str], int] | None = None) -> list[Pending]:
    """The pending workloads of the plan's teams, in queue order per ClusterQueue. `positions` (namespace,
    name) -> position from the visibility API; missing ones are estimated."""
    team_of_ns = {ns: t for t in plan.teams for ns in t.namespaces}
    by_cq: dict[str, list[dict[str, Any]]] = {}
    for wl in workloads:
        team = team_of_ns.get(wl["metadata"].get("namespace", ""))
        if team is None or not is_pending(wl):
            continue
        by_cq.setdefault(team.cluster_queue, []).append(wl)
    out: list[Pending] = []
    for cq, wls in sorted(by_cq.items()):
        wls.sort(key=lambda w: (-int(w.get("spec", {}).get("priority") or 0), queue_timestamp(w),
                                w["metadata"]["name"]))
        for i, wl in enumerate(wls):
            meta = wl["metadata"]
            known = (positions or {}).get((meta["namespace"], meta["name"]))
            reserved = _condition(wl, "QuotaReserved") or {}
            out.append(Pending(
                team=team_of_ns[meta["namespace"]].name, namespace=meta["namespace"], workload=meta["name"],
                cluster_queue=cq, position=known if known is not None else i,
                position_source="visibility-api" if known is not None else "estimated",
                priority=int(wl.get("spec", {}).get("priority") or 0),
                reason=reserved.get("reason") or "NotYetConsidered",
                message=reserved.get("message") or "Kueue has not tried to admit it yet",
                waits_for=waits_for(reserved.get("message") or "Kueue has not tried to admit it yet", plan),
                since=queue_timestamp(wl)))
    return out


def read(plan: Plan, kubeconfig: Path | None) -> tuple[list[Pending], str]:
    """(pending workloads, where the positions came from) from the cluster; PendingUnavailable if the API
    server cannot be read."""
    res = _kubectl(kubeconfig, "get", "workloads.kueue.x-k8s.io", "--all-namespaces", "-o", "json")
    if res.returncode != 0:
        raise PendingUnavailable((res.stderr.strip() or res.stdout.strip())[:300])
    workloads = json.loads(res.stdout).get("items") or []
    positions: dict[tuple[str, str], int] = {}
    served = True
    for team in plan.teams:
        vis = _kubectl(kubeconfig, "get", "--raw", VISIBILITY.format(cq=team.cluster_queue))
        if vis.returncode != 0:
            served = False
            break
        for item in json.loads(vis.stdout).get("items") or []:
            positions[(item["metadata"]["namespace"], item["metadata"]["name"])] = int(item["positionInClusterQueue"])
    source = ("Kueue's visibility API" if served else
              "estimated from the Workloads (Kueue's visibility API is not served: VisibilityOnDemand off)")
    return pending_from(workloads, plan, positions if served else None), source
