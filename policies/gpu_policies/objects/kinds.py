"""Which resource a type token names: the Pulumi tokens the rules read and Kubernetes kinds by group."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from gpu_platform import conventions as cv


# Pulumi type tokens of the resources the rules read.
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
PLACEMENT_GROUP = "aws:ec2/placementGroup:PlacementGroup"
AWS_GPU_TYPES: tuple[str, ...] = (NODE_GROUP, LAUNCH_TEMPLATE, PLACEMENT_GROUP)
HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
HELM_CHART_V4 = "kubernetes:helm.sh/v4:Chart"
HELM_TYPES: tuple[str, ...] = (HELM_RELEASE, HELM_CHART_V4)
# Token groups of the Kubernetes provider that are not API objects (Helm, YAML and Kustomize components).
_NOT_OBJECT_GROUPS = ("helm.sh", "yaml", "kustomize")

KUEUE_GROUP = cv.KUEUE_API_VERSION.split("/")[0]


@dataclass(frozen=True, slots=True)
class KubeKind:
    group: str
    version: str
    kind: str

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


@functools.lru_cache(maxsize=1024)
def kube_kind(resource_type: str) -> KubeKind | None:
    """The API group, version and kind of a Kubernetes object from its Pulumi type token.

    Typed resources are `kubernetes:core/v1:Namespace`, `kubernetes:rbac.authorization.k8s.io/v1:RoleBinding`;
    `apiextensions.CustomResource` registers `kubernetes:<apiVersion>:<kind>`. The token is always known,
    unlike props during preview, so rules select their objects by it."""
    if not resource_type.startswith("kubernetes:"):
        return None
    parts = resource_type.split(":")
    if len(parts) != 3 or "/" not in parts[1]:
        return None
    group, version = parts[1].rsplit("/", 1)
    if group in _NOT_OBJECT_GROUPS:
        return None
    return KubeKind("" if group == "core" else group, version, parts[2])


def is_kind(resource_type: str, kind: str, group: str | None = None) -> bool:
    k = kube_kind(resource_type)
    return k is not None and k.kind == kind and (group is None or k.group == group)
