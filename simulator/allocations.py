"""Each admission of a replay as an interval of allocation (trace seconds): its team, flavor and units, from
its admission to its finish, eviction, restart in place or the horizon, and how it ended. Every figure of the
report (simulator/metrics.py and the sections beside it) is computed from these intervals."""

from __future__ import annotations

from dataclasses import dataclass

from .records import Run


@dataclass(frozen=True, slots=True)
class Interval:
    job: int
    team: str
    flavor: str
    units: int
    start: float
    end: float
    ended: str          # finished | failed | evicted | interrupted (started over in place) | running

    @property
    def unit_seconds(self) -> float:
        return self.units * max(0.0, self.end - self.start)


def intervals(run: Run, held: bool = False) -> list[Interval]:
    """Each admission's allocation, in trace seconds. `held`: as the replay held the quota (admission to
    release times the speed); otherwise, in a corrected run, a run that ended by itself lasts its trace
    duration plus what a real cluster adds."""
    out: list[Interval] = []
    open_: dict[int, tuple[float, str, int]] = {}
    late: dict[int, float] = {}   # job -> when its pods all ran, the admission's run waiting for a node
    for e in run.events:
        if e.kind == "admitted":
            open_[e.job] = (e.t, e.flavor, e.units)
            late.pop(e.job, None)
        elif e.kind == "restarted" and e.job in open_:
            # A lost pod replaced while the job stayed admitted: the run so far is lost, a new one starts.
            start, flavor, units = open_.pop(e.job)
            out.append(Interval(e.job, run.jobs[e.job].team, flavor, units, start, min(e.t, run.horizon), "interrupted"))
            open_[e.job] = (e.t, flavor, units)
            late.pop(e.job, None)
        elif e.kind == "started" and e.job in open_:
            late[e.job] = e.t
        elif e.kind in ("evicted", "finished") and e.job in open_:
            start, flavor, units = open_.pop(e.job)
            ended = "evicted" if e.kind == "evicted" else ("failed" if e.reason == "Failed" else "finished")
            end = e.t
            if run.corrected and not held and ended != "evicted":
                end = max(start, late.get(e.job, start)) + run.jobs[e.job].duration + run.added_s
            late.pop(e.job, None)
            out.append(Interval(e.job, run.jobs[e.job].team, flavor, units, start, min(end, run.horizon), ended))
    for job, (start, flavor, units) in open_.items():
        out.append(Interval(job, run.jobs[job].team, flavor, units, start, run.horizon, "running"))
    return [iv for iv in out if iv.start < run.horizon]


def node_waits(run: Run) -> list[Interval]:
    """The part of each admission spent with quota held while its pods waited for a node (Pending,
    Unschedulable: no node had room, although the quota had), from the admission to the "started" event when
    they all ran, in trace seconds. Kueue counts quota, not free nodes (without topology-aware scheduling), so
    an admission can wait here on a fragmented pool; its allocation (intervals) includes this wait."""
    out: list[Interval] = []
    open_: dict[int, tuple[float, str, int]] = {}
    for e in run.events:
        if e.kind == "admitted":
            open_[e.job] = (e.t, e.flavor, e.units)
        elif e.kind == "restarted" and e.job in open_:   # a new run in place: a wait after it counts from it
            open_[e.job] = (e.t, *open_[e.job][1:])
        elif e.kind == "started" and e.job in open_:
            start, flavor, units = open_[e.job]
            out.append(Interval(e.job, run.jobs[e.job].team, flavor, units, start, min(e.t, run.horizon), "waiting"))
        elif e.kind in ("evicted", "finished"):
            open_.pop(e.job, None)
    return [iv for iv in out if iv.start < run.horizon]
