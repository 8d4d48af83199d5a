"""The tenant workload ValidatingAdmissionPolicy under mocks (prod stack), and its shape per config.

The CEL itself is evaluated against sample requests in test_admission_cel.py (cel-python) and run by a
real kube-apiserver in the integration and live layers; here: the policy and binding exist as the API
expects, are bound to tenant namespaces only, fail closed, deny, match the workload kinds users submit,
find the pod templates of each, and every rule names what it checks.
"""

from __future__ import annotations

from typing import Any

from components.admission import matched_apis, policy_spec
from gpu_platform import conventions as cv
from gpu_platform.plan import build_plan
from gpu_platform.spec import load_platform
from tests import cel
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
    # What the one check asks the authorizer is evaluated in test_admission_cel.py (cluster-wide grants only).
    (check,) = spec["validations"]
    assert check["reason"] == "Forbidden" and "managed by the platform" in check["message"]


def test_matches_pods_jobs_and_the_configured_integrations_on_create_and_update() -> None:
    spec = policy()["spec"]
    got = matched(spec)
    assert {("", "v1", "pods"), ("batch", "v1", "jobs")} <= got
    # prod's integrations follow its installed controllers: JobSet, TrainJob, LeaderWorkerSet, Ray and Deployments
    # are checked too; PyTorchJob (Kubeflow Training Operator v1, which no add-on installs) is not queued.
    assert {("jobset.x-k8s.io", "v1alpha2", "jobsets"), ("trainer.kubeflow.org", "v1alpha1", "trainjobs"),
            ("leaderworkerset.x-k8s.io", "v1", "leaderworkersets"), ("ray.io", "v1", "rayjobs"),
            ("ray.io", "v1", "rayclusters"), ("apps", "v1", "deployments")} <= got
    assert ("kubeflow.org", "v1", "pytorchjobs") not in got
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


def _template(tag: str) -> dict[str, Any]:
    return {"metadata": {"labels": {"sample": tag}}, "spec": {"containers": [{"name": tag, "image": "busybox:1.37"}]}}


# Where each kind keeps its pod templates, from each project's API (core/v1, batch/v1, apps/v1, JobSet
# v1alpha2, LeaderWorkerSet v1, Kubeflow training-operator v1, Kubeflow Trainer v1alpha1, KubeRay v1): (object
# spec, its templates).
SAMPLES: dict[str, tuple[dict[str, Any], list[str]]] = {
    "Job": ({"template": _template("job")}, ["job"]),
    "CronJob": ({"schedule": "@daily", "jobTemplate": {"spec": {"template": _template("cron")}}}, ["cron"]),
    "Deployment": ({"template": _template("deploy")}, ["deploy"]),
    "StatefulSet": ({"template": _template("sts")}, ["sts"]),
    "ReplicaSet": ({"template": _template("rs")}, ["rs"]),
    "DaemonSet": ({"template": _template("ds")}, ["ds"]),
    "JobSet": ({"replicatedJobs": [{"name": "a", "template": {"spec": {"template": _template("js-a")}}},
                                   {"name": "b", "template": {"spec": {"template": _template("js-b")}}}]},
               ["js-a", "js-b"]),
    "LeaderWorkerSet": ({"leaderWorkerTemplate": {"leaderTemplate": _template("leader"),
                                                  "workerTemplate": _template("worker")}}, ["worker", "leader"]),
    "PyTorchJob": ({"pytorchReplicaSpecs": {"Master": {"template": _template("master")},
                                            "Worker": {"template": _template("pt-worker")}}},
                   ["master", "pt-worker"]),
    "RayCluster": ({"headGroupSpec": {"template": _template("head")},
                    "workerGroupSpecs": [{"groupName": "w", "template": _template("ray-worker")}]},
                   ["head", "ray-worker"]),
    "RayJob": ({"rayClusterSpec": {"headGroupSpec": {"template": _template("job-head")},
                                   "workerGroupSpecs": [{"groupName": "w", "template": _template("job-worker")}]},
                "submitterPodTemplate": _template("submitter")},
               ["job-head", "job-worker", "submitter"]),
    # No pod template of its own: the trainer's resources and the runtime patches are read where they are.
    "TrainJob": ({"runtimeRef": {"name": "torch-distributed"}, "trainer": {"image": "busybox:1.37"}}, []),
}


def test_every_matched_kind_has_its_pod_specs_located() -> None:
    """The podTemplates variable, evaluated for a sample of each matched kind, finds exactly its templates
    (a Pod is its own)."""
    every = plan_with(list(cv.KUEUE_INTEGRATION_APIS))
    spec = policy_spec(every)
    expression = next(v for v in spec["variables"] if v["name"] == "podTemplates")["expression"]
    kinds = [api[3] for api in matched_apis(every)]
    assert set(kinds) == set(SAMPLES) | {"Pod"}
    for group, version, _plural, kind in matched_apis(every):
        meta = {"name": "x", "namespace": "team-a"}
        if kind == "Pod":
            obj, want = {"metadata": {**meta, "labels": {"sample": "pod"}}, "spec": _template("pod")["spec"]}, ["pod"]
        else:
            obj, want = {"metadata": meta, "spec": SAMPLES[kind][0]}, SAMPLES[kind][1]
        obj = {"apiVersion": f"{group}/{version}".lstrip("/"), "kind": kind, **obj}
        request = cel.Request(kind=kind, group=group, version=version, namespace="team-a", name="x")
        found = cel.evaluate(expression, {"object": cel.to_cel(obj), "request": cel.to_cel(request.to_json())})
        assert [str(t["metadata"]["labels"]["sample"]) for t in found] == want, kind


def test_rule_messages_and_reasons() -> None:
    """Every rule says what it checks; the queue rules come first (test_admission_cel.py evaluates each)."""
    spec = policy()["spec"]
    assert "Kueue cannot queue a " in spec["validations"][0]["messageExpression"]
    assert spec["validations"][1]["message"].startswith("workloads that request GPUs must name a Kueue LocalQueue")
    for v in spec["validations"]:
        assert (v.get("message") or v.get("messageExpression")) and v["reason"] in ("Forbidden", "Invalid")
