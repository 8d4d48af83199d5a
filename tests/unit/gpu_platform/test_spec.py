"""The config contract: every stack validates; every bad config fails with its path and a useful message."""

from __future__ import annotations

from typing import Any, Callable

import pytest

from gpu_platform import catalog
from gpu_platform.spec import SpecError, load_platform
from tests.conftest import STACKS, platform_raw


def test_every_stack_validates(stack: str) -> None:
    raw = platform_raw(stack)
    platform = load_platform(raw)
    assert [p.name for p in platform.pools] == [p["name"] for p in raw["pools"]]
    assert [t.name for t in platform.teams] == [t["name"] for t in raw["teams"]]


def test_prod_has_the_platform_shape_the_issue_asks_for() -> None:
    p = load_platform(platform_raw("prod"))
    pools = {x.accelerator: x for x in p.pools}
    assert pools["h100-80gb"].fabric == "efa" and pools["h200-141gb"].fabric == "efa"
    assert {pools["h100-80gb"].capacity.type, pools["h200-141gb"].capacity.type} == {"capacity-block", "capacity-reservation"}
    assert pools["l40s-48gb"].workload == "inference"
    assert pools["a100-80gb"].sharing.mode == "mig"
    assert pools["l4-24gb"].sharing.mode == "time-slicing" and pools["l4-24gb"].workload == "interactive"
    assert len(p.teams) >= 5
    parents = {c.name: c.parent for c in p.cohorts}
    assert any(parents.get(t.cohort) is not None for t in p.teams), "cohort tree has two levels"
    quotas = [q for t in p.teams for q in t.quotas.values()]
    assert any(q.borrowingLimit for q in quotas) and any(q.lendingLimit for q in quotas)


def _set(path: list[Any], value: Any) -> Callable[[dict], None]:
    def mutate(raw: dict) -> None:
        node = raw
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
    return mutate


def _del(path: list[Any]) -> Callable[[dict], None]:
    def mutate(raw: dict) -> None:
        node = raw
        for key in path[:-1]:
            node = node[key]
        del node[path[-1]]
    return mutate


def _append(path: list[Any], value: Any) -> Callable[[dict], None]:
    def mutate(raw: dict) -> None:
        node = raw
        for key in path:
            node = node[key]
        node.append(value)
    return mutate


def _all(*fns: Callable[[dict], None]) -> Callable[[dict], None]:
    def mutate(raw: dict) -> None:
        for f in fns:
            f(raw)
    return mutate


# (id, mutation of the prod stack, expected error path, a fragment the message must contain)
BAD: list[tuple[str, Callable[[dict], None], str, str]] = [
    ("unknown top-level field", _set(["gpuCount"], 3), "gpuCount", "unknown field 'gpuCount'"),
    ("unknown pool field", _set(["pools", 0, "gpus"], 8), "pools[0].gpus", "valid fields here"),
    ("unknown nested field", _set(["pools", 0, "capacity", "maximum"], 8), "pools[0].capacity.maximum", "unknown field"),
    ("unknown team field", _set(["teams", 1, "owner"], "x"), "teams[1].owner", "unknown field"),
    ("bad environment", _set(["environment"], "production"), "environment", "'local', 'dev', 'staging' or 'prod'"),
    ("bad provider", _set(["cluster", "provider"], "gke"), "cluster.provider", "'eks' or 'existing'"),
    ("missing cluster name", _del(["cluster", "name"]), "cluster.name", "required"),
    ("bad kubernetes version", _set(["cluster", "kubernetesVersion"], "v1.33.2"), "cluster.kubernetesVersion", "minor version"),
    ("eks without subnets", _set(["cluster", "subnetIds"], []), "cluster.subnetIds", "subnets"),
    ("no pools", _set(["pools"], []), "pools", "at least 1"),
    ("unknown accelerator", _set(["pools", 0, "accelerator"], "h900-80gb"), "pools[0].accelerator", "h100-80gb"),
    ("unknown instance type", _set(["pools", 0, "instanceType"], "p9.48xlarge"), "pools[0].instanceType", "p5.48xlarge"),
    ("instance type of another GPU", _set(["pools", 1, "instanceType"], "p5.48xlarge"), "pools[1].instanceType", "p5e.48xlarge"),
    ("efa on an instance without it", _all(_set(["pools", 2, "instanceType"], "g6e.xlarge"), _set(["pools", 2, "fabric"], "efa"),
                                           _set(["pools", 2, "availabilityZone"], "us-east-1a"), _set(["pools", 2, "capacity", "max"], 4)),
     "pools[2].fabric", "does not support EFA"),
    ("bad fabric", _set(["pools", 0, "fabric"], "infiniband"), "pools[0].fabric", "'efa' or 'ethernet'"),
    ("bad workload", _set(["pools", 0, "workload"], "gaming"), "pools[0].workload", "'training'"),
    ("bad sharing mode", _set(["pools", 0, "sharing"], {"mode": "mps"}), "pools[0].sharing.mode", "'full', 'mig' or 'time-slicing'"),
    ("mig profile the GPU lacks", _set(["pools", 3, "sharing", "profile"], "1g.18gb"), "pools[3].sharing.profile", "1g.10gb"),
    ("mig on a GPU without mig", _set(["pools", 2, "sharing"], {"mode": "mig", "profile": "1g.10gb"}), "pools[2].sharing.mode", "does not support MIG"),
    ("mig without profile", _set(["pools", 3, "sharing"], {"mode": "mig"}), "pools[3].sharing", "needs a profile"),
    ("mig profile with two geometries", _append(["pools"], {
        "name": "a100-40-mig", "accelerator": "a100-40gb", "instanceType": "p4d.24xlarge", "workload": "batch",
        "sharing": {"mode": "mig", "profile": "1g.10gb"}, "capacity": {"max": 1}}), "pools[5].sharing.profile", "4 slices per GPU"),
    ("time-slicing replicas 1", _set(["pools", 4, "sharing", "replicas"], 1), "pools[4].sharing", "replicas >= 2"),
    ("time-slicing without replicas", _set(["pools", 4, "sharing"], {"mode": "time-slicing"}), "pools[4].sharing", "replicas >= 2"),
    ("full with replicas", _set(["pools", 0, "sharing"], {"mode": "full", "replicas": 2}), "pools[0].sharing", "neither"),
    ("min above max", _set(["pools", 2, "capacity", "min"], 20), "pools[2].capacity.min", "greater than max"),
    ("negative max", _set(["pools", 2, "capacity", "max"], -1), "pools[2].capacity.max", "greater than or equal to 0"),
    ("desired outside range", _set(["pools", 2, "capacity", "desired"], 40), "pools[2].capacity.desired", "outside min..max"),
    ("capacity block without reservation", _del(["pools", 0, "capacity", "reservationId"]), "pools[0].capacity.reservationId", "needs a reservationId"),
    ("capacity block without zone", _del(["pools", 0, "availabilityZone"]), "pools[0].availabilityZone", "single availability zone"),
    ("capacity reservation without zone", _del(["pools", 1, "availabilityZone"]), "pools[1].availabilityZone", "reservation's zone"),
    ("reservation id malformed", _set(["pools", 1, "capacity", "reservationId"], "res-123"), "pools[1].capacity.reservationId", "17 hex digits"),
    ("reservation id on on-demand", _set(["pools", 2, "capacity", "reservationId"], "cr-0123456789abcdef0"), "pools[2].capacity.reservationId", "only valid with"),
    ("bad capacity type", _set(["pools", 2, "capacity", "type"], "reserved"), "pools[2].capacity.type", "'capacity-block'"),
    ("zone outside region", _set(["pools", 0, "availabilityZone"], "eu-west-1a"), "pools[0].availabilityZone", "not in region"),
    ("placement group without efa", _set(["pools", 2, "placementGroup"], True), "pools[2].placementGroup", "only made for fabric 'efa'"),
    ("pool name not dns", _set(["pools", 2, "name"], "L40S_Infer"), "pools[2].name", "DNS-1123"),
    ("pool name too long", _set(["pools", 2, "name"], "p" * 64), "pools[2].name", "at most 63"),
    ("duplicate pool", _set(["pools", 2, "name"], "h100-train"), "pools[2].name", "duplicate pool name"),
    ("quota on unknown pool", _set(["teams", 0, "quotas", "h800-train"], {"units": 1}), "teams[0].quotas.h800-train", "unknown pool"),
    ("nominal over capacity", _set(["teams", 0, "quotas", "h100-train", "units"], 100), "teams[0].quotas.h100-train.units", "add up to 132"),
    ("negative quota", _set(["teams", 0, "quotas", "h100-train", "units"], -1), "teams[0].quotas.h100-train.units", "greater than or equal to 0"),
    ("quota as string", _set(["teams", 0, "quotas", "h100-train", "units"], "lots"), "teams[0].quotas.h100-train.units", "integer"),
    # `units` is the quota's name, `gpus` its former one: either, never both.
    ("quota given as units and gpus", _set(["teams", 0, "quotas", "h100-train", "gpus"], 96), "teams[0].quotas.h100-train",
     "the nominal quota is given twice, as units and as gpus (its former name): keep units"),
    ("nominal over capacity, as units", _set(["teams", 0, "quotas", "h100-train"], {"units": 100}),
     "teams[0].quotas.h100-train.units", "add up to 132"),
    ("negative quota, as units", _set(["teams", 0, "quotas", "h100-train"], {"units": -1}), "teams[0].quotas.h100-train.units",
     "greater than or equal to 0"),
    ("lending above units", _set(["teams", 0, "quotas", "h200-train"], {"units": 8, "lendingLimit": 9}),
     "teams[0].quotas.h200-train.lendingLimit", "lendingLimit 9 is above the nominal quota units=8"),
    ("borrowing without cohort", _del(["teams", 0, "cohort"]), "teams[0].quotas.h100-train.borrowingLimit", "needs the team to be in a cohort"),
    ("lending above nominal", _set(["teams", 1, "quotas", "h100-train", "lendingLimit"], 64), "teams[1].quotas.h100-train.lendingLimit", "above the nominal"),
    ("unknown team cohort", _set(["teams", 0, "cohort"], "labs"), "teams[0].cohort", "unknown cohort 'labs'"),
    ("unknown cohort parent", _set(["cohorts", 1, "parent"], "company"), "cohorts[1].parent", "unknown cohort 'company'"),
    ("cohort cycle", _set(["cohorts", 0, "parent"], "research"), "cohorts[0].parent", "cycle"),
    ("cohort self parent", _set(["cohorts", 0, "parent"], "org"), "cohorts[0].parent", "cycle: org -> org"),
    ("duplicate cohort", _append(["cohorts"], {"name": "org"}), "cohorts[3].name", "duplicate cohort"),
    ("duplicate team", _set(["teams", 1, "name"], "llm-pretrain"), "teams[1].name", "duplicate team name"),
    ("duplicate namespace", _set(["teams", 5, "namespaces"], ["data-science", "vision"]), "teams[5].namespaces[1]", "duplicate namespace 'vision'"),
    ("reserved namespace", _set(["teams", 5, "namespaces"], ["kube-system"]), "teams[5].namespaces[0]", "reserved"),
    ("team name not dns", _set(["teams", 0, "name"], "LLM"), "teams[0].name", "DNS-1123"),
    ("cost center too long", _set(["teams", 0, "costCenter"], "c" * 64), "teams[0].costCenter", "at most 63"),
    ("cost center bad chars", _set(["teams", 0, "costCenter"], "cc 1042"), "teams[0].costCenter", "not a valid label value"),
    ("bad pod security", _set(["teams", 0, "podSecurity"], "privileged"), "teams[0].podSecurity", "'baseline' or 'restricted'"),
    ("bad egress cidr", _set(["teams", 3, "egress"], [{"cidr": "10.0.0.0/33"}]), "teams[3].egress[0].cidr", "not a CIDR"),
    ("bad egress port", _set(["teams", 3, "egress"], [{"cidr": "10.0.0.0/16", "ports": [0]}]), "teams[3].egress[0].ports", "outside 1-65535"),
    ("preemption value kueue lacks", _set(["defaultPreemption"], {"withinClusterQueue": "Any"}), "defaultPreemption.withinClusterQueue", "'LowerOrNewerEqualPriority'"),
    ("preemption combination kueue rejects", _set(["teams", 3, "preemption"], {"reclaimWithinCohort": "Never", "borrowWithinCohort": "LowerPriority"}),
     "teams[3].preemption", "must be 'Never'"),
    ("pricing unknown type", _set(["pricing"], {"p9.xlarge": 1.0}), "pricing.p9.xlarge", "unknown instance type"),
    ("pool list not a list", _set(["pools"], "h100"), "pools", "valid list"),
    ("addon version latest", _set(["addons", "kueue", "version"], "latest"), "addons.kueue.version", "MAJOR.MINOR.PATCH"),
    ("addon version a range", _set(["addons", "gpuOperator", "version"], "~v26.7"), "addons.gpuOperator.version", "not an exact chart version"),
    ("created cluster with no system node", _all(_set(["cluster", "create"], True), _set(["cluster", "systemPool"], {"min": 0})),
     "cluster.systemPool.min", "needs at least one system node"),
    ("system pool on an existing cluster", _all(_set(["cluster", "provider"], "existing"), _set(["cluster", "systemPool"], {})),
     "cluster.systemPool", "only for provider 'eks'"),
    ("system pool of a GPU type", _set(["cluster", "systemPool"], {"instanceType": "p5.48xlarge"}),
     "cluster.systemPool.instanceType", "m7i.xlarge"),
    ("gpu pool named like the system pool", _all(_set(["cluster", "create"], True), _set(["pools", 2, "name"], "system"),
                                                 _set(["teams", 3, "quotas"], {"system": {"units": 8}}), _set(["teams", 4, "quotas"], {})),
     "pools[2].name", "taken by the system pool"),
    ("system pool min above max", _set(["cluster", "systemPool"], {"min": 5, "max": 4}), "cluster.systemPool.min", "greater than max"),
    ("vpc cni version malformed", _set(["addons", "vpcCni"], {"version": "1.20.1"}), "addons.vpcCni.version", "eksbuild"),
    ("vpc cni without network policy", _set(["addons", "vpcCni"], {"version": "v1.13.4-eksbuild.1"}), "addons.vpcCni.version", "v1.14.0"),
    ("efa plugin version latest", _set(["addons", "efaDevicePlugin"], {"version": "latest"}), "addons.efaDevicePlugin.version", "exact chart version"),
    ("addon version without patch", _set(["addons", "kueue", "version"], "0.19"), "addons.kueue.version", "not an exact chart version"),
    # Bottlerocket runs its own device plugin, and the operator's plugin and MIG manager are kept off its nodes.
    ("time-slicing on Bottlerocket", _set(["pools", 2, "amiType"], "BOTTLEROCKET_x86_64_NVIDIA"), "pools[2].sharing.mode",
     "do not run on BOTTLEROCKET_x86_64_NVIDIA nodes (the AMI brings its own device plugin)"),
    ("MIG on Bottlerocket", _set(["pools", 3, "amiType"], "BOTTLEROCKET_x86_64_NVIDIA"), "pools[3].sharing.mode",
     "use amiType 'AL2023_x86_64_NVIDIA' for MIG or time-slicing"),
]


@pytest.mark.parametrize("mutate,path,fragment", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_config_fails_with_path(mutate, path: str, fragment: str) -> None:
    raw = platform_raw("prod")
    mutate(raw)
    # How fast a broken spec is rejected is measured in bench/validate_plan.py, not asserted here.
    with pytest.raises(SpecError) as err:
        load_platform(raw, "us-east-1")
    paths: dict[str, str] = {}
    for problem in err.value.problems:
        paths[problem.path] = paths.get(problem.path, "") + problem.message + "\n"
    assert path in paths, f"expected {path}, got {paths}"
    assert fragment in paths[path], paths[path]


def test_corpus_is_large_enough() -> None:
    assert len(BAD) >= 40


def test_every_problem_is_reported_at_once() -> None:
    raw = platform_raw("prod")
    raw["pools"][0]["accelerator"] = "nope"
    raw["teams"][0]["cohort"] = "nope"
    raw["cohorts"][1]["parent"] = "nope"
    with pytest.raises(SpecError) as err:
        load_platform(raw)
    # Field errors stop before cross-field checks, so the accelerator is reported alone first...
    assert [p.path for p in err.value.problems] == ["pools[0].accelerator"]
    raw["pools"][0]["accelerator"] = "h100-80gb"
    with pytest.raises(SpecError) as err:
        load_platform(raw)
    # ...then every cross-field problem together.
    assert {p.path for p in err.value.problems} == {"teams[0].cohort", "cohorts[1].parent"}


def test_quota_counts_mig_slices_and_replicas() -> None:
    raw = platform_raw("prod")
    mig = raw["pools"][3]  # a100-mig: 4 nodes x 8 GPUs x 7 slices of 1g.10gb
    slices = catalog.ACCELERATORS["a100-80gb"].mig_profiles["1g.10gb"].slices_per_gpu
    capacity = mig["capacity"]["max"] * catalog.INSTANCE_TYPES[mig["instanceType"]].gpus * slices
    used = sum(t["quotas"].get("a100-mig", {}).get("units", 0) for t in raw["teams"])
    raw["teams"][2]["quotas"]["a100-mig"]["units"] += capacity - used  # exactly full: valid
    load_platform(raw)
    raw["teams"][2]["quotas"]["a100-mig"]["units"] += 1  # one slice over
    with pytest.raises(SpecError, match=f"has {capacity} units"):
        load_platform(raw)


@pytest.mark.parametrize("stack", STACKS)
def test_existing_clusters_need_no_subnets_or_zones(stack: str) -> None:
    raw = platform_raw(stack)
    raw["cluster"]["provider"] = "existing"
    raw["cluster"]["subnetIds"] = []
    # Identity is EKS's (access entries, OIDC provider configs): an existing cluster's owner maps users.
    raw["cluster"].pop("identity", None)
    for team in raw["teams"]:
        team.pop("accessEntries", None)
    # So is the data path (S3 buckets through EKS Pod Identity, EKS add-ons).
    raw.pop("data", None)
    load_platform(raw)


def test_a_created_cluster_always_has_a_system_pool() -> None:
    raw = platform_raw("staging")
    assert load_platform(raw).cluster.systemPool is None, "attached clusters bring their own system nodes"
    raw["cluster"]["create"] = True
    sp = load_platform(raw).cluster.systemPool
    assert sp is not None and sp.min >= 1, "defaulted in, with a node to run on"


def test_a_quota_is_units_or_its_former_name_gpus_which_the_plan_warns_about() -> None:
    """Pulumi.prod.yaml writes llm-pretrain's quotas as `units` (h100-train 96, h200-train 32); a stack written
    before the rename says `gpus`: the same quotas, in the spec and in the plan, and the plan names each key to
    rename."""
    from gpu_platform.plan import build_plan

    as_units = platform_raw("prod")
    as_gpus = platform_raw("prod")
    for q in as_gpus["teams"][0]["quotas"].values():
        q["gpus"] = q.pop("units")
    by_gpus, by_units = load_platform(as_gpus), load_platform(as_units)
    assert {p: q.units for p, q in by_units.teams[0].quotas.items()} == {"h100-train": 96, "h200-train": 32}
    assert {p: q.units for p, q in by_gpus.teams[0].quotas.items()} == {"h100-train": 96, "h200-train": 32}
    assert [q.units_key for q in by_gpus.teams[0].quotas.values()] == ["gpus", "gpus"]
    assert [q.units_key for q in by_units.teams[0].quotas.values()] == ["units", "units"]
    assert by_units == by_gpus
    deprecated = [w for w in build_plan(by_gpus).warnings if "former name" in w]
    assert deprecated == [
        "teams[0].quotas.h100-train.gpus: `gpus` is the former name of `units` (it counts the pool's units: MIG "
        "slices and time-sliced replicas, not GPUs); write units: 96",
        "teams[0].quotas.h200-train.gpus: `gpus` is the former name of `units` (it counts the pool's units: MIG "
        "slices and time-sliced replicas, not GPUs); write units: 32",
    ]
    assert not [w for w in build_plan(by_units).warnings if "former name" in w], "the shipped stacks use units"
    assert {q.pool: q.nominal for q in build_plan(by_units).teams[0].quotas} == {"h100-train": 96, "h200-train": 32}
