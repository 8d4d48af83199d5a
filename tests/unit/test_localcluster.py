"""What the live local cluster is given: Kueue's Configuration (the production one), its chart objects
pointed at loopback, KWOK's stages and the simulated nodes. The processes themselves run in tests/live."""

from __future__ import annotations

import base64
import copy

import pytest
import yaml

from gpu_platform import conventions as cv
from gpu_platform.kueue_config import (
    LOCAL_ONLY_KEYS, LOCAL_ONLY_PATHS, chart_values, controller_config, local_controller_config,
)
from gpu_platform.nodes import CPU_NODE_COUNT, fake_nodes
from localcluster import kueue, kwok, nodes
from tests.conftest import plan_of

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


@pytest.mark.parametrize("stack", STACKS)
def test_simulated_nodes_are_every_pool_at_max_plus_cpu_nodes(stack: str) -> None:
    plan = plan_of(stack)
    items = fake_nodes(plan)["items"]
    for pool in plan.pools:
        mine = [n for n in items if n["metadata"]["labels"].get(cv.POOL) == pool.name]
        assert len(mine) == pool.max_nodes
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
    assert sum(int(n["status"]["allocatable"].get(r, 0)) for n in items for r in plan.gpu_resource_names) == \
        sum(p.capacity_units for p in plan.pools)


def test_node_status_is_split_for_the_status_subresource() -> None:
    objects, statuses = nodes.split(fake_nodes(plan_of("local")), "v1.33.13")
    assert all("status" not in o for o in objects)
    assert [s["metadata"]["name"] for s in statuses] == [o["metadata"]["name"] for o in objects]
    assert all(s["status"]["nodeInfo"]["kubeletVersion"] == "v1.33.13" for s in statuses)
    with pytest.raises(ValueError, match="items\\[0\\] is not a named Node"):
        nodes.split({"kind": "List", "items": [{"kind": "Pod"}]}, "v1")
