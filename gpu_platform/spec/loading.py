"""Parsing a `gpu-platform:platform` value (or a whole stack document) into a checked `Platform`."""

from __future__ import annotations

from typing import Any, Mapping

from pydantic import ValidationError

from ..conventions import CONFIG_KEY
from ..errors import Problem, SpecError
from .checks import validate
from .platform import Platform
from .problems import problems_from


def load_platform(raw: Any, region: str | None = None) -> Platform:
    """Parse and cross-check a `gpu-platform:platform` value; raise SpecError with every problem."""
    if not isinstance(raw, Mapping):
        raise SpecError([Problem(CONFIG_KEY, f"must be a mapping, got {type(raw).__name__}")])
    try:
        platform = Platform.model_validate(raw)
    except ValidationError as err:
        raise SpecError(problems_from(err)) from None
    problems = validate(platform, region)
    if problems:
        raise SpecError(problems)
    return platform


def load_stack_config(doc: Any, source: str = "stack config") -> tuple[Platform, str | None]:
    """From a parsed Pulumi.<stack>.yaml document: the platform and the aws:region (if any)."""
    if not isinstance(doc, Mapping) or not isinstance(doc.get("config"), Mapping):
        raise SpecError([Problem("config", f"{source} has no 'config:' mapping")])
    config = doc["config"]
    if CONFIG_KEY not in config:
        raise SpecError([Problem(f"config.{CONFIG_KEY}", f"{source} has no {CONFIG_KEY!r} key")])
    region = config.get("aws:region")
    return load_platform(config[CONFIG_KEY], region if isinstance(region, str) else None), region
