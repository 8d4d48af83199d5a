"""A mandatory rule never passes silently on a value that is unknown during preview.

During `pulumi preview` the engine sends unknown values as sentinel strings, and the SDK's proxy raises
when a rule reads one; left alone, the SDK turns that into an advisory note and the mandatory check is
skipped. Each case below makes the value a rule depends on unknown and expects a violation at the rule's
own level that says so.
"""

from __future__ import annotations

from typing import Any, Callable

import pytest
from pulumi_policy.proxy import (
    UNKNOWN_ARRAY_VALUE as ARRAY,
    UNKNOWN_BOOLEAN_VALUE as BOOLEAN,
    UNKNOWN_NUMBER_VALUE as NUMBER,
    UNKNOWN_OBJECT_VALUE as OBJECT,
    UNKNOWN_STRING_VALUE as STRING,
    unknown_checking_proxy,
)

from gpu_platform import conventions as cv
from policies.gpu_policies.offline import check_resources
from policies.gpu_policies.pack import POLICIES

from tests.policy.helpers import ALPHA, ROLE, find, gpu_pod_spec, job, meta, policy, res, run, world

World = list[dict[str, Any]]


def at(name: str, *path: Any, value: str) -> Callable[[World], None]:
    """Set the value at `path` inside the inputs of resource `name` to an unknown sentinel."""
    def mutate(w: World) -> None:
        node = find(w, name)["inputs"]
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
    return mutate


def on_karpenter(mutate: Callable[[World], None]) -> Callable[[World], None]:
    """Run `mutate` on the world whose train pool is a Karpenter NodePool and EC2NodeClass."""
    def f(w: World) -> None:
        w[:] = world(karpenter=True)
        mutate(w)
    return f


def with_job(pod_spec: dict[str, Any]) -> Callable[[World], None]:
    return lambda w: w.append(job(ALPHA.name, pod_spec))


CASES: dict[str, Callable[[World], None]] = {
    "gpu-node-group-labels": at("ng-train", "labels", value=OBJECT),
    "tenant-namespace-labels": at("ns-alpha", "metadata", "labels", cv.TEAM, value=STRING),
    "aws-gpu-cost-tags": at("lt-train", "tagSpecifications", value=ARRAY),
    "namespace-pod-security": at("ns-alpha", "metadata", "labels", cv.PSA_ENFORCE, value=STRING),
    "privileged-namespaces": at("ns-beta", "metadata", "labels", cv.PSA_ENFORCE, value=STRING),
    "namespace-resource-quota": at("quota-alpha", "spec", "hard", value=OBJECT),
    "namespace-limit-range": at("limits-alpha", "spec", "limits", value=ARRAY),
    "namespace-default-deny": at("deny-alpha", "spec", "policyTypes", value=ARRAY),
    "namespace-dns-allow": at("dns-alpha", "spec", "egress", value=ARRAY),
    "namespace-local-queue": at("lq-alpha", "spec", "clusterQueue", value=STRING),
    "tenant-no-cluster-admin": at("rb-alpha-admins", "roleRef", "name", value=STRING),
    "tenant-role-wildcards": lambda w: w.append(res(ROLE, "role-x", {"metadata": meta("x", ALPHA.name),
                                                                     "rules": ARRAY})),
    "tenant-groups-namespace-scoped": at("rb-alpha-admins", "subjects", value=ARRAY),
    "cluster-queue-namespace-selector": at("cq-alpha", "spec", "namespaceSelector", value=OBJECT),
    "cluster-queue-tenant-scope": at("cq-alpha", "spec", "namespaceSelector", "matchLabels", cv.TEAM, value=STRING),
    "resource-flavor-matches-pool": at("flavor-train", "spec", "nodeLabels", cv.POOL, value=STRING),
    "flavor-single-workload": at("flavor-train", "spec", "tolerations", value=ARRAY),
    "cluster-queue-flavors": at("cq-alpha", "spec", "resourceGroups", value=ARRAY),
    "cpu-only-flavor": at("flavor-cpu-only", "spec", "tolerations", value=ARRAY),
    "nominal-quota-fits-capacity": at("ng-train", "scalingConfig", "maxSize", value=NUMBER),
    "namespace-quota-covers-queue": at("quota-alpha", "spec", "hard", f"requests.{cv.GPU_RESOURCE}", value=STRING),
    "workload-gpu-toleration": with_job({**gpu_pod_spec(), "tolerations": ARRAY}),
    "workload-queue-name": with_job({**gpu_pod_spec(), "containers": ARRAY}),
    "workload-gpu-limits-only": with_job({**gpu_pod_spec(), "containers": [{"name": "m", "resources": OBJECT}]}),
    "workload-no-host-access": with_job(gpu_pod_spec(hostPID=BOOLEAN)),
    "workload-shared-gpu-per-container": with_job({**gpu_pod_spec(), "containers": [
        {"name": "m", "resources": {"limits": {cv.SHARED_GPU_RESOURCE: STRING}}}]}),
    "workload-no-gpu-squatting": with_job({"containers": [{"name": "m", "image": "x:1"}], "tolerations": ARRAY}),
    "tenant-priorities": at("ns-alpha", "metadata", "annotations", value=OBJECT),
    "workload-no-privileged": with_job({**gpu_pod_spec(), "containers": [{"name": "m", "securityContext": OBJECT}]}),
    "helm-chart-pinned": at("gpu-operator", "version", value=STRING),
    "images-from-allowed-registries": at("gpu-operator", "values", value=OBJECT),
    "image-tags-pinned": with_job({**gpu_pod_spec(), "containers": [{"name": "m", "image": STRING}]}),
    "recommended-labels": at("cq-alpha", "metadata", "labels", value=OBJECT),
    "karpenter-nodepool-limits": on_karpenter(at("np-train", "spec", "limits", value=OBJECT)),
    "karpenter-ami-pinned": on_karpenter(at("nc-train", "spec", "amiSelectorTerms", value=ARRAY)),
}
# Rules that read nothing a preview can leave unknown: the API version is in the type token.
TOKEN_ONLY = {"no-kueue-v1beta1"}


def test_every_rule_is_covered() -> None:
    assert set(CASES) | TOKEN_ONLY == {p.name for p in POLICIES}


@pytest.mark.parametrize("rule", sorted(CASES))
def test_unknown_value_is_a_violation_at_the_rules_level(rule: str) -> None:
    w = world()
    CASES[rule](w)
    p = policy(rule)
    found = [v for v in check_resources(w, policies=[p]) if "cannot be verified" in v.message]
    assert found, f"{rule} passed silently over an unknown value"
    assert all(v.level == p.enforcement_level.value for v in found)
    assert all("can't be known during preview" in v.message for v in found)


@pytest.mark.parametrize("rule", sorted(CASES))
def test_engine_proxy_shape(rule: str) -> None:
    """The same through the SDK's own unknown-checking proxy handed straight to the policy."""
    w = world()
    CASES[rule](w)
    found = run(rule, w, wrap=unknown_checking_proxy)
    assert any("cannot be verified" in f.message for f in found)


def test_unknown_image_does_not_hide_a_privileged_container() -> None:
    """An unknown string elsewhere in a pod spec (an image from another resource's output) does not stop
    the walk that finds pod specs, so the rules still judge what is known."""
    w = world()
    w.append(job(ALPHA.name, {**gpu_pod_spec(), "containers": [
        {"name": "m", "image": STRING, "securityContext": {"privileged": True}}]}))
    found = [v for v in check_resources(w, policies=[policy("workload-no-privileged")])]
    assert [v.message for v in found if "privileged" in v.message and "cannot" not in v.message]


def test_provider_computed_hints_may_be_unknown() -> None:
    """Stack rules see outputs; in a preview AWS leaves a node group's `instanceTypes` unknown when the launch
    template sets the instance type. Rules use it only as a hint, so that alone is no violation: the
    capacity comes from the pool's launch template instead."""
    w = world()
    for r in w:
        if r["type"] == "aws:eks/nodeGroup:NodeGroup":
            r["inputs"]["instanceTypes"] = ARRAY
    assert check_resources(w) == []


def test_a_checked_value_stays_fail_closed_next_to_unknown_hints() -> None:
    w = world()
    ng = find(w, "ng-train")["inputs"]
    ng["instanceTypes"] = ARRAY
    ng["scalingConfig"]["maxSize"] = NUMBER
    found = check_resources(w, policies=[policy("nominal-quota-fits-capacity")])
    assert [v for v in found if v.resource.endswith(" ng-train") and "cannot be verified" in v.message]
