"""tests/cel.py's evaluator (cel-python's, with the shortcuts described there) gives cel-python's own results:
every construct of the grammar, every macro the policies use, errors and short-circuits included."""

from __future__ import annotations

from typing import Any

import celpy
import pytest

from tests import cel

OBJECT = {"metadata": {"name": "train", "labels": {"a": "1"}, "ownerReferences": [{"kind": "Job"}]},
          "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "2"}}},
                                  {"name": "d", "resources": {}}],
                   "replicas": 3, "ratio": 0.5, "ok": True, "tags": ["x", "y"]}}

# (expression, its value under cel-python 0.5.0's own evaluator, written out: None for an error).
CASES: list[tuple[str, Any]] = [
    ("1 + 2 * 3 - 4 / 2 % 3", 5),
    ("-object.spec.replicas", -3),
    ("!object.spec.ok", False),
    ("object.spec.replicas > 2 && object.spec.replicas <= 3", True),
    ("object.spec.replicas == 3 || 1 / 0 == 1", True),  # short-circuit past an error
    ("1 / 0 == 1 || object.spec.replicas == 3", True),  # CEL's commutative ||
    ("false && 1 / 0 == 1", False),
    ("1 / 0 == 1 && true", None),
    ("object.spec.replicas != 3 ? 'a' : 'b'", "b"),
    ("'x' in object.spec.tags && !('z' in object.spec.tags)", True),
    ("object.spec.ratio * 2.0", 1.0),
    ("object.metadata.labels['a'] + '-' + object.metadata.name", "1-train"),
    ("object.spec.containers[0].name", "c"),
    ("object.spec.containers[5].name", None),
    ("object.metadata.missing", None),
    ("has(object.metadata.labels) && !has(object.metadata.annotations)", True),
    ("object.spec.containers.all(c, has(c.resources.limits))", False),
    ("object.spec.containers.exists(c, c.name == 'd')", True),
    ("object.spec.containers.exists_one(c, c.name.startsWith('c'))", True),
    ("object.spec.containers.map(c, c.name)", ["c", "d"]),
    ("object.spec.containers.filter(c, has(c.resources.limits)).map(c, c.name)", ["c"]),
    ("object.spec.containers.map(c, has(c.resources.limits) ? "
     "int(c.resources.limits['nvidia.com/gpu']) : 0).sum()", 2),
    ("object.spec.containers.all(c, c.resources.limits.all(k, k.startsWith('nvidia.com/')))", None),
    ("size(object.spec.tags) == 2 && size('abc') == 3", True),
    ("dyn(object.spec.replicas) == 3", True),
    ("[1, 2, 3].map(n, n * 2) == [2, 4, 6]", True),
    ("{'k': [1, 2]}['k'][1]", 2),
    ("object.metadata.ownerReferences.exists(r, r.kind in ['Job', 'JobSet'])", True),
    ("quantity('1500m').compareTo(quantity('2')) < 0 && isQuantity('1Gi')", True),
    ("'a,b'.split(',').join('+')", "a+b"),
    ("object.metadata.name.matches('^tr') && object.metadata.name.substring(1, 3) == 'ra'", True),
    ("string(object.spec.replicas) + 'x'", "3x"),
    ("(object.spec.replicas + 1) * 2", 8),
]


def _stock(expression: str, activation: dict[str, Any]) -> Any:
    env = celpy.Environment()
    result = env.program(env.compile(expression), functions=cel._K8S_FUNCTIONS).evaluate(activation)
    if isinstance(result, celpy.CELEvalError):
        raise result
    return result


def test_the_evaluator_gives_cel_pythons_own_value_for_every_construct() -> None:
    activation = {"object": cel.to_cel(OBJECT)}
    for expression, expected in CASES:
        outcomes = []
        for run in (cel.evaluate, cel.evaluate, _stock):  # twice: the second run reuses what the first made
            try:
                outcomes.append(run(expression, activation))
            except celpy.CELEvalError:
                outcomes.append(None)
        fast, again, stock = outcomes
        assert fast == expected, (expression, fast)
        assert again == expected, (expression, again)
        assert stock == expected, (expression, stock)
        assert type(fast) is type(stock), (expression, type(fast), type(stock))


def test_a_broken_expression_is_still_a_parse_error() -> None:
    with pytest.raises(celpy.CELParseError):
        cel.program("object.spec.containers.all(c, has(c.name)")
