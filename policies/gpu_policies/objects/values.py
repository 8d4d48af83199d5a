"""Values as the engine hands them over: mappings, sequences, text, numbers and quantities, unknowns kept."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal, InvalidOperation
from types import MappingProxyType
from typing import Any

from pulumi_policy.proxy import UnknownValueError


EMPTY: Mapping[str, Any] = MappingProxyType({})

def mapping(value: Any) -> Mapping[str, Any]:
    """`value` if it is a mapping, else an empty one (absent and null read the same)."""
    return value if isinstance(value, Mapping) else EMPTY


def sequence(value: Any) -> Sequence[Any]:
    """`value` if it is a list-like (not a string), else an empty tuple."""
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        return value
    return ()


def text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def as_int(value: Any) -> int | None:
    """An integer from an int, an integral float (protobuf turns every number into one) or a digit string."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("+").isdigit():
        return int(value.strip())
    return None


def known_or_none(read: Callable[[], Any]) -> Any:
    """`read()`, or None when it touches a value unknown during preview. Only for optional, provider-computed
    attributes a rule uses as a hint or a fallback (a node group's `instanceTypes` or `amiType` when the
    program leaves them to AWS): what a rule checks is read directly, so an unknown there fails it."""
    try:
        return read()
    except UnknownValueError:
        return None


def is_true(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.lower() == "true")


# Kubernetes quantities: kubernetes.io/docs/reference/kubernetes-api/common-definitions/quantity/
_QUANTITY = re.compile(r"^([+-]?(?:\d+(?:\.\d*)?|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]))?$")
_SUFFIX = {
    "": Decimal(1), "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "k": Decimal("1e3"),
    "M": Decimal("1e6"), "G": Decimal("1e9"), "T": Decimal("1e12"), "P": Decimal("1e15"), "E": Decimal("1e18"),
    "Ki": Decimal(2**10), "Mi": Decimal(2**20), "Gi": Decimal(2**30), "Ti": Decimal(2**40),
    "Pi": Decimal(2**50), "Ei": Decimal(2**60),
}


def parse_quantity(value: Any) -> Decimal | None:
    """A Kubernetes quantity (int, float or string such as "96", "1k", "500m") as a Decimal; None if invalid."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return Decimal(str(value))
    if not isinstance(value, str):
        return None
    m = _QUANTITY.match(value.strip())
    if not m:
        return None
    try:
        number = Decimal(m.group(1))
    except InvalidOperation:
        return None
    if m.group(2):
        return number * (Decimal(10) ** int(m.group(2)[1:]))
    return number * _SUFFIX[m.group(3) or ""]


def whole_units(value: Any) -> int | None:
    """A quantity that is a whole number of units (GPUs, slices, replicas), else None."""
    q = parse_quantity(value)
    if q is None or q != q.to_integral_value():
        return None
    return int(q)
