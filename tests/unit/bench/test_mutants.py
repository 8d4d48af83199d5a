"""bench.mutants, the mutation tool's operators and sample, on small literal modules (no tree copied, no test
run): each operator makes the one slip it names, the spots no user sees are never mutated, and one seed draws
one sample. World: pure Python, in-process."""

from __future__ import annotations

from pathlib import Path

from bench.mutants import apply, is_real, mutations, sample

SOURCE = '''\
"""A module docstring: never mutated."""
import logging

log = logging.getLogger(__name__)
LIMIT = 8


def fits(nodes: int = 3) -> bool:
    """Docstring."""
    log.info("checking %s of %s", nodes, LIMIT)
    if not nodes < LIMIT and nodes > 0:
        raise ValueError(f"nodes {nodes + 1} over {LIMIT}")
    return {"pool": "a", "team": "b"}.get("pool") == "a"


def labels(pool, team):
    return place(POOL_LABEL, TEAM_LABEL, strict=True)


class Shape:
    def __repr__(self) -> str:
        return "Shape(" + str(LIMIT - 1) + ")"
'''


def _changes(source: str) -> set[tuple[str, str, str]]:
    return {(m.kind, m.before, m.after) for m in mutations(source, "m.py")}


def test_each_operator_makes_the_slip_it_names() -> None:
    assert _changes(SOURCE) == {
        ("off by one", "8", "7"),
        ("off by one", "3", "2"),  # a default value is behaviour
        ("flip comparison", "nodes < LIMIT", "nodes <= LIMIT"),
        ("flip comparison", "nodes > 0", "nodes >= 0"),
        ("off by one", "0", "1"),
        ("and/or", "not nodes < LIMIT and nodes > 0", "not nodes < LIMIT or nodes > 0"),
        ("drop not", "not nodes < LIMIT", "nodes < LIMIT"),
        ("return None", 'return {"pool": "a", "team": "b"}.get("pool") == "a"', "return None"),
        ("flip comparison", '{"pool": "a", "team": "b"}.get("pool") == "a"', "{'pool': 'a', 'team': 'b'}.get('pool') != 'a'"),
        ("drop dict key", '{"pool": "a", "team": "b"}', "{'team': 'b'}"),
        ("drop dict key", '{"pool": "a", "team": "b"}', "{'pool': 'a'}"),
        ("swap labels", '{"pool": "a", "team": "b"}', "{'pool': 'b', 'team': 'a'}"),
        ("return None", "return place(POOL_LABEL, TEAM_LABEL, strict=True)", "return None"),
        ("swap arguments", "place(POOL_LABEL, TEAM_LABEL, strict=True)", "place(TEAM_LABEL, POOL_LABEL, strict=True)"),
        ("drop keyword", "place(POOL_LABEL, TEAM_LABEL, strict=True)", "place(POOL_LABEL, TEAM_LABEL)"),
        ("flip boolean", "True", "False"),
    }


def test_text_a_user_never_acts_on_is_never_mutated() -> None:
    """The docstrings, the log call, the f-string message, the annotations and __repr__ hold mutable spots
    (`nodes + 1`, `LIMIT - 1`, the log's arguments), none of which is drawn; documentation keywords are never
    dropped; two pieces of prose are never swapped."""
    lines = {m.line for m in mutations(SOURCE, "m.py")}
    assert lines == {5, 8, 11, 13, 17}
    source = 'from pydantic import Field\nX = Field(default=2, description="two", title="t", ge=1)\n'
    assert _changes(source) == {
        ("off by one", "2", "1"), ("off by one", "1", "2"),
        ("drop keyword", 'Field(default=2, description="two", title="t", ge=1)', "Field(description='two', title='t', ge=1)"),
        ("drop keyword", 'Field(default=2, description="two", title="t", ge=1)', "Field(default=2, description='two', title='t')"),
    }
    assert _changes('Panel("GPU hours", "Hours of GPUs by team.", "gpu-hours")\n') == {
        ("swap arguments", 'Panel("GPU hours", "Hours of GPUs by team.", "gpu-hours")',
         "Panel('GPU hours', 'gpu-hours', 'Hours of GPUs by team.')"),
    }


def test_a_multi_line_statement_is_replaced_whole_and_still_compiles() -> None:
    source = "def f(a):\n    return (\n        a + 1\n    )\n"
    m = next(m for m in mutations(source, "m.py") if m.kind == "return None")
    assert apply(source, m) == "def f(a):\n    return None\n"
    plus = next(m for m in mutations(source, "m.py") if m.kind == "+/-")
    assert apply(source, plus) == "def f(a):\n    return (\n        a - 1\n    )\n"


def test_two_drops_at_one_call_are_told_apart_by_what_they_drop() -> None:
    source = "x = f(a=1, b=2)\n"
    assert sorted(m.describe() for m in mutations(source, "m.py") if m.kind == "drop keyword") == [
        "m.py:1 drop keyword `a`: f(a=1, b=2)  ->  f(b=2)",
        "m.py:1 drop keyword `b`: f(a=1, b=2)  ->  f(a=1)",
    ]


def test_a_change_the_parser_cannot_tell_apart_is_no_mutant() -> None:
    source = "x = {'a': 1, 'b': 1}\n"
    swapped = [m for m in mutations(source, "m.py") if m.kind == "swap labels"]
    assert swapped == []  # two equal values: nothing to swap
    dropped = next(m for m in mutations(source, "m.py") if m.kind == "drop dict key")
    assert is_real(source, dropped)


def test_one_seed_draws_one_sample_and_another_seed_another(tmp_path: Path) -> None:
    for name in ("a", "b"):
        (tmp_path / "pkg").mkdir(exist_ok=True)
        (tmp_path / "pkg" / f"{name}.py").write_text(SOURCE)
    first = sample(tmp_path, ["pkg/*.py"], seed=1, n=10)
    assert len(first) == 10
    assert sample(tmp_path, ["pkg/*.py"], seed=1, n=10) == first
    assert sample(tmp_path, ["pkg/*.py"], seed=2, n=10) != first
    assert {m.file for m in sample(tmp_path, ["pkg/*.py"], seed=1, n=30)} == {"pkg/a.py", "pkg/b.py"}
