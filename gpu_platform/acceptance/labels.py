"""Step 6: the job's series in Prometheus (GPU, network, storage and queue), and whether each is attributed to the
job's team, pool, queue and cost center the way the platform attributes series: by a label on the series itself,
or through an info series of the platform's rules (a pod's team and queue labels, a node's pool, a namespace's or a
ClusterQueue's team, a flavor's pool) joined on the series' own labels, as the rules, the dashboards and the report
join them (`* on (pod, namespace) group_left (...) gpu_platform:pod_attribution:info`).

The runner (platform_cli/acceptance_labels.py) reads each family's series of the job and the info series with
instant queries of Prometheus' HTTP API, whose answer is {"status": "success", "data": {"resultType": "vector",
"result": [{"metric": {"<label>": "<value>", ...}, "value": [<unix time>, "<sample value>"]}, ...]}}
(prometheus/prometheus v3.16.0, module v0.316.0, docs/querying/api.md, "Instant queries" and "Instant vectors"); a
Series here is one result's `metric`. Pure: the verdict is tested with literal series.

Why every series of a family and not one: a family half attributed (one pod's series joined, another's not, or one
node's) leaves part of the job's figures out of the team's and the pool's totals, which is what the step exists to
rule out. Why a value is checked and not only the label's presence: a series attributed to another team is
attributed wrongly, which the usage and cost reports would add to that team.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from .results import Figure, StepResult

Series = Mapping[str, str]
# The families of the job's series, in the guide's words' order.
FAMILIES: tuple[str, ...] = ("gpu", "network", "storage", "queue")
# The labels of a series a message names it by (what tells one series of a family from another).
IDENTIFYING: tuple[str, ...] = ("namespace", "pod", "container", "node", "interface", "device", "gpu", "cluster_queue",
                                "flavor", "resource")


@dataclass(frozen=True, slots=True)
class Dimension:
    """One thing every series of the job must be attributed to (`key`), and the job's value of it under each label
    name that carries it: the queue is the LocalQueue on a pod's series, the ClusterQueue on Kueue's."""

    key: str
    expected: Mapping[str, str]

    def text(self) -> str:
        values = sorted(set(self.expected.values()))
        if len(values) == 1:
            return f"{self.key} {values[0]!r}"
        return f"{self.key} " + " or ".join(f"{v!r} ({n})" for n, v in self.expected.items())


@dataclass(frozen=True, slots=True)
class Join:
    """An info series of the platform's rules (`name`, the series read), which gives a series carrying the labels
    `on` every other label it has: PromQL's `* on (ON) group_left (...) NAME`."""

    name: str
    on: tuple[str, ...]
    series: tuple[Series, ...] = ()

    def labels_for(self, s: Series) -> dict[str, str]:
        if any(not s.get(k) for k in self.on):
            return {}
        for info in self.series:
            if all(info.get(k) == s.get(k) for k in self.on):
                return {k: v for k, v in info.items() if k not in self.on and not k.startswith("__")}
        return {}


@dataclass(frozen=True, slots=True)
class Family:
    """One family of the job's series: its key (FAMILIES), the metric names read, what selected the job's series
    (for a message: "of pods acceptance-1a2b3c-* in namespace zeta"), each series found with its metric name, and
    the pods each of which must have one (a pod without GPU series is GPU time nobody is charged for)."""

    key: str
    metrics: tuple[str, ...]
    where: str
    series: tuple[tuple[str, Series], ...] = ()
    every_pod: tuple[str, ...] = ()
    # A family read from the same source whose series of the job prove that source reports the job, so this one
    # having none means the job did nothing of its kind (cAdvisor gives block I/O series only for a device a pod
    # read or wrote; the job's network series come from the same scrape): not exercised, rather than not exported.
    same_source_as: str | None = None


def attribution(s: Series, joins: Sequence[Join]) -> dict[str, str]:
    """The series' labels and what the joins give it; its own label wins over a joined one of the same name."""
    out = {k: v for k, v in s.items() if not k.startswith("__")}
    for j in joins:
        for k, v in j.labels_for(s).items():
            out.setdefault(k, v)
    return out


def misattributed(d: Dimension, labels: Mapping[str, str]) -> str | None:
    """None when LABELS attribute the series to the job's value of D (every label of D there has it, and one is
    there); "" when no label of D is there; else the other values seen (a series whose pod label says one team and
    whose namespace another is counted under both)."""
    other = {n: labels[n] for n, v in d.expected.items() if n in labels and labels[n] != v}
    if other:
        return ", ".join(f"{n}={v!r}" for n, v in other.items())
    return None if any(n in labels for n in d.expected) else ""


def series_text(name: str, s: Series) -> str:
    shown = ", ".join(f'{k}="{s[k]}"' for k in IDENTIFYING if s.get(k))
    return f"{name}{{{shown}}}"


def family_problems(f: Family, joins: Sequence[Join], dims: Sequence[Dimension]) -> list[str]:
    """What keeps the family from being attributed: no series, or per dimension the series without it or with
    another value (how many, and the first as an example)."""
    if not f.series:
        return [f"{f.key}: no {' or '.join(f.metrics)} series {f.where}"]
    out = []
    missing = sorted(set(f.every_pod) - {s.get("pod", "") for _, s in f.series})
    if missing:
        out.append(f"{f.key}: no series of pod {', '.join(missing)} (of the {len(f.every_pod)} that ran to the end)")
    for d in dims:
        bad = [(name, s, why) for name, s in f.series if (why := misattributed(d, attribution(s, joins))) is not None]
        if not bad:
            continue
        name, s, why = bad[0]
        count = f"{len(bad)} of {len(f.series)} series"
        if why:
            out.append(f"{f.key}: {count} attributed to another {d.key} ({why}), e.g. {series_text(name, s)}")
        else:
            out.append(f"{f.key}: {count} carry no {d.key} ({' or '.join(d.expected)}), e.g. {series_text(name, s)}")
    return out


def expectation(dims: Sequence[Dimension], joins: Sequence[Join]) -> str:
    return (f"{', '.join(FAMILIES[:-1])} and {FAMILIES[-1]} series of the job, every one attributed to "
            f"{', '.join(d.text() for d in dims)}, on the series or through "
            f"{', '.join(j.name for j in joins) or 'no info series'}")


def not_exercised(families: Sequence[Family]) -> list[Family]:
    """The families without series of the job whose source reports the job (`same_source_as` has series)."""
    by_key = {f.key: f for f in families}
    return [f for f in families if not f.series and f.same_source_as and by_key[f.same_source_as].series]


def evaluate_labels(families: Sequence[Family], joins: Sequence[Join], dims: Sequence[Dimension]) -> StepResult:
    """Step 6's verdict: passed when every family has series of the job (or is not exercised by it, its source
    reporting the job) and every series is attributed to the job's value of every dimension; failed naming each
    family and dimension that is not."""
    keys = [f.key for f in families]
    if keys != list(FAMILIES):
        raise ValueError(f"step 6 judges the families {', '.join(FAMILIES)}, in that order; got {keys}")
    figures = [Figure(f"{f.key}_series", len(f.series)) for f in families]
    found = sorted({name for f in families for name, _ in f.series})
    idle = not_exercised(families)
    figures.append(Figure("metrics", ", ".join(found) or None))
    figures.append(Figure("not_exercised", ", ".join(f"{f.key} (no series of the job; its {f.same_source_as} "
                                                       "series are there)" for f in idle) or None))
    problems = [p for f in families if f not in idle for p in family_problems(f, joins, dims)]
    if problems:
        return StepResult.failed(6, expectation(dims, joins), "; ".join(problems), *figures)
    return StepResult.passed(6, *figures, expected=expectation(dims, joins))
