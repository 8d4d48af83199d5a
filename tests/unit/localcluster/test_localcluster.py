"""What the live local cluster is given: Kueue's Configuration (the production one), its chart objects
pointed at loopback, KWOK's stages and the simulated nodes. The processes themselves run in tests/live."""

from __future__ import annotations

import base64
from pathlib import Path
import copy

import pytest
import yaml

from gpu_platform import conventions as cv
from gpu_platform.kueue_config import (
    LOCAL_ONLY_KEYS, LOCAL_ONLY_PATHS, chart_values, controller_config, local_controller_config,
)
from gpu_platform.nodes import CPU_NODE_COUNT, fake_nodes
from localcluster import autoscaler, kueue, kwok, nodes
from gpu_platform.stack_files import load_plan
from tests.conftest import ROOT, plan_of

STACKS = ("local", "staging", "prod")


def _without_local_keys(config: dict) -> dict:
    config = copy.deepcopy(config)
    for key in LOCAL_ONLY_KEYS:
        config.pop(key, None)
    for path in LOCAL_ONLY_PATHS:
        node = config
        for part in path[:-1]:
            node = node.get(part, {})
        node.pop(path[-1], None)
        if path[:-1] and node == {}:
            config.pop(path[0], None)
    return config


@pytest.mark.parametrize("stack", STACKS)
def test_the_local_kueue_runs_the_production_configuration(stack: str) -> None:
    """Fair sharing, waitForPodsReady, integrations, preemption strategies, the namespace selector and
    resources are what the chart gets; only listeners, certificates, leader election and (for tests) the
    pods-ready timeout may differ."""
    plan = plan_of(stack)
    local = local_controller_config(plan, health_port=1, metrics_port=2, webhook_port=3, cert_dir="/x",
                                    pods_ready_timeout="20s", worker_lost_timeout="30s")
    chart = yaml.safe_load(chart_values(plan)["managerConfig"]["controllerManagerConfigYaml"])
    assert chart == controller_config(plan)
    assert _without_local_keys(local) == _without_local_keys(chart)
    assert local["waitForPodsReady"]["timeout"] == "20s"
    assert local["multiKueue"]["workerLostTimeout"] == "30s"
    assert local["webhook"] == {"host": "127.0.0.1", "port": 3, "certDir": "/x"}
    for key in ("fairSharing", "waitForPodsReady", "integrations", "managedJobsNamespaceSelector",
                "resources", "internalCertManagement"):
        assert key in local, key


def _rendered() -> list[dict]:
    """The shapes the chart renders (charts/kueue/templates at v0.19.2), reduced to what the rewrite reads."""
    svc = {"name": "kueue-webhook-service", "namespace": cv.KUEUE_NAMESPACE}
    return [
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "kueue-controller-manager"}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "kueue-webhook-service"}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": kueue.SECRET_NAME}},
        {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": "v1beta2.visibility"}},
        {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
         "metadata": {"name": "workloads.kueue.x-k8s.io"},
         "spec": {"conversion": {"strategy": "Webhook", "webhook": {
             "clientConfig": {"service": {**svc, "path": "/convert"}}, "conversionReviewVersions": ["v1"]}}}},
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
         "metadata": {"name": "kueue-mutating-webhook-configuration"},
         "webhooks": [{"name": "mjob.kb.io", "clientConfig": {"service": {**svc, "path": "/mutate-batch-v1-job"}}}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "kueue-manager-role"}},
    ]


def test_chart_webhooks_and_conversions_point_at_loopback_with_the_webhook_ca() -> None:
    out = kueue.local_objects(_rendered(), 7443, b"CA PEM")
    kinds = [o["kind"] for o in out]
    assert kinds == ["CustomResourceDefinition", "MutatingWebhookConfiguration", "ClusterRole"]
    ca = base64.b64encode(b"CA PEM").decode()
    crd, mutating, _ = out
    assert crd["spec"]["conversion"]["webhook"]["clientConfig"] == {"url": "https://127.0.0.1:7443/convert", "caBundle": ca}
    assert mutating["webhooks"][0]["clientConfig"] == {"url": "https://127.0.0.1:7443/mutate-batch-v1-job", "caBundle": ca}


def test_a_chart_kind_the_script_cannot_run_is_an_error_not_skipped() -> None:
    with pytest.raises(ValueError, match="renders a StatefulSet"):
        kueue.local_objects([{"kind": "StatefulSet", "metadata": {"name": "x"}}], 1, b"")


def test_the_seeded_secret_is_where_internal_cert_management_looks() -> None:
    ns, secret = kueue.namespace_and_secret(b"a", b"b", b"c", b"d")
    assert ns["metadata"]["name"] == secret["metadata"]["namespace"] == cv.KUEUE_NAMESPACE
    config = controller_config(plan_of("local"))
    assert secret["metadata"]["name"] == config["internalCertManagement"]["webhookSecretName"]
    assert set(secret["data"]) == {"ca.crt", "ca.key", "tls.crt", "tls.key"}
    assert kueue.WEBHOOK_DNS_NAME == f"{config['internalCertManagement']['webhookServiceName']}.{cv.KUEUE_NAMESPACE}.svc"


def test_kwok_stages_read_the_platform_annotations() -> None:
    stages = {s["metadata"]["name"]: s for s in kwok.stages()}
    assert yaml.safe_load_all(kwok.config_yaml())
    done = stages["gpu-platform-pod-succeeded"]["spec"]
    keys = [e["key"] for e in done["selector"]["matchExpressions"]]
    assert f'.metadata.annotations["{cv.SIM_DURATION_ANNOTATION}"]' in keys
    assert done["delay"]["durationFrom"]["expressionFrom"] == f'.metadata.annotations["{cv.SIM_DURATION_ANNOTATION}"]'
    running = stages["gpu-platform-pod-running"]["spec"]["selector"]["matchExpressions"]
    assert {"key": f'.metadata.annotations["{cv.SIM_NEVER_READY_ANNOTATION}"]', "operator": "NotIn",
            "values": ["true"]} in running
    assert stages["gpu-platform-pod-deleted"]["spec"]["next"] == {"delete": True, "finalizers": {"empty": True}}


# Nodes each pool starts with on the live cluster: the pools that scale at capacity.min, the topology-aware
# (train, h100-train, h200-train) and reserved (h100-train, h200-train) ones whole.
STARTING_NODES = {
    "local": {"train": 2, "infer": 1, "notebooks": 0},
    "prod": {"h100-train": 16, "h200-train": 8, "l40s-infer": 2, "a100-mig": 0, "l4-interactive": 1},
}


@pytest.mark.parametrize("stack", STACKS)
def test_simulated_nodes_are_each_pool_at_its_starting_size_plus_cpu_nodes(stack: str) -> None:
    plan = plan_of(stack)
    items = fake_nodes(plan)["items"]
    if stack in STARTING_NODES:
        assert {p.name: len([n for n in items if n["metadata"]["labels"].get(cv.POOL) == p.name])
                for p in plan.pools} == STARTING_NODES[stack]
    for pool in plan.pools:
        mine = [n for n in items if n["metadata"]["labels"].get(cv.POOL) == pool.name]
        for n in mine:
            assert n["metadata"]["annotations"][cv.KWOK_NODE_ANNOTATION] == cv.KWOK_NODE_ANNOTATION_VALUE
            assert n["status"]["allocatable"][pool.resource_name] == str(pool.units_per_node)
            assert n["spec"]["taints"] == [t.to_k8s() for t in pool.taints]
            assert (n["status"]["allocatable"].get(cv.EFA_RESOURCE) == str(pool.efa_interfaces)) == bool(pool.efa_interfaces)
    cpu = [n for n in items if cv.POOL not in n["metadata"]["labels"]]
    sp = plan.cluster.system_pool
    assert len(cpu) == (sp.max_nodes if sp else CPU_NODE_COUNT) and all(n["spec"]["taints"] == [] for n in cpu)
    if sp:
        assert all(n["metadata"]["labels"][k] == v for n in cpu for k, v in sp.labels.items())
    # what is not registered, Karpenter may add: together, every pool's capacity
    karpenter_units = sum(int(v) for o in autoscaler.objects(plan) if o["kind"] == "NodePool"
                          for v in o["spec"]["limits"].values())
    assert sum(int(n["status"]["allocatable"].get(r, 0)) for n in items for r in plan.gpu_resource_names) \
        + karpenter_units == sum(p.capacity_units for p in plan.pools)


def test_the_autoscaler_offers_each_scaling_pool_its_own_instance_type_and_node_pool() -> None:
    plan = plan_of("local")
    types = {t["name"]: t for t in autoscaler.instance_types(plan)}
    # g6.12xlarge (48 vCPU, 192 GiB, 8 ENIs x 30 IPv4): allocatable 47,810m / 178,933 Mi as EKS computes it
    # (docs/node-pools.md), less the daemonsets' 1,000m / 2,048 Mi, plus the KWOK provider's own 100m / 10 Mi.
    assert types["g6.12xlarge"]["resources"] == {"cpu": "46910m", "memory": "176895Mi", "pods": "110",
                                                 "nvidia.com/gpu.shared": "16"}
    assert types["p4de.24xlarge"]["resources"]["nvidia.com/mig-1g.10gb"] == "56"
    assert types["g6.12xlarge"]["offerings"] == [{"Price": 4.602, "Available": True, "Requirements": [
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["local-a"]}]}]
    objs = autoscaler.objects(plan, "5s", "30s")
    assert objs[0] == {"apiVersion": "karpenter.kwok.sh/v1alpha1", "kind": "KWOKNodeClass",
                       "metadata": {"name": "local"}, "spec": {"nodeRegistrationDelay": "5s"}}
    pools = {o["metadata"]["name"]: o["spec"] for o in objs[1:]}
    assert sorted(pools) == ["infer", "notebooks"]   # train is topology-aware: there whole
    infer = pools["infer"]
    assert infer["limits"] == {"nvidia.com/gpu.shared": "16"}   # max 2 - min 1 nodes of 16 replicas
    assert infer["disruption"] == {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "30s",
                                   "budgets": [{"nodes": "100%"}]}
    assert infer["template"]["metadata"]["labels"]["gpu-platform.io/pool"] == "infer"
    assert infer["template"]["spec"]["taints"] == [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
        {"key": "gpu-platform.io/workload", "value": "inference", "effect": "NoSchedule"}]
    assert infer["template"]["spec"]["requirements"][0] == {
        "key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["g6.12xlarge"]}


def test_pools_that_share_an_instance_type_get_one_provider_type_each() -> None:
    plan = load_plan(None, str(ROOT / "tests" / "live" / "stack.yaml"))[1]
    assert sorted(t["name"] for t in autoscaler.instance_types(plan)) == \
        ["g6.12xlarge-burst", "g6.12xlarge-shared", "p4de.24xlarge"]


def test_node_status_is_split_for_the_status_subresource() -> None:
    objects, statuses = nodes.split(fake_nodes(plan_of("local")), "v1.33.13")
    assert all("status" not in o for o in objects)
    assert [s["metadata"]["name"] for s in statuses] == [o["metadata"]["name"] for o in objects]
    assert all(s["status"]["nodeInfo"]["kubeletVersion"] == "v1.33.13" for s in statuses)
    with pytest.raises(ValueError, match="items\\[0\\] is not a named Node"):
        nodes.split({"kind": "List", "items": [{"kind": "Pod"}]}, "v1")


def test_a_killed_ups_empty_state_sidecar_is_removed_and_nothing_else(tmp_path: Path) -> None:
    from localcluster.recovery import repair_state_sidecars

    stacks = tmp_path / ".pulumi" / "stacks" / "gpu-platform"
    stacks.mkdir(parents=True)
    (stacks / "s.json").write_text('{"version": 3}')
    (stacks / "s.json.attrs").write_text("")                     # what the kill left
    (stacks / "s.json.bak.attrs").write_text('{"user.cache_control": ""}')
    assert repair_state_sidecars({"PULUMI_BACKEND_URL": f"file://{tmp_path}"}) == ["s.json.attrs"]
    assert sorted(p.name for p in stacks.iterdir()) == ["s.json", "s.json.bak.attrs"]
    assert repair_state_sidecars({"PULUMI_BACKEND_URL": "s3://bucket"}) == []
