"""docs/deploying.md's import file for an existing vpc-cni add-on names the program's own types, names and parents
(checked against staging's render under mocks), so an import made before the first `up` lands where `up` looks."""

from __future__ import annotations

import json
import re

from tests.conftest import ROOT, rendered


def import_file() -> dict:
    text = (ROOT / "docs" / "deploying.md").read_text()
    section = text.split("### Importing an existing vpc-cni add-on", 1)[1]
    (block,) = re.findall(r"```json\n(.*?)```", section.split("\n### ", 1)[0], re.S)
    return json.loads(block)


def test_the_import_file_makes_the_addons_parents_and_imports_it_under_them() -> None:
    resources = import_file()["resources"]
    r = rendered("staging")
    by_name = {x.name: x for x in r.resources}
    for entry in resources:
        found = by_name[entry["name"]]
        assert found.type == entry["type"], entry
        assert found.parent == entry.get("parent"), entry  # None: the stack itself
        assert found.custom is not entry.get("component", False), entry
    assert [e["name"] for e in resources] == ["platform", "node-pools", "np-vpc-cni"]
    assert resources[-1]["id"] == "<cluster>:vpc-cni"  # pulumi-aws's import id of an EKS add-on: cluster:addon
