"""The tenant network policies as the live API server holds them after `pulumi up`, and what a tenant may not
change about them (KubeRay's operator through the default deny included).

KubeRay is not installed on the local cluster and KWOK runs no Ray, so what is asserted here is the part
the platform owns: the deployed allow, exactly, in every team namespace, and the guard that keeps tenants
from adding or changing one, refused by the ValidatingAdmissionPolicy's name on the real API server.
"""

from __future__ import annotations

import json

from gpu_platform import conventions as cv
from tests.kuberay_allow import KUBERAY_ALLOW
from tests.live.conftest import Live

GUARD = f"ValidatingAdmissionPolicy '{cv.TENANT_NETWORK_POLICY_GUARD}'"
GUARD_MESSAGE = "NetworkPolicies in team namespaces are managed by the platform"


def test_the_kuberay_allow_is_deployed_in_every_team_namespace(live: Live) -> None:
    """The live stack keeps Kueue's default integrations (RayJob and RayCluster among them)."""
    assert {"ray.io/rayjob", "ray.io/raycluster"} <= set(live.plan.addons.kueue.integrations)
    for team in live.plan.teams:
        for ns in team.namespaces:
            policy = live.get("networkpolicy", cv.NETWORK_POLICY_ALLOW_KUBERAY, "-n", ns)
            assert policy["spec"] == KUBERAY_ALLOW, ns


def test_a_tenant_can_neither_add_a_wider_allow_nor_change_the_platforms(live: Live) -> None:
    ns = live.namespace("alpha")
    # A member's own allow: every namespace to the team's Ray heads' dashboard.
    wide = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": "allow-dashboard-from-anywhere", "namespace": ns},
            "spec": {"podSelector": {"matchLabels": {"ray.io/node-type": "head"}}, "policyTypes": ["Ingress"],
                     "ingress": [{"from": [{"namespaceSelector": {}}], "ports": [{"protocol": "TCP", "port": 8265}]}]}}
    out = live.create(wide, as_team="alpha", check=False)
    assert out.returncode != 0, "a tenant added a NetworkPolicy"
    assert GUARD in out.stderr and GUARD_MESSAGE in out.stderr, out.stderr
    # ... nor widen the platform's (from every namespace) or delete it.
    patch = json.dumps([{"op": "replace", "path": "/spec/ingress/0/from/0/namespaceSelector", "value": {}}])
    out = live.kubectl("patch", "networkpolicy", cv.NETWORK_POLICY_ALLOW_KUBERAY, "-n", ns, "--type=json",
                       "-p", patch, as_team="alpha", check=False)
    assert out.returncode != 0 and GUARD in out.stderr and GUARD_MESSAGE in out.stderr, out.stderr
    out = live.kubectl("delete", "networkpolicy", cv.NETWORK_POLICY_ALLOW_KUBERAY, "-n", ns, as_team="alpha",
                       check=False)
    assert out.returncode != 0 and GUARD in out.stderr and GUARD_MESSAGE in out.stderr, out.stderr
    assert live.get("networkpolicy", cv.NETWORK_POLICY_ALLOW_KUBERAY, "-n", ns)["spec"] == KUBERAY_ALLOW
