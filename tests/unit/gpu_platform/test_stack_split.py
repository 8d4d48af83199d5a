"""A split environment (`stackSplit`): which objects land in which stack, the parts add up to the whole stack,
the policy pack passes on each part and on their union, and bad splits are refused by field."""

from __future__ import annotations

import copy
from collections import Counter
from typing import Any

import pytest

from bench.synth import stack_config
from gpu_platform.errors import SpecError
from gpu_platform.spec import load_platform
from gpu_platform.stack_split import stack_part
from tests.conftest import background_render

NO_ADDONS = {"gpuOperator": {"install": False}, "kueue": {"install": False}, "monitoring": {"install": False}}
# bench.synth with 4 teams: cohorts org > group-000 (team-0000, team-0002) and group-001 (team-0001, team-0003).
SPLIT = {"platformStack": "env-platform", "tenantStacks": [
    {"stack": "env-a", "cohorts": ["group-000"]},
    {"stack": "env-b", "cohorts": ["group-001"]},
]}


def split_config(split: dict[str, Any] | None = SPLIT) -> dict[str, Any]:
    cfg = stack_config(4, addons=NO_ADDONS)
    if split is not None:
        cfg["gpu-platform:platform"]["stackSplit"] = copy.deepcopy(split)
    return cfg


@background_render(parts=True)
def parts() -> tuple[str, dict[str, Any]]:
    """The split environment part by part (harness.split.render_parts), by the render worker."""
    return "env", split_config()


@background_render()
def whole() -> tuple[str, dict[str, Any]]:
    """The same environment unsplit, in one stack, by the render worker."""
    return "env", split_config(None)


def objects(rendered: Any) -> list[tuple[str, str | None, str]]:
    return sorted((o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in rendered.kubernetes_objects())


def test_a_tenant_stack_holds_its_cohorts_teams_namespaces_and_nothing_else() -> None:
    per_namespace = [
        ("LimitRange", "container-defaults"), ("LocalQueue", "default"),
        ("NetworkPolicy", "allow-dns"), ("NetworkPolicy", "allow-kuberay-operator"), ("NetworkPolicy", "allow-monitoring-scrape"),
        ("NetworkPolicy", "allow-same-namespace"),
        ("NetworkPolicy", "default-deny"), ("ResourceQuota", "tenant-quota"),
        ("RoleBinding", "tenant-admins"), ("RoleBinding", "tenant-batch-users"), ("RoleBinding", "tenant-members"),
        ("RoleBinding", "tenant-viewers"),
    ]
    for stack, teams in (("env-a", ["team-0000", "team-0002"]), ("env-b", ["team-0001", "team-0003"])):
        expected = sorted([("Namespace", None, t) for t in teams]
                          + [(kind, t, name) for t in teams for kind, name in per_namespace])
        assert objects(parts()[stack]) == expected, stack
        other = [r.type for r in parts()[stack].custom if not r.type.startswith("kubernetes:") or "kind" not in r.inputs]
        assert other == ["pulumi:providers:kubernetes"], stack


def test_the_platform_stack_holds_every_cluster_queue_and_no_team_namespace() -> None:
    platform = parts()["env-platform"].kubernetes_objects()
    assert sorted(o["metadata"]["name"] for o in platform if o["kind"] == "ClusterQueue") == \
        ["team-0000", "team-0001", "team-0002", "team-0003"]
    assert sorted(o["metadata"]["name"] for o in platform if o["kind"] == "Cohort") == ["group-000", "group-001", "org"]
    assert sorted(o["metadata"]["name"] for o in platform if o["kind"] == "Namespace") == \
        ["gpu-operator", "monitoring"]  # the platform's own, no team's
    assert [o["metadata"].get("namespace") for o in platform if o["kind"] in ("LocalQueue", "ResourceQuota", "RoleBinding")] \
        == ["gpu-operator", "monitoring"]  # the platform namespaces' admin bindings, nothing in a team namespace
    assert "gpu-platform:batch-user" in {o["metadata"]["name"] for o in platform if o["kind"] == "ClusterRole"}


def test_the_parts_add_up_to_the_whole_stack_each_object_once() -> None:
    split = [obj for r in parts().values() for obj in objects(r)]
    assert len(split) == len(set(split))  # no object in two stacks
    assert sorted(split) == objects(whole())
    assert len(split) == 101


def test_the_policy_pack_passes_on_each_part_and_on_their_union() -> None:
    from harness.split import union
    from policies.gpu_policies.offline import check_resources

    for name, rendered in [*parts().items(), ("union", union(parts()))]:
        violations = check_resources([r.to_json() for r in rendered.custom])
        assert [str(v) for v in violations if v.mandatory] == [], name


def test_a_local_queue_without_its_cluster_queue_still_fails_a_stack_that_has_cluster_queues() -> None:
    """The tenant-stack allowance is for stacks with no ClusterQueue at all, not for a wrong name."""
    from policies.gpu_policies.offline import check_resources

    data = [r.to_json() for r in whole().custom]
    for r in data:
        if r["inputs"].get("kind") == "LocalQueue" and r["inputs"]["metadata"]["namespace"] == "team-0001":
            r["inputs"]["spec"]["clusterQueue"] = "nobody"
    found = [v for v in check_resources(data) if v.rule == "namespace-local-queue"]
    assert [v.message for v in found] == [
        "LocalQueue in 'team-0001' points at ClusterQueue 'nobody', which is not in the stack"]


def test_a_tenant_stack_refuses_teams_whose_cluster_queue_the_platform_stack_does_not_export() -> None:
    from components.program import run
    from harness.render import run_program

    with pytest.raises(Exception, match=r"platform stack organization/gpu-platform/env-platform exports no "
                                        r"ClusterQueue for team\(s\) team-0001, team-0003"):
        run_program(run, "env-b", split_config())


def test_a_stack_the_split_does_not_name_is_refused_with_the_valid_stacks() -> None:
    spec = load_platform(split_config()["gpu-platform:platform"], "us-east-1")
    with pytest.raises(SpecError) as err:
        stack_part(spec, "env-c", "gpu-platform")
    assert [str(p) for p in err.value.problems] == [
        "stackSplit: stack 'env-c' is not a part of this split; valid stacks: env-platform (platform), "
        "env-a (tenants), env-b (tenants)"]
    assert stack_part(spec, "env-a", "gpu-platform").teams == ("team-0000", "team-0002")
    assert stack_part(spec, "env-b", "proj").platform_stack == "organization/proj/env-platform"
    assert stack_part(spec, "env-platform", "gpu-platform").role == "platform"


def _problems(split: dict[str, Any]) -> list[str]:
    with pytest.raises(SpecError) as err:
        load_platform(split_config(split)["gpu-platform:platform"], "us-east-1")
    return [str(p) for p in err.value.problems]


def test_a_team_in_no_tenant_stack_is_refused_by_name() -> None:
    assert _problems({"platformStack": "p", "tenantStacks": [{"stack": "a", "cohorts": ["group-000"]}]}) == [
        "stackSplit.tenantStacks: team 'team-0001' is in no tenant stack (its cohort 'group-001' and its name are "
        "listed by none of: a): list it or its cohort",
        "stackSplit.tenantStacks: team 'team-0003' is in no tenant stack (its cohort 'group-001' and its name are "
        "listed by none of: a): list it or its cohort",
    ]


def test_unknown_cohorts_teams_and_bad_stack_names_are_refused_by_field() -> None:
    assert _problems({"platformStack": "p", "tenantStacks": [
        {"stack": "a", "cohorts": ["org", "research"], "teams": ["ghost"]}]}) == [
        "stackSplit.tenantStacks[0].cohorts[1]: unknown cohort 'research'; defined cohorts: group-000, group-001, org",
        "stackSplit.tenantStacks[0].teams[0]: unknown team 'ghost'; teams: team-0000, team-0001, team-0002, team-0003",
    ]
    assert _problems({"platformStack": "env/platform", "tenantStacks": [{"stack": "p", "cohorts": ["org"]}]}) == [
        "stackSplit.platformStack: 'env/platform' is not a Pulumi stack name: 1-100 letters, digits, '-', '_' or '.'"]
    assert _problems({"platformStack": "p", "tenantStacks": [{"stack": "p", "cohorts": ["org"]}]}) == [
        "stackSplit.tenantStacks[0].stack: stack 'p' is also stackSplit.platformStack: each part is a stack of its own",
    ]


def test_a_nearer_cohort_takes_its_subtree_from_an_ancestors_stack() -> None:
    spec = load_platform(split_config({"platformStack": "p", "tenantStacks": [
        {"stack": "rest", "cohorts": ["org"]}, {"stack": "g1", "cohorts": ["group-001"], "teams": ["team-0000"]}]},
    )["gpu-platform:platform"], "us-east-1")
    assert stack_part(spec, "rest", "x").teams == ("team-0002",)
    assert stack_part(spec, "g1", "x").teams == ("team-0000", "team-0001", "team-0003")
