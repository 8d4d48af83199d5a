"""Tenancy under mocks (prod stack): every team namespace gets its labels, Pod Security, LocalQueue, RBAC,
quota, limit range and network policy exactly as the plan says, and tenant groups get nothing beyond
their own namespaces plus read-only queue visibility."""

from __future__ import annotations

import copy
import functools
import ipaddress
from types import SimpleNamespace
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pytest

from gpu_platform import conventions as cv
from gpu_platform.plan import CONTAINER_DEFAULT_LIMIT, CONTAINER_DEFAULT_REQUEST
from tests import cel
from tests.conftest import plan_of, rendered, spec_of
from tests.crd_schema import validate
from tests.kuberay_allow import KUBERAY_ALLOW

STACK = "prod"
TENANCY = "tenancy"  # the component's name in GpuPlatform
WILDCARD = "*"
READ_ONLY = {"get", "list", "watch"}


def objs(kind: str, namespace: str | None = None) -> list[dict[str, Any]]:
    out = [o for o in rendered(STACK).kubernetes_objects() if o["kind"] == kind]
    if namespace is not None:
        out = [o for o in out if o["metadata"].get("namespace") == namespace]
    return out


def one(kind: str, namespace: str | None, name: str) -> dict[str, Any]:
    found = [o for o in objs(kind, namespace) if o["metadata"]["name"] == name]
    assert len(found) == 1, f"{kind} {namespace}/{name}: found {len(found)}"
    return found[0]


def team_namespaces() -> list[tuple[Any, str]]:
    return [(t, ns) for t in plan_of(STACK).teams for ns in t.namespaces]


def tenant_group_names() -> set[str]:
    return {g for t in plan_of(STACK).teams for g in (*t.admin_groups, *t.member_groups, *t.viewer_groups)}


def mine() -> list[Any]:
    return [r for r in rendered(STACK).custom if r.parent == TENANCY]


def cpu_millis(q: str) -> float:
    return float(q[:-1]) if q.endswith("m") else float(q) * 1000


def mem_bytes(q: str) -> float:
    units = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
    for suffix, factor in units.items():
        if q.endswith(suffix):
            return float(q[: -len(suffix)]) * factor
    return float(q)


# -- namespaces ---------------------------------------------------------------------------------------


def test_every_team_namespace_exists_with_team_labels() -> None:
    names = {o["metadata"]["name"] for o in objs("Namespace") if cv.TEAM in o["metadata"].get("labels", {})}
    assert names == {ns for _, ns in team_namespaces()}
    for team, ns in team_namespaces():
        labels = one("Namespace", None, ns)["metadata"]["labels"]
        for key, value in team.namespace_labels.items():
            assert labels[key] == value, (ns, key)
    # The three tenant keys, as facts of the prod config for a team's second namespace.
    ds = one("Namespace", None, "ds-notebooks")["metadata"]["labels"]
    assert (ds[cv.TEAM], ds[cv.COST_CENTER], ds[cv.ENVIRONMENT]) == ("data-science", "cc-4001", "prod")


def test_pod_security_enforces_the_team_level_and_warns_at_restricted() -> None:
    seen_levels = set()
    for team, ns in team_namespaces():
        labels = one("Namespace", None, ns)["metadata"]["labels"]
        assert labels[cv.PSA_ENFORCE] == team.pod_security
        assert labels[cv.PSA_WARN] == labels[cv.PSA_AUDIT] == "restricted"
        # prod runs Kubernetes 1.33: every PSA level is pinned to it, so upgrades do not tighten rules.
        for key in (cv.PSA_ENFORCE_VERSION, cv.PSA_WARN_VERSION, cv.PSA_AUDIT_VERSION):
            assert labels[key] == "v1.33"
        seen_levels.add(labels[cv.PSA_ENFORCE])
    assert seen_levels == {"baseline", "restricted"}  # prod has teams at both levels


def test_no_platform_namespace_is_made_or_claimed_by_tenancy() -> None:
    for r in mine():
        ns = r.inputs["metadata"].get("namespace") or (r.inputs["metadata"]["name"] if r.inputs["kind"] == "Namespace" else None)
        assert ns not in cv.RESERVED_NAMESPACES, r.name


def test_every_object_is_named_and_labeled_managed_by() -> None:
    assert mine(), "tenancy registered nothing"
    for r in mine():
        meta = r.inputs["metadata"]
        assert meta.get("name"), r.name
        assert meta["labels"][cv.MANAGED_BY] == cv.MANAGED_BY_VALUE, r.name


def test_namespaced_objects_wait_for_their_namespace() -> None:
    for r in mine():
        ns = r.inputs["metadata"].get("namespace")
        if ns is not None:
            assert f"tenant-{ns}" in r.options["dependencies"], r.name


# -- what each namespace holds --------------------------------------------------------------------------


def test_each_namespace_has_quota_limits_default_deny_dns_queue_and_bindings() -> None:
    for team, ns in team_namespaces():
        assert one("ResourceQuota", ns, cv.TENANT_QUOTA_NAME)
        assert one("LimitRange", ns, cv.TENANT_LIMIT_RANGE_NAME)
        assert one("NetworkPolicy", ns, cv.NETWORK_POLICY_DEFAULT_DENY)
        assert one("NetworkPolicy", ns, cv.NETWORK_POLICY_ALLOW_DNS)
        assert one("LocalQueue", ns, cv.LOCAL_QUEUE_NAME)
        bound = {o["roleRef"]["name"] for o in objs("RoleBinding", ns)}
        assert cv.TENANT_ADMIN_CLUSTER_ROLE in bound and cv.BATCH_USER_CLUSTER_ROLE in bound, ns


def test_data_science_gets_everything_in_both_its_namespaces() -> None:
    team = next(t for t in plan_of(STACK).teams if t.name == "data-science")
    assert team.namespaces == ("data-science", "ds-notebooks")  # prod config
    for ns in team.namespaces:
        assert one("LocalQueue", ns, cv.LOCAL_QUEUE_NAME)["spec"]["clusterQueue"] == team.cluster_queue
        assert one("ResourceQuota", ns, cv.TENANT_QUOTA_NAME)["spec"]["hard"] == dict(team.quota_of(ns))
        assert {o["metadata"]["name"] for o in objs("NetworkPolicy", ns)} >= {
            cv.NETWORK_POLICY_DEFAULT_DENY, cv.NETWORK_POLICY_ALLOW_DNS,
        }
        subjects = {s["name"] for o in objs("RoleBinding", ns) for s in o["subjects"]}
        assert subjects == {"ds-leads", "ds-analysts"}


def test_resource_quota_is_the_plans_namespace_quota() -> None:
    for team, ns in team_namespaces():
        hard = one("ResourceQuota", ns, cv.TENANT_QUOTA_NAME)["spec"]["hard"]
        assert hard == dict(team.quota_of(ns))
        # Each GPU resource the team has quota for is capped in the namespace.
        for q in team.quotas:
            assert f"requests.{q.resource_name}" in hard
        for key in ("requests.cpu", "requests.memory", "pods", "persistentvolumeclaims", "requests.storage"):
            assert key in hard


def test_gpu_resources_a_team_has_no_quota_for_are_capped_at_zero() -> None:
    # A ResourceQuota only limits what it lists: an unlisted GPU resource would be unlimited.
    plan = plan_of(STACK)
    for team, ns in team_namespaces():
        hard = one("ResourceQuota", ns, cv.TENANT_QUOTA_NAME)["spec"]["hard"]
        mine = {q.resource_name for q in team.quotas}
        for name in plan.gpu_resource_names:
            assert f"requests.{name}" in hard, (ns, name)
            if name not in mine:
                assert hard[f"requests.{name}"] == "0", (ns, name)
    # prod: search-serving only has l40s (shared) quota, so whole GPUs and MIG slices are closed to it.
    hard = one("ResourceQuota", "search-serving", cv.TENANT_QUOTA_NAME)["spec"]["hard"]
    assert hard["requests.nvidia.com/gpu"] == hard["requests.nvidia.com/mig-1g.10gb"] == "0"


def test_limit_range_gives_every_container_a_valid_default() -> None:
    for _, ns in team_namespaces():
        (limit,) = one("LimitRange", ns, cv.TENANT_LIMIT_RANGE_NAME)["spec"]["limits"]
        assert limit["type"] == "Container"
        assert limit["defaultRequest"] == CONTAINER_DEFAULT_REQUEST
        assert limit["default"] == CONTAINER_DEFAULT_LIMIT
    # A container without resources gets request <= limit, or the API server would reject it.
    assert cpu_millis(CONTAINER_DEFAULT_REQUEST["cpu"]) <= cpu_millis(CONTAINER_DEFAULT_LIMIT["cpu"])
    assert mem_bytes(CONTAINER_DEFAULT_REQUEST["memory"]) <= mem_bytes(CONTAINER_DEFAULT_LIMIT["memory"])


# -- LocalQueue ---------------------------------------------------------------------------------------


def test_local_queues_point_at_the_team_cluster_queue_and_are_valid_kueue_objects() -> None:
    for team, ns in team_namespaces():
        lq = one("LocalQueue", ns, cv.LOCAL_QUEUE_NAME)
        assert lq["apiVersion"] == "kueue.x-k8s.io/v1beta2"
        assert lq["spec"]["clusterQueue"] == team.cluster_queue
        assert validate(lq) == [], ns


def test_local_queue_names_a_cluster_queue_the_stack_creates() -> None:
    cqs = {o["metadata"]["name"] for o in objs("ClusterQueue")}
    # Every team's ClusterQueue is registered: a stack that lost them fails here instead of skipping.
    assert cqs >= {team.cluster_queue for team, _ in team_namespaces()}, cqs
    by_name = {r.inputs["metadata"]["name"]: r.name for r in rendered(STACK).custom
               if r.type == "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"}
    for team, ns in team_namespaces():
        assert team.cluster_queue in cqs
        lq = rendered(STACK).one("kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue", f"tenant-{ns}-local-queue")
        assert by_name[team.cluster_queue] in lq.options["dependencies"], ns


@functools.cache
def _with_stub_queues():
    """Tenancy alone, given a queues object with a ClusterQueue per team and a readiness resource."""
    from harness.render import run_program
    from components.tenancy import Tenancy
    from tests.conftest import stack_doc

    plan = plan_of(STACK)

    def program() -> None:
        ready = k8s.core.v1.ConfigMap("stub-kueue-ready", metadata={"name": "ready", "namespace": "x"})
        cqs = {
            t.name: k8s.apiextensions.CustomResource(
                f"stub-cq-{t.name}", api_version=cv.KUEUE_API_VERSION, kind="ClusterQueue",
                metadata={"name": t.cluster_queue}, spec={},
            )
            for t in plan.teams
        }
        Tenancy(TENANCY, plan, SimpleNamespace(cluster_queues=cqs, ready=[ready]), opts=pulumi.ResourceOptions())

    return run_program(program, STACK, dict(stack_doc(STACK)["config"]))


def test_local_queue_waits_for_its_cluster_queue_and_kueue() -> None:
    out = _with_stub_queues()
    for team, ns in team_namespaces():
        deps = out.one("kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue", f"tenant-{ns}-local-queue").options["dependencies"]
        assert f"stub-cq-{team.name}" in deps
        assert "stub-kueue-ready" in deps
        others = {f"stub-cq-{t.name}" for t in plan_of(STACK).teams if t.name != team.name}
        assert not others & set(deps)


# -- RBAC -----------------------------------------------------------------------------------------------


def test_group_tiers_get_their_roles_in_every_team_namespace() -> None:
    for team, ns in team_namespaces():
        by_role: dict[str, set[str]] = {}
        for o in objs("RoleBinding", ns):
            assert o["roleRef"]["kind"] == "ClusterRole"
            by_role.setdefault(o["roleRef"]["name"], set()).update(s["name"] for s in o["subjects"])
            assert all(s["kind"] == "Group" for s in o["subjects"])
        assert by_role.get(cv.TENANT_ADMIN_CLUSTER_ROLE, set()) == set(team.admin_groups)
        assert by_role.get("edit", set()) == set(team.member_groups)
        assert by_role.get("view", set()) == set(team.viewer_groups)
        assert by_role.get(cv.BATCH_USER_CLUSTER_ROLE, set()) == set(team.admin_groups) | set(team.member_groups)
        assert set(by_role) <= {cv.TENANT_ADMIN_CLUSTER_ROLE, "edit", "view", cv.BATCH_USER_CLUSTER_ROLE}


def test_no_tenant_group_is_bound_to_cluster_admin_or_outside_its_namespaces() -> None:
    groups_of = {t.name: {*t.admin_groups, *t.member_groups, *t.viewer_groups} for t in plan_of(STACK).teams}
    team_of_ns = {ns: t.name for t, ns in team_namespaces()}
    for o in objs("RoleBinding"):
        ns = o["metadata"]["namespace"]
        assert o["roleRef"]["name"] != cv.CLUSTER_ROLE_CLUSTER_ADMIN
        tenants = {s["name"] for s in o["subjects"]} & tenant_group_names()
        if tenants:
            assert ns not in cv.PLATFORM_NAMESPACES
            assert tenants <= groups_of[team_of_ns[ns]], (ns, tenants)
    for o in objs("ClusterRoleBinding"):
        assert not {s["name"] for s in o.get("subjects", [])} & tenant_group_names()


def test_tenant_groups_have_no_cluster_role_binding() -> None:
    # Not even read-only: a ClusterRoleBinding to anything namespaced reaches every namespace, platform
    # ones included, and the policy pack rejects any tenant ClusterRoleBinding.
    for o in objs("ClusterRoleBinding"):
        assert not {s["name"] for s in o.get("subjects", [])} & tenant_group_names(), o["metadata"]["name"]


def test_roles_we_create_have_no_wildcards() -> None:
    for o in objs("ClusterRole"):
        for rule in o.get("rules", []):  # an aggregated role's rules are filled in by the controller
            for field in ("verbs", "resources", "apiGroups"):
                assert WILDCARD not in rule.get(field, []), (o["metadata"]["name"], field)


def _grants(role: dict[str, Any], group: str, resource: str, verb: str) -> bool:
    return any(group in r["apiGroups"] and resource in r["resources"] and verb in r["verbs"] for r in role["rules"])


def test_batch_user_role_submits_jobs_and_reads_queues_but_writes_no_queue() -> None:
    role = one("ClusterRole", None, cv.BATCH_USER_CLUSTER_ROLE)
    assert _grants(role, "batch", "jobs", "create")
    assert _grants(role, "batch", "cronjobs", "create")
    for resource in ("localqueues", "workloads"):
        assert _grants(role, "kueue.x-k8s.io", resource, "list")
    # The LocalQueue's status is where a team sees its usage (no cluster-scoped read for tenants).
    assert _grants(role, "kueue.x-k8s.io", "localqueues/status", "get")
    for rule in role["rules"]:
        if "kueue.x-k8s.io" in rule["apiGroups"]:
            assert set(rule["verbs"]) <= READ_ONLY, rule
    # prod enables the JobSet integration (the default list): users may submit JobSets.
    assert _grants(role, "jobset.x-k8s.io", "jobsets", "create")


def test_platform_admins_manage_every_queue_object() -> None:
    role = one("ClusterRole", None, cv.QUEUE_ADMIN_CLUSTER_ROLE)
    for resource in ("resourceflavors", "cohorts", "clusterqueues", "localqueues", "workloadpriorityclasses",
                     "topologies", "admissionchecks"):
        for verb in ("create", "update", "patch", "delete", "get", "list", "watch"):
            assert _grants(role, "kueue.x-k8s.io", resource, verb), (resource, verb)
    binding = one("ClusterRoleBinding", None, cv.QUEUE_ADMIN_CLUSTER_ROLE)
    assert binding["roleRef"]["name"] == cv.QUEUE_ADMIN_CLUSTER_ROLE
    assert {s["name"] for s in binding["subjects"]} == set(plan_of(STACK).cluster.platform_admins)
    assert not {s["name"] for s in binding["subjects"]} & tenant_group_names()


# -- NetworkPolicy -------------------------------------------------------------------------------------


def test_default_deny_selects_every_pod_both_ways_and_allows_nothing() -> None:
    for _, ns in team_namespaces():
        spec = one("NetworkPolicy", ns, cv.NETWORK_POLICY_DEFAULT_DENY)["spec"]
        assert spec["podSelector"] == {}
        assert set(spec["policyTypes"]) == {"Ingress", "Egress"}
        assert not spec.get("ingress") and not spec.get("egress")


def test_dns_egress_goes_to_kube_dns_in_kube_system_on_port_53() -> None:
    for _, ns in team_namespaces():
        spec = one("NetworkPolicy", ns, cv.NETWORK_POLICY_ALLOW_DNS)["spec"]
        (rule,) = spec["egress"]
        (peer,) = rule["to"]
        assert peer["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}}
        assert peer["podSelector"] == {"matchLabels": {"k8s-app": "kube-dns"}}
        assert sorted((p["protocol"], p["port"]) for p in rule["ports"]) == [("TCP", 53), ("UDP", 53)]


def test_same_namespace_traffic_and_monitoring_scrapes_are_allowed() -> None:
    for _, ns in team_namespaces():
        same = one("NetworkPolicy", ns, cv.NETWORK_POLICY_ALLOW_SAME_NAMESPACE)["spec"]
        # A bare podSelector peer means "pods of this namespace" (no namespaceSelector).
        assert same["ingress"] == [{"from": [{"podSelector": {}}]}]
        assert same["egress"] == [{"to": [{"podSelector": {}}]}]
        scrape = one("NetworkPolicy", ns, cv.NETWORK_POLICY_ALLOW_MONITORING)["spec"]
        assert scrape["policyTypes"] == ["Ingress"]
        assert scrape["ingress"] == [{"from": [{
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": cv.MONITORING_NAMESPACE}},
        }]}]


def test_egress_beyond_the_cluster_is_exactly_the_teams_configured_cidrs() -> None:
    for team, ns in team_namespaces():
        allowed: set[tuple[str, str, int]] = set()
        for o in objs("NetworkPolicy", ns):
            if o["metadata"]["name"] == cv.NETWORK_POLICY_ALLOW_DATA_PATH:
                continue  # the data path's own egress: tests/unit/components/test_data_path.py
            for rule in o["spec"].get("egress", []):
                for peer in rule.get("to", []):
                    if "ipBlock" in peer:
                        for p in rule["ports"]:
                            allowed.add((peer["ipBlock"]["cidr"], p["protocol"], p["port"]))
                    else:
                        # Every other peer stays inside the cluster (a selector, never "everywhere").
                        assert "podSelector" in peer or "namespaceSelector" in peer
                assert rule.get("to"), f"{ns}/{o['metadata']['name']}: an egress rule without peers allows everything"
        assert allowed == {(e.cidr, e.protocol, p) for e in team.egress for p in e.ports}, ns
    # prod: search-serving reaches 10.20.0.0/16 on 443, nobody else has extra egress.
    (cidr,) = {c for c, _, _ in _allowed_cidrs("search-serving")}
    assert ipaddress.ip_network(cidr) == ipaddress.ip_network("10.20.0.0/16")


def _allowed_cidrs(ns: str) -> set[tuple[str, str, int]]:
    return {
        (peer["ipBlock"]["cidr"], p["protocol"], p["port"])
        for o in objs("NetworkPolicy", ns) if o["metadata"]["name"] != cv.NETWORK_POLICY_ALLOW_DATA_PATH
        for rule in o["spec"].get("egress", []) for peer in rule.get("to", []) if "ipBlock" in peer for p in rule["ports"]
    }


def test_prod_keeps_team_namespaces_on_delete_other_environments_do_not() -> None:
    for stack, retained in (("prod", True), ("staging", False), ("local", False)):
        namespaces = [r for r in rendered(stack).by_type("kubernetes:core/v1:Namespace")
                      if cv.TEAM in (r.inputs["metadata"].get("labels") or {})]
        assert namespaces
        assert {r.options["retainOnDelete"] for r in namespaces} == {retained}, stack


def test_team_admins_cannot_write_rbac() -> None:
    """Team admins get `edit` (by aggregation) plus read-only RBAC: membership stays in the spec."""
    roles = {o["metadata"]["name"]: o for o in rendered("prod").kubernetes_objects() if o["kind"] == "ClusterRole"}
    admin = roles[cv.TENANT_ADMIN_CLUSTER_ROLE]
    selectors = [s["matchLabels"] for s in admin["aggregationRule"]["clusterRoleSelectors"]]
    assert {cv.AGGREGATE_TO_EDIT_LABEL: "true"} in selectors
    extras = [r for r in roles.values() if all(r["metadata"].get("labels", {}).get(k) == v
                                              for sel in selectors[1:] for k, v in sel.items())]
    assert [r["metadata"]["name"] for r in extras] == [cv.TENANT_ADMIN_EXTRAS_CLUSTER_ROLE]
    for rule in extras[0]["rules"]:
        if "rbac.authorization.k8s.io" in rule["apiGroups"]:
            assert set(rule["verbs"]) <= {"get", "list", "watch"}


# -- KubeRay's operator through the default deny ---------------------------------------------------------


def test_kuberay_operator_reaches_ray_heads_on_the_dashboard_and_client_ports_only() -> None:
    """prod enables ray.io/rayjob and ray.io/raycluster (Kueue's defaults): without this policy the tenant
    default deny drops the operator's dashboard calls, and a RayJob never records completion and holds its
    quota. Only heads, only from the operator's pods in the operator's namespace, only those two ports."""
    assert {"ray.io/rayjob", "ray.io/raycluster"} <= set(spec_of(STACK).addons.kueue.integrations)
    for team, ns in team_namespaces():
        policy = one("NetworkPolicy", ns, "allow-kuberay-operator")
        assert policy["spec"] == KUBERAY_ALLOW, ns
        # Platform-owned like the rest: managed-by and the team label, made after the namespace.
        assert policy["metadata"]["labels"][cv.MANAGED_BY] == cv.MANAGED_BY_VALUE
        assert policy["metadata"]["labels"][cv.TEAM] == team.name
    (r,) = [x for x in mine() if x.name == f"tenant-{team_namespaces()[0][1]}-allow-kuberay-operator"]
    assert f"tenant-{team_namespaces()[0][1]}" in r.options["dependencies"]


def test_no_kuberay_allow_without_a_ray_integration() -> None:
    """A stack that queues no Ray kind opens nothing to the operator's namespace."""
    from components.tenancy import network_policy_specs
    from gpu_platform.plan import build_plan
    from gpu_platform.spec import load_stack_config
    from tests.conftest import stack_doc

    doc = copy.deepcopy(stack_doc(STACK))
    doc["config"]["gpu-platform:platform"].setdefault("addons", {}).setdefault("kueue", {})["integrations"] = [
        "batch/job", "jobset.x-k8s.io/jobset", "pod"]
    plan = build_plan(*load_stack_config(doc))
    for team in plan.teams:
        assert "allow-kuberay-operator" not in network_policy_specs(plan, team)
    # ... and one Ray kind is enough (RayCluster alone: its head's dashboard is what the operator calls).
    doc["config"]["gpu-platform:platform"]["addons"]["kueue"]["integrations"] = ["batch/job", "ray.io/raycluster"]
    plan = build_plan(*load_stack_config(doc))
    assert network_policy_specs(plan, plan.teams[0])["allow-kuberay-operator"] == KUBERAY_ALLOW


def test_no_team_can_own_the_kuberay_operator_namespace() -> None:
    """The allow trusts a pod label only inside the operator's namespace: a team owning that namespace could
    label a pod as the operator and reach every team's Ray heads. The spec refuses it, naming the field."""
    from gpu_platform.errors import SpecError
    from gpu_platform.spec import load_stack_config
    from tests.conftest import stack_doc

    doc = copy.deepcopy(stack_doc(STACK))
    doc["config"]["gpu-platform:platform"]["teams"][0]["namespaces"] = [cv.KUBERAY_OPERATOR_NAMESPACE]
    with pytest.raises(SpecError, match=rf"teams\[0\]\.namespaces\[0\].*'{cv.KUBERAY_OPERATOR_NAMESPACE}' is reserved"):
        load_stack_config(doc)


@pytest.mark.parametrize("operation", ["CREATE", "UPDATE", "DELETE"])
def test_tenants_cannot_write_a_kuberay_allow_of_their_own(operation: str) -> None:
    """The platform owns this allow; the tenant-network-policies guard still refuses a team member who
    creates one (say, from every namespace), edits the platform's or deletes it. The deployer, with a
    cluster-wide grant, may."""
    (guard,) = [o["spec"] for o in objs("ValidatingAdmissionPolicy")
                if o["metadata"]["name"] == cv.TENANT_NETWORK_POLICY_GUARD]
    _, ns = team_namespaces()[0]
    netpol = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
              "metadata": {"name": "allow-kuberay-operator", "namespace": ns},
              "spec": {**KUBERAY_ALLOW, "ingress": [{"from": [{"namespaceSelector": {}}]}]}}
    obj = None if operation == "DELETE" else netpol
    old = None if operation == "CREATE" else one("NetworkPolicy", ns, "allow-kuberay-operator")
    namespace = copy.deepcopy(one("Namespace", None, ns))
    namespace["metadata"]["labels"][cv.NAMESPACE_NAME_LABEL] = ns
    verb = {"CREATE": "create", "UPDATE": "update", "DELETE": "delete"}[operation]

    def review(grants: tuple[tuple[str, str, str, str], ...] = ()) -> cel.Decision:
        request = cel.Request(kind="NetworkPolicy", group="networking.k8s.io", resource="networkpolicies",
                              operation=operation, namespace=ns, name="allow-kuberay-operator")
        return cel.review(guard, request, obj, old=old, namespace=namespace, grants=grants)

    (message,) = review().denials
    assert message.startswith("NetworkPolicies in team namespaces are managed by the platform"), message
    # Even with RBAC for NetworkPolicies in its own namespace (what `edit` gives every member).
    assert review((("networking.k8s.io", "networkpolicies", verb, ns),)).denials
    assert review((("networking.k8s.io", "networkpolicies", verb, ""),)).denials == []
