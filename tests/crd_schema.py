"""Validate objects against the openAPIV3Schema of the reference CRDs (tests/reference_data.py finds them).

A structural check (types, required fields, enums, unknown fields, min/max, patterns) so a typo in a
Kueue or Prometheus Operator field fails in the unit tests, and (validate(obj, rules=True)) the CRDs' CEL
rules (x-kubernetes-validations), evaluated by cel-python (tests/cel.py) with `self` bound to the defaulted value as the API
server binds it. Transition rules (those reading oldSelf) judge updates only and are not run: validate()
judges an object as created. A rule that calls a Kubernetes CEL library function cel-python lacks and
tests/cel.py has no twin for is not judged here: it is recorded in UNEVALUATED (never passed silently as
true) and left to the API server, which runs every rule in the integration layer.
"""

from __future__ import annotations

import contextvars
import functools
import json
import re
from typing import Any

import yaml

from tests.reference_data import CRDS_ENV, crd_dir, located

# The C loader when PyYAML has it: the Workload CRD alone is 1.4 MB.
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@functools.cache
def _pattern(pattern: str) -> re.Pattern[str]:
    """Go's RE2 allows inline flags anywhere (`^(?i)...`); Python only at the start, so move them there."""
    flags = "".join(sorted(set(re.findall(r"\(\?([imsU]+)\)", pattern))))
    body = re.sub(r"\(\?[imsU]+\)", "", pattern)
    return re.compile((f"(?{flags.replace('U', '')})" if flags.replace("U", "") else "") + body)

@functools.cache
def _schemas() -> dict[tuple[str, str], dict[str, Any]]:
    """(apiVersion, kind) -> openAPIV3Schema, for every served version of every reference CRD."""
    out = {}
    for path in sorted(crd_dir().rglob("*.yaml")):
        for doc in yaml.load_all(path.read_text(), Loader=_Loader):
            if not doc or doc.get("kind") != "CustomResourceDefinition":
                continue
            spec = doc["spec"]
            for v in spec["versions"]:
                if v.get("served", True):
                    out[(f"{spec['group']}/{v['name']}", spec["names"]["kind"])] = v["schema"]["openAPIV3Schema"]
    return out


def known(api_version: str, kind: str) -> bool:
    return (api_version, kind) in _schemas()


def validate(obj: dict[str, Any], rules: bool = False) -> list[str]:
    """Every schema violation in `obj` as 'path: message'; empty when valid. With `rules`, the CRD's CEL
    rules too (tests/unit/components/test_crd_rules.py judges every rendered object so; cel-python takes about a second
    on a quadratic rule over an EFA node class's 33 interfaces, so the structural checks elsewhere skip
    them). The same object is judged once per session."""
    errors, unevaluated = _validate(json.dumps(obj, sort_keys=True), rules)
    UNEVALUATED.update(unevaluated)  # on every call, cached or not
    return list(errors)


@functools.lru_cache(maxsize=4096)
def _validate(text: str, rules: bool) -> tuple[tuple[str, ...], tuple[tuple[tuple[str, str], str], ...]]:
    before = dict(UNEVALUATED)
    UNEVALUATED.clear()
    token = _RULES.set(rules)
    try:
        errors = tuple(_validate_uncached(json.loads(text)))
        return errors, tuple(UNEVALUATED.items())
    finally:
        _RULES.reset(token)
        UNEVALUATED.update(before)


_RULES: contextvars.ContextVar[bool] = contextvars.ContextVar("crd_schema_rules", default=False)


def _validate_uncached(obj: dict[str, Any]) -> list[str]:
    key = (obj.get("apiVersion"), obj.get("kind"))
    schema = _schemas().get(key)  # type: ignore[arg-type]
    if schema is None:
        problem = located().problem
        return [f"no CRD serves {key[0]} {key[1]} in {crd_dir()}"
                + (f" ({problem}; {CRDS_ENV} names another directory)" if problem else "")]
    errors: list[str] = []
    body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
    _check(body, {**schema, "properties": {k: v for k, v in schema.get("properties", {}).items()
                                            if k not in ("apiVersion", "kind", "metadata")}}, "", errors)
    return errors


# (schema path, rule) of CEL rules that could not be evaluated offline, with the reason.
UNEVALUATED: dict[tuple[str, str], str] = {}


def _defaulted(value: Any, schema: dict[str, Any]) -> Any:
    """`value` with the schema's defaults filled in, as the API server defaults before it validates."""
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        out = {k: _defaulted(v, props.get(k) or (schema.get("additionalProperties")
                                                 if isinstance(schema.get("additionalProperties"), dict) else {}))
               for k, v in value.items()}
        for k, p in props.items():
            if k not in out and "default" in p:
                out[k] = _defaulted(p["default"], p)
        return out
    if isinstance(value, list):
        return [_defaulted(v, schema.get("items") or {}) for v in value]
    return value


def _check_rules(value: Any, schema: dict[str, Any], path: str, errors: list[str]) -> None:
    from tests import cel

    for rule in schema.get("x-kubernetes-validations") or []:
        text = rule["rule"]
        if "oldSelf" in text:
            continue  # a transition rule: only on update
        try:
            ok = cel.evaluate(text, {"self": cel.to_cel(_defaulted(value, schema))})
        except cel.celpy.CELEvalError as err:
            if "undeclared reference to" in str(err) or "no such function" in str(err):
                UNEVALUATED[(path, text)] = str(err)[:200]
                continue
            errors.append(f"{path or '.'}: CEL rule {text!r} failed to evaluate: {err}")
            continue
        if not ok:
            errors.append(f"{path or '.'}: {rule.get('message') or f'failed rule: {text}'}")


_TYPES = {
    "object": dict, "array": list, "string": str, "boolean": bool,
}


def _check(value: Any, schema: dict[str, Any], path: str, errors: list[str]) -> None:
    if value is None:
        if not schema.get("nullable"):
            errors.append(f"{path or '.'}: null is not allowed")
        return
    if schema.get("x-kubernetes-int-or-string"):
        if not isinstance(value, (int, str)) or isinstance(value, bool):
            errors.append(f"{path}: expected int or string, got {type(value).__name__}")
        return
    t = schema.get("type")
    if t == "integer":
        if isinstance(value, bool) or not isinstance(value, int):
            errors.append(f"{path}: expected integer, got {value!r}")
            return
    elif t == "number":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            errors.append(f"{path}: expected number, got {value!r}")
            return
    elif t in _TYPES and not isinstance(value, _TYPES[t]):
        errors.append(f"{path}: expected {t}, got {type(value).__name__}")
        return
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path}: {value!r} not in {schema['enum']}")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append(f"{path}: {value} < minimum {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            errors.append(f"{path}: {value} > maximum {schema['maximum']}")
    if isinstance(value, str):
        if "pattern" in schema and not _pattern(schema["pattern"]).search(value):
            errors.append(f"{path}: {value!r} does not match {schema['pattern']}")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            errors.append(f"{path}: longer than {schema['maxLength']}")
        if "minLength" in schema and len(value) < schema["minLength"]:
            errors.append(f"{path}: shorter than {schema['minLength']}")
    if isinstance(value, list):
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errors.append(f"{path}: more than {schema['maxItems']} items")
        if "minItems" in schema and len(value) < schema["minItems"]:
            errors.append(f"{path}: fewer than {schema['minItems']} items")
        for i, item in enumerate(value):
            _check(item, schema.get("items", {}), f"{path}[{i}]", errors)
    if isinstance(value, dict):
        for req in schema.get("required", []):
            if req not in value:
                errors.append(f"{path}.{req}: required")
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        for k, v in value.items():
            if props is not None and k in props:
                _check(v, props[k], f"{path}.{k}", errors)
            elif isinstance(extra, dict):
                _check(v, extra, f"{path}.{k}", errors)
            elif props is not None and not schema.get("x-kubernetes-preserve-unknown-fields") and extra is not True:
                errors.append(f"{path}.{k}: unknown field")
    if "x-kubernetes-validations" in schema and _RULES.get():
        _check_rules(value, schema, path, errors)
