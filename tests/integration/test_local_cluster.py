"""`pulumi up` of the local stack onto a real kube-apiserver, then attacked the way tenants would.

Order matters in this module: deploy, check, attack, re-run, refresh, destroy. Rejections use
server-side dry runs where the object would otherwise linger (no kubelet runs here); every admission
plugin, including PodSecurity, ResourceQuota and ValidatingAdmissionPolicy, runs on a dry run too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

from gpu_platform import conventions as cv
from gpu_platform.nodes import fake_nodes
from tests.conftest import plan_of, rendered
from tests.realtools import Cluster, Engine, resources_in_state

STACK = "local"


@pytest.fixture(scope="module")
def deployed(engine: Engine, cluster: Cluster) -> Iterator[dict[str, str]]:
    env = {"KUBECONFIG": str(cluster.kubeconfig)}
    engine.ensure_stack(STACK)
    engine.timed("pulumi up (local stack, first)", "up", "--yes", "--stack", STACK, extra_env=env)
    yield env


def _manifests(tmp: Path) -> Path:
    for i, obj in enumerate(rendered(STACK).kubernetes_objects()):
        (tmp / f"{i:03d}.yaml").write_text(yaml.safe_dump(obj))
    return tmp


def test_every_object_is_accepted_and_stored(deployed: dict, cluster: Cluster, tmp_path: Path) -> None:
    """Kueue objects passed the real CRD schemas and CEL rules, everything else the real API validation."""
    expected = rendered(STACK).kubernetes_objects()
    live = cluster.get("-f", str(_manifests(tmp_path)))
    items = live["items"] if "items" in live else [live]
    assert len(items) == len(expected)
    got = {(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in items}
    want = {(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in expected}
    assert got == want


def test_kueue_objects_match_the_plan(deployed: dict, cluster: Cluster) -> None:
    plan = plan_of(STACK)
    cqs = {o["metadata"]["name"]: o for o in cluster.get("clusterqueues.kueue.x-k8s.io")["items"]}
    assert set(cqs) == {t.cluster_queue for t in plan.teams}
    for team in plan.teams:
        spec = cqs[team.cluster_queue]["spec"]
        assert spec.get("cohortName") == team.cohort
        flavors = {f["name"]: f for g in spec["resourceGroups"] for f in g["flavors"]}
        for q in team.quotas:
            res = {r["name"]: r for r in flavors[q.flavor]["resources"]}[q.resource_name]
            assert int(res["nominalQuota"]) == q.nominal
    flavors = {o["metadata"]["name"] for o in cluster.get("resourceflavors.kueue.x-k8s.io")["items"]}
    assert flavors == {cv.CPU_FLAVOR, *(p.flavor for p in plan.pools)}
    lqs = cluster.get("localqueues.kueue.x-k8s.io", "--all-namespaces")["items"]
    assert {(o["metadata"]["namespace"], o["spec"]["clusterQueue"]) for o in lqs} == {
        (ns, t.cluster_queue) for t in plan.teams for ns in t.namespaces}


def test_fake_gpu_nodes_carry_their_pools(deployed: dict, cluster: Cluster) -> None:
    nodes = {n["metadata"]["name"]: n for n in cluster.get("nodes")["items"]}
    for want in fake_nodes(plan_of(STACK))["items"]:
        node = nodes[want["metadata"]["name"]]
        if cv.POOL not in want["metadata"]["labels"]:
            assert node["spec"].get("taints", []) == []  # a CPU node
            continue
        for key in cv.POOL_LABEL_KEYS:
            assert node["metadata"]["labels"][key] == want["metadata"]["labels"][key]
        gpu = next(k for k in want["status"]["capacity"] if cv.is_gpu_resource(k))
        assert node["status"]["allocatable"][gpu] == want["status"]["capacity"][gpu]


# --- RBAC, as the tenants themselves (impersonation of users in the spec's groups) ----------------------

def can(cluster: Cluster, group: str, verb: str, resource: str, namespace: str | None = None) -> bool:
    """`kubectl auth can-i` answers `yes` (exit 0) or `no` (exit 1) on stdout. Anything else (an unknown
    resource, a refused impersonation, an API server that is down) is not a `no`: it fails the test, so a
    denial can only be asserted because RBAC denied."""
    args = ["auth", "can-i", verb, resource, "--as", f"user-of-{group}", "--as-group", group]
    if namespace:
        args += ["-n", namespace]
    out = cluster.kubectl(*args, check=False)
    answer = (out.returncode, out.stdout.strip())
    assert answer in ((0, "yes"), (1, "no")), f"kubectl {' '.join(args)}: exit {out.returncode}, " \
        f"stdout {out.stdout!r}, stderr {out.stderr[-2000:]!r}"
    # A resource the server does not serve is answered `no` with a warning: a typo would pass as a denial.
    assert "doesn't have a resource type" not in out.stderr, f"kubectl {' '.join(args)}: {out.stderr[-2000:]}"
    return answer == (0, "yes")


def _teams() -> list[Any]:
    return list(plan_of(STACK).teams)


def test_members_work_in_their_namespace_and_nowhere_else(deployed: dict, cluster: Cluster) -> None:
    teams = _teams()
    for team in teams:
        others = [ns for t in teams if t is not team for ns in t.namespaces]
        for group in team.member_groups + team.admin_groups:
            for ns in team.namespaces:
                assert can(cluster, group, "create", "jobs.batch", ns), (group, ns)
                assert can(cluster, group, "get", "pods", ns), (group, ns)
                assert can(cluster, group, "get", "localqueues.kueue.x-k8s.io", ns), (group, ns)
            for ns in others + list(cv.PLATFORM_NAMESPACES):
                assert not can(cluster, group, "create", "jobs.batch", ns), (group, ns)
                assert not can(cluster, group, "get", "pods", ns), (group, ns)


CLUSTER_WRITES = [
    ("create", "clusterqueues.kueue.x-k8s.io"), ("patch", "clusterqueues.kueue.x-k8s.io"),
    ("create", "resourceflavors.kueue.x-k8s.io"), ("delete", "resourceflavors.kueue.x-k8s.io"),
    ("create", "cohorts.kueue.x-k8s.io"), ("create", "namespaces"), ("delete", "namespaces"),
    ("create", "clusterroles.rbac.authorization.k8s.io"), ("create", "clusterrolebindings.rbac.authorization.k8s.io"),
    ("create", "nodes"), ("patch", "nodes"),
]
NAMESPACE_WRITES = [
    ("create", "rolebindings.rbac.authorization.k8s.io"), ("create", "roles.rbac.authorization.k8s.io"),
    ("update", "resourcequotas"), ("delete", "localqueues.kueue.x-k8s.io"),
]


def test_nobody_in_a_team_changes_queues_flavors_cohorts_namespaces_rbac_or_nodes(deployed: dict, cluster: Cluster) -> None:
    for team in _teams():
        for group in team.admin_groups + team.member_groups + team.viewer_groups:
            for verb, resource in CLUSTER_WRITES:
                assert not can(cluster, group, verb, resource), (group, verb, resource)
            for ns in team.namespaces:
                for verb, resource in NAMESPACE_WRITES:
                    assert not can(cluster, group, verb, resource, ns), (group, verb, resource, ns)


def test_viewers_are_read_only(deployed: dict, cluster: Cluster) -> None:
    viewers = [(t, g) for t in _teams() for g in t.viewer_groups]
    assert viewers, "the local stack has viewer groups"
    for team, group in viewers:
        for ns in team.namespaces:
            assert can(cluster, group, "get", "pods", ns)
            assert can(cluster, group, "list", "jobs.batch", ns)
            for verb, resource in [("create", "pods"), ("create", "jobs.batch"), ("delete", "pods"),
                                   ("create", "configmaps"), ("patch", "deployments.apps")]:
                assert not can(cluster, group, verb, resource, ns), (group, verb, resource)


def test_platform_admins_manage_queues(deployed: dict, cluster: Cluster) -> None:
    for group in plan_of(STACK).cluster.platform_admins:
        for verb, resource in [("create", "clusterqueues.kueue.x-k8s.io"), ("patch", "resourceflavors.kueue.x-k8s.io"),
                               ("create", "cohorts.kueue.x-k8s.io"), ("delete", "localqueues.kueue.x-k8s.io")]:
            assert can(cluster, group, verb, resource), (group, verb, resource)


def test_a_team_member_with_real_credentials(deployed: dict, cluster: Cluster) -> None:
    """A client certificate (CN=user, O=group), not impersonation: what a user's kubeconfig would hold."""
    team = _teams()[0]
    other = _teams()[1]
    kubeconfig = cluster.user("integration-alice", team.member_groups[0])
    ok = cluster.kubectl("get", "pods", "-n", team.namespaces[0], kubeconfig=kubeconfig, check=False)
    assert ok.returncode == 0, ok.stderr
    # Refused by RBAC, for this user, this verb and this resource (the authorizer's own wording).
    denied = cluster.kubectl("get", "pods", "-n", other.namespaces[0], kubeconfig=kubeconfig, check=False)
    assert denied.returncode != 0, denied.stdout
    assert ('User "integration-alice" cannot list resource "pods" in API group "" in the namespace '
            f'"{other.namespaces[0]}"') in denied.stderr, denied.stderr
    cq = cluster.kubectl("delete", "clusterqueue", team.cluster_queue, "--dry-run=server", kubeconfig=kubeconfig, check=False)
    assert cq.returncode != 0, cq.stdout
    assert ('User "integration-alice" cannot delete resource "clusterqueues" in API group "kueue.x-k8s.io" '
            'at the cluster scope') in cq.stderr, cq.stderr


# --- Admission: what a tenant submits with kubectl ---------------------------------------------------------

def _pod(name: str, ns: str, gpus: int | None = None, queue: bool = True, **spec: Any) -> dict[str, Any]:
    container: dict[str, Any] = {
        # From an allowed registry (images.allowedRegistries: the tenant-images policy refuses others).
        "name": "main", "image": "busybox:1.37",
        "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
                            "runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
        "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1", "memory": "1Gi"}},
    }
    if gpus is not None:
        container["resources"]["limits"][cv.GPU_RESOURCE] = str(gpus)
    pod_spec = {"containers": [container], **spec}
    if gpus:  # GPU pods tolerate the GPU taint themselves (the pools' Kueue flavors require it)
        pod_spec.setdefault("tolerations", [dict(cv.GPU_TOLERATION)])
    labels = {cv.QUEUE_NAME_LABEL: cv.LOCAL_QUEUE_NAME} if queue else {}
    # The local stack's whole GPUs come only from its topology-aware train pool: GPU pods ask for a topology.
    annotations = {cv.TAS_PREFERRED_TOPOLOGY_ANNOTATION: cv.TAS_PREFERRED_LEVEL} if gpus else {}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "labels": labels, "annotations": annotations},
            "spec": pod_spec}


def _submit(cluster: Cluster, obj: dict[str, Any], group: str) -> tuple[bool, str]:
    out = cluster.kubectl("create", "--dry-run=server", "-f", "-", "--as", f"user-of-{group}", "--as-group", group,
                          input=json.dumps(obj), check=False)
    return out.returncode == 0, out.stderr


def _team_with_gpu_quota() -> Any:
    return next(t for t in _teams() if any(q.resource_name == cv.GPU_RESOURCE for q in t.quotas))


# What Pod Security admission names for each case (k8s.io/pod-security-admission policy checks).
PSA_VIOLATIONS = {"privileged": 'privileged (container "main" must not set securityContext.privileged=true)',
                  "hostNetwork": "host namespaces (hostNetwork=true)",
                  "hostPath": 'hostPath volumes (volume "host")'}


@pytest.mark.parametrize("case", ["privileged", "hostNetwork", "hostPath"])
def test_pod_security_rejects_host_access_in_tenant_namespaces(deployed: dict, cluster: Cluster, case: str) -> None:
    team = _team_with_gpu_quota()
    ns, group = team.namespaces[0], team.member_groups[0]
    pod = _pod(f"psa-{case.lower()}", ns)
    if case == "privileged":
        pod["spec"]["containers"][0]["securityContext"] = {"privileged": True}
    elif case == "hostNetwork":
        pod["spec"]["hostNetwork"] = True
    else:
        pod["spec"]["volumes"] = [{"name": "host", "hostPath": {"path": "/"}}]
    ok, err = _submit(cluster, pod, group)
    assert not ok and f'violates PodSecurity "{team.pod_security}:' in err and PSA_VIOLATIONS[case] in err, err
    # The same pod without the host access is admitted: the rejection is about that field alone.
    ok, err = _submit(cluster, _pod(f"psa-ok-{case.lower()}", ns), group)
    assert ok, err


def test_quota_rejects_more_gpus_than_the_team_holds(deployed: dict, cluster: Cluster) -> None:
    team = _team_with_gpu_quota()
    ns, group = team.namespaces[0], team.member_groups[0]
    cap = int(team.namespace_quota[f"requests.{cv.GPU_RESOURCE}"])
    ok, err = _submit(cluster, _pod("too-many-gpus", ns, gpus=cap + 1), group)
    assert not ok and f"exceeded quota: {cv.TENANT_QUOTA_NAME}, requested: requests.{cv.GPU_RESOURCE}={cap + 1}" in err, err
    ok, err = _submit(cluster, _pod("fits", ns, gpus=1), group)
    assert ok, err


def _job(name: str, ns: str, queue: bool) -> dict[str, Any]:
    pod = _pod(name, ns, gpus=1, queue=False)
    job: dict[str, Any] = {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": ns,
                     "labels": {cv.QUEUE_NAME_LABEL: cv.LOCAL_QUEUE_NAME} if queue else {}},
        # Cleaned up after it finishes (the tenant-job-cleanup policy refuses Jobs without a TTL).
        "spec": {"suspend": True, "ttlSecondsAfterFinished": 3600,
                 "template": {"metadata": {"annotations": pod["metadata"]["annotations"]},
                              "spec": {**pod["spec"], "restartPolicy": "Never"}}},
    }
    return job


def test_gpu_work_is_always_queued(deployed: dict, cluster: Cluster) -> None:
    """A Job without a queue name gets the namespace's `default` LocalQueue from Kueue's job webhook; a
    CronJob, which no Kueue webhook sees, must name it itself or the platform's policy refuses it."""
    team = _team_with_gpu_quota()
    ns, group = team.namespaces[0], team.member_groups[0]
    out = cluster.kubectl("create", "--dry-run=server", "-o", "json", "-f", "-", "--as", f"user-of-{group}",
                          "--as-group", group, input=json.dumps(_job("no-queue", ns, queue=False)))
    defaulted = json.loads(out.stdout)
    assert defaulted["metadata"]["labels"][cv.QUEUE_NAME_LABEL] == cv.LOCAL_QUEUE_NAME
    assert defaulted["spec"]["suspend"] is True
    job = _job("nightly", ns, queue=False)
    cron = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "nightly", "namespace": ns},
            "spec": {"schedule": "0 2 * * *", "jobTemplate": {"spec": job["spec"]}}}
    ok, err = _submit(cluster, cron, group)
    assert not ok and f"ValidatingAdmissionPolicy '{cv.TENANT_WORKLOAD_POLICY}'" in err and cv.QUEUE_NAME_LABEL in err, err
    cron["spec"]["jobTemplate"]["metadata"] = {"labels": {cv.QUEUE_NAME_LABEL: cv.LOCAL_QUEUE_NAME}}
    ok, err = _submit(cluster, cron, group)
    assert ok, err


def test_tenants_cannot_open_their_network_policies(deployed: dict, cluster: Cluster) -> None:
    team = _team_with_gpu_quota()
    ns, group = team.namespaces[0], team.admin_groups[0]
    out = cluster.kubectl("delete", "networkpolicy", cv.NETWORK_POLICY_DEFAULT_DENY, "-n", ns, "--dry-run=server",
                          "--as", f"user-of-{group}", "--as-group", group, check=False)
    # The team's admins hold `admin`, which may delete NetworkPolicies: it is the guard policy that refuses.
    assert out.returncode != 0, out.stdout
    assert f"ValidatingAdmissionPolicy '{cv.TENANT_NETWORK_POLICY_GUARD}'" in out.stderr, out.stderr


# --- Idempotence, drift, teardown --------------------------------------------------------------------------

def test_second_up_makes_no_change(deployed: dict, engine: Engine) -> None:
    engine.timed("pulumi up (local stack, no change)", "up", "--yes", "--expect-no-changes", "--stack", STACK,
                 extra_env=deployed)


def test_refresh_finds_no_drift(deployed: dict, engine: Engine) -> None:
    engine.timed("pulumi refresh (local stack)", "refresh", "--yes", "--expect-no-changes", "--stack", STACK,
                 extra_env=deployed)


def test_zz_destroy_removes_every_object(deployed: dict, engine: Engine, cluster: Cluster, tmp_path: Path) -> None:
    engine.timed("pulumi destroy (local stack)", "destroy", "--yes", "--stack", STACK, extra_env=deployed)
    assert resources_in_state(engine, STACK) == []
    left = cluster.kubectl("get", "-f", str(_manifests(tmp_path)), "--ignore-not-found", "-o", "name", check=False)
    names = [line for line in left.stdout.splitlines() if line.strip()]
    # Namespaces go through finalization; anything still listed must at least be terminating.
    for name in names:
        assert name.startswith("namespace/"), names
        phase = cluster.get(name.replace("/", " ", 1).split()[0], name.split("/", 1)[1])["status"].get("phase")
        assert phase == "Terminating", (name, phase)
