"""KubeObject, the Pulumi resource an object of a kind the provider has no class for is registered as, and the
metadata (name, namespace, labels) every object the platform makes carries.

The component label rule (which objects carry `app.kubernetes.io/component`) is a decision recorded in
docs/architecture.md ("Labels on the platform's objects"); `object_labels` is the one place that applies it.
"""

from __future__ import annotations

from typing import Any, Mapping

import pulumi

from gpu_platform import conventions as cv


class KubeObject(pulumi.CustomResource):
    """A Kubernetes object with arbitrary top-level fields, registered as `kubernetes:<apiVersion>:<kind>`.

    `apiextensions.CustomResource` only carries `spec`; a WorkloadPriorityClass has `value` and `description`
    at the top level (like a PriorityClass), and Karpenter's, Kueue's and the Prometheus operator's kinds have
    no provider classes. The provider takes the inputs as the object; the type token is the one
    `apiextensions.CustomResource` registers too, so an object moved onto this class keeps its URN.
    """

    def __init__(self, resource_name: str, obj: Mapping[str, Any], opts: pulumi.ResourceOptions | None = None):
        super().__init__(f"kubernetes:{obj['apiVersion']}:{obj['kind']}", resource_name, dict(obj), opts)


def object_labels(
    extra: Mapping[str, str] | None = None, *, component: str | None = None, part_of: bool = False,
) -> dict[str, str]:
    """`extra` (team, pool, Pod Security... labels) and the platform's own: managed-by always, part-of for the
    platform namespaces and what is in them, the component label when the making component sets one. The
    platform's labels come last, so an `extra` can never relabel an object as someone else's."""
    platform = {cv.MANAGED_BY: cv.MANAGED_BY_VALUE}
    if part_of:
        platform[cv.PART_OF] = cv.MANAGED_BY_VALUE
    if component is not None:
        platform[cv.COMPONENT] = component
    return {**(extra or {}), **platform}


def object_metadata(
    name: str, namespace: str | None = None, labels: Mapping[str, str] | None = None, *, component: str | None = None,
) -> dict[str, Any]:
    """metadata of a platform-made object: its name (and namespace) and `object_labels`."""
    meta: dict[str, Any] = {"name": name, "labels": object_labels(labels, component=component)}
    if namespace is not None:
        meta["namespace"] = namespace
    return meta
