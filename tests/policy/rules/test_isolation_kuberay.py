"""The platform's KubeRay allow through the isolation rules: a tenant namespace that lets KubeRay's operator reach
its Ray heads is still an isolated tenant namespace, and the allow is never taken for the default deny it punches a
hole in.

The allow is written here from conventions (as the world is), not copied from components/tenancy.py.
"""

from __future__ import annotations

from typing import Any

from gpu_platform import conventions as cv
from policies.gpu_policies.offline import check_resources, format_violations

from tests.conftest import plan_of, rendered
from tests.policy.helpers import NETWORK_POLICY, TEAMS, find, meta, res, run, world

ISOLATION_RULES = ("namespace-default-deny", "namespace-dns-allow", "namespace-resource-quota",
                   "namespace-limit-range", "namespace-local-queue", "namespace-pod-security")


def kuberay_allow(namespace: str) -> dict[str, Any]:
    return res(NETWORK_POLICY, f"kuberay-{namespace}", {
        "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
        "metadata": meta(cv.NETWORK_POLICY_ALLOW_KUBERAY, namespace),
        "spec": {
            "podSelector": {"matchLabels": dict(cv.RAY_HEAD_POD_LABELS)},
            "policyTypes": ["Ingress"],
            "ingress": [{
                "from": [{"namespaceSelector": {"matchLabels": {
                              cv.NAMESPACE_NAME_LABEL: cv.KUBERAY_OPERATOR_NAMESPACE}},
                          "podSelector": {"matchLabels": dict(cv.KUBERAY_OPERATOR_POD_LABELS)}}],
                "ports": [{"protocol": "TCP", "port": cv.RAY_DASHBOARD_PORT},
                          {"protocol": "TCP", "port": cv.RAY_CLIENT_PORT}],
            }],
        },
    })


def test_the_pack_accepts_the_kuberay_allow_in_every_tenant_namespace() -> None:
    w = world()
    w += [kuberay_allow(t.name) for t in TEAMS]
    found = check_resources(w)
    assert found == [], format_violations(found, "world with the KubeRay allow")


def test_the_kuberay_allow_is_not_a_default_deny() -> None:
    """It selects only heads and carries a rule: without the namespace's own default deny, the namespace is
    still reported by `namespace-default-deny`, for both directions."""
    w = world()
    w.append(kuberay_allow("alpha"))
    w.remove(find(w, "deny-alpha"))
    messages = [f.message for f in run("namespace-default-deny", w) if f.resource == "ns-alpha"]
    assert len(messages) == 1 and "no default-deny NetworkPolicy for Ingress and Egress" in messages[0], messages


def test_the_rendered_prod_stack_with_its_kuberay_allows_passes_the_isolation_rules() -> None:
    """prod (Ray integrations on) renders the allow in every team namespace, and the isolation rules pass."""
    resources = [r.to_json() for r in rendered("prod").custom]
    allows = {r["inputs"]["metadata"]["namespace"] for r in resources
              if r["inputs"].get("kind") == "NetworkPolicy"
              and r["inputs"]["metadata"]["name"] == cv.NETWORK_POLICY_ALLOW_KUBERAY}
    assert allows == {ns for t in plan_of("prod").teams for ns in t.namespaces}
    for rule in ISOLATION_RULES:
        assert run(rule, resources) == [], rule
