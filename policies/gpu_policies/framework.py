"""How a rule becomes a CrossGuard policy, and how a mandatory rule fails closed on unknown values.

The Python policy SDK turns an `UnknownValueError` escaping a validation into an *advisory* "can't run
policy during preview" note (pulumi_policy/policy.py, `Analyze`), so a mandatory rule that touches a
value unknown during preview would be skipped with a warning. Every rule here catches it and reports a
violation at the rule's own level instead: the preview fails until the value is known or the rule is
configured otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.proxy import UnknownValueError

from .settings import Config, Setting, schema_of

MANDATORY = EnforcementLevel.MANDATORY
ADVISORY = EnforcementLevel.ADVISORY


def unknown_message(err: UnknownValueError) -> str:
    return f"cannot be verified: {err.message}; the rule fails closed on unknown values"


@dataclass(frozen=True, slots=True)
class Resource:
    """One resource as a rule sees it: its type token, Pulumi name, URN and (read-only) props."""

    type: str
    name: str
    urn: str
    props: Mapping[str, Any]

    def __str__(self) -> str:
        return f"{self.type} {self.name}"


Report = Callable[[str], None]
ResourceCheck = Callable[[Resource, Config, Report], None]
StackReport = Callable[[Resource | None, str], None]
StackCheck = Callable[[Sequence[Resource], Config, StackReport], None]


def _policy_options(level: EnforcementLevel, settings: tuple[Setting, ...], remediation: str | None) -> dict[str, Any]:
    """What a rule tells the SDK besides its validation, alike for resource and stack rules: its level, the
    config schema of its settings and its remediation."""
    return {"enforcement_level": level, "config_schema": schema_of(*settings), "remediation_steps": remediation}


class GuardrailResourcePolicy(ResourceValidationPolicy):
    """A resource rule: `applies(type)` selects resources by type token (never by props, which may be unknown)."""

    def __init__(
        self,
        name: str,
        description: str,
        check: ResourceCheck,
        applies: Callable[[str], bool],
        level: EnforcementLevel = MANDATORY,
        settings: tuple[Setting, ...] = (),
        remediation: str | None = None,
    ):
        self.check = check
        self.applies = applies
        self.settings = settings
        super().__init__(name, description, validate=self._validate, **_policy_options(level, settings, remediation))

    def _validate(self, args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
        if not self.applies(args.resource_type):
            return
        resource = Resource(args.resource_type, args.name, args.urn, args.props)
        config = Config(args.get_config(), self.settings)
        try:
            self.check(resource, config, lambda message: report_violation(message, None))
        except UnknownValueError as err:
            report_violation(unknown_message(err), None)


class GuardrailStackPolicy(StackValidationPolicy):
    """A stack rule: sees every resource once; must index in one pass and look up, never nest loops."""

    def __init__(
        self,
        name: str,
        description: str,
        check: StackCheck,
        level: EnforcementLevel = MANDATORY,
        settings: tuple[Setting, ...] = (),
        remediation: str | None = None,
    ):
        self.check = check
        self.settings = settings
        super().__init__(name, description, validate=self._validate, **_policy_options(level, settings, remediation))

    def _validate(self, args: StackValidationArgs, report_violation: ReportViolation) -> None:
        resources = _resources_of(args.resources)
        config = Config(args.get_config(), self.settings)

        def report(resource: Resource | None, message: str) -> None:
            report_violation(message, resource.urn if resource is not None else None)

        try:
            self.check(resources, config, report)
        except UnknownValueError as err:
            report(None, unknown_message(err))


_last_stack: tuple[list[Any], list[Resource]] | None = None


def _resources_of(stack: list[Any]) -> list[Resource]:
    """The stack's resources as rules see them. The offline check hands every stack policy the same list,
    so the conversion is kept for the next policy (by identity; the engine sends a new list each time)."""
    global _last_stack
    if _last_stack is not None and _last_stack[0] is stack:
        return _last_stack[1]
    resources = [Resource(r.resource_type, r.name, r.urn, r.props) for r in stack]
    _last_stack = (stack, resources)
    return resources


def forget_stack() -> None:
    """Drop the kept conversion (the offline check calls it when done, so a big stack is not held on to)."""
    global _last_stack
    _last_stack = None


def guarded(report: StackReport, resource: Resource, fn: Callable[[], Any]) -> Any:
    """Run `fn` (reading `resource`'s props); on an unknown value report it against the resource and
    return None, so one unknown value never hides the rest of the stack from a stack rule."""
    try:
        return fn()
    except UnknownValueError as err:
        report(resource, unknown_message(err))
        return None


def of_types(*types: str) -> Callable[[str], bool]:
    wanted = frozenset(types)
    return lambda t: t in wanted


def any_of(*predicates: Callable[[str], bool]) -> Callable[[str], bool]:
    return lambda t: any(p(t) for p in predicates)


def quoted(values: Iterable[Any]) -> str:
    return ", ".join(repr(v) for v in values)
