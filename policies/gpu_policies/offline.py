"""Run the pack over rendered resources without an engine (`python -m platform_cli check`).

Resources come in the render format (DESIGN.md): `{"type", "name", "parent", "inputs"}`. Each one's inputs are
wrapped in a read-only mapping that, like the analyzer's proxy, raises on unknown values, and every policy is
called through the same
`validate` entry point the analyzer calls, with the engine's config semantics (schema defaults, then an
`all` enforcement level, then per-policy settings), so a rule sees here exactly what it sees under
`pulumi preview --policy-pack policies`. The engine passes stack rules the resources' outputs; under the
mocks that render uses, outputs are the inputs.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    Policy,
    PolicyCustomTimeouts,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.policy import _NotApplicableError
from pulumi_policy.proxy import (
    UNKNOWN_ARCHIVE_VALUE,
    UNKNOWN_ARRAY_VALUE,
    UNKNOWN_ASSET_VALUE,
    UNKNOWN_BOOLEAN_VALUE,
    UNKNOWN_NUMBER_VALUE,
    UNKNOWN_OBJECT_VALUE,
    UNKNOWN_STRING_VALUE,
    UnknownValueError,
)

from gpu_platform.errors import InputError

from .framework import GuardrailResourcePolicy, forget_stack
from .pack import PACK_NAME, POLICIES

PROJECT = "gpu-platform"
STACK_RESOURCE = "stack"


@dataclass(frozen=True, slots=True)
class Violation:
    rule: str
    resource: str  # "<type token> <name>", or "stack" for a stack-wide violation
    message: str
    level: str  # "mandatory" | "advisory"
    urn: str | None = None

    @property
    def mandatory(self) -> bool:
        return self.level == EnforcementLevel.MANDATORY.value


class ReadOnlyProps(Mapping):
    """What the analyzer's unknown-checking proxy is (pulumi_policy/proxy.py), built lazily: a read-only
    mapping that raises `UnknownValueError` with the value's path when a rule reads an unknown sentinel.
    The SDK's proxy copies the whole tree up front; a big stack has hundreds of thousands of nodes and a
    rule reads a few of each resource, so here a child is wrapped only when it is read, and its path is
    only spelled out for the error."""

    __slots__ = ("_target", "_parent", "_key")

    def __init__(self, target: Mapping[str, Any], parent: Any = None, key: Any = None):
        self._target = target
        self._parent = parent
        self._key = key

    def __getitem__(self, key: str) -> Any:
        return _child(self._target[key], self, key)

    def get(self, key: str, default: Any = None) -> Any:
        try:
            value = self._target[key]
        except KeyError:
            return default
        return _child(value, self, key)

    def __iter__(self):
        return iter(self._target)

    def __len__(self) -> int:
        return len(self._target)


class ReadOnlyList(Sequence):
    __slots__ = ("_target", "_parent", "_key")

    def __init__(self, target: Sequence[Any], parent: Any, key: Any):
        self._target = target
        self._parent = parent
        self._key = key

    def __getitem__(self, index):  # type: ignore[override]
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self._target)))]
        return _child(self._target[index], self, index)

    def __len__(self) -> int:
        return len(self._target)


_UNKNOWNS = frozenset({UNKNOWN_BOOLEAN_VALUE, UNKNOWN_NUMBER_VALUE, UNKNOWN_STRING_VALUE, UNKNOWN_ARRAY_VALUE,
                       UNKNOWN_ASSET_VALUE, UNKNOWN_ARCHIVE_VALUE, UNKNOWN_OBJECT_VALUE})


def _path(node: Any, key: Any) -> list[str]:
    path = [str(key)]
    while node is not None and node._parent is not None:
        path.append(str(node._key))
        node = node._parent
    return path[::-1]


def _child(value: Any, parent: Any, key: Any) -> Any:
    if isinstance(value, str):
        if value in _UNKNOWNS:
            raise UnknownValueError(value, _path(parent, key))
        return value
    if isinstance(value, dict):
        return ReadOnlyProps(value, parent, key)
    if isinstance(value, list):
        return ReadOnlyList(value, parent, key)
    return value


class ResourcesError(InputError):
    """The resources are not in the render format (the CLI prints it and exits 2, no traceback)."""


def _urn(stack: str, type_: str, name: str) -> str:
    return f"urn:pulumi:{stack}::{PROJECT}::{type_}::{name}"


def _validated(resources: Any) -> list[Mapping[str, Any]]:
    if not isinstance(resources, list):
        raise ResourcesError(f"expected a JSON list of resources, got {type(resources).__name__}")
    for i, r in enumerate(resources):
        if not isinstance(r, Mapping) or not isinstance(r.get("type"), str) or not isinstance(r.get("name"), str):
            raise ResourcesError(f"resources[{i}]: expected an object with string 'type' and 'name'")
        if not isinstance(r.get("inputs", {}), Mapping):
            raise ResourcesError(f"resources[{i}] ({r['type']} {r['name']}): 'inputs' must be an object")
    return resources


def _schema_defaults(policy: Policy) -> dict[str, Any]:
    schema = policy.config_schema
    if schema is None:
        return {}
    return {k: v["default"] for k, v in schema.properties.items() if "default" in v}


def effective_config(
    policies: Sequence[Policy], config: Mapping[str, Any] | None
) -> dict[str, tuple[EnforcementLevel, dict[str, Any]]]:
    """Per policy: its enforcement level and properties, reconciled the way the engine does
    (pulumi pkg/resource/analyzer/config.go, ReconcilePolicyPackConfig)."""
    config = dict(config or {})
    everything = config.get("all")
    out = {}
    for p in policies:
        level = p.enforcement_level or EnforcementLevel.MANDATORY
        if isinstance(everything, str):
            level = EnforcementLevel(everything)
        elif isinstance(everything, Mapping) and everything.get("enforcementLevel"):
            level = EnforcementLevel(everything["enforcementLevel"])
        props = _schema_defaults(p)
        given = config.get(p.name)
        if isinstance(given, str):
            level = EnforcementLevel(given)
        elif isinstance(given, Mapping):
            if given.get("enforcementLevel"):
                level = EnforcementLevel(given["enforcementLevel"])
            props.update({k: v for k, v in given.items() if k != "enforcementLevel"})
        if level == EnforcementLevel.REMEDIATE:
            level = EnforcementLevel.MANDATORY  # the engine reports remaining violations as mandatory
        out[p.name] = (level, props)
    return out


def check_resources(
    resources: Sequence[Mapping[str, Any]],
    config: Mapping[str, Any] | None = None,
    policies: Sequence[Policy] = POLICIES,
    stack: str = "offline",
) -> list[Violation]:
    """Every violation of the pack's resource and stack rules over `resources` (render format)."""
    # The check allocates many small, short-lived, acyclic objects (proxies, views); the cyclic garbage
    # collector's passes over an ever larger heap would make a big stack's check superlinear.
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _check(resources, config, policies, stack)
    finally:
        forget_stack()
        if enabled:
            gc.enable()


def _check(
    resources: Sequence[Mapping[str, Any]],
    config: Mapping[str, Any] | None,
    policies: Sequence[Policy],
    stack: str,
) -> list[Violation]:
    data = _validated(resources)
    settings = effective_config(policies, config)
    options = PolicyResourceOptions(False, [], None, [], PolicyCustomTimeouts(0, 0, 0), [], None)
    # Type tokens interned: a stack has a few dozen types over thousands of resources, and every rule
    # selects by type, so each lookup then hits one shared string.
    views = [
        (sys.intern(r["type"]), r["name"], _urn(stack, r["type"], r["name"]), ReadOnlyProps(r.get("inputs") or {}))
        for r in data
    ]
    by_urn = {urn: f"{t} {n}" for t, n, urn, _ in views}
    stack_resources = [PolicyResource(t, view, urn, n, options, None, None, [], {}) for t, n, urn, view in views]
    found: list[Violation] = []

    def reporter(policy: Policy, level: EnforcementLevel, resource_urn: str | None):
        # A resource rule's violation is about its resource; a stack rule's about the URN it names, if any.
        def report(message: str, urn: str | None = None) -> None:
            urn = resource_urn or urn or None
            found.append(Violation(policy.name, by_urn.get(urn or "", STACK_RESOURCE), message, level.value, urn))
        return report

    for policy in policies:
        level, props = settings[policy.name]
        if level == EnforcementLevel.DISABLED:
            continue
        if isinstance(policy, ResourceValidationPolicy):
            applies = policy.applies if isinstance(policy, GuardrailResourcePolicy) else (lambda t: True)
            for t, n, urn, view in views:
                if not applies(t):
                    continue
                args = ResourceValidationArgs(t, view, urn, n, options, None, props)
                _run(policy, args, reporter(policy, level, urn))
        elif isinstance(policy, StackValidationPolicy):
            _run(policy, StackValidationArgs(stack_resources, props), reporter(policy, level, None))
    return found


def _run(policy: Any, args: Any, report: Any) -> None:
    try:
        policy.validate(args, report)
    except _NotApplicableError:
        pass
    except UnknownValueError as err:
        # What the SDK does with an unknown value a rule did not handle: an advisory note (never silent here).
        report(f"can't run policy {policy.name!r} during preview: {err.message}")


def format_violations(violations: Sequence[Violation], label: str) -> str:
    """One block per violation (level, rule, resource, message), mandatory first, then a summary line."""
    ordered = sorted(violations, key=lambda v: (not v.mandatory, v.rule, v.resource, v.message))
    lines = []
    for v in ordered:
        lines.append(f"{v.level:<9}  {v.rule}  {v.resource}")
        lines.extend(f"           {part}" for part in v.message.splitlines())
    mandatory = sum(v.mandatory for v in violations)
    advisory = len(violations) - mandatory
    if violations:
        lines.append(f"{label}: {len(violations)} policy violation(s) from {PACK_NAME}: "
                     f"{mandatory} mandatory, {advisory} advisory")
    else:
        lines.append(f"{label}: no policy violations ({len(POLICIES)} rules of {PACK_NAME})")
    return "\n".join(lines) + "\n"
