"""Every default an "Options you set" table gives is the spec model's (world: the pydantic models and the pages).

docs/queues.md gave `defaultPreemption`'s default as `Any`, `LowerPriority`, `LowerPriority`; the model's
`borrowWithinCohort` defaults to `Never` (gpu_platform/spec/tenancy.py `Preemption`), and nothing failed. Each
row of a `| field | type | default |` table whose field the models know, and whose default cell is literal
(`x`, `a`, `b`, none, required), is compared with the model's default; prose cells (a default that depends on
other fields) are listed in SEMANTIC with what they mean, so a new one is a decision, not an accident.
"""

from __future__ import annotations

import functools
import re
import types
import typing
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from gpu_platform.spec.platform import Platform
from tests.conftest import ROOT

DOCS = ROOT / "docs"
# Tables whose field column is relative to a list of the spec.
PREFIX = {"node-pools.md": "pools[].", "gpu-operator-and-monitoring.md": ""}
PAGES = [p for p in sorted(DOCS.glob("*.md")) if p.name != "config-reference.md"]  # that page is generated
# Literal-looking defaults that name another field or a rule, not a value: (page, field) -> what the page means.
SEMANTIC = {
    ("node-pools.md", "pools[].capacity.desired"): "`min`: the pool's capacity.min",
    ("queues.md", "teams[].preemption"): "`defaultPreemption`: the stack's default",
    ("tenancy.md", "teams[].namespaces"): "`[<name>]`: the team's name",
}


def model_of(annotation: Any) -> type[BaseModel] | None:
    """The model a field holds, through Optional, lists and maps."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType, list, dict, tuple, typing.Annotated):
        for arg in reversed(typing.get_args(annotation)):
            found = model_of(arg)
            if found is not None:
                return found
        return None
    return annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None


def field_at(path: str) -> FieldInfo | None:
    """`teams[].quotas.<pool>.units` -> the Quota model's `units` field."""
    model: type[BaseModel] | None = Platform
    found = None
    for part in path.split("."):
        name = part.removesuffix("[]")
        if name.startswith("<"):
            continue
        if model is None or name not in model.model_fields:
            return None
        found = model.model_fields[name]
        model = model_of(found.annotation)
    return found


def rows(page: Path) -> list[tuple[str, str]]:
    """(field path, default cell) of every options table of a page."""
    lines = page.read_text().splitlines()
    out = []
    for i, line in enumerate(lines):
        if line.startswith("| field | type | default |"):
            for row in lines[i + 2:]:
                if not row.startswith("|"):
                    break
                cells = [c.strip() for c in re.split(r"(?<!\\)\|", row.strip().strip("|"))]
                m = re.fullmatch(r"`([^`]+)`", cells[0])
                if m:
                    out.append((PREFIX.get(page.name, "") + m.group(1), cells[2]))
    return out


def literal(cell: str) -> Any:
    """The value a literal default cell states, or NotImplemented for prose."""
    if cell in ("none", "required"):
        return cell
    items = re.fullmatch(r"`[^`]+`(?:, `[^`]+`)*", cell)
    if not items:
        return NotImplemented
    values = [yaml.safe_load(v) for v in re.findall(r"`([^`]+)`", cell)]
    if len(values) == 1 and isinstance(values[0], str) and ", " in values[0]:
        values = [yaml.safe_load(v) for v in values[0].split(", ")]  # `8, 32, 200, 50, 2Ti`
    return values[0] if len(values) == 1 else values


def agrees(shown: Any, default: Any) -> bool:
    if shown == "required":
        return default is PydanticUndefined
    if shown == "none":
        return default is None or default == [] or default == {} or default is PydanticUndefined
    if isinstance(default, BaseModel):
        dumped = default.model_dump(mode="json", by_alias=True)
        if isinstance(shown, dict):
            return all(dumped.get(k) == v for k, v in shown.items())
        return isinstance(shown, list) and [str(v) for v in shown] == [str(v) for v in dumped.values()]
    return shown == default or str(shown) == str(default)


@functools.cache
def checked() -> tuple[tuple[str, str, str], ...]:
    """(page, field, cell) of every row this test compares. Read once a session: each page's test and the count
    read the same rows, and reading every page for each of them was most of the module's time."""
    return tuple((p.name, path, cell) for p in PAGES for path, cell in rows(p)
                 if field_at(path) is not None and (p.name, path) not in SEMANTIC
                 and literal(cell) is not NotImplemented)


def test_enough_rows_are_compared_to_mean_something() -> None:
    assert len(checked()) >= 50
    assert ("queues.md", "defaultPreemption", "`Any`, `Never`, `LowerPriority`") in checked()
    assert ("tenancy.md", "teams[].limits", "`8, 32, 200, 50, 2Ti`") in checked()


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_literal_default_is_the_models(page: Path) -> None:
    wrong = []
    for name, path, cell in checked():
        if name != page.name:
            continue
        default = field_at(path).get_default(call_default_factory=True)  # type: ignore[union-attr]
        if not agrees(literal(cell), default):
            wrong.append(f"{path}: the page says {cell}, the model {default!r}")
    assert wrong == []


def test_the_semantic_defaults_are_still_on_their_pages() -> None:
    for (name, path), meaning in SEMANTIC.items():
        (cell,) = [c for p, c in rows(DOCS / name) if p == path]
        assert cell == meaning.split(":")[0], (name, path, cell)
