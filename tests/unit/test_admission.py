"""The tenant workload ValidatingAdmissionPolicy under mocks (prod stack), and its shape per config.

The CEL itself is compiled and run by a real kube-apiserver in the integration layer; here: the policy
and binding exist as the API expects, are bound to tenant namespaces only, fail closed, deny, match the
workload kinds users submit, and every rule names what it checks.
"""

from __future__ import annotations

from typing import Any

from components.admission import matched_apis, policy_spec
from gpu_platform import conventions as cv
from gpu_platform.plan import build_plan
from gpu_platform.spec import load_platform
from tests.conftest import plan_of, platform_raw, rendered

STACK = "prod"
VAP = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"
VAPB = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding"


def policy(name: str = cv.TENANT_WORKLOAD_POLICY) -> dict[str, Any]:
    (r,) = [r for r in rendered(STACK).by_type(VAP) if r.inputs["metadata"]["name"] == name]
    return r.inputs


def binding(name: str = cv.TENANT_WORKLOAD_POLICY) -> dict[str, Any]:
    (r,) = [r for r in rendered(STACK).by_type(VAPB) if r.inputs["metadata"]["name"] == name]
    return r.inputs


def selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """Label selector semantics for the operators the policy may use."""
    for key, value in selector.get("matchLabels", {}).items():
        if labels.get(key) != value:
            return False
    for e in selector.get("matchExpressions", []):
        op, key = e["operator"], e["key"]
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
        if op == "In" and labels.get(key) not in e["values"]:
            return False
        if op == "NotIn" and key in labels and labels[key] in e["values"]:
            return False
    return True


def plan_with(integrations: list[str]):
    raw = platform_raw(STACK)
    raw.setdefault("addons", {}).setdefault("kueue", {})["integrations"] = integrations
    return build_plan(load_platform(raw, "us-east-1"), "us-east-1")


def matched(spec: dict[str, Any]) -> set[tuple[str, str, str]]:
    return {
        (g, v, res)
        for rule in spec["matchConstraints"]["resourceRules"]
        for g in rule["apiGroups"] for v in rule["apiVersions"] for res in rule["resources"]
    }


def test_each_policy_has_a_binding_that_denies_and_fails_closed() -> None:
    names = {r.inputs["metadata"]["name"] for r in rendered(STACK).by_type(VAP)}
    assert names == {cv.TENANT_WORKLOAD_POLICY, cv.TENANT_PRIORITY_POLICY, cv.TENANT_NETWORK_POLICY_GUARD,
                     cv.TENANT_IMAGE_POLICY, cv.TENANT_JOB_CLEANUP_POLICY}
    assert {r.inputs["metadata"]["name"] for r in rendered(STACK).by_type(VAPB)} == names
    for name in names:
        p, b = policy(name), binding(name)
        assert p["apiVersion"] == b["apiVersion"] == "admissionregistration.k8s.io/v1"
        assert b["spec"]["policyName"] == name
        assert b["spec"]["validationActions"] == ["Deny"]
        assert p["spec"]["failurePolicy"] == "Fail"
        for obj in (p, b):
            assert obj["metadata"]["labels"][cv.MANAGED_BY] == cv.MANAGED_BY_VALUE
    for r in rendered(STACK).by_type(VAPB):
        (policy_resource,) = [x for x in rendered(STACK).by_type(VAP)
                              if x.inputs["metadata"]["name"] == r.inputs["spec"]["policyName"]]
        assert policy_resource.name in r.options["dependencies"]


def test_bound_to_tenant_namespaces_only() -> None:
    tenant = {ns for t in plan_of(STACK).teams for ns in t.namespaces}
    namespaces = {o["metadata"]["name"]: o["metadata"].get("labels", {})
                  for o in rendered(STACK).kubernetes_objects() if o["kind"] == "Namespace"}
    # Kubernetes' and the platform's namespaces, labelled as the API server labels them.
    for ns in cv.RESERVED_NAMESPACES:
        namespaces.setdefault(ns, {})
    for name in (cv.TENANT_WORKLOAD_POLICY, cv.TENANT_NETWORK_POLICY_GUARD):
        for selector in (policy(name)["spec"]["matchConstraints"]["namespaceSelector"],
                         binding(name)["spec"]["matchResources"]["namespaceSelector"]):
            chosen = {ns for ns, labels in namespaces.items()
                      if selects(selector, {**labels, "kubernetes.io/metadata.name": ns})}
            assert chosen == tenant, name


def test_network_policies_in_tenant_namespaces_need_a_cluster_wide_grant() -> None:
    """Teams hold `edit`/`admin`, which may write NetworkPolicies; an extra allow-all would void the
    default deny. The guard asks the authorizer without a namespace: only a ClusterRoleBinding passes."""
    spec = policy(cv.TENANT_NETWORK_POLICY_GUARD)["spec"]
    assert matched(spec) == {("networking.k8s.io", "v1", "networkpolicies")}
    (rule,) = spec["matchConstraints"]["resourceRules"]
    assert set(rule["operations"]) == {"CREATE", "UPDATE", "DELETE"}
    (check,) = spec["validations"]
    assert check["expression"].startswith("authorizer.group('networking.k8s.io').resource('networkpolicies')")
    assert ".namespace(" not in check["expression"]
    assert check["expression"].endswith(".allowed()")


def test_matches_pods_jobs_and_the_configured_integrations_on_create_and_update() -> None:
    spec = policy()["spec"]
    got = matched(spec)
    assert {("", "v1", "pods"), ("batch", "v1", "jobs")} <= got
    # prod keeps Kueue's default integrations: JobSet, PyTorchJob, Ray and Deployments are checked too.
    assert {("jobset.x-k8s.io", "v1alpha2", "jobsets"), ("kubeflow.org", "v1", "pytorchjobs"),
            ("ray.io", "v1", "rayjobs"), ("ray.io", "v1", "rayclusters"), ("apps", "v1", "deployments")} <= got
    for rule in spec["matchConstraints"]["resourceRules"]:
        assert set(rule["operations"]) == {"CREATE", "UPDATE"}
        assert "*" not in rule["resources"] and "*" not in rule["apiGroups"]


def test_pods_jobs_and_every_builtin_pod_maker_are_checked_even_without_integrations() -> None:
    """A kind Kueue cannot queue must still be matched, or it would run GPUs unqueued (it is refused GPUs)."""
    got = matched(policy_spec(plan_with([])))
    assert got == {("", "v1", "pods"), ("batch", "v1", "jobs"), ("batch", "v1", "cronjobs"),
                   ("apps", "v1", "deployments"), ("apps", "v1", "statefulsets"),
                   ("apps", "v1", "replicasets"), ("apps", "v1", "daemonsets")}


def test_an_enabled_integration_extends_the_match() -> None:
    got = matched(policy_spec(plan_with(["batch/job", "leaderworkerset.x-k8s.io/leaderworkerset", "statefulset"])))
    assert ("leaderworkerset.x-k8s.io", "v1", "leaderworkersets") in got
    assert ("apps", "v1", "statefulsets") in got
    assert ("jobset.x-k8s.io", "v1alpha2", "jobsets") not in got


def test_every_matched_kind_has_its_pod_specs_located() -> None:
    every = plan_with(list(cv.KUEUE_INTEGRATION_APIS))
    spec = policy_spec(every)
    pod_specs = next(v for v in spec["variables"] if v["name"] == "podTemplates")["expression"]
    for _group, _version, _plural, kind in matched_apis(every):
        assert f"request.kind.kind == '{kind}'" in pod_specs, kind


def test_rules_cover_queue_label_gpu_names_integers_requests_and_host_namespaces() -> None:
    spec = policy()["spec"]
    text = " ".join(v["expression"] for v in spec["variables"]) + " ".join(x["expression"] for x in spec["validations"])
    assert f"'{cv.QUEUE_NAME_LABEL}'" in text
    for name in (cv.GPU_RESOURCE, cv.SHARED_GPU_RESOURCE):
        assert f"'{name}'" in text
    assert f"startsWith('{cv.MIG_RESOURCE_PREFIX}')" in text
    assert ".asApproximateFloat()" in text and ".compareTo(" in text
    for field in ("hostNetwork", "hostPID", "hostIPC"):
        assert f"s.{field}" in text
    # Controller-owned objects (a Job's pods, a JobSet's jobs) are exempt from the queue rules only.
    queue_rules = [v["expression"] for v in spec["validations"][:2]]
    assert "variables.queueable" in queue_rules[0] and "variables.queueName" in queue_rules[1]
    assert all("variables.controlled" in r for r in queue_rules)
    assert all("controlled" not in v["expression"] for v in spec["validations"][2:])
    for v in spec["validations"]:
        assert (v.get("message") or v.get("messageExpression")) and v["reason"] in ("Forbidden", "Invalid")


def test_cel_is_well_formed() -> None:
    """Balanced brackets and quotes in every expression: a cheap guard against a broken edit (the real
    compiler runs in the integration layer)."""
    spec = policy()["spec"]
    exprs = [v["expression"] for v in spec["variables"]] + [v["expression"] for v in spec["validations"]]
    exprs += [c["expression"] for c in spec["matchConditions"]]
    pairs = {")": "(", "]": "[", "}": "{"}
    for expr in exprs:
        stack: list[str] = []
        quoted = False
        for i, ch in enumerate(expr):
            if ch == "'" and (i == 0 or expr[i - 1] != "\\"):
                quoted = not quoted
            elif not quoted and ch in "([{":
                stack.append(ch)
            elif not quoted and ch in pairs:
                assert stack and stack.pop() == pairs[ch], expr
        assert not stack and not quoted, expr


def test_objects_being_deleted_are_not_checked() -> None:
    conditions = policy()["spec"]["matchConditions"]
    assert [c["expression"] for c in conditions] == ["!has(object.metadata.deletionTimestamp)"]
