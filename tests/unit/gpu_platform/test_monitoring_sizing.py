"""The observability layer's size: active series and samples/s by source, Prometheus memory and volume, at a
stack's capacity.max and at 1,000 GPU nodes. Every figure is worked by hand in the comment beside it, from the
per-source counts gpu_platform/plan/monitoring_sizing.py documents (and cites)."""

from __future__ import annotations

import copy

from gpu_platform.plan import build_plan
from gpu_platform.plan.monitoring_sizing import Fleet, PoolShape, QueueShape, estimate, shortfalls
from gpu_platform.spec import load_platform
from tests.conftest import plan_of, platform_raw

# Two p5.48xlarge nodes (8 whole GPUs, 192 vCPUs each); one team with one quota (2 flavors: the pool's and the
# CPU-only one; 3 covered resources: cpu, memory, nvidia.com/gpu), one namespace, one priority class (+ none = 2).
FLEET = Fleet(pools=(PoolShape(nodes=2, gpus_per_node=8, units_per_gpu=1, vcpus=192),),
              queues=(QueueShape(flavors=2, resources=3, namespaces=1, priority_classes=2, quotas=1),), pool_count=1)


def test_in_cluster_series_by_source_at_the_fleets_own_nodes() -> None:
    size = estimate(FLEET, retention_days=15, in_cluster=True)
    # devices 2 x 8 = 16; GPU pods 16 (one per unit); daemon pods 2 x 12 = 24; pods 40
    assert dict(size.series) == {
        "dcgm-exporter": 602,            # 16 devices x 37 fields + 2 targets x 5
        "kube-state-metrics": 1740,      # 2 nodes x 30 + 40 pods x 40 + 16 GPU pods x 5 Workload conditions
        "recording rules": 122,          # 16 x 3 + 16 x 3 + 2 x 2 = 100; + 1 pool x 8 + 1 quota x 9 + 1 team x 4 + 1 ns = 22
        "node-exporter": 3882,           # 2 x (192 vCPU x 8 modes + 400 + 5) = 2 x 1941
        "kubelet and cAdvisor": 3420,    # 2 x (500 + 2 targets x 5) + 40 pods x 60 = 1020 + 2400
        "kueue": 526,                    # 100 + 5; CQ 14 + 2 x 90 + 6 x 5 + 3 = 227; LQ 6 + 2 x 88 + 6 x 2 = 194
    }
    assert size.active_series == 10292          # 602 + 1740 + 122 + 3882 + 3420 + 526
    assert size.samples_per_second == 344       # ceil(10292 / 30 s) = ceil(343.07)
    assert size.memory_gib == 2                 # 10292 x 3000 B x 2 = 0.06 GiB, the 2 GiB floor
    assert size.volume_gib == 10                # 344 x 1,296,000 s x 2 B / 0.85 = 0.98 GiB, the 10 GiB floor


def test_at_a_thousand_nodes_the_node_series_scale_and_kueue_stays() -> None:
    size = estimate(FLEET, retention_days=15, in_cluster=True, nodes=1000)
    # x 500 (1000 / 2 nodes) the node-proportional parts; Kueue's and the rules' fixed 22 as they are
    assert dict(size.series) == {"dcgm-exporter": 301000, "kube-state-metrics": 870000, "recording rules": 50022,
                                 "node-exporter": 1941000, "kubelet and cAdvisor": 1710000, "kueue": 526}
    assert size.active_series == 4872548
    assert size.samples_per_second == 162419    # ceil(4,872,548 / 30) = ceil(162,418.27)
    assert size.memory_gib == 28                # 4,872,548 x 6000 B = 29,235,288,000 B = 27.23 GiB -> 28
    # 162,419 x 1,296,000 s x 2 B = 420,990,048,000 B; / 0.85 = 495,282,409,412 B = 461.27 GiB -> 462
    assert size.volume_gib == 462
    assert size.retention_size_gib == 392       # floor(462 x 0.85 = 392.7)


def test_managed_counts_only_what_the_collector_scrapes() -> None:
    size = estimate(FLEET, retention_days=150, in_cluster=False, managed=True)
    # no node-exporter and no kubelet; of cAdvisor the collector's four byte counters per pod
    assert dict(size.series) == {
        "dcgm-exporter": 602, "kube-state-metrics": 1740, "recording rules": 122,
        "cAdvisor (pod bytes)": 170,     # 2 targets x 5 + 40 pods x 4 counters (one interface, one device)
        "kueue": 526,
    }
    assert size.active_series == 3160           # 602 + 1740 + 122 + 170 + 526
    assert size.samples_per_second == 106       # ceil(3160 / 30 = 105.33)
    assert size.samples_per_month == 274752000  # 106 x 30 days x 86,400 s


def test_external_counts_no_scraping_of_the_platforms_own() -> None:
    """Mode external has no collector of the platform's: only the sources it asks the user's Prometheus to hold."""
    size = estimate(FLEET, retention_days=150, in_cluster=False)
    assert dict(size.series) == {"dcgm-exporter": 602, "kube-state-metrics": 1740, "recording rules": 122,
                                 "kueue": 526}
    assert size.active_series == 2990           # 602 + 1740 + 122 + 526
    assert size.samples_per_second == 100       # ceil(2990 / 30 = 99.67)


def test_prod_dcgm_series_are_its_devices_times_the_field_list() -> None:
    """prod's pools at capacity.max, by hand: h100-train 16 x 8 whole GPUs = 128 devices; h200-train 8 x 8 = 64;
    l40s-infer 16 nodes x 4 GPUs time-sliced x2: 4 x (1 + 2) = 12 a node, 192; a100-mig 4 nodes x 8 GPUs of 7
    1g.10gb instances: 8 x (1 + 7) = 64 a node, 256; l4-interactive 8 nodes x 4 GPUs x (1 + 4) = 160. 800 devices
    x 37 + 52 nodes x 5 = 29,860."""
    size = plan_of("prod").addons.monitoring.sizing
    assert size is not None
    assert size.stack.nodes == 52
    assert size.stack.series["dcgm-exporter"] == 29860
    assert size.target.nodes == 1000
    # 1000 / 52 of the node part: 29,860 x 19.2308 = 574,231
    assert size.target.series["dcgm-exporter"] == 574231


def test_a_volume_set_short_of_the_estimate_is_warned_about() -> None:
    raw = copy.deepcopy(platform_raw("prod"))
    raw["addons"]["monitoring"] = {"mode": "in-cluster", "volumeGiB": 20, "memoryGiB": 1}
    m = build_plan(load_platform(raw, "us-east-1"), "us-east-1").addons.monitoring
    assert (m.volume_gib, m.memory_gib, m.volume_sized, m.memory_sized) == (20, 1, False, False)
    needed = m.sizing.stack.volume_gib
    assert any(w.startswith(f"addons.monitoring.volumeGiB 20 GiB is short:") and f"need {needed} GiB" in w
               for w in m.warnings), m.warnings
    assert any(w.startswith("addons.monitoring.memoryGiB 1 GiB is short:") for w in m.warnings), m.warnings


def test_a_size_that_covers_the_estimate_is_not_warned_about() -> None:
    size = estimate(FLEET, retention_days=15, in_cluster=True)
    assert shortfalls(size, volume_gib=10, memory_gib=2) == []
    assert shortfalls(size, volume_gib=9, memory_gib=2) == [
        "addons.monitoring.volumeGiB 9 GiB is short: 10,292 active series at capacity.max (344 samples/s) kept 15 "
        "days need 10 GiB; raise it or lower retentionDays"]


def test_unsized_in_cluster_takes_the_estimate() -> None:
    m = plan_of("prod").addons.monitoring
    assert (m.volume_sized, m.memory_sized) == (True, True)
    assert (m.volume_gib, m.memory_gib) == (m.sizing.stack.volume_gib, m.sizing.stack.memory_gib)
