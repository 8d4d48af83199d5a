"""The RBAC rules (policies/gpu_policies/rbac.py): no cluster-admin and no wildcard roles for tenants, and tenant
groups bound only in their own namespaces."""

from __future__ import annotations

import pytest

from gpu_platform import conventions as cv

from tests.policy.helpers import (
    ALPHA, BETA, CLUSTER_ROLE, CLUSTER_ROLE_BINDING, RBAC, ROLE, ROLE_BINDING, meta, named, res, run, world,
)
from tests.policy.rules.cases import Allowed, Disallowed, add, check_allowed, check_disallowed, inputs


# (what, rule, mutation, resource the violation names, words the message contains)
DISALLOWED: list[Disallowed] = [
    ("tenant RoleBinding to cluster-admin", "tenant-no-cluster-admin",
     lambda w: inputs(w, "rb-alpha-admins")["roleRef"].update(name=cv.CLUSTER_ROLE_CLUSTER_ADMIN), "rb-alpha-admins",
     cv.CLUSTER_ROLE_CLUSTER_ADMIN),
    ("tenant Role with wildcard verbs", "tenant-role-wildcards",
     add(res(ROLE, "role-alpha", {"metadata": meta("power", ALPHA.name),
                                  "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["*"]}]})),
     "role-alpha", "verbs"),
    ("cluster role with wildcard resources bound in a tenant namespace", "tenant-role-wildcards",
     lambda w: w.extend([
         res(CLUSTER_ROLE, "cr-wide", {"metadata": meta("wide"),
                                       "rules": [{"apiGroups": ["apps"], "resources": ["*"], "verbs": ["get"]}]}),
         res(ROLE_BINDING, "rb-wide", {"metadata": meta("wide", BETA.name),
                                       "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "wide"},
                                       "subjects": [{"kind": "Group", "name": "beta-members"}]})]),
     "cr-wide", "resources"),
    ("ClusterRoleBinding for a tenant group", "tenant-groups-namespace-scoped",
     add(res(CLUSTER_ROLE_BINDING, "crb-alpha", {
         "metadata": meta("alpha-view"), "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "view"},
         "subjects": [{"kind": "Group", "name": "alpha-members", "apiGroup": RBAC}]})),
     "crb-alpha", "alpha-members"),
    ("tenant group bound in a system namespace", "tenant-groups-namespace-scoped",
     add(res(ROLE_BINDING, "rb-operator", {
         "metadata": meta("peek", cv.GPU_OPERATOR_NAMESPACE),
         "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "view"},
         "subjects": [{"kind": "Group", "name": "beta-admins", "apiGroup": RBAC}]})),
     "rb-operator", cv.GPU_OPERATOR_NAMESPACE),
]


@pytest.mark.parametrize("case", DISALLOWED, ids=[c[0] for c in DISALLOWED])
def test_disallowed_is_reported(case: Disallowed) -> None:
    check_disallowed(case)


# (what, rule, mutation); cases that need config have tests of their own
ALLOWED: list[Allowed] = [
    ("RoleBinding to cluster-admin in a system namespace", "tenant-no-cluster-admin",
     lambda w: w.append(res(ROLE_BINDING, "rb-sys", {
         "metadata": meta("sys", cv.KUBE_SYSTEM_NAMESPACE),
         "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": cv.CLUSTER_ROLE_CLUSTER_ADMIN},
         "subjects": [{"kind": "Group", "name": "platform-admins"}]}))),
    ("wildcard ClusterRole bound to no tenant", "tenant-role-wildcards", lambda w: w.append(
        res(CLUSTER_ROLE, "cr-ops", {"metadata": meta("ops"),
                                     "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]}))),
]


@pytest.mark.parametrize("case", ALLOWED, ids=[c[0] for c in ALLOWED])
def test_allowed_passes(case: Allowed) -> None:
    check_allowed(case)


def test_platform_groups_come_from_config() -> None:
    """A platform group bound in a tenant namespace and cluster-wide is no tenant group once configured."""
    w = world()
    w += [
        res(CLUSTER_ROLE_BINDING, "crb-ops", {"metadata": meta("ops"),
                                              "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "ops"},
                                              "subjects": [{"kind": "Group", "name": "ops-team"}]}),
        res(ROLE_BINDING, "rb-ops", {"metadata": meta("ops", ALPHA.name),
                                     "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": cv.CLUSTER_ROLE_ADMIN},
                                     "subjects": [{"kind": "Group", "name": "ops-team"}]}),
    ]
    assert named(run("tenant-groups-namespace-scoped", w), "crb-ops")
    assert run("tenant-groups-namespace-scoped", w, {"platformGroups": ["ops-team"]}) == []
