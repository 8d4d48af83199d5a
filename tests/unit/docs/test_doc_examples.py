"""The YAML examples the docs say are prod's are prod's (world: the stack files and the pages on disk).

docs/queues.md showed search-serving's preemption as `reclaimWithinCohort: Any, withinClusterQueue:
LowerPriority` while Pulumi.prod.yaml sets `LowerPriority` and `LowerOrNewerEqualPriority`, and nothing failed.
An example may leave things out (it is abridged), but everything it shows must be what the prod stack has,
read through the spec so that a default the example spells out (`podSecurity: baseline`) counts as set.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml

from tests.conftest import ROOT, load_yaml, spec_of

DOCS = ROOT / "docs"


def differences(shown: Any, actual: Any, path: str = "") -> list[str]:
    """Where SHOWN is not part of ACTUAL: maps by key, lists of named maps by name, other lists in full."""
    if isinstance(shown, dict):
        if not isinstance(actual, dict):
            return [f"{path}: {actual!r} is not a map"]
        return [d for k, v in shown.items()
                for d in (differences(v, actual[k], f"{path}.{k}") if k in actual else [f"{path}.{k}: not set"])]
    if isinstance(shown, list) and shown and all(isinstance(x, dict) and "name" in x for x in shown):
        named = {x.get("name"): x for x in actual or []}
        return [d for x in shown for d in (differences(x, named[x["name"]], f"{path}[{x['name']}]")
                                           if x["name"] in named else [f"{path}[{x['name']}]: no such entry"])]
    return [] if shown == actual or str(shown) == str(actual) else [f"{path}: shows {shown!r}, prod has {actual!r}"]


def prod() -> dict[str, Any]:
    return spec_of("prod").model_dump(mode="json", by_alias=True)


def yaml_after(page: str, lead: str) -> Any:
    """The YAML block that follows the line LEAD on PAGE."""
    text = (DOCS / page).read_text()
    (block,) = re.findall(re.escape(lead) + r"\n+```yaml\n(.*?)```", text, re.DOTALL)
    return yaml.safe_load(block)


def test_differences_finds_what_an_example_gets_wrong() -> None:
    actual = {"teams": [{"name": "a", "preemption": {"withinClusterQueue": "LowerOrNewerEqualPriority"}}]}
    assert differences({"teams": [{"name": "a", "preemption": {"withinClusterQueue": "LowerPriority"}}]}, actual) == [
        ".teams[a].preemption.withinClusterQueue: shows 'LowerPriority', prod has 'LowerOrNewerEqualPriority'"]
    assert differences({"teams": [{"name": "b"}]}, actual) == [".teams[b]: no such entry"]


def test_the_queues_page_prod_example_is_prods() -> None:
    assert differences(yaml_after("queues.md", "Example (prod, abridged):"), prod()) == []


def test_the_configuration_page_example_is_prods() -> None:
    doc = yaml_after("configuration.md", "is checked against pool zones.")["config"]
    raw = load_yaml((ROOT / "Pulumi.prod.yaml").read_text())["config"]
    assert doc["aws:region"] == raw["aws:region"]
    assert differences(doc["gpu-platform:platform"], prod()) == []


def test_the_queues_page_says_how_prod_sets_search_servings_preemption() -> None:
    text = " ".join((DOCS / "queues.md").read_text().split())
    (sentence,) = re.findall(r"`search-serving` in prod sets its own: [^.]*\.", text)
    (team,) = [t for t in prod()["teams"] if t["name"] == "search-serving"]
    assert {k: v for k, v in team["preemption"].items()} == {
        "reclaimWithinCohort": "LowerPriority", "borrowWithinCohort": "Never",
        "withinClusterQueue": "LowerOrNewerEqualPriority"}
    assert [f"`{k}: {v}`" in sentence for k, v in team["preemption"].items()] == [True, True, True]


# ---- namespaces: a copied `kubectl -n NS` names a namespace some shipped stack has -----------------------------

KUBECTL_NAMESPACE = re.compile(r"kubectl[^\n`|]*?(?:\s-n\s+|--namespace[= ])([A-Za-z0-9<>$\"{}._-]+)")
PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md")), *sorted((DOCS / "tasks").glob("*.md"))]


def shipped_namespaces() -> set[str]:
    """Every namespace of the stacks a page's commands run against: the three stacks, the examples
    (examples/*/Pulumi.*.yaml: the fresh-account task's), the MultiKueue walk-through's
    (tests/multikueue/stack.yaml, docs/queues.md), and the platform's own."""
    from gpu_platform import conventions as cv
    from gpu_platform.stack_files import load_plan

    known = set(cv.RESERVED_NAMESPACES) | set(cv.PLATFORM_NAMESPACES)
    for stack in ("local", "staging", "prod"):
        known |= {ns for team in spec_of(stack).teams for ns in team.namespace_names}
    for stack_file in [*sorted((ROOT / "examples").glob("*/Pulumi.*.yaml")), ROOT / "tests" / "multikueue" / "stack.yaml"]:
        known |= {ns for team in load_plan(None, str(stack_file))[1].teams for ns in team.namespaces}
    return known


def test_every_namespace_a_copied_kubectl_names_is_a_shipped_stacks() -> None:
    """The why-does-my-job-wait example once ran in namespace `alpha`, which no shipped stack has. Placeholders
    (`<ns>`, `$NS`, `NS`) and the onboarding page's new team are the exceptions."""
    known = shipped_namespaces() | {"robotics"}
    unknown = sorted({(p.name, ns) for p in PAGES for ns in KUBECTL_NAMESPACE.findall(p.read_text())
                      if ns not in known and not ns.startswith(("<", "$", '"$')) and not ns.isupper()})
    assert unknown == []
    assert "robotics" in (DOCS / "tasks" / "onboard-a-team.md").read_text().split("- name: ")[1]
