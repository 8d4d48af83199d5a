"""The config reference and the JSON Schema of `gpu-platform:platform`, generated from the spec models.

The models are the one source: every field's description, default and example live in its pydantic
`Field`, so docs/config-reference.md (a table per model) and docs/platform.schema.json (for editors) are
written from `Platform.model_json_schema()` by `python -m platform_cli config-reference`, and
tests/unit/platform_cli/test_config_reference.py fails when a committed file and the models disagree.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from gpu_platform.conventions import CONFIG_KEY
from gpu_platform.spec import Platform
from gpu_platform.stack_files import REPOSITORY_ROOT

REFERENCE = REPOSITORY_ROOT / "docs" / "config-reference.md"
SCHEMA = REPOSITORY_ROOT / "docs" / "platform.schema.json"
STACK_SCHEMA = REPOSITORY_ROOT / "docs" / "stack.schema.json"
SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def platform_schema() -> dict[str, Any]:
    """The JSON Schema of the `gpu-platform:platform` value, as pydantic derives it from the models."""
    schema = Platform.model_json_schema()
    return {"$schema": SCHEMA_DIALECT, "title": CONFIG_KEY, **{k: v for k, v in schema.items() if k != "title"}}


def stack_schema() -> dict[str, Any]:
    """A Pulumi.<stack>.yaml: any config, with `gpu-platform:platform` checked against platform.schema.json."""
    return {
        "$schema": SCHEMA_DIALECT,
        "title": "Pulumi.<stack>.yaml of gpu-platform",
        "type": "object",
        "properties": {
            "config": {
                "type": "object",
                "properties": {CONFIG_KEY: {"$ref": SCHEMA.name}},
                "required": [CONFIG_KEY],
            },
        },
    }


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=False) + "\n"


@dataclass(frozen=True)
class Section:
    """One model's table: where it sits in the config, and its schema definition."""

    model: str
    path: str
    definition: dict[str, Any]


def _ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def _models_in(prop: dict[str, Any]) -> list[tuple[str, str]]:
    """(model, how a config path goes on into it: "", "[]", ".<key>") for each model a property holds."""
    if "$ref" in prop:
        return [(_ref_name(prop["$ref"]), "")]
    out: list[tuple[str, str]] = []
    for alt in prop.get("anyOf", []):
        out += _models_in(alt)
    if "items" in prop:
        out += [(m, "[]" + s) for m, s in _models_in(prop["items"])]
    if isinstance(prop.get("additionalProperties"), dict):
        out += [(m, ".<key>" + s) for m, s in _models_in(prop["additionalProperties"])]
    return out


def sections(schema: dict[str, Any]) -> list[Section]:
    """Every model from the top down, in field order, each once, with its config path."""
    defs = schema.get("$defs", {})
    out = [Section("Platform", CONFIG_KEY, schema)]
    seen = {"Platform"}
    queue = [(schema, "")]
    while queue:
        definition, path = queue.pop(0)
        for name, prop in definition.get("properties", {}).items():
            for model, suffix in _models_in(prop):
                if model in seen:
                    continue
                seen.add(model)
                sub_path = f"{path}.{name}" if path else name
                out.append(Section(model, sub_path + suffix.replace(".<key>", f".<{_key_name(name)}>"), defs[model]))
                queue.append((defs[model], sub_path + suffix.replace(".<key>", f".<{_key_name(name)}>")))
    return out


def _key_name(field: str) -> str:
    """What a map's keys are called in a path: quotas are keyed by pool, everything else by name."""
    return {"quotas": "pool"}.get(field, "name")


def type_of(prop: dict[str, Any]) -> str:
    """A property's type as a reader writes it: `a` \\| `b` for enums, list of X, map of X, a model's name."""
    if "$ref" in prop:
        return f"[{_ref_name(prop['$ref'])}](#{_ref_name(prop['$ref']).lower()})"
    if "enum" in prop:
        return " \\| ".join(f"`{v}`" for v in prop["enum"])
    if "const" in prop:
        return f"`{prop['const']}`"
    if "anyOf" in prop:
        kinds = [type_of(a) for a in prop["anyOf"] if a.get("type") != "null"]
        return " \\| ".join(kinds) + (" or none" if any(a.get("type") == "null" for a in prop["anyOf"]) else "")
    kind = prop.get("type")
    if kind == "array":
        return f"list of {type_of(prop.get('items', {}))}"
    if kind == "object":
        extra = prop.get("additionalProperties")
        return f"map of {type_of(extra)}" if isinstance(extra, dict) else "object"
    return {"string": "string", "integer": "integer", "number": "number", "boolean": "boolean"}.get(kind or "", "any")


def _default(model: type[BaseModel] | None, field: str, prop: dict[str, Any], required: bool) -> str:
    if required:
        return "required"
    if "default" in prop:
        value = prop["default"]
    elif model is not None and field in model.model_fields:
        # default_factory values are not in the schema; the model computes them.
        value = model.model_fields[field].get_default(call_default_factory=True)
        if isinstance(value, BaseModel):
            return "its own defaults"
        if isinstance(value, list) and value and isinstance(value[0], BaseModel):
            value = [v.model_dump(exclude_defaults=True) for v in value]
    else:
        return "-"
    return "none" if value is None else f"`{json.dumps(value)}`"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def spec_models() -> dict[str, type[BaseModel]]:
    found: dict[str, type[BaseModel]] = {}
    pending: list[type[BaseModel]] = [Platform]
    while pending:
        model = pending.pop()
        if model.__name__ in found:
            continue
        found[model.__name__] = model
        for info in model.model_fields.values():
            pending += _model_types(info.annotation)
    return found


def _model_types(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in getattr(annotation, "__args__", ()) or () for m in _model_types(arg)]


def markdown(schema: dict[str, Any]) -> str:
    """docs/config-reference.md: how to point an editor at the schema, then one table per model."""
    models = spec_models()
    parts = [
        "# Config reference",
        "",
        "<!-- Generated from the spec models (gpu_platform/spec) by `python -m platform_cli config-reference`;",
        "     do not edit: change the model's Field(description=..., examples=[...]) and regenerate. -->",
        "",
        f"Everything lives under one key, `{CONFIG_KEY}`, in `Pulumi.<stack>.yaml`. Unknown fields are errors",
        "(a typo never silently becomes a default). Beyond what each field accepts here, the cross-field checks",
        "(`python -m platform_cli validate`) reject what the fields cannot see alone: quotas above a pool's",
        "capacity, an EFA pool without a zone, unknown cohorts and pools, and the rest.",
        "",
        "## Editor support",
        "",
        f"[`platform.schema.json`]({SCHEMA.name}) is the JSON Schema of the `{CONFIG_KEY}` value and",
        f"[`stack.schema.json`]({STACK_SCHEMA.name}) that of a whole stack file (it refers to the first).",
        "With the YAML language server (VS Code's YAML extension, Neovim's yamlls, ...) put this first line in a",
        "stack file at the repository root, or map the schema to `Pulumi.*.yaml` in the editor's",
        "`yaml.schemas` setting:",
        "",
        "```yaml",
        f"# yaml-language-server: $schema=docs/{STACK_SCHEMA.name}",
        "```",
        "",
        "The editor then completes field names, shows each field's description and flags unknown fields and",
        "wrong types as you type.",
        "",
    ]
    for section in sections(schema):
        definition = section.definition
        model = models.get(section.model)
        parts += [f"## {section.model}", "", f"`{section.path}`", ""]
        if model is not None and model.__doc__ and model.__doc__ != BaseModel.__doc__ and section.model != "Platform":
            parts += [" ".join(model.__doc__.split()), ""]
        parts += ["| field | type | default | description | example |", "| --- | --- | --- | --- | --- |"]
        required = set(definition.get("required", []))
        # Keys of which exactly one is required (a field and its former name: Quota's units and gpus).
        one_of = [key for alt in definition.get("oneOf", []) for key in alt.get("required", [])]
        for name, prop in definition.get("properties", {}).items():
            example = prop.get("examples", [None])[0]
            default = (f"required: one of {', '.join(f'`{k}`' for k in one_of)}" if name in one_of
                       else _default(model, name, prop, name in required))
            parts.append(
                f"| `{name}` | {type_of(prop)} | {_cell(default)} | "
                f"{_cell(prop.get('description', ''))} | {_cell('`' + json.dumps(example) + '`') if example is not None else '-'} |"
            )
        parts.append("")
    return "\n".join(parts)


def generated() -> dict[Path, str]:
    """Every generated file and its content."""
    schema = platform_schema()
    return {REFERENCE: markdown(schema), SCHEMA: _json(schema), STACK_SCHEMA: _json(stack_schema())}


def write() -> list[Path]:
    """Write the files that differ from what the models generate; the paths written."""
    changed = []
    for path, text in generated().items():
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            changed.append(path)
    return changed


def stale() -> list[Path]:
    """The committed files that differ from what the models generate."""
    return [path for path, text in generated().items() if not path.exists() or path.read_text() != text]
