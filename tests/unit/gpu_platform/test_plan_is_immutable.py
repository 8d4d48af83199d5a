"""The Plan is built once from the spec and read by every component; its dataclasses (and the components'
own, shared as module constants: alerts, panels, dashboards) are frozen, so no component can change what
another renders. World: the classes, in-process."""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil

import pytest

import components
import gpu_platform.plan
from tests.conftest import plan_of


def _dataclasses(package) -> list[type]:
    found = []
    for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
        module = importlib.import_module(info.name)
        found += [o for o in vars(module).values()
                  if isinstance(o, type) and dataclasses.is_dataclass(o) and o.__module__ == module.__name__]
    return found


def test_every_dataclass_of_the_plan_and_the_components_is_frozen() -> None:
    classes = _dataclasses(gpu_platform.plan) + _dataclasses(components)
    assert len(classes) >= 40
    assert [c.__qualname__ for c in classes if not c.__dataclass_params__.frozen] == []


def test_a_plan_refuses_a_write() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan_of("prod").cluster.name = "another"  # type: ignore[misc]
