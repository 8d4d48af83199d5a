"""The spec's limits at their edges: the last value accepted and the first refused, each refusal by its path
and the words that say why; and every sibling of a rule (every reserved namespace, not one of them).

Values come from the stack files (Pulumi.local.yaml: train is 2 x p5.48xlarge = 16 whole H100s, held 8 + 8 by
vision and nlp; infer 2 x g6.12xlarge x 4 replicas = 32, all serving's; notebooks 1 x p4de.24xlarge x 7
slices = 56, 28 + 28), so each edge is a literal.
"""

from __future__ import annotations

from typing import Any, Callable

import pytest

from gpu_platform.spec import SpecError, load_platform
from tests.conftest import platform_raw, rendered

NAMESPACE = "kubernetes:core/v1:Namespace"


def problems(raw: dict[str, Any], region: str | None = None) -> dict[str, str]:
    """path -> messages of the spec's refusal; {} when it is accepted."""
    try:
        load_platform(raw, region)
    except SpecError as err:
        out: dict[str, str] = {}
        for p in err.problems:
            out[p.path] = out.get(p.path, "") + p.message + "\n"
        return out
    return {}


def local(change: Callable[[dict[str, Any]], None]) -> dict[str, str]:
    raw = platform_raw("local")
    change(raw)
    return problems(raw)


def team(raw: dict[str, Any], name: str) -> dict[str, Any]:
    (t,) = [t for t in raw["teams"] if t["name"] == name]
    return t


def pool(raw: dict[str, Any], name: str) -> dict[str, Any]:
    (p,) = [p for p in raw["pools"] if p["name"] == name]
    return p


def test_the_stacks_sit_on_their_edges_and_are_accepted() -> None:
    assert local(lambda raw: None) == {}


def test_a_lending_limit_of_exactly_nominal_is_accepted_and_one_more_refused() -> None:
    # nlp train {units: 8, borrowingLimit: 4, lendingLimit: 4} (teams[1]).
    assert local(lambda raw: team(raw, "nlp")["quotas"]["train"].update(lendingLimit=8)) == {}
    found = local(lambda raw: team(raw, "nlp")["quotas"]["train"].update(lendingLimit=9))
    assert list(found) == ["teams[1].quotas.train.lendingLimit"]
    assert "lendingLimit 9 is above the nominal quota units=8" in found["teams[1].quotas.train.lendingLimit"]
    assert local(lambda raw: team(raw, "nlp")["quotas"]["train"].update(lendingLimit=0)) == {}


def test_a_negative_limit_is_refused() -> None:
    for limit in ("lendingLimit", "borrowingLimit", "units"):
        found = local(lambda raw: team(raw, "nlp")["quotas"]["train"].update({limit: -1}))
        assert any(path.startswith("teams[1].quotas.train") for path in found), (limit, found)


@pytest.mark.parametrize("pool_name,team_name,capacity,how", [
    ("train", "vision", 16, "2 nodes x 8 GPUs"),
    ("infer", "serving", 32, "2 nodes x 4 GPUs x 4"),
    ("notebooks", "vision", 56, "1 nodes x 8 GPUs x 7"),
])
def test_nominal_quotas_up_to_the_pool_capacity_are_accepted_and_one_unit_more_refused(
        pool_name: str, team_name: str, capacity: int, how: str) -> None:
    raw = platform_raw("local")
    used = sum(t["quotas"].get(pool_name, {}).get("units", 0) for t in raw["teams"])
    assert used == capacity  # the local stack fills each pool exactly
    raw_team = team(raw, team_name)
    raw_team["quotas"][pool_name]["units"] += 1
    found = problems(raw)
    (path,) = found
    assert path.endswith(f".quotas.{pool_name}.units")
    assert f"add up to {capacity + 1}" in found[path] and f"the pool has {capacity} units ({how})" in found[path]


def test_a_pool_one_node_smaller_no_longer_holds_its_quotas() -> None:
    found = local(lambda raw: pool(raw, "train")["capacity"].update(max=1))
    assert any("the pool has 8 units (1 nodes x 8 GPUs)" in m for m in found.values()), found


@pytest.mark.parametrize("desired,ok", [(0, True), (2, True), (3, False)])
def test_desired_nodes_must_be_within_min_and_max(desired: int, ok: bool) -> None:
    # train capacity {min: 0, max: 2} (pools[0]).
    found = local(lambda raw: pool(raw, "train")["capacity"].update(desired=desired))
    if ok:
        assert found == {}
    else:
        assert "desired 3 is outside min..max (0..2)" in found["pools[0].capacity.desired"]


def test_desired_below_min_is_refused() -> None:
    # infer capacity {min: 1, max: 2} (pools[1]).
    assert local(lambda raw: pool(raw, "infer")["capacity"].update(desired=1)) == {}
    found = local(lambda raw: pool(raw, "infer")["capacity"].update(desired=0))
    assert "desired 0 is outside min..max (1..2)" in found["pools[1].capacity.desired"]


def test_min_may_equal_max_but_not_exceed_it() -> None:
    assert local(lambda raw: pool(raw, "infer")["capacity"].update(min=2)) == {}
    found = local(lambda raw: pool(raw, "infer")["capacity"].update(min=3))
    assert "min 3 is greater than max 2" in found["pools[1].capacity.min"]


# Kubernetes' own namespaces and every namespace the platform installs into (docs/tenancy.md): the Kueue,
# GPU Operator and monitoring namespaces and the four workload controllers'.
RESERVED = ("default", "kube-system", "kube-public", "kube-node-lease", "gpu-operator", "kueue-system",
            "monitoring", "jobset-system", "kubeflow-system", "lws-system", "kuberay-system")


@pytest.mark.parametrize("namespace", RESERVED)
def test_every_reserved_namespace_is_refused_to_a_team(namespace: str) -> None:
    found = local(lambda raw: team(raw, "serving").update(namespaces=["serving", namespace]))
    assert list(found) == ["teams[2].namespaces[1]"]
    assert f"namespace {namespace!r} is reserved" in found["teams[2].namespaces[1]"]


@pytest.mark.parametrize("namespace", RESERVED)
def test_a_team_named_after_a_reserved_namespace_is_refused(namespace: str) -> None:
    found = local(lambda raw: team(raw, "serving").update(name=namespace))
    assert f"namespace {namespace!r} is reserved" in found.get("teams[2].name", ""), found


def test_names_near_a_reserved_one_are_a_teams_to_take() -> None:
    assert local(lambda raw: team(raw, "serving").update(namespaces=["kueue", "monitoring-ml", "kube"])) == {}


def test_the_platform_installs_only_into_reserved_namespaces() -> None:
    """prod turns every add-on on: each namespace it makes that no team owns is one RESERVED lists."""
    made = {ns.inputs["metadata"]["name"] for ns in rendered("prod").by_type(NAMESPACE)}
    teams = {"llm-pretrain", "llm-finetune", "vision", "search-serving", "recsys", "data-science", "ds-notebooks"}
    assert teams <= made
    assert made - teams == {"gpu-operator", "kueue-system", "monitoring", "jobset-system", "kubeflow-system",
                            "lws-system", "kuberay-system"}


def test_a_namespace_may_belong_to_one_team_only() -> None:
    found = local(lambda raw: team(raw, "serving").update(namespaces=["serving", "nlp"]))
    assert "duplicate namespace 'nlp'" in found["teams[2].namespaces[1]"]


def test_limits_need_a_cohort() -> None:
    # serving is in cohort org; without it, a borrowing or lending limit has no one to borrow from.
    def no_cohort(limit: str | None) -> Callable[[dict[str, Any]], None]:
        def change(raw: dict[str, Any]) -> None:
            t = team(raw, "serving")
            del t["cohort"]
            if limit:
                t["quotas"]["infer"][limit] = 4
        return change

    assert local(no_cohort(None)) == {}
    for limit in ("borrowingLimit", "lendingLimit"):
        found = local(no_cohort(limit))
        assert f"{limit} needs the team to be in a cohort" in found[f"teams[2].quotas.infer.{limit}"]


@pytest.mark.parametrize("port,ok", [(1, True), (65535, True), (0, False), (65536, False)])
def test_egress_ports_are_1_to_65535(port: int, ok: bool) -> None:
    found = local(lambda raw: team(raw, "serving").update(egress=[{"cidr": "10.0.0.0/8", "ports": [port],
                                                                   "protocol": "UDP"}]))
    if ok:
        assert found == {}
    else:
        (path,) = found
        assert path.startswith("teams[2].egress[0]") and f"[{port}] are outside 1-65535" in found[path]


def test_egress_protocol_is_tcp_or_udp() -> None:
    found = local(lambda raw: team(raw, "serving").update(egress=[{"cidr": "10.0.0.0/8", "protocol": "SCTP"}]))
    (path,) = found
    assert path.startswith("teams[2].egress[0].protocol") and "'TCP'" in found[path] and "'UDP'" in found[path]


def test_the_cpu_only_flavor_name_is_no_pools() -> None:
    def rename(raw: dict[str, Any]) -> None:
        pool(raw, "infer")["name"] = "cpu-only"
        team(raw, "serving")["quotas"] = {"cpu-only": {"units": 32}}

    found = local(rename)
    assert "'cpu-only' is reserved for the flavor of CPU-only work" in found["pools[1].name"]


@pytest.mark.parametrize("length,ok", [(63, True), (64, False)])
def test_a_node_group_name_of_63_characters_is_accepted_and_64_refused(length: int, ok: bool) -> None:
    # staging: cluster ml-staging; a pool's managed node group is "<cluster>-<pool>" (EKS: at most 63).
    raw = platform_raw("staging")
    name = "d" * (length - len("ml-staging-"))
    old = raw["pools"][2]["name"]
    raw["pools"][2]["name"] = name
    for t in raw["teams"]:
        if old in t["quotas"]:
            t["quotas"][name] = t["quotas"].pop(old)
    found = problems(raw, "us-east-1")
    if ok:
        assert found == {}
    else:
        assert f"node group name 'ml-staging-{name}' is over 63 characters (EKS limit)" in found["pools[2].name"]


def prod(change: Callable[[dict[str, Any]], None]) -> dict[str, str]:
    raw = platform_raw("prod")
    change(raw)
    return problems(raw, "us-east-1")


@pytest.mark.parametrize("prefix", ["datasets/", "team/datasets/", "a.b/"])
def test_a_relative_prefix_ending_in_a_slash_is_a_bucket_prefix(prefix: str) -> None:
    # Pulumi.prod.yaml: data.fileSystems[0].dataRepository {prefix: datasets/, fileSystemPath: /datasets}.
    assert prod(lambda raw: raw["data"]["fileSystems"][0]["dataRepository"].update(prefix=prefix)) == {}


@pytest.mark.parametrize("prefix", ["", "/datasets/", "datasets", "a//b/", "a/../b/", "../"])
def test_every_other_prefix_is_refused(prefix: str) -> None:
    found = prod(lambda raw: raw["data"]["fileSystems"][0]["dataRepository"].update(prefix=prefix))
    (path,) = found
    assert path == "data.fileSystems[0].dataRepository.prefix"
    assert f"{prefix!r} is not a bucket prefix" in found[path]


@pytest.mark.parametrize("field,default", [("scratchDays", 7), ("failedCheckpointDays", 14),
                                           ("noncurrentVersionDays", 30)])
def test_lifecycle_days_default_to_the_documented_values_and_start_at_one(field: str, default: int) -> None:
    raw = platform_raw("prod")
    del raw["data"]["lifecycle"]
    assert getattr(load_platform(raw, "us-east-1").data.lifecycle, field) == default
    assert prod(lambda raw: raw["data"]["lifecycle"].update({field: 1})) == {}
    found = prod(lambda raw: raw["data"]["lifecycle"].update({field: 0}))
    assert list(found) == [f"data.lifecycle.{field}"]


def test_a_pool_without_min_keeps_no_node_running() -> None:
    raw = platform_raw("local")
    del pool(raw, "train")["capacity"]["min"]
    assert load_platform(raw).pools[0].capacity.min == 0


@pytest.mark.parametrize("field", ["min", "max", "desired"])
def test_node_counts_start_at_zero(field: str) -> None:
    found = local(lambda raw: pool(raw, "train")["capacity"].update({field: -1}))
    assert f"pools[0].capacity.{field}" in found, found


@pytest.mark.parametrize("text,n_bytes", [
    ("1Ki", 1024), ("1Mi", 1048576), ("1Gi", 1073741824), ("2Ti", 2199023255552), ("1Pi", 1125899906842624),
    ("1Ei", 1152921504606846976), ("1k", 1000), ("1M", 1000000), ("1G", 1000000000), ("1T", 1000000000000),
    ("1P", 1000000000000000), ("1E", 1000000000000000000), ("500Gi", 536870912000), ("1234", 1234)])
def test_storage_quantities_read_as_kubernetes_reads_them(text: str, n_bytes: int) -> None:
    from gpu_platform.spec.data import quantity_bytes

    assert quantity_bytes(text) == n_bytes


@pytest.mark.parametrize("n_bytes,text", [
    (2199023255552, "2Ti"), (536870912000, "500Gi"), (1610612736, "1536Mi"), (1024, "1Ki"), (1000, "1000"),
    (1152921504606846976, "1Ei"), (1125899906842624, "1Pi"), (1048576, "1Mi")])
def test_storage_quantities_are_written_in_the_largest_whole_binary_suffix(n_bytes: int, text: str) -> None:
    from gpu_platform.spec.data import storage_quantity

    assert storage_quantity(n_bytes) == text


@pytest.mark.parametrize("text", ["2TB", "1.5Gi", "Gi", "-1Gi", ""])
def test_a_storage_quantity_that_is_not_whole_is_refused(text: str) -> None:
    from gpu_platform.spec.data import quantity_bytes

    with pytest.raises(ValueError, match="is not a whole storage quantity"):
        quantity_bytes(text)
