"""What an operator may configure per rule of the pack (`pulumi up --policy-pack-config`): each rule's
enforcement level and the settings its config schema declares. A setting missing from a schema is refused by
the engine when an operator sets it, so the allowlist (privilegedNamespaces, systemNamespaces, ...) could not
be changed. World: the pack's policy objects, in-process."""

from __future__ import annotations

from policies.gpu_policies.pack import POLICIES

SYSTEM = ["systemNamespaces"]
# name -> (enforcement level, the settings of its config schema)
EXPECTED = {
    "gpu-node-group-labels": ("mandatory", ["requiredLabels"]),
    "tenant-namespace-labels": ("mandatory", ["requiredLabels", "systemNamespaces"]),
    "aws-gpu-cost-tags": ("mandatory", ["requiredTags"]),
    "namespace-pod-security": ("mandatory", ["allowedLevels", "systemNamespaces"]),
    "privileged-namespaces": ("mandatory", ["privilegedNamespaces"]),
    "namespace-resource-quota": ("mandatory", SYSTEM),
    "namespace-limit-range": ("mandatory", SYSTEM),
    "namespace-default-deny": ("mandatory", SYSTEM),
    "namespace-dns-allow": ("mandatory", SYSTEM),
    "namespace-local-queue": ("mandatory", SYSTEM),
    "tenant-no-cluster-admin": ("mandatory", SYSTEM),
    "tenant-role-wildcards": ("mandatory", SYSTEM),
    "tenant-groups-namespace-scoped": ("mandatory", ["platformGroups", "systemNamespaces"]),
    "cluster-queue-namespace-selector": ("mandatory", []),
    "cluster-queue-tenant-scope": ("mandatory", SYSTEM),
    "resource-flavor-matches-pool": ("mandatory", ["requiredLabels"]),
    "flavor-single-workload": ("mandatory", []),
    "cpu-only-flavor": ("mandatory", []),
    "cluster-queue-flavors": ("mandatory", []),
    "nominal-quota-fits-capacity": ("mandatory", []),
    "namespace-quota-covers-queue": ("advisory", SYSTEM),
    "karpenter-nodepool-limits": ("mandatory", []),
    "karpenter-ami-pinned": ("advisory", []),
    "workload-gpu-toleration": ("mandatory", SYSTEM),
    "workload-queue-name": ("mandatory", SYSTEM),
    "workload-gpu-limits-only": ("mandatory", SYSTEM),
    "workload-shared-gpu-per-container": ("mandatory", SYSTEM),
    "workload-no-host-access": ("mandatory", SYSTEM),
    "workload-no-privileged": ("mandatory", SYSTEM),
    "workload-no-gpu-squatting": ("mandatory", SYSTEM),
    "tenant-priorities": ("mandatory", SYSTEM),
    "helm-chart-pinned": ("mandatory", []),
    "no-kueue-v1beta1": ("mandatory", ["forbiddenApiVersions"]),
    "images-from-allowed-registries": ("mandatory", SYSTEM),
    "image-tags-pinned": ("advisory", []),
    "recommended-labels": ("advisory", ["recommendedLabels"]),
}


def test_each_rule_has_its_level_and_the_settings_an_operator_may_set() -> None:
    got = {p.name: (p.enforcement_level.value, sorted(p.config_schema.properties) if p.config_schema else [])
           for p in POLICIES if p.name in EXPECTED}
    assert got == EXPECTED
