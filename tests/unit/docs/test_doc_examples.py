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

from tests.conftest import ROOT, spec_of

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
    raw = yaml.safe_load((ROOT / "Pulumi.prod.yaml").read_text())["config"]
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
