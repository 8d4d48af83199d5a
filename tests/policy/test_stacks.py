"""The whole program's resources through the pack: every stack passes, and each seeded violation of a
rendered stack is caught by the rule it breaks.

Renders are the session's cached runs of the real program (tests/conftest.py); each mutation works on a
copy of the render-format resources and runs the one rule under test, so the suite stays fast.
"""

from __future__ import annotations

import copy
import functools
import pickle
from typing import Any, Callable

import pytest

from gpu_platform import conventions as cv
from policies.gpu_policies.offline import check_resources, format_violations
from policies.gpu_policies.pack import POLICIES

from tests.conftest import KARPENTER_STACK, STACKS, plan_of, rendered
from tests.policy.helpers import HELM_RELEASE, NODE_GROUP, POD, gpu_pod_spec, job, meta, policy, res

Resources = list[dict[str, Any]]


@functools.cache
def _data(stack: str) -> tuple[dict[str, Any], ...]:
    return tuple(r.to_json() for r in rendered(stack).custom)


def data(stack: str) -> Resources:
    """A fresh, mutable copy of a stack's rendered resources (render format). A pickle round trip is
    copy.deepcopy's result (every value is a plain container or scalar) at a fraction of its time."""
    return pickle.loads(pickle.dumps(list(_data(stack)), protocol=pickle.HIGHEST_PROTOCOL))


def obj(resources: Resources, kind: str, name: str | None = None, namespace: str | None = None) -> dict[str, Any]:
    """The one rendered Kubernetes object of that kind (and metadata name / namespace)."""
    found = [r for r in resources
             if r["inputs"].get("kind") == kind
             and (name is None or r["inputs"]["metadata"].get("name") == name)
             and (namespace is None or r["inputs"]["metadata"].get("namespace") == namespace)]
    assert found, f"no {kind} {namespace}/{name} in the render"
    return found[0]


@pytest.mark.parametrize("stack", (*STACKS, KARPENTER_STACK))
def test_stack_has_no_violations(stack: str) -> None:
    found = check_resources(list(_data(stack)))
    assert found == [], format_violations(found, stack)


def test_the_check_sees_the_whole_program() -> None:
    """Guard against a vacuous pass: prod's render holds what the rules are about."""
    resources = _data("prod")
    kinds = {r["inputs"].get("kind") for r in resources}
    assert {"Namespace", "ResourceQuota", "NetworkPolicy", "ClusterQueue", "ResourceFlavor", "LocalQueue"} <= kinds
    assert sum(r["type"] == NODE_GROUP for r in resources) == len(plan_of("prod").pools)


def first_team(stack: str) -> str:
    return plan_of(stack).teams[0].namespaces[0]


def drop_default_deny(r: Resources, stack: str) -> str:
    victim = obj(r, "NetworkPolicy", cv.NETWORK_POLICY_DEFAULT_DENY, first_team(stack))
    r.remove(victim)
    return obj(r, "Namespace", first_team(stack))["name"]


def add_privileged_pod(r: Resources, stack: str) -> str:
    r.append(res(POD, "seeded-pod", {"apiVersion": "v1", "kind": "Pod", "metadata": meta("debug", first_team(stack)),
                                      "spec": {"containers": [{"name": "sh", "image": "busybox:1.36",
                                                               "securityContext": {"privileged": True}}]}}))
    return "seeded-pod"


def add_host_network_job(r: Resources, stack: str) -> str:
    r.append(job(first_team(stack), gpu_pod_spec(hostNetwork=True), name="seeded"))
    return "job-seeded"


def add_unqueued_gpu_job(r: Resources, stack: str) -> str:
    r.append(job(first_team(stack), gpu_pod_spec(), queue=False, name="seeded"))
    return "job-seeded"


def clear_selector(r: Resources, stack: str) -> str:
    cq = obj(r, "ClusterQueue", cv.cluster_queue_name(plan_of(stack).teams[0].name))
    cq["inputs"]["spec"]["namespaceSelector"] = {}
    return cq["name"]


def remove_pool_label(r: Resources, stack: str) -> str:
    pool = plan_of(stack).pools[0].name
    ng = next(x for x in r if x["type"] == NODE_GROUP and x["inputs"]["labels"].get(cv.POOL) == pool)
    del ng["inputs"]["labels"][cv.SHARING]
    return ng["name"]


def remove_flavor_pool_label(r: Resources, stack: str) -> str:
    flavor = obj(r, "ResourceFlavor", cv.flavor_name(plan_of(stack).pools[0].name))
    del flavor["inputs"]["spec"]["nodeLabels"][cv.ACCELERATOR]
    return flavor["name"]


def drop_flavor_tolerations(r: Resources, stack: str) -> str:
    flavor = obj(r, "ResourceFlavor", cv.flavor_name(plan_of(stack).pools[0].name))
    flavor["inputs"]["spec"].pop("tolerations", None)
    flavor["inputs"]["spec"].pop("nodeTaints", None)
    return flavor["name"]


def unpin_chart(r: Resources, stack: str) -> str:
    release = next(x for x in r if x["type"] == HELM_RELEASE)
    release["inputs"]["version"] = ">=" + str(release["inputs"]["version"]).lstrip("v")
    return release["name"]


def mirror_kueue_image(r: Resources, stack: str) -> str:
    release = next(x for x in r if x["type"] == HELM_RELEASE and "kueue" in str(x["inputs"].get("chart")))
    release["inputs"]["values"]["controllerManager"]["manager"]["image"]["repository"] = "registry.example.com/kueue"
    return release["name"]


def disallow_karpenter_registry(r: Resources, stack: str) -> str:
    """The Karpenter controller runs the chart's default image (public.ecr.aws/karpenter/controller): taken
    off the allowlist, the release that runs it is what the rule names."""
    policy = obj(r, "ValidatingAdmissionPolicy", cv.TENANT_IMAGE_POLICY)
    notes = policy["inputs"]["metadata"]["annotations"]
    notes[cv.PLATFORM_REGISTRIES_ANNOTATION] = ",".join(
        x for x in notes[cv.PLATFORM_REGISTRIES_ANNOTATION].split(",") if "karpenter" not in x)
    return next(x for x in r if x["type"] == HELM_RELEASE and str(x["inputs"].get("chart")).endswith("/karpenter"))["name"]


def drop_quota(r: Resources, stack: str) -> str:
    r.remove(obj(r, "ResourceQuota", namespace=first_team(stack)))
    return obj(r, "Namespace", first_team(stack))["name"]


def drop_local_queue(r: Resources, stack: str) -> str:
    r.remove(obj(r, "LocalQueue", namespace=first_team(stack)))
    return obj(r, "Namespace", first_team(stack))["name"]


def drop_limit_range(r: Resources, stack: str) -> str:
    r.remove(obj(r, "LimitRange", namespace=first_team(stack)))
    return obj(r, "Namespace", first_team(stack))["name"]


def drop_dns_allow(r: Resources, stack: str) -> str:
    r.remove(obj(r, "NetworkPolicy", cv.NETWORK_POLICY_ALLOW_DNS, first_team(stack)))
    return obj(r, "Namespace", first_team(stack))["name"]


def unlabel_namespace(r: Resources, stack: str) -> str:
    ns = obj(r, "Namespace", first_team(stack))
    del ns["inputs"]["metadata"]["labels"][cv.COST_CENTER]
    return ns["name"]


def privileged_tenant(r: Resources, stack: str) -> str:
    ns = obj(r, "Namespace", first_team(stack))
    ns["inputs"]["metadata"]["labels"][cv.PSA_ENFORCE] = "privileged"
    return ns["name"]


def bind_cluster_admin(r: Resources, stack: str) -> str:
    rb = obj(r, "RoleBinding", namespace=first_team(stack))
    rb["inputs"]["roleRef"]["name"] = cv.CLUSTER_ROLE_CLUSTER_ADMIN
    return rb["name"]


def bind_tenant_cluster_wide(r: Resources, stack: str) -> str:
    rb = copy.deepcopy(obj(r, "RoleBinding", namespace=first_team(stack)))
    rb["type"] = rb["type"].replace("RoleBinding", "ClusterRoleBinding")
    rb["name"] = "seeded-crb"
    rb["inputs"]["kind"] = "ClusterRoleBinding"
    rb["inputs"]["metadata"].pop("namespace")
    r.append(rb)
    return rb["name"]


def overcommit_quota(r: Resources, stack: str) -> str:
    plan = plan_of(stack)
    q = plan.teams[0].quotas[0]
    cq = obj(r, "ClusterQueue", plan.teams[0].cluster_queue)
    for group in cq["inputs"]["spec"]["resourceGroups"]:
        for fl in group["flavors"]:
            for entry in fl["resources"]:
                if fl["name"] == q.flavor and entry["name"] == q.resource_name:
                    entry["nominalQuota"] = str(plan.pools_by_name[q.pool].capacity_units + 1)
    return obj(r, "ResourceFlavor", q.flavor)["name"]


def undercap_namespace_quota(r: Resources, stack: str) -> str:
    """One GPU below what the first team can ever hold: on local, vision's 12 on train (nlp lends 4)."""
    team = plan_of(stack).teams[0]
    resource = next(q.resource_name for q in team.quotas if q.pool == "train")
    quota = obj(r, "ResourceQuota", cv.TENANT_QUOTA_NAME, team.namespaces[0])
    quota["inputs"]["spec"]["hard"][f"requests.{resource}"] = "11"
    return quota["name"]


def kueue_v1beta1(r: Resources, stack: str) -> str:
    cq = obj(r, "ClusterQueue")
    cq["type"] = cq["type"].replace(cv.KUEUE_API_VERSION, cv.KUEUE_API_VERSION.replace("v1beta2", "v1beta1"))
    return cq["name"]


def strip_cost_tag(r: Resources, stack: str) -> str:
    ng = next(x for x in r if x["type"] == NODE_GROUP)
    del ng["inputs"]["tags"][cv.TAG_ENVIRONMENT]
    return ng["name"]


def add_wildcard_role(r: Resources, stack: str) -> str:
    r.append(res("kubernetes:rbac.authorization.k8s.io/v1:Role", "seeded-role", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": meta("power", first_team(stack)),
        "rules": [{"apiGroups": [""], "resources": ["*"], "verbs": ["get"]}]}))
    return "seeded-role"


def widen_selector(r: Resources, stack: str) -> str:
    cq = obj(r, "ClusterQueue", cv.cluster_queue_name(plan_of(stack).teams[0].name))
    cq["inputs"]["spec"]["namespaceSelector"] = {"matchExpressions": [
        {"key": cv.NAMESPACE_NAME_LABEL, "operator": "NotIn", "values": [first_team(stack)]}]}
    return cq["name"]


def tolerate_every_workload(r: Resources, stack: str) -> str:
    flavor = obj(r, "ResourceFlavor", cv.flavor_name(plan_of(stack).pools[0].name))
    flavor["inputs"]["spec"].setdefault("tolerations", []).append(
        {"key": cv.WORKLOAD_TAINT_KEY, "operator": "Exists", "effect": cv.TAINT_EFFECT})
    return flavor["name"]


def cpu_only_flavor_tolerates_gpus(r: Resources, stack: str) -> str:
    flavor = obj(r, "ResourceFlavor", cv.CPU_FLAVOR)
    flavor["inputs"]["spec"]["tolerations"] = [{"key": cv.GPU_TAINT_KEY, "operator": "Exists"}]
    return flavor["name"]


def rename_flavor_in_queue(r: Resources, stack: str) -> str:
    cq = obj(r, "ClusterQueue", plan_of(stack).teams[0].cluster_queue)
    cq["inputs"]["spec"]["resourceGroups"][0]["flavors"][0]["name"] = "no-such-flavor"
    return cq["name"]


def add_untolerated_gpu_job(r: Resources, stack: str) -> str:
    r.append(job(first_team(stack), {**gpu_pod_spec(), "tolerations": []}, name="seeded"))
    return "job-seeded"


def add_gpu_request_job(r: Resources, stack: str) -> str:
    spec = gpu_pod_spec()
    spec["containers"][0]["resources"]["requests"] = {cv.GPU_RESOURCE: 1}
    r.append(job(first_team(stack), spec, name="seeded"))
    return "job-seeded"


def add_latest_image(r: Resources, stack: str) -> str:
    spec = gpu_pod_spec()
    spec["containers"][0]["image"] = "registry.example/train:latest"
    r.append(job(first_team(stack), spec, name="seeded"))
    return "job-seeded"


def grant_system_priority(r: Resources, stack: str) -> str:
    ns = obj(r, "Namespace", first_team(stack))
    ns["inputs"]["metadata"]["annotations"][cv.ALLOWED_PRIORITIES_ANNOTATION] += "," + cv.priority_class_name("system-critical")
    return ns["name"]


def add_squatting_job(r: Resources, stack: str) -> str:
    spec = {"containers": [{"name": "m", "image": "registry.example/prep:1.0"}],
            "tolerations": [{"key": cv.GPU_TAINT_KEY, "operator": "Exists"}]}
    r.append(job(first_team(stack), spec, name="seeded"))
    return "job-seeded"


def add_two_replica_container(r: Resources, stack: str) -> str:
    spec = {"containers": [{"name": "m", "image": "registry.example/serve:1.0",
                            "resources": {"limits": {cv.SHARED_GPU_RESOURCE: "2"}}}],
            "tolerations": [dict(cv.GPU_TOLERATION)]}
    r.append(job(first_team(stack), spec, name="seeded"))
    return "job-seeded"


def drop_managed_by(r: Resources, stack: str) -> str:
    ns = obj(r, "Namespace", first_team(stack))
    del ns["inputs"]["metadata"]["labels"][cv.MANAGED_BY]
    return ns["name"]


def karpenter_pool(stack: str):
    return next(p for p in plan_of(stack).pools if p.karpenter is not None)


def node_pool_of(r: Resources, stack: str) -> dict[str, Any]:
    return obj(r, "NodePool", karpenter_pool(stack).karpenter.nodepool)


def drop_node_pool_label(r: Resources, stack: str) -> str:
    np = node_pool_of(r, stack)
    del np["inputs"]["spec"]["template"]["metadata"]["labels"][cv.POOL]
    return np["name"]


def wrong_node_pool_taint(r: Resources, stack: str) -> str:
    np = node_pool_of(r, stack)
    for t in np["inputs"]["spec"]["template"]["spec"]["taints"]:
        if t["key"] == cv.WORKLOAD_TAINT_KEY:
            t["value"] = "inference" if t["value"] != "inference" else "training"
    return np["name"]


def untolerated_node_pool_taint(r: Resources, stack: str) -> str:
    """The NodePool's workload taint changed under its flavor: the flavor is what no longer fits."""
    wrong_node_pool_taint(r, stack)
    return obj(r, "ResourceFlavor", karpenter_pool(stack).flavor)["name"]


def raise_node_pool_limits(r: Resources, stack: str) -> str:
    np = node_pool_of(r, stack)
    pool = karpenter_pool(stack)
    np["inputs"]["spec"]["limits"] = {"nodes": str(pool.max_nodes * 2), cv.GPU_RESOURCE: str(pool.capacity_gpus * 2)}
    return np["name"]


def node_class_on_latest(r: Resources, stack: str) -> str:
    nc = obj(r, cv.KARPENTER_NODECLASS_KIND, karpenter_pool(stack).karpenter.nodeclass)
    alias = nc["inputs"]["spec"]["amiSelectorTerms"][0]["alias"]
    nc["inputs"]["spec"]["amiSelectorTerms"] = [{"alias": alias.split("@")[0] + "@latest"}]
    return nc["name"]


def strip_node_class_cost_tag(r: Resources, stack: str) -> str:
    nc = obj(r, cv.KARPENTER_NODECLASS_KIND, karpenter_pool(stack).karpenter.nodeclass)
    del nc["inputs"]["spec"]["tags"][cv.TAG_CLUSTER]
    return nc["name"]


MUTATIONS: list[tuple[str, Callable[[Resources, str], str], tuple[str, ...]]] = [
    ("gpu-node-group-labels", drop_node_pool_label, (KARPENTER_STACK,)),
    ("gpu-node-group-labels", wrong_node_pool_taint, (KARPENTER_STACK,)),
    ("resource-flavor-matches-pool", untolerated_node_pool_taint, (KARPENTER_STACK,)),
    ("karpenter-nodepool-limits", raise_node_pool_limits, (KARPENTER_STACK,)),
    ("karpenter-ami-pinned", node_class_on_latest, (KARPENTER_STACK,)),
    ("aws-gpu-cost-tags", strip_node_class_cost_tag, (KARPENTER_STACK,)),
    ("namespace-default-deny", drop_default_deny, STACKS),
    ("workload-no-privileged", add_privileged_pod, STACKS),
    ("workload-no-host-access", add_host_network_job, ("local",)),
    ("workload-queue-name", add_unqueued_gpu_job, ("local",)),
    ("workload-no-gpu-squatting", add_squatting_job, ("local",)),
    ("workload-shared-gpu-per-container", add_two_replica_container, ("local",)),
    ("tenant-priorities", grant_system_priority, ("prod",)),
    ("cluster-queue-namespace-selector", clear_selector, STACKS),
    ("gpu-node-group-labels", remove_pool_label, ("staging", "prod")),
    ("resource-flavor-matches-pool", remove_flavor_pool_label, STACKS),
    ("resource-flavor-matches-pool", drop_flavor_tolerations, ("local", "prod")),
    ("helm-chart-pinned", unpin_chart, ("staging", "prod")),
    ("images-from-allowed-registries", mirror_kueue_image, ("staging", "prod")),
    ("images-from-allowed-registries", disallow_karpenter_registry, (KARPENTER_STACK,)),
    ("namespace-resource-quota", drop_quota, ("prod",)),
    ("namespace-local-queue", drop_local_queue, ("prod",)),
    ("namespace-limit-range", drop_limit_range, ("prod",)),
    ("namespace-dns-allow", drop_dns_allow, ("prod",)),
    ("tenant-namespace-labels", unlabel_namespace, ("prod",)),
    ("namespace-pod-security", privileged_tenant, ("prod",)),
    ("privileged-namespaces", privileged_tenant, ("local",)),
    ("tenant-no-cluster-admin", bind_cluster_admin, ("prod",)),
    ("tenant-groups-namespace-scoped", bind_tenant_cluster_wide, ("prod",)),
    ("nominal-quota-fits-capacity", overcommit_quota, ("local", "prod")),
    ("namespace-quota-covers-queue", undercap_namespace_quota, ("local",)),
    ("no-kueue-v1beta1", kueue_v1beta1, ("prod",)),
    ("aws-gpu-cost-tags", strip_cost_tag, ("prod",)),
    ("tenant-role-wildcards", add_wildcard_role, ("prod",)),
    ("cluster-queue-tenant-scope", widen_selector, ("local", "prod")),
    ("flavor-single-workload", tolerate_every_workload, ("prod",)),
    ("cluster-queue-flavors", rename_flavor_in_queue, ("prod",)),
    ("cpu-only-flavor", cpu_only_flavor_tolerates_gpus, ("local", "prod")),
    ("workload-gpu-toleration", add_untolerated_gpu_job, ("prod",)),
    ("workload-gpu-limits-only", add_gpu_request_job, ("prod",)),
    ("image-tags-pinned", add_latest_image, ("prod",)),
    ("recommended-labels", drop_managed_by, ("prod",)),
]


@pytest.mark.parametrize(
    "rule,mutate,stack",
    [(rule, m, s) for rule, m, stacks in MUTATIONS for s in stacks],
    ids=[f"{s}-{m.__name__}" for _, m, stacks in MUTATIONS for s in stacks],
)
def test_seeded_violation_is_caught(rule: str, mutate: Callable[[Resources, str], str], stack: str) -> None:
    resources = data(stack)
    culprit = mutate(resources, stack)
    p = policy(rule)
    found = check_resources(resources, policies=[p])
    assert any(v.resource.endswith(f" {culprit}") for v in found), (
        f"{rule} missed the seeded violation on {culprit}: {found}")
    assert all(v.level == p.enforcement_level.value for v in found)


def test_every_rule_is_seeded() -> None:
    assert {rule for rule, _, _ in MUTATIONS} == {p.name for p in POLICIES}


def test_a_seeded_violation_fails_the_cli_check(tmp_path, capsys) -> None:
    """`check --resources FILE` exits 1 on a mandatory violation and names the rule and the resource."""
    import json

    from platform_cli.cli import EXIT_VIOLATIONS, main

    resources = data("prod")
    culprit = drop_default_deny(resources, "prod")
    path = tmp_path / "resources.json"
    path.write_text(json.dumps(resources))
    assert main(["check", "--resources", str(path)]) == EXIT_VIOLATIONS
    out = capsys.readouterr().out
    assert "namespace-default-deny" in out and culprit in out
