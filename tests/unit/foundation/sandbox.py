"""The fresh-account example stack (examples/fresh-account/Pulumi.sandbox.yaml), its config and its render under
mocks, shared by the foundation tests (rendered once a session by the render worker)."""

from __future__ import annotations

import copy
import functools
from typing import Any


from tests.conftest import ROOT, background_render, load_yaml

SANDBOX_FILE = ROOT / "examples" / "fresh-account" / "Pulumi.sandbox.yaml"


@functools.cache
def _doc() -> dict[str, Any]:
    return load_yaml(SANDBOX_FILE.read_text())


def sandbox_config() -> dict[str, Any]:
    """A fresh copy of the example's whole stack config."""
    return copy.deepcopy(_doc()["config"])


def sandbox_raw() -> dict[str, Any]:
    """A fresh copy of the example's gpu-platform:platform value."""
    return sandbox_config()["gpu-platform:platform"]


@background_render()
def sandbox() -> tuple[str, dict[str, Any]]:
    """The example as `pulumi up` would run it, under mocks."""
    return "sandbox", sandbox_config()
