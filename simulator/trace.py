"""Workload traces: one job a line, CSV (with a header) or JSON Lines, checked against a stack's plan.

Fields (README, "What-if simulation", trace format):

    submit    when the job is submitted, seconds after the trace starts (or a duration: 90s, 10m, 2h)
    team      a team of the stack
    pool      a pool the team has quota on
    units     units per pod, in the pool's units (whole GPUs, MIG slices, time-sliced replicas)
    pods      pods, one per node (default 1)
    duration  how long the job runs once started (seconds or a duration), > 0
    priority  a priority the team is granted (optional)
    outcome   succeeded (default) or failed: a failed job's pods fail when its duration is up
    name      a label for the job in reports (optional)
    busy      the fraction of the time its pods keep their GPUs busy, 0..1 (optional; default all the time)
    kind      job (default), jobset, trainjob, rayjob or lws: what is submitted, the `job --kind` template
              (simulator/kinds.py says what finishes each)

A trace is checked whole before anything starts: every problem is reported with its line number and
what would be valid, and a bad trace starts nothing.
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from gpu_platform.jobs import JobError, JobRequest, NeverAdmitted
from gpu_platform.plan import Plan
from gpu_platform.workload_templates import template

from . import kinds

FIELDS = ("submit", "team", "pool", "units", "pods", "duration", "priority", "outcome", "name", "busy", "kind")
OUTCOMES = ("succeeded", "failed")
REQUIRED = ("submit", "team", "pool", "units", "duration")
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
_FACTOR = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, None: 1}


@dataclass(frozen=True, slots=True)
class TraceJob:
    line: int
    submit: float      # seconds after the trace starts
    team: str
    pool: str
    units: int         # per pod
    pods: int
    duration: float    # seconds once started
    priority: str | None = None
    outcome: str = "succeeded"
    name: str | None = None
    busy: float | None = None
    kind: str = "job"

    @property
    def total_units(self) -> int:
        return self.units * self.pods


class TraceError(ValueError):
    """Every problem of a trace, each with its line number."""

    def __init__(self, source: str, problems: list[str]):
        self.problems = problems
        super().__init__(f"{source}: {len(problems)} problem(s):\n" + "\n".join(f"  {p}" for p in problems))


def seconds(value: Any) -> float:
    """Seconds from a number or a duration string (90, 90s, 1.5m, 2h, 1d); ValueError otherwise."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a number of seconds")
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return float(str(value))
    except ValueError:
        pass
    m = _DURATION.match(str(value))
    if not m:
        raise ValueError(f"{value!r} is not a number of seconds or a duration such as 90s, 10m, 2h")
    return float(m.group(1)) * _FACTOR[m.group(2)]


def rows(text: str, fields: tuple[str, ...] = FIELDS,
         required: tuple[str, ...] = REQUIRED) -> Iterable[tuple[int, dict[str, Any]]]:
    """(line number, raw fields) of every content line of a CSV (with a header naming `fields`, the
    `required` ones at least) or JSON Lines text: JSON Lines when the first content line is an object. A
    line that cannot be read comes as {"__error__": why}. Traces and failure schedules share the format."""
    lines = text.splitlines()
    first = next((ln.strip() for ln in lines if ln.strip() and not ln.lstrip().startswith("#")), "")
    if first.startswith("{"):
        for i, ln in enumerate(lines, 1):
            if not ln.strip() or ln.lstrip().startswith("#"):
                continue
            try:
                obj = json.loads(ln)
            except json.JSONDecodeError as err:
                yield i, {"__error__": f"not a JSON object ({err.msg})"}
                continue
            yield i, obj if isinstance(obj, dict) else {"__error__": "not a JSON object"}
        return
    content = [(i, ln) for i, ln in enumerate(lines, 1) if ln.strip() and not ln.lstrip().startswith("#")]
    if not content:
        return
    header_line, header = content[0]
    reader = csv.reader(io.StringIO(header))
    names = [h.strip() for h in next(reader)]
    unknown = [h for h in names if h not in fields]
    missing = [f for f in required if f not in names]
    if unknown or missing:
        yield header_line, {"__error__": (
            (f"unknown column(s) {', '.join(unknown)}; " if unknown else "")
            + (f"missing column(s) {', '.join(missing)}; " if missing else "")
            + f"columns: {', '.join(fields)} (required: {', '.join(required)})")}
        return
    for i, ln in content[1:]:
        values = next(csv.reader(io.StringIO(ln)))
        if len(values) != len(names):
            yield i, {"__error__": f"{len(values)} values for {len(names)} columns"}
            continue
        yield i, {k: v.strip() for k, v in zip(names, values) if v.strip() != ""}


def parse(text: str, plan: Plan, source: str = "trace") -> list[TraceJob]:
    """Every job of a trace, sorted by submit time; TraceError with every problem otherwise."""
    jobs: list[TraceJob] = []
    problems: list[str] = []
    for line, raw in rows(text):
        where = f"line {line}"
        if "__error__" in raw:
            problems.append(f"{where}: {raw['__error__']}")
            continue
        unknown = sorted(set(raw) - set(FIELDS))
        if unknown:
            problems.append(f"{where}: unknown field(s) {', '.join(unknown)}; fields: {', '.join(FIELDS)}")
            continue
        missing = [f for f in REQUIRED if f not in raw]
        if missing:
            problems.append(f"{where}: missing {', '.join(missing)}")
            continue
        try:
            submit = seconds(raw["submit"])
            duration = seconds(raw["duration"])
            units = int(raw["units"])
            pods = int(raw.get("pods", 1))
            busy = float(raw["busy"]) if raw.get("busy") not in (None, "") else None
        except (TypeError, ValueError) as err:
            problems.append(f"{where}: {err}")
            continue
        if submit < 0:
            problems.append(f"{where}: submit {submit:g} is negative")
            continue
        if duration <= 0:
            problems.append(f"{where}: duration {duration:g} must be positive")
            continue
        outcome = str(raw.get("outcome") or "succeeded")
        if outcome not in OUTCOMES:
            problems.append(f"{where}: outcome {outcome!r}; valid: {', '.join(OUTCOMES)}")
            continue
        kind = str(raw.get("kind") or "job")
        problem = kinds.problem(kind, outcome)
        if problem:
            problems.append(f"{where}: {problem}")
            continue
        job = TraceJob(line, submit, str(raw["team"]), str(raw["pool"]), units, pods, duration,
                       str(raw["priority"]) if raw.get("priority") else None, outcome,
                       str(raw["name"]) if raw.get("name") else None, busy, kind)
        problem = _check_against_plan(job, plan)
        if problem:
            problems.append(f"{where}: {problem}")
            continue
        jobs.append(job)
    if problems:
        raise TraceError(source, problems)
    return sorted(jobs, key=lambda j: (j.submit, j.line))


# How a trace line spells a job's shape, for "what fits".
TRACE_SHAPE = "pods {pods} with units {units}"


def _check_against_plan(job: TraceJob, plan: Plan) -> str | None:
    """What the kind's template refuses (unknown team or pool, no quota, more units than a node holds, more than
    the team can ever hold on the pool, an ungranted priority, a kind whose controller or Kueue integration
    the stack lacks, a serving kind off an inference pool), in its words; None when the job could run.

    "Ever hold" is the plan's reach (gpu_platform.quota_reach), what Kueue's cohort tree can really give the
    team under its siblings' lending limits: a job above it would wait forever, so the replay never starts."""
    try:
        template(plan, JobRequest(team=job.team, pool=job.pool, gpus=job.units, nodes=job.pods, priority=job.priority,
                                  kind=job.kind, name="trace-check", gpu_busy=job.busy))
    except NeverAdmitted as err:
        return err.message(TRACE_SHAPE)
    except JobError as err:
        return str(err)
    return None


def load(path: Path, plan: Plan) -> list[TraceJob]:
    try:
        text = path.read_text()
    except OSError as err:
        raise TraceError(str(path), [f"cannot read: {err.strerror}"]) from None
    return parse(text, plan, str(path))


def dump_csv(jobs: Iterable[TraceJob]) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(FIELDS)
    for j in jobs:
        w.writerow([f"{j.submit:.1f}", j.team, j.pool, j.units, j.pods, f"{j.duration:.1f}", j.priority or "", j.outcome,
                    j.name or "", "" if j.busy is None else f"{j.busy:g}", j.kind])
    return out.getvalue()
