"""Node failures in a what-if replay: when GPU nodes fail, which node, and for how long (docs/what-if.md,
"Node failures").

Two sources, checked before anything starts, like a trace:

- a rate per node-hour (`--node-failure-rate`): on every pool, a Poisson process at the rate times the
  pool's nodes (capacity.max), drawn from `--failure-seed` with a stream of its own per pool, so the same
  seed gives the same times whatever the other pools are, and a config with spare nodes gets the same
  failures as one without;
- a schedule (`--failures FILE`): one failure a line, CSV with a header or JSON Lines like a trace:

      at      when the node fails, seconds after the trace starts or a duration (90s, 10m, 2h)
      pool    a pool of the stack
      node    optional: a node of the pool (<pool>-<index>, index below capacity.max)
      repair  optional: how long it stays down (default --repair-time)

Which node a failure strikes, when the schedule does not say, is decided at its time on the live cluster
(`pick`): a node of the pool running a trace job's pod if there is one, else any node still up. The public
figures are counted on busy clusters (Llama 3's interruptions during one training run on all its GPUs), and
a failure on an idle node costs only capacity; this charges every failure the rate gives to work when there
is work to charge it to, the pessimistic reading of a rate measured under load.

Rates to start from (per node-hour; cite the source next to any other you use):
- Meta, "The Llama 3 Herd of Models" (arXiv:2407.21783, section 3.3.4 and Table 5): 419 unexpected
  interruptions in a 54-day snapshot of pre-training on 16,384 H100 GPUs (2,048 nodes of 8), about 78% of
  them confirmed or suspected hardware: 419 / (2,048 x 54 x 24) = 1.58e-4 per node-hour, one failure every
  3.1 hours on the whole cluster, one every 6,335 hours per node (LLAMA3_RATE).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from gpu_platform.errors import InputError
from gpu_platform.nodes import node_name
from gpu_platform.plan import Plan, PoolPlan

from .trace import TraceError, rows, seconds

FIELDS = ("at", "pool", "node", "repair")
REQUIRED = ("at", "pool")

# Llama 3's pre-training (module docstring): interruptions per node-hour.
LLAMA3_INTERRUPTIONS = 419
LLAMA3_NODES = 16_384 // 8
LLAMA3_HOURS = 54 * 24
LLAMA3_RATE = LLAMA3_INTERRUPTIONS / (LLAMA3_NODES * LLAMA3_HOURS)
# A rate above one failure per node every hour describes no cluster that could run a job (6,000 times
# Llama 3's); as a what-if it only replays the repair loop.
MAX_RATE = 1.0
# How long a failed node is gone by default: EKS node auto repair acts on a GPU fault
# (AcceleratedHardwareReady False) after 10 minutes, rebooting or replacing the node (EKS user guide,
# node-repair.html, "Repair after 10m"; docs/node-pools.md "When a node fails"). The reboot or the
# replacement's boot and join come on top: give --repair-time more where they matter.
DEFAULT_REPAIR_S = 600.0
MAX_SPARE_NODES = 16


@dataclass(frozen=True, slots=True)
class NodeFailure:
    """A failure to inject: at trace second `at`, on `pool` (on `node` when named), down for `repair_s`."""
    at: float
    pool: str
    repair_s: float
    node: str | None = None
    line: int | None = None   # its line in a schedule file


@dataclass
class Injected:
    """What a failure did in the replay, in trace seconds: the node it struck (None: every node of the pool
    was down already), when it came back (None: not within the horizon), and the trace jobs whose pods were
    on it, with the units they held there."""
    failure: NodeFailure
    at: float
    node: str | None
    repaired: float | None = None
    hits: list[tuple[int, int]] = field(default_factory=list)   # (job index, units on the node)


def check_rate(rate: float) -> float:
    if not (isinstance(rate, (int, float)) and math.isfinite(rate) and 0 < rate <= MAX_RATE):
        raise InputError(f"--node-failure-rate {rate!r}: failures per node-hour must be > 0 and at most {MAX_RATE:g} "
                         f"(Llama 3's pre-training: {LLAMA3_RATE:.3g})")
    return float(rate)


def check_repair(value: str | float) -> float:
    try:
        s = seconds(value)
    except ValueError:
        s = -1.0
    if not (math.isfinite(s) and s > 0):
        raise InputError(f"--repair-time {value!r}: a duration > 0 (seconds, or 90s, 10m, 2h)")
    return s


def check_spares(count: int) -> int:
    if not 1 <= count <= MAX_SPARE_NODES:
        raise InputError(f"--spare-nodes {count}: spare nodes per pool must be 1..{MAX_SPARE_NODES}")
    return count


def pool_nodes(pool: PoolPlan, spares: int = 0) -> list[str]:
    """The pool's simulated nodes (gpu_platform.nodes: capacity.max of them), then its spares."""
    return [node_name(pool, i) for i in range(pool.max_nodes + spares)]


def schedule(plan: Plan, rate: float, horizon_s: float, seed: int, repair_s: float) -> list[NodeFailure]:
    """Failures at `rate` per node-hour over [0, horizon_s), every pool, sorted by time: exponential gaps at
    the rate times the pool's nodes, from a random stream per pool and seed."""
    out: list[NodeFailure] = []
    for pool in plan.pools:
        rng = random.Random(f"{seed}/{pool.name}")
        per_second = rate * pool.max_nodes / 3600
        t = rng.expovariate(per_second)
        while t < horizon_s:
            out.append(NodeFailure(round(t, 3), pool.name, repair_s))
            t += rng.expovariate(per_second)
    return sorted(out, key=lambda f: (f.at, f.pool))


def parse(text: str, plan: Plan, repair_s: float, source: str = "failures") -> list[NodeFailure]:
    """Every failure of a schedule, sorted by time; TraceError with every problem (line, field, what is
    valid) otherwise."""
    pools = plan.pools_by_name
    out: list[NodeFailure] = []
    problems: list[str] = []
    for line, raw in rows(text, FIELDS, REQUIRED):
        where = f"line {line}"
        if "__error__" in raw:
            problems.append(f"{where}: {raw['__error__']}")
            continue
        unknown = sorted(set(raw) - set(FIELDS))
        missing = [f for f in REQUIRED if f not in raw]
        if unknown or missing:
            problems.append(f"{where}: " + (f"unknown field(s) {', '.join(unknown)}; fields: {', '.join(FIELDS)}"
                                            if unknown else f"missing {', '.join(missing)}"))
            continue
        try:
            at = seconds(raw["at"])
        except ValueError as err:
            problems.append(f"{where}: at: {err}")
            continue
        if at < 0:
            problems.append(f"{where}: at {at:g} is negative")
            continue
        pool = pools.get(str(raw["pool"]))
        if pool is None:
            problems.append(f"{where}: pool {raw['pool']!r} is not a pool of the stack; pools: {', '.join(pools)}")
            continue
        node = str(raw["node"]) if raw.get("node") else None
        if node is not None and node not in pool_nodes(pool):
            problems.append(f"{where}: node {node!r} is not a node of pool {pool.name!r}; its nodes: "
                            f"{', '.join(pool_nodes(pool))}")
            continue
        repair = repair_s
        if raw.get("repair") not in (None, ""):
            try:
                repair = seconds(raw["repair"])
            except ValueError as err:
                problems.append(f"{where}: repair: {err}")
                continue
            if repair <= 0:
                problems.append(f"{where}: repair {repair:g} must be positive")
                continue
        out.append(NodeFailure(at, pool.name, repair, node, line))
    if problems:
        raise TraceError(source, problems)
    return sorted(out, key=lambda f: (f.at, f.line or 0))


def load(path: Path, plan: Plan, repair_s: float) -> list[NodeFailure]:
    try:
        text = path.read_text()
    except OSError as err:
        raise TraceError(str(path), [f"cannot read: {err.strerror}"]) from None
    return parse(text, plan, repair_s, str(path))


def pick(failure: NodeFailure, index: int, seed: int, up: Iterable[str], busy: Iterable[str]) -> str | None:
    """The node a failure strikes: the one it names if still up; else a node of `busy` (up and running a
    trace job's pod), else of `up`, chosen by a random stream of its own (seed, pool, the failure's index
    in the schedule); None when every node of the pool is down already."""
    up = sorted(set(up))
    if failure.node is not None:
        return failure.node if failure.node in up else None
    candidates = sorted(set(busy) & set(up)) or up
    if not candidates:
        return None
    return random.Random(f"{seed}/{failure.pool}/{index}").choice(candidates)
