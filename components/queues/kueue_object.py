"""KueueObject: the Pulumi resource any Kueue object (or other top-level-fields object) is registered as."""

from __future__ import annotations

from typing import Any, Mapping

import pulumi


class KueueObject(pulumi.CustomResource):
    """A Kubernetes object with arbitrary top-level fields.

    `apiextensions.CustomResource` only carries `spec`; a WorkloadPriorityClass has `value` and
    `description` at the top level (like a PriorityClass). The provider takes the inputs as the object.
    """

    def __init__(self, resource_name: str, obj: Mapping[str, Any], opts: pulumi.ResourceOptions | None = None):
        super().__init__(f"kubernetes:{obj['apiVersion']}:{obj['kind']}", resource_name, dict(obj), opts)
