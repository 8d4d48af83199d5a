"""GpuPlatform's own decisions: every Kubernetes object it declares is applied forced (components.platform).

Why it matters is shown on the live cluster by tests/faults: an object adopted after a killed `up` is owned
by two field managers, and without the force its next change fails with a server-side apply conflict.
"""

from __future__ import annotations

from components.platform import PATCH_FORCE_ANNOTATION
from tests.conftest import rendered


def test_every_kubernetes_object_of_every_stack_is_applied_forced(stack: str) -> None:
    objects = rendered(stack).kubernetes_objects()
    assert objects
    unforced = [f"{o['kind']}/{o['metadata'].get('name')}" for o in objects
                if (o["metadata"].get("annotations") or {}).get(PATCH_FORCE_ANNOTATION) != "true"]
    assert unforced == []


def test_helm_releases_are_left_alone(stack: str) -> None:
    """A Release's chart objects are Helm's to apply; the Release itself has no metadata to annotate."""
    for r in rendered(stack).custom:
        if r.type.startswith("kubernetes:helm.sh/"):
            assert PATCH_FORCE_ANNOTATION not in str(r.inputs.get("metadata", ""))
