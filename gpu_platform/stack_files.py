"""Finding and reading stack files: Pulumi.<stack>.yaml by stack name or path, into a spec and its plan.

Every entry point (the CLI, localcluster, the simulator, tests and benchmarks) reads stacks through here,
so a missing file or bad YAML is one `InputError` with the file's name, never a traceback.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from .errors import InputError, Problem, SpecError
from .plan import Plan, build_plan
from .spec import CONFIG_KEY, Platform, load_platform, load_stack_config

# The repository root: where the project's own Pulumi.<stack>.yaml files live.
REPOSITORY_ROOT = Path(__file__).resolve().parent.parent
# libyaml's safe loader where PyYAML was built with it: the same safe tags and resolution as yaml.SafeLoader,
# several times faster (stack files are read by every entry point, and by the tests dozens of times a run).
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def stack_file(stack: str) -> Path:
    """Pulumi.<stack>.yaml of a stack name, or the stack file a path names (fixture and generated stacks)."""
    if "/" in stack or stack.endswith((".yaml", ".yml")):
        path = Path(stack)
        if not path.is_file():
            raise InputError(f"{stack}: no such stack file")
        return path
    for root in (Path.cwd(), REPOSITORY_ROOT):
        candidate = root / f"Pulumi.{stack}.yaml"
        if candidate.exists():
            return candidate
    known = sorted(p.name[len("Pulumi."):-len(".yaml")] for p in REPOSITORY_ROOT.glob("Pulumi.*.yaml"))
    raise InputError(f"no stack {stack!r}: Pulumi.{stack}.yaml not found; stacks: {', '.join(known)}")


def read_yaml(path: Path) -> Any:
    try:
        text = path.read_text()
    except OSError as err:
        raise InputError(f"{path}: cannot read: {err.strerror}") from None
    try:
        return yaml.load(text, Loader=_SAFE_LOADER)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(err, "problem", None) or str(err)
        raise InputError(f"{path}: invalid YAML{where}: {problem}") from None


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except OSError as err:
        raise InputError(f"{path}: cannot read: {err.strerror}") from None
    except json.JSONDecodeError as err:
        raise InputError(f"{path}: invalid JSON at line {err.lineno}, column {err.colno}: {err.msg}") from None


def load(path: Path) -> tuple[Platform, str | None]:
    """A Pulumi.<stack>.yaml, or a file holding just the `gpu-platform:platform` value."""
    doc = read_yaml(path)
    if isinstance(doc, dict) and "config" in doc:
        return load_stack_config(doc, str(path))
    if isinstance(doc, dict) and CONFIG_KEY in doc:
        return load_platform(doc[CONFIG_KEY]), None
    if doc is None:
        raise SpecError([Problem("", f"{path} is empty; expected config: {{{CONFIG_KEY}: ...}}")])
    return load_platform(doc), None


def platform_value(stack: str | None, file: str | None) -> Any:
    """The `gpu-platform:platform` value as written in a stack file (or a file holding just the value)."""
    doc = read_yaml(stack_file(stack) if stack else Path(file))  # type: ignore[arg-type]
    if isinstance(doc, dict) and isinstance(doc.get("config"), dict):
        return doc["config"].get(CONFIG_KEY)
    if isinstance(doc, dict) and CONFIG_KEY in doc:
        return doc[CONFIG_KEY]
    return doc


def load_plan(stack: str | None, file: str | None) -> tuple[str, Plan]:
    """(name, plan) of a stack (by name or path) or of a file; the name is what messages call it."""
    path = stack_file(stack) if stack else Path(file)  # type: ignore[arg-type]
    spec, region = load(path)
    return (stack or path.name), build_plan(spec, region)
