"""Submitting a trace job: its name, its objects (its kind's job template, with the run time, outcome and
lost-node toleration compressed by the speed), creating them, and waiting until it is due on the compressed
schedule. Both replay modes submit through here."""

from __future__ import annotations

import time
from typing import Any, Callable

from gpu_platform.jobs import NODE_LOST_TOLERATION_SECONDS, JobRequest
from gpu_platform.plan import Plan
from gpu_platform.workload_templates import template
from localcluster.api import Client, path_of

from . import kinds
from .records import Run
from .trace import TraceJob

NAME_PREFIX = "j"
# The probe jobs' names (calibration, simulator/replay.py): apart from trace jobs' (NAME_PREFIX), so nothing of
# theirs reaches the report's events.
PROBE_PREFIX = "sim-probe-"


def job_name(index: int) -> str:
    return f"{NAME_PREFIX}{index:05d}"


def index_of(name: str) -> int | None:
    """A trace job's index (>= 0), a probe's (-1, -2, ...), or None for anything else."""
    if name.startswith(NAME_PREFIX) and name[len(NAME_PREFIX):].isdigit():
        return int(name[len(NAME_PREFIX):])
    if name.startswith(PROBE_PREFIX) and name[len(PROBE_PREFIX):].isdigit():
        return -1 - int(name[len(PROBE_PREFIX):])
    return None


def lost_node_toleration_s(speed: float) -> int:
    """The template's toleration of a lost node (jobs.NODE_LOST_TOLERATION_SECONDS), compressed like every
    other time of the replay: whole seconds (the API's unit), at least one."""
    return max(1, round(NODE_LOST_TOLERATION_SECONDS / speed))


def objects_for(plan: Plan, j: TraceJob, index: int, speed: float, name: str | None = None) -> list[dict[str, Any]]:
    """The job exactly as `python -m platform_cli job --kind <kind>` prints it, with the compressed run time
    and outcome (simulator/kinds.py: where each kind keeps its pods, and what ends it). (A corrected replay
    gives each pod an end time instead; the run time stays as the fallback, never sooner than that end.)
    The toleration of a lost node is compressed too. Finished objects are kept for the report until
    teardown: the longest TTL admission allows (tenant-job-cleanup refuses one without), far beyond any
    replay."""
    name = name or job_name(index)
    objs = template(plan, JobRequest(team=j.team, pool=j.pool, gpus=j.units, nodes=j.pods, priority=j.priority,
                                     duration=f"{max(1, round(j.duration))}s", name=name, kind=j.kind,
                                     gpu_busy=j.busy))
    return kinds.prepare(objs, j.kind, name, compressed_duration(j, speed), j.outcome, lost_node_toleration_s(speed),
                         plan.job_max_ttl_seconds)


def create(client: Client, objs: list[dict[str, Any]]) -> list[str]:
    """Create a template's objects, what they depend on first (the Service before its Job); their paths."""
    paths = []
    for obj in reversed(objs):
        collection = path_of(obj, kinds.PLURALS[obj["kind"]])
        client.create(collection, obj)
        paths.append(f"{collection}/{obj['metadata']['name']}")
    return paths


def compressed_duration(j: TraceJob, speed: float) -> str:
    """The job's compressed run as KWOK's duration annotation takes it: counted from when the pod runs."""
    return f"{max(1, round(1000 * j.duration / speed))}ms"


def wait_until_due(run: Run, j: TraceJob, speed: float, clock: Callable[[], float]) -> None:
    """Sleep until J is due on the compressed schedule (both modes' submitters); when it is late already (a
    burst of arrivals, a slow API server), the lag is kept: the run's submit_lag says how far the schedule slid."""
    wait = j.submit / speed - clock()
    if wait > 0:
        time.sleep(wait)
    run.submit_lag.append(max(0.0, -wait))
