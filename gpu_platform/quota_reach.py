"""The most a team can ever hold on a pool: what Kueue could admit it for with its whole cohort tree idle.

Kueue refuses for good a workload whose request on a flavor is above its ClusterQueue's potential
available quota: the flavor assigner marks it `ExceedsMaxQuota` ("... > maximum capacity") and it stays
pending however idle the cluster is (kubernetes-sigs/kueue v0.19.2 pkg/scheduler/flavorassigner/
flavorassigner.go, fitsResourceQuota; PotentialAvailable in pkg/cache/scheduler/clusterqueue_snapshot.go).
Everything that promises a team capacity (the job template, the trace check, the namespace ResourceQuota,
`plan`'s output, the policy pack) reads this one number, computed as Kueue computes it
(pkg/cache/scheduler/resource_node.go at v0.19.2):

- Every ClusterQueue and Cohort has, per flavor and resource, a nominal quota and optional borrowing and
  lending limits (createResourceQuotas, pkg/cache/scheduler/resource.go; a Cohort's own
  `spec.resourceGroups` is quota on top of its members', apis/kueue/v1beta2/cohort_types.go).
- Subtree quota: a ClusterQueue's is its nominal quota; a Cohort's is its own nominal plus, for each child,
  the child's subtree quota minus what the child keeps local (updateCohortResourceNode, accumulateFromChild).
- Local quota, what a node keeps from its parent: subtree minus lendingLimit (never below 0) when a
  lendingLimit is set, else nothing (localQuota).
- Potential available: a root's subtree quota; below a parent, local quota plus the parent's potential,
  capped at the node's subtree quota plus its borrowingLimit when one is set (potentialAvailable).
- No cohort: the ClusterQueue is a root, so it holds its nominal quota and nothing more. A `cohortName` or
  `parentName` naming no Cohort object gets an implicit Cohort without quota or parent
  (pkg/cache/hierarchy/manager.go, getOrCreateCohort).

On top of Kueue's number the pool's capacity caps it: quota beyond the nodes that exist admits pods that
never schedule.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Mapping

from .pool_derivations import pool_capacity_units

if TYPE_CHECKING:
    from .spec import Platform

QUEUE = "ClusterQueue"
COHORT = "Cohort"


class CohortCycle(ValueError):
    """Cohort parents that form a cycle: Kueue admits nothing in such a tree (cohort_types.go, parentName)."""


@dataclass(frozen=True, slots=True)
class Limits:
    """One node's quota of one flavor's resource, in whole units; None is unlimited (Kueue's nil)."""

    nominal: int = 0
    borrowing: int | None = None
    lending: int | None = None


@dataclass(frozen=True, slots=True)
class Member:
    """A ClusterQueue (its cohort) or a Cohort (its parent) with its limits on the flavor's resource."""

    parent: str | None
    limits: Limits = Limits()


@dataclass(frozen=True, slots=True)
class Reach:
    """What a queue can ever hold of one flavor's resource, with the figures a refusal has to show."""

    queue: str
    cohort: str | None
    nominal: int
    borrowing: int | None
    # What the rest of the cohort tree can lend it, under every lending and cohort borrowing limit; 0 outside one.
    lendable: int
    capacity: int | None
    units: int
    # Who lends what, in the words of the explanation ("nlp lends 4 of its 8 (lendingLimit 4)").
    lenders: tuple[str, ...] = ()

    @property
    def kueue_units(self) -> int:
        """Kueue's own number, before the pool's capacity: what the cohort lends, within the borrowing limit."""
        return self.nominal + (self.lendable if self.borrowing is None else min(self.borrowing, self.lendable))

    @property
    def limited_by(self) -> str:
        """The bound that decides `units`, so `plan` says what to change to hold more: no cohort, the pool's
        capacity, the team's borrowingLimit, or what the cohort lends."""
        if self.cohort is None:
            return "no cohort"
        if self.capacity is not None and self.units < self.kueue_units:
            return "pool capacity"
        if self.borrowing is not None and self.borrowing <= self.lendable:
            return "borrowingLimit"
        return "cohort lending"

    def arithmetic(self) -> str:
        """The bounds and their minimum, e.g. `min(nominal 8 + borrowingLimit 8 = 16, nominal 8 + 4 lendable
        through cohort 'research' = 12, pool capacity 16) = 12; lenders: nlp lends 4 of its 8 (lendingLimit 4)`."""
        terms: list[str] = []
        if self.cohort is None:
            terms.append(f"nominal {self.nominal} (no cohort: nothing to borrow)")
        else:
            if self.borrowing is not None:
                terms.append(f"nominal {self.nominal} + borrowingLimit {self.borrowing} = {self.nominal + self.borrowing}")
            terms.append(f"nominal {self.nominal} + {self.lendable} lendable through cohort {self.cohort!r} = "
                         f"{self.nominal + self.lendable}")
        if self.capacity is not None:
            terms.append(f"pool capacity {self.capacity}")
        text = f"min({', '.join(terms)}) = {self.units}" if len(terms) > 1 else f"{terms[0]} = {self.units}"
        if self.cohort is not None and self.borrowing is None:
            text += " (no borrowingLimit)"
        if self.cohort is not None:
            text += f"; lenders: {', '.join(self.lenders) if self.lenders else 'nobody in the cohort tree lends any'}"
        return text

    def fits(self, pods: int, per_pod: int, per_pod_max: int) -> list[tuple[int, int]]:
        """Shapes (pods, units per pod) near a refused one that fit: as many pods of the same size as fit,
        then the same pods made smaller. Empty when the team can hold nothing here."""
        out: list[tuple[int, int]] = []
        if self.units // per_pod >= 1:
            out.append((min(pods, self.units // per_pod), per_pod))
        smaller = min(per_pod_max, self.units // pods)
        if smaller >= 1 and (pods, smaller) not in out:
            out.append((pods, smaller))
        return out


class QuotaTree:
    """ClusterQueues and Cohorts with their limits on one flavor's resource: a cohort forest, as Kueue's cache
    holds it. A Cohort named as a parent but not given is an implicit one (no quota, no parent)."""

    def __init__(self, queues: Mapping[str, Member], cohorts: Mapping[str, Member]):
        self.queues = dict(queues)
        self.cohorts = dict(cohorts)
        for m in self.queues.values():
            if m.parent is not None:
                self.cohorts.setdefault(m.parent, Member(None))
        for m in list(self.cohorts.values()):
            if m.parent is not None:
                self.cohorts.setdefault(m.parent, Member(None))
        self._children: dict[str, list[tuple[str, str]]] = {}
        for kind, members in ((COHORT, self.cohorts), (QUEUE, self.queues)):
            for name, m in sorted(members.items()):
                if m.parent is not None:
                    self._children.setdefault(m.parent, []).append((kind, name))
        self._subtree: dict[tuple[str, str], int] = {}
        self._potential: dict[str, int] = {}
        self._phrases: dict[str, list[tuple[str | None, str]]] = {}

    def _member(self, kind: str, name: str) -> Member:
        return (self.queues if kind == QUEUE else self.cohorts)[name]

    def _ancestors(self, cohort: str) -> list[str]:
        """The cohort and its parents up to the root; CohortCycle if they loop."""
        path: list[str] = []
        at: str | None = cohort
        while at is not None:
            if at in path:
                raise CohortCycle(f"cohort parents form a cycle: {' -> '.join([*path[path.index(at):], at])}")
            path.append(at)
            at = self.cohorts[at].parent
        return path

    def subtree(self, kind: str, name: str) -> int:
        """Nominal quota of the node plus what its children lend it (updateCohortResourceNode)."""
        key = (kind, name)
        if key not in self._subtree:
            m = self._member(kind, name)
            total = m.limits.nominal
            if kind == COHORT:
                self._ancestors(name)  # a cycle never recurses forever
                total += sum(self.lent(k, n) for k, n in self._children.get(name, ()))
            self._subtree[key] = total
        return self._subtree[key]

    def local(self, kind: str, name: str) -> int:
        """What the node keeps from its parent: subtree above its lendingLimit (localQuota)."""
        lending = self._member(kind, name).limits.lending
        return 0 if lending is None else max(0, self.subtree(kind, name) - lending)

    def lent(self, kind: str, name: str) -> int:
        """What the node passes up to its parent: its subtree minus its local quota."""
        return self.subtree(kind, name) - self.local(kind, name)

    def _potential_of(self, kind: str, name: str) -> int:
        """potentialAvailable: root -> subtree; else local + the parent's, capped by subtree + borrowingLimit."""
        m = self._member(kind, name)
        if m.parent is None:
            return self.subtree(kind, name)
        if kind == COHORT and name in self._potential:
            return self._potential[name]
        avail = self.local(kind, name) + self._potential_of(COHORT, m.parent)
        if m.limits.borrowing is not None:
            avail = min(avail, self.subtree(kind, name) + m.limits.borrowing)
        if kind == COHORT:
            self._potential[name] = avail
        return avail

    def _tree_lenders(self, root: str) -> list[tuple[str | None, str]]:
        """(the queue it is about, or None for a cohort; phrase) for everyone in a tree who lends or limits lending."""
        if root not in self._phrases:
            out: list[tuple[str | None, str]] = []
            queue_order: list[tuple[str, str]] = [(COHORT, root)]
            while queue_order:
                kind, name = queue_order.pop(0)
                m = self._member(kind, name)
                if kind == QUEUE:
                    lent, nominal, lending = self.lent(kind, name), m.limits.nominal, m.limits.lending
                    if lending is not None:
                        out.append((name, f"{name} lends {lent} of its {nominal} (lendingLimit {lending})"))
                    elif nominal:
                        out.append((name, f"{name} lends all its {nominal}"))
                    continue
                if m.limits.nominal:
                    out.append((None, f"cohort {name!r} holds {m.limits.nominal} of its own"))
                if m.limits.lending is not None and m.parent is not None:
                    out.append((None, f"cohort {name!r} passes on at most {m.limits.lending} (lendingLimit)"))
                queue_order.extend(self._children.get(name, ()))
            self._phrases[root] = out
        return self._phrases[root]

    def _lenders(self, queue: str, cohort: str) -> tuple[str, ...]:
        """Who else in the queue's tree lends what, then the borrowing limits of the cohorts above it."""
        path = self._ancestors(cohort)
        out = [phrase for about, phrase in self._tree_lenders(path[-1]) if about != queue]
        out += [f"cohort {c!r} borrows at most {self.cohorts[c].limits.borrowing} from its parent (borrowingLimit)"
                for c in path[:-1] if self.cohorts[c].limits.borrowing is not None]
        return tuple(out)

    def reach(self, queue: str, capacity: int | None = None) -> Reach:
        """The most `queue` can ever hold, capped at `capacity` units when given (the pool's)."""
        m = self.queues[queue]
        nominal = m.limits.nominal
        if m.parent is None:
            units = nominal if capacity is None else min(nominal, capacity)
            return Reach(queue, None, nominal, m.limits.borrowing, 0, capacity, units)
        self._ancestors(m.parent)  # CohortCycle before any recursion up the tree
        # What the parent could give it, minus what is its own lent upwards: the others' share.
        lendable = self._potential_of(COHORT, m.parent) - self.lent(QUEUE, queue)
        units = self._potential_of(QUEUE, queue)
        if capacity is not None:
            units = min(units, capacity)
        return Reach(queue, m.parent, nominal, m.limits.borrowing, lendable, capacity, units,
                     self._lenders(queue, m.parent))


def reaches_of_spec(spec: Platform) -> dict[tuple[str, str], Reach]:
    """(team, pool) -> Reach for every quota of a validated spec: one tree per pool (its flavor), teams named
    by team (a team is one ClusterQueue), the spec's cohorts (they carry no quota of their own)."""
    cohorts = {c.name: Member(c.parent) for c in spec.cohorts}
    out: dict[tuple[str, str], Reach] = {}
    for pool in spec.pools:
        queues = {t.name: Member(t.cohort, Limits(q.units, q.borrowingLimit, q.lendingLimit))
                  for t in spec.teams for p, q in t.quotas.items() if p == pool.name}
        if not queues:
            continue
        tree = QuotaTree(queues, cohorts)
        capacity = pool_capacity_units(pool)
        for team in queues:
            out[(team, pool.name)] = tree.reach(team, capacity)
    return out


def shapes(fits: Iterable[tuple[int, int]], spell: str = "--nodes {pods} --gpus {units}") -> str:
    """Fitting shapes in a user's words, `--nodes 1 --gpus 8, or --nodes 2 --gpus 6` by default."""
    return ", or ".join(spell.format(pods=p, units=u) for p, u in fits)
