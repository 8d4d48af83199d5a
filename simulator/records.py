"""What a replay records: the Run (its jobs, speed and horizon, and everything measured on the way) and its
records: each Workload event, GPU node sample, scale-up and timed run, in the trace's seconds or the replay's
wall clock as each says. Both replay modes (simulator/replay.py, simulator/direct_workloads.py) fill it in;
the report (simulator/metrics.py) reads only it."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from .failures import Injected, NodeFailure
from .trace import TraceJob


@dataclass(frozen=True, slots=True)
class Event:
    t: float            # trace seconds after the start
    job: int            # index into the trace's jobs
    kind: str           # submitted | admitted | evicted | finished | restarted | started | running
    flavor: str = ""
    units: int = 0
    reason: str = ""


@dataclass(frozen=True, slots=True)
class NodeSample:
    """The GPU nodes up at one moment of the replay (trace seconds): per pool, each node's name and the
    units the trace's pods bound to it hold (0: nothing of the trace on it). Registered nodes and the
    autoscaler's alike: every Node object labelled with a pool."""
    t: float
    pools: dict[str, tuple[tuple[str, int], ...]]


@dataclass(frozen=True, slots=True)
class ScaleUp:
    """A trace job's pod that ran on a node that did not exist when the job was submitted (trace seconds):
    the wait a scale-up adds, from the pod's creation to it Running."""
    job: int
    pool: str
    node: str
    created: float
    running: float

    @property
    def latency(self) -> float:
        return self.running - self.created


@dataclass
class Timing:
    """One run that ended by itself (succeeded or failed), in wall seconds of the replay's clock."""
    job: int
    admitted: float
    finished: float                # Kueue's Finished seen: the quota is back
    compressed_s: float            # what the run should take: the trace's duration / speed
    running: float | None = None   # the job's last pod seen Running
    ended: float | None = None     # the job's last pod seen Succeeded or Failed

    @property
    def overhead_s(self) -> float | None:
        """The simulator's chain around the run: admission to pods Running plus pods' end to release."""
        if self.running is None or self.ended is None:
            return None
        return (self.running - self.admitted) + (self.finished - self.ended)

    @property
    def residual_s(self) -> float:
        """What the replay got wrong: the quota came back this much later than the trace says (wall s)."""
        return self.finished - self.admitted - self.compressed_s


@dataclass
class Run:
    jobs: list[TraceJob]
    speed: float
    horizon: float                       # trace seconds replayed
    events: list[Event] = field(default_factory=list)
    wall_seconds: float = 0.0
    idle_from: float | None = None       # trace seconds: when nothing was left and the replay stopped (None: it
                                         # ran to the horizon; replay.nothing_left)
    started_epoch: float = 0.0           # the Unix time of trace time 0 (a live report's window starts there)
    submit_lag: list[float] = field(default_factory=list)      # wall seconds behind schedule, per job
    handoff: list[float] = field(default_factory=list)         # wall seconds: capacity freed -> next admitted
    admission: list[float] = field(default_factory=list)       # wall seconds: submitted -> admitted, capacity free
    corrected: bool = False              # pods end on time; runs counted for their trace duration
    calibration: list[float] = field(default_factory=list)     # probe overheads on the idle cluster, wall s
    timings: list[Timing] = field(default_factory=list)
    patch_failures: int = 0              # pods whose end time could not be set (they ran duration / speed),
                                         # or objects that could not be deleted at their run's end
    failure_schedule: list[NodeFailure] | None = None   # None: a replay without node failures
    failure_seed: int = 0
    failure_rate: float | None = None    # per node-hour, when the schedule was drawn from one
    failures: list[Injected] = field(default_factory=list)
    spares: dict[str, int] = field(default_factory=dict)   # spare nodes per pool
    toleration_s: float = 0.0            # the pods' toleration of a lost node, in trace seconds
    # The nodes that ran (None: not sampled; the report then assumes every pool at capacity.max throughout),
    # the pods that waited for a node to be added, and the autoscaler's delays (trace seconds, None: not set).
    node_samples: list[NodeSample] | None = None
    scale_ups: list[ScaleUp] = field(default_factory=list)
    scale_up_delay_s: float | None = None
    scale_down_delay_s: float | None = None

    @property
    def added_s(self) -> float:
        """What a real cluster adds to a run, in (trace) seconds: the chain measured on the idle cluster,
        where it is not multiplied by a compressed load; nothing when the replay is not corrected."""
        return statistics.median(self.calibration) if self.corrected and self.calibration else 0.0
