"""The EFA device plugin under mocks: without it no pool node advertises `vpc.amazonaws.com/efa` and NCCL
falls back to TCP, so EFA pools must get it, with values the chart knows, on exactly their nodes.

Expectations come from the chart's default values (tests/fixtures/charts, copied from aws/eks-charts),
the plan and the catalog.
"""

from __future__ import annotations

import copy

import pytest

from gpu_platform import catalog, conventions as cv
from gpu_platform.plan import build_plan
from gpu_platform.spec import load_platform
from tests.chart_values import chart_defaults, unknown_keys
from tests.conftest import plan_of, platform_raw, rendered, spec_of

RELEASE = "kubernetes:helm.sh/v3:Release"
DEFAULTS = chart_defaults("aws-efa-k8s-device-plugin-v0.5.30-values.yaml")


def efa_releases(stack: str):
    return [r for r in rendered(stack).by_type(RELEASE) if r.inputs.get("chart") == "aws-efa-k8s-device-plugin"]


def selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def tolerated(tolerations: list[dict[str, str]], taint: dict[str, str]) -> bool:
    return any(t.get("effect") in (None, taint["effect"]) and t["key"] == taint["key"]
               and (t.get("operator") == "Exists" or t.get("value") == taint["value"]) for t in tolerations)


@pytest.mark.parametrize("stack", ["staging", "prod"])
def test_stacks_with_efa_pools_install_the_pinned_chart_in_kube_system(stack: str) -> None:
    (release,) = efa_releases(stack)
    assert release.inputs["version"] == spec_of(stack).addons.efaDevicePlugin.version == "v0.5.30"
    assert release.inputs["repositoryOpts"] == {"repo": "https://aws.github.io/eks-charts"}
    assert release.inputs["namespace"] == "kube-system"
    assert release.inputs["name"] == cv.EFA_DEVICE_PLUGIN_RELEASE_NAME


@pytest.mark.parametrize("stack", ["staging", "prod"])
def test_every_value_is_a_key_of_the_chart(stack: str) -> None:
    (release,) = efa_releases(stack)
    assert unknown_keys(release.inputs["values"], DEFAULTS) == []


def test_the_key_check_catches_a_misspelled_key() -> None:
    assert unknown_keys({"nodeSelectors": {}, "tolerations": []}, DEFAULTS) == ["nodeSelectors"]


@pytest.mark.parametrize("stack", ["staging", "prod"])
def test_runs_on_every_efa_node_and_no_other_and_tolerates_their_taints(stack: str) -> None:
    plan = plan_of(stack)
    (release,) = efa_releases(stack)
    values = release.inputs["values"]
    for pool in plan.pools:
        on = selects(values["nodeSelector"], dict(pool.node_labels))
        assert on == (pool.fabric == "efa"), f"{pool.name}: plugin scheduled={on}, fabric={pool.fabric}"
        if on:
            for taint in pool.taints:
                assert tolerated(values["tolerations"], taint.to_k8s()), f"{pool.name}: {taint}"


def test_the_chart_affinity_admits_every_efa_instance_type_of_the_catalog() -> None:
    """The chart keeps its own node affinity on node.kubernetes.io/instance-type; a catalog type missing
    from its list would get no plugin although our nodeSelector matches."""
    supported = set(DEFAULTS["supportedInstanceLabels"]["values"])
    assert DEFAULTS["supportedInstanceLabels"]["keys"] == ["node.kubernetes.io/instance-type"]
    efa_types = {n for n, t in catalog.INSTANCE_TYPES.items() if t.efa}
    assert efa_types - supported == set()


def test_no_plugin_without_an_efa_pool_or_when_switched_off() -> None:
    assert efa_releases("local") == []
    raw = platform_raw("staging")
    raw["addons"]["efaDevicePlugin"] = {"install": False}
    assert not build_plan(load_platform(raw)).installs_efa_device_plugin
    raw = copy.deepcopy(platform_raw("staging"))
    for pool in raw["pools"]:
        pool["fabric"] = "ethernet"
    plan = build_plan(load_platform(raw))
    assert not plan.installs_efa_device_plugin and plan.efa_pools == ()


def test_the_plan_exposes_each_efa_node_device_count() -> None:
    """What a pool's node advertises as vpc.amazonaws.com/efa: one device per network card."""
    for pool in plan_of("prod").pools:
        it = catalog.INSTANCE_TYPES[pool.instance_type]
        assert pool.efa_interfaces == (it.network_cards if pool.fabric == "efa" else 0), pool.name
    # p5.48xlarge has 32 network cards, p5en.48xlarge 16.
    assert {p.name: p.efa_interfaces for p in plan_of("prod").efa_pools} == {"h100-train": 32, "h200-train": 16}
