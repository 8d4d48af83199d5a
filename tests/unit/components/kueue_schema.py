"""Kueue objects against the reference CRDs' schemas (tests/crd_schema.py), with the one pattern Python cannot
compile checked here instead; shared by the queue and autoscaler tests."""

from __future__ import annotations

import copy
import re
from typing import Any, Mapping

from tests.crd_schema import validate

# The AdmissionCheck CRD's pattern for parameters.kind is `^(?i)[a-z]([-a-z0-9]*[a-z0-9])?$`: Go's RE2
# takes an inline flag anywhere, Python's re only at the start, so tests/crd_schema.py cannot compile it.
ADMISSION_CHECK_PARAMETERS_KIND = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$", re.IGNORECASE)


def validate_kueue(obj: Mapping[str, Any]) -> list[str]:
    """tests/crd_schema.validate, with the one pattern Python cannot compile checked here instead."""
    params = (obj.get("spec") or {}).get("parameters") if obj.get("kind") == "AdmissionCheck" else None
    if not params or "kind" not in params:
        return validate(dict(obj))
    errors = [] if ADMISSION_CHECK_PARAMETERS_KIND.match(params["kind"]) else [f".spec.parameters.kind: {params['kind']!r}"]
    stripped = copy.deepcopy(dict(obj))
    del stripped["spec"]["parameters"]["kind"]  # the schema's other rules still apply to the rest
    return errors + [e for e in validate(stripped) if not e.startswith(".spec.parameters.kind:")]
