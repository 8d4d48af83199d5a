"""The generated references: the config's, from the spec models, and the CLI's flags, from its parsers.

The models are the one source: every field's description, default and example live in its pydantic
`Field`, so docs/config-reference.md (a table per model) and docs/platform.schema.json (for editors) are
written from `Platform.model_json_schema()` by `python -m platform_cli config-reference`, and
tests/unit/platform_cli/test_config_reference.py fails when a committed file and the models disagree.

The same command writes each command's synopsis and flag table in docs/cli.md from the argparse parsers
(platform_cli/cli.py `parser`, simulator/options.py): a flag's name, value, default and meaning are spelled
once, in its `add_argument`. The page's own prose (what a command prints, its exit codes) stays hand-written
between the generated blocks; tests/unit/docs/test_cli_doc.py holds the rest of the docs to the parsers.
"""

from __future__ import annotations

import argparse
import json
import re
import textwrap
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
CLI_REFERENCE = REPOSITORY_ROOT / "docs" / "cli.md"
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


# ---------------------------------------------------------------------------------------------------
# docs/cli.md: a generated block per command, between these markers; the prose around them is the page's.

CLI_BLOCK = re.compile(r"<!-- BEGIN GENERATED: ([a-z][a-z-]*) [^>]*-->\n.*?<!-- END GENERATED: \1 -->", re.DOTALL)
SYNOPSIS_WIDTH = 110


def cli_commands(cli: argparse.ArgumentParser) -> dict[str, tuple[str, argparse.ArgumentParser]]:
    """Each command of `python -m platform_cli` (`cli`: its parser, platform_cli.cli.parser(), handed in by the
    command that runs this so that neither module imports the other): its one-line help and its parser, in the
    parser's order."""
    (sub,) = [a for a in cli._actions if isinstance(a, argparse._SubParsersAction)]
    helps = {a.dest: a.help or "" for a in sub._choices_actions}
    return {name: (helps.get(name, ""), p) for name, p in sub.choices.items()}


def _flags(p: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in p._actions if not isinstance(a, argparse._HelpAction)]


def _metavar(a: argparse.Action) -> str:
    if isinstance(a.metavar, str):
        return a.metavar
    if a.choices is not None:
        return "{" + ",".join(str(c) for c in a.choices) + "}"
    return a.dest.upper()


def _usage(a: argparse.Action) -> str:
    """How a flag is written on the command line: `--since SINCE`, `--keep`, `FILE`, `--sigv4 [REGION]`."""
    if not a.option_strings:
        return _metavar(a)
    if a.nargs == 0:
        return a.option_strings[0]
    return f"{a.option_strings[0]} {'[' + _metavar(a) + ']' if a.nargs == '?' else _metavar(a)}"


def _groups(p: argparse.ArgumentParser) -> dict[int, argparse._MutuallyExclusiveGroup]:
    return {id(a): g for g in p._mutually_exclusive_groups for a in g._group_actions}


def synopsis(command: str, p: argparse.ArgumentParser) -> str:
    """The command line with every flag, required ones bare, optional ones in [], either-or groups in ( | )."""
    groups, done, parts = _groups(p), set(), []
    for a in _flags(p):
        group = groups.get(id(a))
        if group is not None:
            if id(group) in done:
                continue
            done.add(id(group))
            inner = " | ".join(_usage(m) for m in group._group_actions)
            parts.append(f"({inner})" if group.required else f"[{inner}]")
        else:
            parts.append(_usage(a) if a.required else f"[{_usage(a)}]")
    # Wrap between flags only: a flag and its value stay on one line.
    nbsp = "\u00a0"
    line = " ".join([f"python -m platform_cli {command}", *[part.replace(" ", nbsp) for part in parts]])
    wrapped = textwrap.wrap(line, SYNOPSIS_WIDTH, subsequent_indent="    ", break_long_words=False,
                            break_on_hyphens=False)
    return "\n".join(wrapped).replace(nbsp, " ")


def _code_placeholders(text: str) -> str:
    """`<stack>`-style placeholders and flags in code: a Markdown renderer takes the first for HTML tags and
    drops them, and a flag in code is one the docs test holds to the parser."""
    text = re.sub(r"(?<![`\w])([\w.$/-]*<[\w-]+>[\w.<>/-]*)", r"`\1`", text)
    return re.sub(r"(?<![`\w-])(--[a-z][a-z0-9-]*)", r"`\1`", text)


def _value(a: argparse.Action) -> str:
    if a.nargs == 0:
        return "switch"
    if a.choices is not None:
        return " \\| ".join(f"`{c}`" for c in a.choices)
    kind = {int: "integer", float: "number"}.get(a.type)  # type: ignore[call-overload]
    value = f"`{_metavar(a)}`" + (f" ({kind})" if kind else "")
    if a.nargs == "?" and a.option_strings:
        value += f", optional (alone: `{a.const}`)"
    if isinstance(a, argparse._AppendAction):
        value += ", repeatable"
    return value


def _cli_default(a: argparse.Action, group: argparse._MutuallyExclusiveGroup | None) -> str:
    if a.required:
        return "required"
    if group is not None and group.required:
        return "required: one of " + ", ".join(f"`{_usage(m).split()[0]}`" for m in group._group_actions)
    if a.nargs == 0:
        return "off"
    if a.default is None or a.default == []:
        return "-"
    return f"`{a.default:g}`" if isinstance(a.default, float) else f"`{a.default}`"


def flag_table(actions: list[argparse.Action], groups: dict[int, argparse._MutuallyExclusiveGroup]) -> list[str]:
    rows = ["| flag | value | default | meaning |", "| --- | --- | --- | --- |"]
    for a in actions:
        name = a.option_strings[0] if a.option_strings else _metavar(a)
        rows.append(f"| `{name}` | {_value(a)} | {_cli_default(a, groups.get(id(a)))} | "
                    f"{_cell(_code_placeholders(a.help or '-'))} |")
    return rows


def cli_block(command: str, help_text: str, p: argparse.ArgumentParser) -> str:
    """A command's generated block: what it does, its synopsis, a table of its flags (one per argument group)."""
    lines = [f"<!-- BEGIN GENERATED: {command} (from the parser: python -m platform_cli config-reference) -->",
             _code_placeholders(help_text[:1].upper() + help_text[1:].rstrip(".")) + ".", "", "```text",
             synopsis(command, p), "```", ""]
    groups = _groups(p)
    # The parser's own groups (options, positionals) make one table; each named group one more, under its title.
    named = [g for g in p._action_groups if g.title not in ("options", "optional arguments", "positional arguments")]
    in_named = {id(a) for g in named for a in g._group_actions}
    lines += flag_table([a for a in _flags(p) if id(a) not in in_named], groups)
    for g in named:
        lines += ["", f"*{_code_placeholders(g.title or '')}*", ""]
        lines += flag_table([a for a in g._group_actions if not isinstance(a, argparse._HelpAction)], groups)
    lines.append(f"<!-- END GENERATED: {command} -->")
    return "\n".join(lines)


def cli_markdown(page: str, cli: argparse.ArgumentParser) -> str:
    """docs/cli.md with every command's block regenerated; a command the page lacks gets a section at the end
    (its prose to be written), and a block of a command the parser no longer has is left for the test to name."""
    commands = cli_commands(cli)
    seen: set[str] = set()

    def regenerate(m: re.Match[str]) -> str:
        if m.group(1) not in commands:
            return m.group(0)
        seen.add(m.group(1))
        return cli_block(m.group(1), *commands[m.group(1)])

    out = CLI_BLOCK.sub(regenerate, page)
    for command, (help_text, p) in commands.items():
        if command not in seen:
            out = out.rstrip("\n") + f"\n\n## `{command}`\n\n{cli_block(command, help_text, p)}\n"
    return out


def generated(cli: argparse.ArgumentParser) -> dict[Path, str]:
    """Every generated file and its content (`cli`: the CLI's parser, for docs/cli.md)."""
    schema = platform_schema()
    return {REFERENCE: markdown(schema), SCHEMA: _json(schema), STACK_SCHEMA: _json(stack_schema()),
            CLI_REFERENCE: cli_markdown(CLI_REFERENCE.read_text() if CLI_REFERENCE.exists() else "", cli)}


def write(cli: argparse.ArgumentParser) -> list[Path]:
    """Write the files that differ from what the models generate; the paths written."""
    changed = []
    for path, text in generated(cli).items():
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            changed.append(path)
    return changed


def stale(cli: argparse.ArgumentParser) -> list[Path]:
    """The committed files that differ from what the models generate."""
    return [path for path, text in generated(cli).items() if not path.exists() or path.read_text() != text]
