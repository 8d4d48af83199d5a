"""Plan arithmetic: capacity in schedulable units, quota caps, CPU/memory shares, cost, labels."""

from __future__ import annotations

import pytest

from gpu_platform import catalog, conventions as cv
from gpu_platform.plan import build_plan, reserved_cpu_millis, reserved_memory_mib
from gpu_platform.pool_derivations import capacity_units, pool_capacity_gpus, pool_capacity_units, pool_nominal_units
from gpu_platform.spec import load_platform
from tests.conftest import plan_of, platform_raw, spec_of
from tests.spec_variants import without_cohorts


def test_capacity_units_per_sharing_mode() -> None:
    pools = plan_of("prod").pools_by_name
    # p5.48xlarge: 8 H100 per node (AWS P5 spec); 16 nodes of whole GPUs.
    assert pools["h100-train"].capacity_units == 16 * 8
    assert pools["h100-train"].resource_name == "nvidia.com/gpu"
    # p4de.24xlarge: 8 A100 80GB, 7 x 1g.10gb slices each (NVIDIA MIG guide).
    assert pools["a100-mig"].capacity_units == 4 * 8 * 7
    assert pools["a100-mig"].resource_name == "nvidia.com/mig-1g.10gb"
    # g6e.12xlarge: 4 L40S, 2 time-sliced replicas each.
    assert pools["l40s-infer"].capacity_units == 16 * 4 * 2
    assert pools["l40s-infer"].resource_name == cv.SHARED_GPU_RESOURCE
    assert pools["l40s-infer"].capacity_gpus == 16 * 4


def test_cpu_and_memory_per_unit_leave_the_system_reserve() -> None:
    pool = plan_of("prod").pools_by_name["a100-mig"]
    it = catalog.INSTANCE_TYPES["p4de.24xlarge"]
    per_node_cpu = pool.cpu_millis_per_unit * pool.units_per_node
    per_node_mem = pool.memory_mib_per_unit * pool.units_per_node
    assert per_node_cpu <= it.vcpus * 1000 - reserved_cpu_millis(it.vcpus)
    assert it.vcpus * 1000 - reserved_cpu_millis(it.vcpus) - per_node_cpu < pool.units_per_node  # only rounding lost
    assert per_node_mem <= it.memory_gib * 1024 - reserved_memory_mib("p4de.24xlarge")
    assert it.memory_gib * 1024 - reserved_memory_mib("p4de.24xlarge") - per_node_mem < pool.units_per_node
    # 96 vCPUs: 60+10+5+5 + 92 x 2.5 millicores kubelet reserve, plus 1 vCPU for daemonsets.
    assert reserved_cpu_millis(96) == 80 + 230 + 1000
    # 1152 GiB = 1179648 MiB: ceil(7.5%) = 88474 the kernel's share, 255 + 11 x 737 (15 ENIs x 49 + 2 pods)
    # = 8362 kube-reserved, 100 eviction, 2048 daemonsets.
    assert reserved_memory_mib("p4de.24xlarge") == 88474 + 8362 + 100 + 2048
    assert (pool.cpu_millis_per_unit, pool.memory_mib_per_unit) == (1690, 19297)  # 94690 // 56, 1080664 // 56


def test_quota_plan_carries_cpu_and_memory_for_its_units() -> None:
    team = next(t for t in plan_of("prod").teams if t.name == "llm-pretrain")
    q = next(q for q in team.quotas if q.pool == "h100-train")
    assert (q.nominal, q.borrowing, q.lending) == (96, 32, None)
    pool = plan_of("prod").pools_by_name["h100-train"]
    assert q.cpu(q.nominal) == f"{96 * pool.cpu_millis_per_unit}m"
    assert q.memory(q.borrowing) == f"{32 * pool.memory_mib_per_unit}Mi"


def test_namespace_quota_caps_at_what_the_team_can_ever_hold() -> None:
    plan = plan_of("prod")
    teams = {t.name: t for t in plan.teams}
    # llm-pretrain: h100 96 + borrowingLimit 32, but llm-finetune lends only 16 -> 112; h200 32, unlimited
    # borrowing, llm-finetune lends all 32 -> 64 (the pool's capacity too).
    assert teams["llm-pretrain"].namespace_quota["requests.nvidia.com/gpu"] == str(112 + 64)
    # recsys: l40s 48 + search-serving's 64 (unlimited borrowing, below the pool's 128) -> 112; l4 32 + vision's
    # 32 + data-science's 64 (through org) -> 128, both gpu.shared.
    assert teams["recsys"].namespace_quota[f"requests.{cv.SHARED_GPU_RESOURCE}"] == str(112 + 128)
    assert teams["vision"].namespace_quota["requests.nvidia.com/mig-1g.10gb"] == "224"


def test_team_without_cohort_cannot_exceed_nominal() -> None:
    plan = build_plan(load_platform(without_cohorts(platform_raw("prod"))))
    t = next(t for t in plan.teams if t.name == "llm-pretrain")
    assert t.namespace_quota["requests.nvidia.com/gpu"] == str(96 + 32)


def test_costs() -> None:
    plan = plan_of("prod")
    pools = plan.pools_by_name
    assert pools["h100-train"].usd_per_hour_max == round(16 * catalog.ON_DEMAND_USD_PER_HOUR["p5.48xlarge"], 2)
    team = next(t for t in plan.teams if t.name == "llm-pretrain")
    # 96 of 8-GPU p5 nodes = 12 nodes; 32 of p5en = 4 nodes.
    expected = 12 * catalog.ON_DEMAND_USD_PER_HOUR["p5.48xlarge"] + 4 * catalog.ON_DEMAND_USD_PER_HOUR["p5en.48xlarge"]
    assert team.usd_per_hour_nominal == round(expected, 2)


def test_pricing_override_wins() -> None:
    assert plan_of("staging").pools_by_name["h100-train"].usd_per_node_hour == 43.16


def test_pool_labels_and_taints_use_conventions() -> None:
    pool = plan_of("prod").pools_by_name["h100-train"]
    assert dict(pool.labels) == {
        cv.POOL: "h100-train", cv.ACCELERATOR: "h100-80gb", cv.TOPOLOGY: "8gpu-sxm-nvlink",
        cv.FABRIC: "efa", cv.WORKLOAD: "training", cv.SHARING: "full-gpu",
    }
    assert [(t.key, t.value, t.effect) for t in pool.taints] == [
        (cv.GPU_TAINT_KEY, cv.GPU_TAINT_VALUE, "NoSchedule"), (cv.WORKLOAD_TAINT_KEY, "training", "NoSchedule"),
    ]
    mig = plan_of("prod").pools_by_name["a100-mig"]
    assert mig.node_labels[cv.MIG_CONFIG_LABEL] == "all-1g.10gb"
    ts = plan_of("prod").pools_by_name["l4-interactive"]
    assert ts.node_labels[cv.DEVICE_PLUGIN_CONFIG_LABEL] == cv.device_plugin_config_name("l4-interactive")
    assert plan_of("prod").pools_by_name["l40s-infer"].labels[cv.TOPOLOGY] == "4gpu-pcie"


def test_placement_groups_only_for_efa_outside_reservations() -> None:
    pools = plan_of("prod").pools_by_name
    assert not pools["h100-train"].placement_group  # capacity block: conflicts with a placement group
    assert not pools["l40s-infer"].placement_group
    assert plan_of("staging").pools_by_name["h100-train"].placement_group  # EFA on-demand


def test_efa_interfaces_follow_the_catalog() -> None:
    pools = plan_of("prod").pools_by_name
    assert pools["h100-train"].efa_interfaces == catalog.INSTANCE_TYPES["p5.48xlarge"].network_cards
    assert pools["h200-train"].efa_interfaces == catalog.INSTANCE_TYPES["p5en.48xlarge"].network_cards
    assert pools["l40s-infer"].efa_interfaces == 0


@pytest.mark.parametrize("stack,strategy", [("prod", "mixed"), ("staging", "single"), ("local", "mixed")])
def test_mig_strategy(stack: str, strategy: str) -> None:
    assert plan_of(stack).mig_strategy == strategy


def test_warnings_name_idle_pools() -> None:
    raw = platform_raw("prod")
    for team in raw["teams"]:
        team["quotas"].pop("l4-interactive", None)
    plan = build_plan(load_platform(raw))
    assert any("'l4-interactive' has no team quota" in w for w in plan.warnings)
    assert any("keeps 1 nodes running" in w for w in plan.warnings)
    # The two things prod's stack cannot do itself: turn on an attached cluster's control-plane logging, and
    # scale its capacity-block node group to 0 before an upgrade (tests/unit/components/test_node_pools.py).
    logging, block = plan_of("prod").warnings
    assert logging.startswith("cluster.create is false: the stack cannot turn on control-plane logging")
    assert block.startswith("pool 'h100-train' is a capacity-block node group")


def test_catalog_is_consistent() -> None:
    for name, it in catalog.INSTANCE_TYPES.items():
        assert it.accelerator in catalog.ACCELERATORS, name
        assert name in catalog.ON_DEMAND_USD_PER_HOUR, name
        assert it.gpus in (1, 4, 8), name
    for acc in catalog.ACCELERATORS.values():
        for profile in acc.mig_profiles.values():
            assert profile.memory_gb <= acc.memory_gb


def test_capacity_and_nominal_sums_are_the_stack_yaml_arithmetic() -> None:
    """Pulumi.staging.yaml: h100-train 2 x p5.48xlarge (8 GPUs), l40s-infer 4 x g6e.12xlarge (4 GPUs, 2 replicas
    each), a10g-dev 8 x g5.xlarge (1 GPU); quotas 12 + 4 on h100-train, 32 on l40s-infer, 4 + 4 on a10g-dev.
    One definition each (pool_derivations), the same numbers wherever they are read."""
    spec = spec_of("staging")
    assert {p.name: pool_capacity_units(p) for p in spec.pools} == {"h100-train": 16, "l40s-infer": 32, "a10g-dev": 8}
    assert {p.name: pool_capacity_gpus(p) for p in spec.pools} == {"h100-train": 16, "l40s-infer": 16, "a10g-dev": 8}
    assert pool_nominal_units(spec.teams) == {"h100-train": 16, "a10g-dev": 8, "l40s-infer": 32}
    plan = plan_of("staging")
    assert {p.name: (p.capacity_units, p.capacity_gpus, plan.allocated_units(p.name)) for p in plan.pools} == {
        "h100-train": (16, 16, 16), "l40s-infer": (32, 16, 32), "a10g-dev": (8, 8, 8)}
    assert plan.allocated_units("no-such-pool") == 0
    assert capacity_units(3, 8, 7) == 168  # the policy pack's node group arithmetic: nodes x GPUs x units per GPU


def test_a_pool_no_team_quotes_has_no_nominal_sum_and_a_zero_quota_has_one() -> None:
    raw = platform_raw("staging")
    for t in raw["teams"]:
        t["quotas"].pop("a10g-dev", None)
    assert pool_nominal_units(load_platform(raw).teams) == {"h100-train": 16, "l40s-infer": 32}
    raw["teams"][0]["quotas"]["a10g-dev"] = {"gpus": 0}
    assert pool_nominal_units(load_platform(raw).teams) == {"h100-train": 16, "a10g-dev": 0, "l40s-infer": 32}
