"""docs/config-reference.md and the JSON Schemas are what the spec models generate, and every field is documented.

Fails when a model changes and `python -m platform_cli config-reference` was not run, or when a field has no
description or example; each example must be a value its field accepts.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, TypeAdapter

from platform_cli.cli import parser
from platform_cli.config_reference import generated, platform_schema, sections, spec_models

FIELDS = [(model, name, info) for model in spec_models().values() for name, info in model.model_fields.items()]


@functools.cache
def generated_files() -> dict[Path, str]:
    """What `python -m platform_cli config-reference` would write, made once a session: each case compares one
    file, and making them all (the schema, the reference page, the CLI page) for each was the module's time."""
    return generated(parser())


@pytest.mark.parametrize("path", sorted(generated_files(), key=str), ids=lambda p: p.name)
def test_the_committed_file_is_what_the_models_generate(path: Any) -> None:
    assert path.read_text() == generated_files()[path], (
        f"{path.name} is out of date with gpu_platform/spec: run python -m platform_cli config-reference")


@pytest.mark.parametrize(("model", "name", "info"), FIELDS, ids=[f"{m.__name__}.{n}" for m, n, _ in FIELDS])
def test_every_field_has_a_description_and_an_example_it_accepts(model: type[BaseModel], name: str, info: Any) -> None:
    assert info.description, f"{model.__name__}.{name} has no description"
    assert info.examples, f"{model.__name__}.{name} has no example"
    TypeAdapter(info.annotation).validate_python(info.examples[0])


def test_every_model_has_a_table() -> None:
    assert {s.model for s in sections(platform_schema())} == set(spec_models())
