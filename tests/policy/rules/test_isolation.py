"""The isolation rules (policies/gpu_policies/isolation.py): every tenant namespace has its Pod Security level,
quota, limit range, default deny, DNS allow and LocalQueue; privileged namespaces are the allowlisted ones."""

from __future__ import annotations

import pytest

from gpu_platform import conventions as cv

from tests.policy.helpers import ALPHA, BETA, MIG, NAMESPACE, NETWORK_POLICY, TRAIN, find, meta, res, run, world
from tests.policy.rules.cases import Allowed, Disallowed, add, check_allowed, check_disallowed, drop, labels_of, spec


# (what, rule, mutation, resource the violation names, words the message contains)
DISALLOWED: list[Disallowed] = [
    ("tenant namespace enforcing privileged", "namespace-pod-security",
     lambda w: labels_of(w, "ns-alpha").update({cv.PSA_ENFORCE: "privileged"}), "ns-alpha", "privileged"),
    ("tenant namespace without an enforce label", "namespace-pod-security",
     lambda w: labels_of(w, "ns-alpha").pop(cv.PSA_ENFORCE), "ns-alpha", cv.PSA_ENFORCE),
    ("privileged namespace not allowlisted", "privileged-namespaces",
     lambda w: labels_of(w, "ns-beta").update({cv.PSA_ENFORCE: "privileged"}), "ns-beta", "privileged"),
    ("system namespace without an enforce label", "privileged-namespaces",
     add(res(NAMESPACE, "ns-kueue", {"metadata": {"name": cv.KUEUE_NAMESPACE}})), "ns-kueue", "default"),
    ("namespace with a bogus Pod Security level", "privileged-namespaces",
     lambda w: labels_of(w, "ns-alpha").update({cv.PSA_ENFORCE: "lenient"}), "ns-alpha", "not a Pod Security level"),
    ("quota dropped", "namespace-resource-quota", drop("quota-alpha"), "ns-alpha", "ResourceQuota"),
    ("MIG resource uncapped", "namespace-resource-quota",
     lambda w: spec(w, "quota-beta")["hard"].pop(f"requests.{MIG.resource}"), "ns-beta", MIG.resource),
    ("quota only in a scope", "namespace-resource-quota",
     lambda w: spec(w, "quota-alpha").update(scopes=["BestEffort"]), "ns-alpha", "ResourceQuota"),
    ("fractional GPU quota", "namespace-resource-quota",
     lambda w: spec(w, "quota-alpha")["hard"].update({f"requests.{TRAIN.resource}": "1500m"}), "ns-alpha",
     "whole number"),
    ("limit range dropped", "namespace-limit-range", drop("limits-alpha"), "ns-alpha", "LimitRange"),
    ("default deny dropped", "namespace-default-deny", drop("deny-alpha"), "ns-alpha", "Ingress and Egress"),
    ("default deny for ingress only", "namespace-default-deny",
     lambda w: spec(w, "deny-alpha").update(policyTypes=["Ingress"]), "ns-alpha", "Egress"),
    ("default deny that selects some pods only", "namespace-default-deny",
     lambda w: spec(w, "deny-alpha").update(podSelector={"matchLabels": {"app": "x"}}), "ns-alpha", "default-deny"),
    ("default deny that allows all ingress", "namespace-default-deny",
     lambda w: spec(w, "deny-alpha").update(ingress=[{}]), "ns-alpha", "Ingress"),
    ("DNS allow dropped", "namespace-dns-allow", drop("dns-alpha"), "ns-alpha", "UDP"),
    ("DNS allowed over TCP only", "namespace-dns-allow",
     lambda w: spec(w, "dns-alpha")["egress"][0].update(ports=[{"port": cv.DNS_PORT}]), "ns-alpha", "UDP"),
    ("local queue dropped", "namespace-local-queue", drop("lq-alpha"), "ns-alpha", "LocalQueue"),
    ("local queue to a missing cluster queue", "namespace-local-queue",
     lambda w: spec(w, "lq-alpha").update(clusterQueue="nope"), "lq-alpha", "not in the stack"),
    ("local queue to another team's cluster queue", "namespace-local-queue",
     lambda w: spec(w, "lq-alpha").update(clusterQueue=BETA.name), "lq-alpha", "does not select"),
]


@pytest.mark.parametrize("case", DISALLOWED, ids=[c[0] for c in DISALLOWED])
def test_disallowed_is_reported(case: Disallowed) -> None:
    check_disallowed(case)


# (what, rule, mutation); cases that need config have tests of their own
ALLOWED: list[Allowed] = [
    ("restricted tenant namespace", "namespace-pod-security",
     lambda w: labels_of(w, "ns-alpha").update({cv.PSA_ENFORCE: "restricted"})),
    ("privileged GPU operator namespace", "privileged-namespaces", lambda w: None),
    ("default deny split into two policies", "namespace-default-deny", lambda w: w.extend([
        res(NETWORK_POLICY, "deny-in", {"metadata": meta("deny-in", ALPHA.name),
                                        "spec": {"podSelector": {}}}),  # policyTypes default: Ingress
        res(NETWORK_POLICY, "deny-out", {"metadata": meta("deny-out", ALPHA.name),
                                         "spec": {"podSelector": {}, "policyTypes": ["Egress"]}}),
    ]) or w.remove(find(w, "deny-alpha"))),
    ("DNS port given as a string", "namespace-dns-allow",
     lambda w: spec(w, "dns-alpha")["egress"][0].update(ports=[{"port": str(cv.DNS_PORT), "protocol": "UDP"}])),
]


@pytest.mark.parametrize("case", ALLOWED, ids=[c[0] for c in ALLOWED])
def test_allowed_passes(case: Allowed) -> None:
    check_allowed(case)


def test_privileged_allowlist_comes_from_config() -> None:
    w = world()
    assert run("privileged-namespaces", w, {"privilegedNamespaces": []})[0].resource == "ns-operator"
