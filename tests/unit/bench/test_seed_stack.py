"""The seed-scale stack (bench/seed_stack.py) is the size of fleet the platform's users run: 1,000 GPU nodes,
8,000 GPUs, 100 teams, and a spec the platform's loader accepts with every nominal quota inside its pool."""

from __future__ import annotations

from collections import Counter

from bench.seed_stack import seed_config
from gpu_platform import catalog
from gpu_platform import conventions as cv
from gpu_platform.nodes import fake_nodes
from gpu_platform.plan import build_plan
from gpu_platform.spec.loading import load_platform


def _plan():
    config = seed_config()
    return build_plan(load_platform(config["gpu-platform:platform"], config["aws:region"]), config["aws:region"])


def test_the_seed_stack_registers_1000_gpu_nodes_with_8000_gpus_for_100_teams() -> None:
    plan = _plan()
    gpu_nodes = [n for n in fake_nodes(plan)["items"] if n["spec"].get("taints")]
    types = Counter(n["metadata"]["labels"][cv.INSTANCE_TYPE_LABEL] for n in gpu_nodes)
    assert dict(types) == {"p5.48xlarge": 300, "p5en.48xlarge": 200, "p4de.24xlarge": 150,
                           "g6e.48xlarge": 200, "g6.48xlarge": 150}
    assert sum(catalog.INSTANCE_TYPES[t].gpus * n for t, n in types.items()) == 8000
    assert len(plan.teams) == 100
    assert len(plan.cohorts) == 11  # org and ten groups under it


def test_the_seed_stacks_nominal_quotas_fit_their_pools() -> None:
    raw = seed_config()["gpu-platform:platform"]
    units = {p["name"]: p["capacity"]["max"] * per for p, per in zip(raw["pools"], (8, 8, 56, 16, 32))}
    held = Counter()
    for team in raw["teams"]:
        for pool, quota in team["quotas"].items():
            held[pool] += quota["units"]
    assert all(held[p] <= units[p] for p in units), (held, units)
    assert held["pool-000"] == 2400  # 40 teams x 60 H100s: the pool's quotas hold all of it


def test_the_baseline_replay_adds_kueues_5_cohorts_of_6_queues_and_scales_counts_by_the_fraction() -> None:
    from bench.scale import Replay, stack_config

    config = stack_config()
    platform = load_platform(config["gpu-platform:platform"], config["aws:region"])
    baseline = [t for t in platform.teams if t.name.startswith("kb-")]
    assert len(baseline) == 30
    assert sorted({t.cohort for t in baseline}) == [f"kb-cohort-{c}" for c in range(5)]
    assert {(q.units, q.borrowingLimit) for t in baseline for q in t.quotas.values()} == {(20, 100)}
    replay = Replay(client=None, plan=None, fraction=0.1, tag="t")
    assert replay.counts() == {"small": 35, "medium": 10, "large": 5}
    assert replay.expected() == 1500
    assert Replay(client=None, plan=None, fraction=1.0, tag="t").expected() == 15000


def test_the_api_servers_admission_time_is_read_per_step_webhook_and_policy() -> None:
    from bench.scale import admission_figures, delta, parse_metrics

    before = parse_metrics('apiserver_admission_step_admission_duration_seconds_sum{operation="CREATE",'
                           'rejected="false",type="validate"} 1\n', ("apiserver_",))
    after = parse_metrics("\n".join([
        '# HELP x',
        'apiserver_admission_step_admission_duration_seconds_sum{operation="CREATE",rejected="false",type="validate"} 3',
        'apiserver_admission_step_admission_duration_seconds_count{operation="CREATE",rejected="false",type="validate"} 100',
        'apiserver_admission_step_admission_duration_seconds_bucket{le="0.1",type="validate"} 90',
        'apiserver_request_duration_seconds_sum{resource="jobs",verb="POST"} 8',
        'apiserver_admission_webhook_admission_duration_seconds_sum{name="mworkload.kb.io",type="admit"} 0.5',
        'apiserver_admission_controller_admission_duration_seconds_sum{name="ValidatingAdmissionPolicy",type="validate"} 1.5',
        'apiserver_flowcontrol_rejected_requests_total{priority_level="workload-low",reason="queue-full"} 4',
    ]), ("apiserver_",))
    fig = admission_figures(delta(after, before))
    assert fig["admission_s"] == 2.0
    assert fig["mutating_requests_served_s"] == 8.0
    assert fig["admission_share_of_mutating_request_time"] == 0.25
    assert fig["mean_ms"]["validate"] == 20.0  # the window's 2 s over its 100 validations
    assert fig["webhooks_s"] == {"mworkload.kb.io": 0.5}
    assert fig["plugins_s"] == {"ValidatingAdmissionPolicy": 1.5}
    assert fig["apf_rejected"] == 4


def test_kwok_plays_node_heartbeats_with_workers_enough_for_1000_nodes() -> None:
    import yaml

    from localcluster import kwok

    first, *stages = yaml.safe_load_all(kwok.config_yaml())
    assert first == {"apiVersion": "config.kwok.x-k8s.io/v1alpha1", "kind": "KwokConfiguration",
                     "options": {"nodePlayStageParallelism": 32, "podPlayStageParallelism": 32,
                                 # upstream's defaults, which a configuration file does not get
                                 "podsOnNodeSyncParallelism": 1, "enablePodsOnNodeSyncListPager": True,
                                 "enablePodsOnNodeSyncStreamWatch": False, "nodeLeaseParallelism": 4,
                                 "enableDebuggingHandlers": True, "enableProfilingHandler": True,
                                 "enableContentionProfiling": False}}
    assert {s["kind"] for s in stages} == {"Stage"}
