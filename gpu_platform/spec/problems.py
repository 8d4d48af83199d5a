"""pydantic's validation errors as `Problem`s: a config path each, and the valid fields for a typo."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from ..errors import Problem
from .platform import Platform


def path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def fields_of(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str] | None:
    """The valid field names of the model found at `loc` (for 'unknown field' errors)."""
    current: Any = model
    for part in loc:
        if isinstance(part, int):
            continue
        if not (isinstance(current, type) and issubclass(current, BaseModel)):
            return None
        info = current.model_fields.get(part)
        if info is None:
            return None
        current = model_in(info.annotation)
        if current is None:
            return None
    if isinstance(current, type) and issubclass(current, BaseModel):
        return list(current.model_fields)
    return None


def model_in(annotation: Any) -> Any:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()) or ():
        found = model_in(arg)
        if found is not None:
            return found
    return None


def problems_from(err: ValidationError) -> list[Problem]:
    problems = []
    for e in err.errors(include_url=False):
        loc = tuple(e["loc"])
        if e["type"] == "extra_forbidden":
            valid = fields_of(Platform, loc[:-1])
            hint = f"; valid fields here: {', '.join(valid)}" if valid else ""
            problems.append(Problem(path(loc), f"unknown field {loc[-1]!r}{hint}"))
            continue
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] not in ("value_error", "missing") and "input" in e and not isinstance(e["input"], (dict, list)):
            msg = f"{msg} (got {e['input']!r})"
        if e["type"] == "missing":
            msg = "required field is missing"
        problems.append(Problem(path(loc), msg))
    return problems


# ---------------------------------------------------------------------------------------------------
