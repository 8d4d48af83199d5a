"""bench.mutation --only: a rerun takes the earlier run's survivors by their place in the seed's sample, from
results that carry it or, written before they did, by their descriptions in order, and keeps the earlier
verdicts of the rest for the figure. World: a two-module tree in a temporary directory, no tests run."""

from __future__ import annotations

from pathlib import Path

from bench.mutants import sample
from bench.mutation import earlier_verdicts, survivors_of

SOURCE = "def f(n):\n    return {'a': n + 1, 'b': n > 2, 'c': not n}\n"


def test_a_rerun_takes_the_survivors_and_keeps_the_other_verdicts(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(SOURCE)
    mutants = list(enumerate(sample(tmp_path, ["m.py"], seed=3, n=6)))
    statuses = ["KILLED", "SURVIVED", "KILLED", "SURVIVED", "EQUIVALENT", "KILLED"]
    indexed = [{"mutant": m.describe(), "status": s, "by": "", "seconds": 1.0, "index": i}
               for (i, m), s in zip(mutants, statuses)]
    # an older run: no index, the description without what a drop took, and its last mutant still running
    legacy = [{"mutant": m.legacy(), "status": s, "by": "", "seconds": 1.0} for (_, m), s in zip(mutants, statuses)][:5]
    for earlier in (indexed, legacy):
        assert [i for i, _ in survivors_of(mutants, earlier)] == [1, 3]
        assert [(r.index, r.status) for r in earlier_verdicts(mutants, earlier)] == (
            [(0, "KILLED"), (2, "KILLED"), (4, "EQUIVALENT"), (5, "KILLED")][: 4 if earlier is indexed else 3])
