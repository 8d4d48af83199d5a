"""Kueue's scheduler performance baseline as data, and the figures Kueue's checker reads, computed from
timestamps. One definition for both paths that replay it: the platform's (bench/scale.py: Jobs through the
tenant policies, Kueue's webhooks, the Job controller, kube-scheduler and KWOK) and bare Kueue's
(bench/bare_kueue.py: Workloads created as Kueue's own runner creates them). A ratio between the two is
only meaningful if both are counted the same way, so neither path computes its own.

The baseline (kubernetes-sigs/kueue v0.19.2 test/performance/scheduler/configs/baseline/generator.yaml):
5 cohorts x 6 ClusterQueues, nominalQuota 20, borrowingLimit 100, reclaimWithinCohort Any, withinClusterQueue
LowerPriority; per ClusterQueue three workload sets, each a generator that sleeps creationIntervalMs and then
creates one workload, `count` times (runner/generator/generator.go generateWlSet). Budgets from rangespec.yaml:
wall 425 s (cmd.maxWallMs), average time to admission large 23 s, medium 90 s, small 260 s
(wlClassesMaxAvgTimeToAdmissionMs).

The figures as Kueue's recorder keeps them (runner/recorder/recorder.go recordWLEvent): time to admission
counts from the first event the recorder saw of the Workload to its last transition to Admitted (a workload
preempted and admitted again counts to the re-admission); the checker compares the per-class average
(checker/checker_test.go). Wall here is from the generators' start to the last workload finished.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

COHORTS = 5
QUEUES_PER_COHORT = 6
NOMINAL = 20
BORROWING_LIMIT = 100
BUDGET_WALL_S = 425.0  # rangespec.yaml cmd.maxWallMs
# The platform path is to stay within this factor of bare Kueue on the same machine, figure by figure.
TARGET_RATIO = 1.5


@dataclass(frozen=True)
class WorkloadClass:
    name: str
    count: int            # per ClusterQueue
    interval_ms: int      # creationIntervalMs: the generator sleeps this long before each creation
    runtime_ms: int
    units: int            # request (Kueue's runner asks for cpu; the platform's replay, the pool's units)
    priority: str         # the platform's priority of the same rank as Kueue's (development / research / training)
    kueue_priority: int   # the Workload's spec.priority in Kueue's generator
    budget_avg_s: float   # rangespec.yaml wlClassesMaxAvgTimeToAdmissionMs


CLASSES = (
    WorkloadClass("small", 350, 100, 200, 1, "development", 50, 260.0),
    WorkloadClass("medium", 100, 500, 500, 5, "research", 100, 90.0),
    WorkloadClass("large", 50, 1200, 1000, 20, "training", 200, 23.0),
)


def counts_at(fraction: float) -> dict[str, int]:
    """Workloads per ClusterQueue and class at a fraction of the baseline: at least one of each, so the class
    mix stays whole (Python's round: half to even, 0.5 -> 0 -> 1)."""
    return {c.name: max(1, round(c.count * fraction)) for c in CLASSES}


def expected_at(fraction: float) -> int:
    return sum(counts_at(fraction).values()) * COHORTS * QUEUES_PER_COHORT


def creation_offsets(c: WorkloadClass, count: int) -> list[float]:
    """When one generator's creations are due, in seconds after it starts, if a create took no time: the
    generator sleeps before each one, so the first is one interval in (a create's latency delays the rest)."""
    return [round((i + 1) * c.interval_ms / 1000, 3) for i in range(count)]


@dataclass
class Record:
    cls: str
    created: float | None = None      # the client's POST returned
    first_seen: float | None = None   # the Workload first seen (Kueue's recorder: its first event)
    admitted: float | None = None     # last transition to Admitted
    finished: float | None = None
    evictions: int = 0


def figures(records: Iterable[Record], start: float, now: float, fraction: float,
            expected: int) -> dict[str, Any]:
    """Kueue's figures over one replay's records (times in seconds on one clock), each beside its budget
    scaled by the fraction. avg_submit_to_admitted_s counts from the create's return instead: the same for a
    bare Workload, and for a Job it adds the Job -> Workload step the user waits through too."""
    recs = list(records)
    wall = max((r.finished for r in recs if r.finished is not None), default=now) - start
    classes: dict[str, Any] = {}
    for c in CLASSES:
        mine = [r for r in recs if r.cls == c.name]
        waits = [r.admitted - r.first_seen for r in mine if r.admitted is not None and r.first_seen is not None]
        user = [r.admitted - r.created for r in mine if r.admitted is not None and r.created is not None]
        budget = c.budget_avg_s * fraction
        avg = sum(waits) / len(waits) if waits else None
        classes[c.name] = {
            "workloads": len(mine), "admitted": len(waits),
            "avg_time_to_admission_s": round(avg, 2) if avg is not None else None,
            "avg_submit_to_admitted_s": round(sum(user) / len(user), 2) if user else None,
            "budget_s": round(budget, 2),
            "ratio_to_budget": round(avg / budget, 2) if avg is not None else None,
        }
    wall_budget = BUDGET_WALL_S * fraction
    return {
        "workloads": len(recs), "expected": expected,
        "finished": sum(r.finished is not None for r in recs),
        "evictions": sum(r.evictions for r in recs),
        "wall_s": round(wall, 1), "wall_budget_s": round(wall_budget, 1),
        "wall_ratio_to_budget": round(wall / wall_budget, 2),
        "classes": classes,
    }


def compare(bare: dict[str, Any], platform: dict[str, Any]) -> list[dict[str, Any]]:
    """Rows of figure, bare Kueue, the platform, platform / bare, and whether the ratio is within
    TARGET_RATIO (None where either side has no value, or bare's is 0)."""
    rows = [("wall, first creation to last finished (s)", bare.get("wall_s"), platform.get("wall_s"))]
    for c in CLASSES:
        b, p = bare["classes"].get(c.name, {}), platform["classes"].get(c.name, {})
        rows.append((f"avg time to admission, {c.name} (s)", b.get("avg_time_to_admission_s"),
                     p.get("avg_time_to_admission_s")))
    for c in CLASSES:
        b, p = bare["classes"].get(c.name, {}), platform["classes"].get(c.name, {})
        rows.append((f"avg submit to admitted, {c.name} (s)", b.get("avg_submit_to_admitted_s"),
                     p.get("avg_submit_to_admitted_s")))
    out = []
    for name, b, p in rows:
        ratio = round(p / b, 2) if b and p is not None else None
        out.append({"figure": name, "bare": b, "platform": p, "ratio": ratio,
                    "within_target": None if ratio is None else ratio <= TARGET_RATIO})
    return out


def format_table(rows: list[dict[str, Any]]) -> str:
    """The comparison as a Markdown table (what docs/performance.md quotes)."""
    def cell(v: Any) -> str:
        return "-" if v is None else f"{v}"

    lines = ["| figure | bare Kueue | platform | platform / bare |", "| --- | --- | --- | --- |"]
    for r in rows:
        ratio = "-" if r["ratio"] is None else f"{r['ratio']}x" + ("" if r["within_target"] else f" (over {TARGET_RATIO}x)")
        lines.append(f"| {r['figure']} | {cell(r['bare'])} | {cell(r['platform'])} | {ratio} |")
    return "\n".join(lines)
