"""The pack's configuration: every setting a rule reads, with its JSON schema and its default.

CrossGuard configures each policy separately (`pulumi preview --policy-pack policies
--policy-pack-config config.json`, keys are policy names). The engine fills in each schema's `default`
before the pack sees the config; the rules apply the same defaults themselves, so the offline check and a
config that omits a key behave exactly like the engine.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pulumi_policy import PolicyConfigSchema

from gpu_platform import conventions as cv


@dataclass(frozen=True, slots=True)
class Setting:
    key: str
    description: str
    default: tuple[str, ...]

    def schema(self) -> dict[str, Any]:
        return {
            "type": "array",
            "items": {"type": "string"},
            "description": self.description,
            "default": list(self.default),
        }


SYSTEM_NAMESPACES = Setting(
    "systemNamespaces",
    "Namespaces that are not tenant namespaces: Kubernetes' own and the platform's. Every other namespace "
    "is a tenant namespace and gets the tenant rules.",
    cv.RESERVED_NAMESPACES,
)
PRIVILEGED_NAMESPACES = Setting(
    "privilegedNamespaces",
    "The only namespaces that may run with Pod Security `privileged` (or without an enforce label, "
    "which the API server treats as privileged by default). The GPU Operator's operands need it, and so "
    "does the node exporter (hostNetwork, hostPID, hostPath) that kube-prometheus-stack puts in monitoring.",
    (cv.KUBE_SYSTEM_NAMESPACE, cv.GPU_OPERATOR_NAMESPACE, cv.MONITORING_NAMESPACE),
)
TENANT_PSA_LEVELS = Setting(
    "allowedLevels",
    "Pod Security `enforce` levels a tenant namespace may have.",
    cv.TENANT_PSA_LEVELS,
)
TENANT_LABELS = Setting(
    "requiredLabels",
    "Labels every tenant namespace carries (cost allocation and queue selection read them).",
    cv.TENANT_NAMESPACE_LABEL_KEYS,
)
POOL_LABELS = Setting(
    "requiredLabels",
    "Labels every GPU node group (and every Kueue ResourceFlavor) carries: the pool's identity.",
    cv.POOL_LABEL_KEYS,
)
COST_TAGS = Setting(
    "requiredTags",
    "AWS tags every GPU pool resource (node group, launch template and its instance tags, placement group) "
    "carries for cost allocation.",
    (*cv.POOL_LABEL_KEYS, cv.TAG_PLATFORM, cv.TAG_ENVIRONMENT, cv.TAG_CLUSTER),
)
PLATFORM_GROUPS = Setting(
    "platformGroups",
    "RBAC groups that administer the platform: bound in a tenant namespace they stay platform groups, "
    "so their cluster-wide bindings are not tenant bindings.",
    (),
)
# Karpenter: "Karpenter 1.1.0 drops the support for v1beta1 APIs" (aws/karpenter-provider-aws,
# website/content/en/v1.14/upgrading/upgrade-guide.md).
FORBIDDEN_API_VERSIONS = Setting(
    "forbiddenApiVersions",
    "API versions no object may use (Kueue 0.19 serves v1beta2; v1beta1 is deprecated. Karpenter 1.x serves "
    "v1; its v1beta1 NodePool and EC2NodeClass are gone since 1.1).",
    (f"{cv.KUEUE_API_VERSION.split('/')[0]}/v1beta1",
     f"{cv.KARPENTER_NODEPOOL_API_VERSION.split('/')[0]}/v1beta1",
     f"{cv.KARPENTER_NODECLASS_GROUP}/v1beta1"),
)
RECOMMENDED_LABELS = Setting(
    "recommendedLabels",
    "Labels every Kubernetes object should carry (Kubernetes' recommended app labels).",
    (cv.MANAGED_BY,),
)


def schema_of(*settings: Setting) -> PolicyConfigSchema | None:
    if not settings:
        return None
    return PolicyConfigSchema(properties={s.key: s.schema() for s in settings})


class Config:
    """One policy's config with the schema defaults applied."""

    def __init__(self, given: Mapping[str, Any] | None, settings: tuple[Setting, ...]):
        self._given = dict(given or {})
        self._settings = {s.key: s for s in settings}

    def strings(self, setting: Setting) -> tuple[str, ...]:
        value = self._given.get(setting.key)
        if value is None:
            return setting.default
        if isinstance(value, str):
            return (value,)
        return tuple(str(v) for v in value)
