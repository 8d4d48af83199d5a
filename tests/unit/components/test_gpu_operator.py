"""GpuOperator under mocks: the Helm release and its values, the MIG and device-plugin ConfigMaps, the namespace.

Expectations come from the stack configs (Pulumi.<stack>.yaml), the catalog, the chart's default values
(../shared/reference) and NVIDIA's documented behaviour, not from the component's own helpers.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from gpu_platform import catalog, conventions as cv
from gpu_platform.plan import build_plan
from gpu_platform.spec import SpecError, load_platform
from tests.chart_values import unknown_keys
from tests.conftest import load_yaml, plan_of, platform_raw, reference_yaml, rendered, spec_of
from tests.reference_data import crd_file, values_file

RELEASE = "kubernetes:helm.sh/v3:Release"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
NAMESPACE = "kubernetes:core/v1:Namespace"
ROLE_BINDING = "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding"
STACKS_WITH_OPERATOR = ("staging", "prod")



VALUES_FILE = values_file("gpu-operator-v26.7.0-chart-values.yaml")
CHART_DEFAULTS: dict[str, Any] = load_yaml(VALUES_FILE.read_text())

# Keys the chart documents only as commented-out examples in its values file (so they are absent from
# the parsed defaults) but its templates pass on to the ClusterPolicy. Each is checked below against the
# values file's comments and the ClusterPolicy CRD, so a typo here fails too.
COMMENTED_CHART_KEYS = ("dcgmExporter.config.name", "dcgmExporter.podLabelAllowlistRegex")


def release(stack: str):
    found = [r for r in rendered(stack).by_type(RELEASE) if r.inputs.get("chart") == "gpu-operator"]
    assert len(found) == 1, f"{stack}: {len(found)} gpu-operator releases"
    return found[0]


def values(stack: str) -> dict[str, Any]:
    return release(stack).inputs["values"]


def config_map(stack: str, name: str) -> dict[str, Any]:
    found = [o for o in rendered(stack).kubernetes_objects()
             if o["kind"] == "ConfigMap" and o["metadata"]["name"] == name
             and o["metadata"]["namespace"] == cv.GPU_OPERATOR_NAMESPACE]
    assert len(found) == 1, f"{stack}: {len(found)} ConfigMaps {name}"
    return found[0]


def tolerates(toleration: dict[str, str], taint: dict[str, str]) -> bool:
    """Kubernetes toleration matching (kubernetes.io/docs/concepts/scheduling-eviction/taint-and-toleration)."""
    if toleration.get("effect") and toleration["effect"] != taint["effect"]:
        return False
    if toleration.get("operator") == "Exists":
        return not toleration.get("key") or toleration["key"] == taint["key"]
    return toleration.get("key") == taint["key"] and toleration.get("value", "") == taint.get("value", "")


# ---------------------------------------------------------------------------------------------------
# The release


@pytest.mark.parametrize("stack", STACKS_WITH_OPERATOR)
def test_release_is_the_pinned_ngc_chart_in_our_namespace(stack: str) -> None:
    rel = release(stack)
    addon = platform_raw(stack)["addons"]["gpuOperator"]
    assert rel.inputs["version"] == addon["version"]
    assert rel.inputs["repositoryOpts"]["repo"] == "https://helm.ngc.nvidia.com/nvidia"
    assert rel.inputs["namespace"] == cv.GPU_OPERATOR_NAMESPACE
    assert rel.inputs["createNamespace"] is False
    assert rel.inputs["name"] == cv.GPU_OPERATOR_RELEASE_NAME
    deps = set(rel.options["dependencies"])
    assert {f"ns-{cv.GPU_OPERATOR_NAMESPACE}", f"{cv.GPU_OPERATOR_NAMESPACE}-{cv.MIG_PARTED_CONFIGMAP}",
            f"{cv.GPU_OPERATOR_NAMESPACE}-{cv.DEVICE_PLUGIN_CONFIGMAP}"} <= deps


@pytest.mark.parametrize("stack", STACKS_WITH_OPERATOR)
def test_every_values_key_exists_in_the_chart_defaults(stack: str) -> None:
    unknown = unknown_keys(values(stack), CHART_DEFAULTS)
    undocumented = [k for k in unknown if not any(k == c or k.startswith(c + ".") or c.startswith(k + ".")
                                                  for c in COMMENTED_CHART_KEYS)]
    assert undocumented == [], f"values keys the gpu-operator chart does not have: {undocumented}"


def test_key_check_catches_removed_and_misspelled_keys() -> None:
    assert unknown_keys({"operator": {"defaultRuntime": "containerd"}}, CHART_DEFAULTS) == ["operator.defaultRuntime"]
    assert unknown_keys({"dcgmExporter": {"serviceMonitor": {"honorLabel": True}}}, CHART_DEFAULTS) == [
        "dcgmExporter.serviceMonitor.honorLabel"]
    assert unknown_keys({"daemonsets": {"tolerations": [{"key": "x"}]}, "dcgmExporter": {
        "serviceMonitor": {"additionalLabels": {"release": "x"}}}}, CHART_DEFAULTS) == []


@pytest.mark.parametrize("dotted", COMMENTED_CHART_KEYS)
def test_commented_chart_keys_are_documented_and_reach_the_cluster_policy(dotted: str) -> None:
    top, *rest = dotted.split(".")
    text = VALUES_FILE.read_text()
    block = re.search(rf"^{top}:\n(.*?)(?=^\S)", text, re.S | re.M)
    assert block, f"no top-level {top} in {VALUES_FILE}"
    pattern = r".*?".join(rf"^\s*#\s*{re.escape(k)}:" for k in rest)
    assert re.search(pattern, block.group(1), re.S | re.M), f"{dotted} is not documented in {VALUES_FILE.name}"
    crd = reference_yaml(crd_file("gpu-operator-v26.7.0", "nvidia.com_clusterpolicies.yaml"))
    node = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    for key in dotted.split("."):
        node = node["properties"][key]


def test_local_stack_makes_namespace_and_config_maps_but_no_release() -> None:
    assert platform_raw("local")["addons"]["gpuOperator"]["install"] is False
    r = rendered("local")
    assert [x for x in r.by_type(RELEASE) if x.inputs.get("chart") == "gpu-operator"] == []
    assert r.one(NAMESPACE, f"ns-{cv.GPU_OPERATOR_NAMESPACE}")
    for name in (cv.MIG_PARTED_CONFIGMAP, cv.DEVICE_PLUGIN_CONFIGMAP, cv.DCGM_METRICS_CONFIGMAP):
        assert config_map("local", name)


# ---------------------------------------------------------------------------------------------------
# Values per pool mix


@pytest.mark.parametrize("stack", STACKS_WITH_OPERATOR)
def test_mig_strategy_is_mixed_exactly_when_a_pool_uses_mig(stack: str) -> None:
    """MIG slices keep their own resource names (nvidia.com/mig-<profile>) only under `mixed`."""
    has_mig = any(p["sharing"]["mode"] == "mig" for p in platform_raw(stack)["pools"])
    assert values(stack)["mig"]["strategy"] == ("mixed" if has_mig else "single")


@pytest.mark.parametrize("stack", STACKS_WITH_OPERATOR)
def test_operands_tolerate_every_pool_taint(stack: str) -> None:
    v = values(stack)
    for where, tolerations in (("daemonsets", v["daemonsets"]["tolerations"]),
                               ("node-feature-discovery", v["node-feature-discovery"]["worker"]["tolerations"])):
        assert len({tuple(sorted(t.items())) for t in tolerations}) == len(tolerations), f"{where}: duplicates"
        for pool in plan_of(stack).pools:
            for taint in pool.taints:
                assert any(tolerates(t, taint.to_k8s()) for t in tolerations), \
                    f"{where} does not tolerate {taint} of pool {pool.name}"


def test_driver_and_toolkit_follow_the_config() -> None:
    assert values("prod")["driver"]["enabled"] is False  # EKS NVIDIA AMIs ship the driver
    assert values("prod")["toolkit"]["enabled"] is False
    raw = platform_raw("local")
    raw["addons"]["gpuOperator"].update({"install": True, "driver": True, "toolkit": True})
    from components.gpu_operator import chart_values

    v = chart_values(build_plan(load_platform(raw)))
    assert v["driver"]["enabled"] is True and v["toolkit"]["enabled"] is True


def test_bottlerocket_nodes_run_no_operator_device_plugin_or_mig_manager() -> None:
    """The operator's device plugin and MIG manager DaemonSets select nodes labelled
    nvidia.com/gpu.deploy.<operand>=true, and the operator keeps a value it finds (NVIDIA/gpu-operator
    controllers/state_manager.go addGPUStateLabels; assets/state-device-plugin/0500_daemonset.yaml): the
    Bottlerocket pool's nodes, as planned and as simulated, say false, so its own plugin is the only one."""
    from gpu_platform.nodes import fake_nodes

    plan = plan_of("staging-karpenter")
    off = {"nvidia.com/gpu.deploy.device-plugin": "false", "nvidia.com/gpu.deploy.mig-manager": "false"}
    for pool in plan.pools:
        bottlerocket = pool.ami_type == "BOTTLEROCKET_x86_64_NVIDIA"
        assert bottlerocket == (pool.name == "l40s-infer")
        deploy = {k: v for k, v in pool.node_labels.items() if k.startswith("nvidia.com/gpu.deploy.")}
        assert deploy == (off if bottlerocket else {}), pool.name
    nodes = [n for n in fake_nodes(plan, autoscaled=False)["items"]
             if n["metadata"]["labels"].get(cv.POOL) == "l40s-infer"]
    assert nodes and all(off.items() <= n["metadata"]["labels"].items() for n in nodes)


def test_operator_points_at_our_config_maps() -> None:
    v = values("prod")
    assert v["migManager"]["config"]["name"] == config_map("prod", cv.MIG_PARTED_CONFIGMAP)["metadata"]["name"]
    assert v["devicePlugin"]["config"]["name"] == config_map("prod", cv.DEVICE_PLUGIN_CONFIGMAP)["metadata"]["name"]
    assert v["dcgmExporter"]["config"]["name"] == config_map("prod", cv.DCGM_METRICS_CONFIGMAP)["metadata"]["name"]
    assert v["cdi"]["enabled"] and v["nfd"]["enabled"] and v["gfd"]["enabled"] and v["dcgmExporter"]["enabled"]


def test_dcgm_exporter_exports_team_and_queue_pod_labels_only() -> None:
    dcgm = values("prod")["dcgmExporter"]
    assert dcgm["enablePodLabels"] is True
    patterns = [re.compile(p) for p in dcgm["podLabelAllowlistRegex"]]
    for key in (cv.TEAM, cv.QUEUE_NAME_LABEL):
        assert any(p.search(key) for p in patterns), key
    for other in ("app", "pod-template-hash", f"{cv.TEAM}-x", "gpu-platformXio/team", cv.COST_CENTER):
        assert not any(p.search(other) for p in patterns), other


def test_dcgm_exporter_maps_shared_gpus_to_pods() -> None:
    """dcgm-exporter maps only nvidia.com/gpu and nvidia.com/mig-* to pods by default; the time-sliced
    pools' resource must be named to it."""
    env = {e["name"]: e["value"] for e in values("prod")["dcgmExporter"]["env"]}
    shared = {p.resource_name for p in plan_of("prod").pools if p.sharing_mode == "time-slicing"}
    assert shared and shared <= set(env["NVIDIA_RESOURCE_NAMES"].split(","))
    assert env["KUBERNETES_VIRTUAL_GPUS"] == "true"


def test_dcgm_service_monitor_is_picked_up_and_keeps_pod_labels() -> None:
    sm = values("prod")["dcgmExporter"]["serviceMonitor"]
    spec = spec_of("prod").addons.monitoring
    assert sm["enabled"] is spec.install
    assert sm["additionalLabels"] == {cv.PROMETHEUS_RELEASE_LABEL: spec.prometheusRelease}
    assert sm["honorLabels"] is True
    assert {"sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": "node", "action": "replace"} in sm["relabelings"]


# ---------------------------------------------------------------------------------------------------
# ConfigMaps


def device_plugin_configs(stack: str) -> dict[str, dict[str, Any]]:
    return {k: load_yaml(v) for k, v in config_map(stack, cv.DEVICE_PLUGIN_CONFIGMAP)["data"].items()}


def mig_configs(stack: str) -> dict[str, Any]:
    return load_yaml(config_map(stack, cv.MIG_PARTED_CONFIGMAP)["data"]["config.yaml"])


@pytest.mark.parametrize("stack", ("local", "staging", "prod"))
def test_one_time_slicing_config_per_time_sliced_pool(stack: str) -> None:
    configs = device_plugin_configs(stack)
    sliced = {p["name"]: p["sharing"]["replicas"] for p in platform_raw(stack)["pools"]
              if p["sharing"]["mode"] == "time-slicing"}
    assert set(configs) == {cv.DEFAULT_DEVICE_PLUGIN_CONFIG} | {cv.device_plugin_config_name(p) for p in sliced}
    for pool, replicas in sliced.items():
        cfg = configs[cv.device_plugin_config_name(pool)]
        assert cfg["version"] == "v1"
        ts = cfg["sharing"]["timeSlicing"]
        assert ts["renameByDefault"] is True and ts["failRequestsGreaterThanOne"] is True
        assert ts["resources"] == [{"name": cv.GPU_RESOURCE, "replicas": replicas}]
    assert "sharing" not in configs[cv.DEFAULT_DEVICE_PLUGIN_CONFIG]


@pytest.mark.parametrize("stack", STACKS_WITH_OPERATOR)
def test_device_plugin_default_and_mig_strategy_agree_with_the_values(stack: str) -> None:
    v = values(stack)
    configs = device_plugin_configs(stack)
    assert v["devicePlugin"]["config"]["default"] in configs
    assert {c["flags"]["migStrategy"] for c in configs.values()} == {v["mig"]["strategy"]}


@pytest.mark.parametrize("stack", ("local", "prod"))
def test_mig_configs_partition_every_gpu_by_the_catalog(stack: str) -> None:
    doc = mig_configs(stack)
    assert doc["version"] == "v1"
    configs = doc["mig-configs"]
    assert configs[cv.MIG_DISABLED_CONFIG] == [{"devices": "all", "mig-enabled": False}]
    mig_pools = [p for p in platform_raw(stack)["pools"] if p["sharing"]["mode"] == "mig"]
    assert mig_pools
    for p in mig_pools:
        profile = p["sharing"]["profile"]
        slices = catalog.ACCELERATORS[p["accelerator"]].mig_profiles[profile].slices_per_gpu
        assert configs[cv.mig_config_name(profile)] == [
            {"devices": "all", "mig-enabled": True, "mig-devices": {profile: slices}}]
    assert len(configs) == 1 + len({p["sharing"]["profile"] for p in mig_pools})


def test_mig_manager_default_is_the_disabled_layout() -> None:
    default = values("prod")["migManager"]["config"]["default"]
    assert mig_configs("prod")["mig-configs"][default] == [{"devices": "all", "mig-enabled": False}]


def advertised(pool, dp_configs: dict[str, dict[str, Any]], mig: dict[str, Any]) -> set[str]:
    """What the NVIDIA device plugin advertises on a node of `pool`, from our ConfigMaps and the node's
    labels (GPU Operator docs: time-slicing with renameByDefault appends `.shared`; under the mixed MIG
    strategy each MIG device is advertised as nvidia.com/mig-<profile>, under single as nvidia.com/gpu)."""
    cfg = dp_configs[pool.node_labels.get(cv.DEVICE_PLUGIN_CONFIG_LABEL, cv.DEFAULT_DEVICE_PLUGIN_CONFIG)]
    slicing = cfg.get("sharing", {}).get("timeSlicing")
    if slicing:
        return {r["name"] + (".shared" if slicing["renameByDefault"] else "") for r in slicing["resources"]}
    layout = mig["mig-configs"].get(pool.node_labels.get(cv.MIG_CONFIG_LABEL, cv.MIG_DISABLED_CONFIG))
    if layout and layout[0]["mig-enabled"] and cfg["flags"]["migStrategy"] == "mixed":
        return {f"nvidia.com/mig-{profile}" for profile in layout[0]["mig-devices"]}
    return {"nvidia.com/gpu"}


@pytest.mark.parametrize("stack", ("local", "staging", "prod"))
def test_nodes_advertise_the_resource_kueue_quotas(stack: str) -> None:
    """The device plugin, configured by our ConfigMaps and the pool's node labels, advertises exactly the
    resource name the plan (and so every Kueue flavor quota) uses for the pool."""
    dp, mig = device_plugin_configs(stack), mig_configs(stack)
    gpu_names = set(plan_of(stack).gpu_resource_names)
    for pool in plan_of(stack).pools:
        assert advertised(pool, dp, mig) == {pool.resource_name}, pool.name
    for cq in (o for o in rendered(stack).kubernetes_objects() if o["kind"] == "ClusterQueue"):
        for group in cq["spec"]["resourceGroups"]:
            for flavor in group["flavors"]:
                pool = plan_of(stack).pools_by_name.get(flavor["name"])
                if pool is None:
                    continue
                quoted = {r["name"] for r in flavor["resources"]
                          if r["name"] in gpu_names and str(r["nominalQuota"]) not in ("0", "0.0")}
                assert quoted <= advertised(pool, dp, mig), f"{cq['metadata']['name']}/{flavor['name']}"


def test_a_profile_name_with_two_geometries_is_refused() -> None:
    """1g.10gb is 7 slices on an A100-80GB but 4 on an A100-40GB (catalog): one mig-parted config name
    cannot mean both."""
    raw = platform_raw("local")
    raw["pools"].append({"name": "notebooks-40", "accelerator": "a100-40gb", "instanceType": "p4d.24xlarge",
                         "workload": "interactive", "sharing": {"mode": "mig", "profile": "1g.10gb"},
                         "capacity": {"type": "on-demand", "min": 0, "max": 1}})
    # The spec refuses it with the pool's path, before any resource (or this ConfigMap) is built.
    with pytest.raises(SpecError) as err:
        load_platform(raw)
    assert [p.path for p in err.value.problems] == ["pools[3].sharing.profile"]


# ---------------------------------------------------------------------------------------------------
# Namespace and access


@pytest.mark.parametrize("stack", ("local", "prod"))
def test_operator_namespace_is_privileged_and_admin_only(stack: str) -> None:
    ns = rendered(stack).one(NAMESPACE, f"ns-{cv.GPU_OPERATOR_NAMESPACE}").inputs["metadata"]
    assert ns["name"] == cv.GPU_OPERATOR_NAMESPACE
    assert ns["labels"][cv.PSA_ENFORCE] == "privileged"
    assert ns["labels"][cv.MANAGED_BY] == cv.MANAGED_BY_VALUE
    bindings = [o for o in rendered(stack).kubernetes_objects()
                if o["kind"] in ("RoleBinding", "Role") and o["metadata"].get("namespace") == cv.GPU_OPERATOR_NAMESPACE]
    assert [b["kind"] for b in bindings] == ["RoleBinding"]
    admins = platform_raw(stack)["cluster"].get("platformAdmins", ["platform-admins"])
    assert sorted(s["name"] for s in bindings[0]["subjects"]) == sorted(admins)
    assert {s["kind"] for s in bindings[0]["subjects"]} == {"Group"}


@pytest.mark.parametrize("stack", ("local", "prod"))
def test_every_operator_object_is_named_and_managed(stack: str) -> None:
    for r in rendered(stack).custom:
        if r.parent != "gpu-operator" or "metadata" not in r.inputs:
            continue
        meta = r.inputs["metadata"]
        assert meta.get("name"), r.name
        assert meta["labels"][cv.MANAGED_BY] == cv.MANAGED_BY_VALUE, r.name
