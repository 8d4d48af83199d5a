"""The offline check (`python -m platform_cli check`): config semantics, output, exit codes, bad input;
and the pack's own hygiene (its entry point, its spelling of conventions, its documentation)."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from gpu_platform import conventions as cv
from platform_cli.cli import EXIT_INVALID, EXIT_OK, EXIT_VIOLATIONS, main
from policies.gpu_policies.offline import Violation, check_resources, effective_config, format_violations
from policies.gpu_policies.pack import POLICIES

from tests.conftest import ROOT
from tests.policy.helpers import find, world

PACK = ROOT / "policies"


def broken_world():
    """One mandatory violation (no cost center on ns-alpha) and one advisory (a :latest image)."""
    w = world()
    del find(w, "ns-alpha")["inputs"]["metadata"]["labels"][cv.COST_CENTER]
    del find(w, "cq-beta")["inputs"]["metadata"]["labels"][cv.MANAGED_BY]
    return w


def test_clean_world_has_no_violations() -> None:
    assert check_resources(world()) == []


def test_levels_and_config_follow_the_engine() -> None:
    found = check_resources(broken_world())
    assert {(v.rule, v.level) for v in found} == {("tenant-namespace-labels", "mandatory"),
                                                   ("recommended-labels", "advisory")}
    # "all" sets every level; a policy's own setting wins; "disabled" turns it off.
    relaxed = check_resources(broken_world(), config={"all": "advisory"})
    assert relaxed and not any(v.mandatory for v in relaxed)
    strict = check_resources(broken_world(), config={"recommended-labels": {"enforcementLevel": "mandatory"}})
    assert all(v.mandatory for v in strict) and len(strict) == 2
    off = check_resources(broken_world(), config={"tenant-namespace-labels": "disabled"})
    assert {v.rule for v in off} == {"recommended-labels"}


def test_schema_defaults_are_the_rules_defaults() -> None:
    """What the engine fills in from the schema is what a rule assumes when a key is absent."""
    settings = effective_config(POLICIES, None)
    for p in POLICIES:
        level, props = settings[p.name]
        assert level == p.enforcement_level
        if p.config_schema is not None:
            assert props == {k: v["default"] for k, v in p.config_schema.properties.items()}
            for key, schema in p.config_schema.properties.items():
                assert schema["type"] == "array" and schema["items"] == {"type": "string"} and schema["description"]


def test_format_names_rule_resource_and_message_and_sums_up() -> None:
    text = format_violations(check_resources(broken_world()), "demo")
    lines = text.splitlines()
    assert lines[0].startswith("mandatory") and "tenant-namespace-labels" in lines[0] and "ns-alpha" in lines[0]
    assert cv.COST_CENTER in lines[1]
    assert lines[-1] == "demo: 2 policy violation(s) from gpu-platform-guardrails: 1 mandatory, 1 advisory"
    assert format_violations([], "demo").startswith("demo: no policy violations")


def test_violation_is_mandatory_by_level() -> None:
    assert Violation("r", "stack", "m", "mandatory").mandatory
    assert not Violation("r", "stack", "m", "advisory").mandatory


def write(tmp_path: Path, data) -> str:
    path = tmp_path / "resources.json"
    path.write_text(json.dumps(data))
    return str(path)


def test_cli_exit_codes(tmp_path, capsys) -> None:
    assert main(["check", "--resources", write(tmp_path, world())]) == EXIT_OK
    w = world()
    del find(w, "cq-beta")["inputs"]["metadata"]["labels"][cv.MANAGED_BY]
    assert main(["check", "--resources", write(tmp_path, w)]) == EXIT_OK  # advisory only
    assert main(["check", "--resources", write(tmp_path, broken_world())]) == EXIT_VIOLATIONS
    assert "1 mandatory" in capsys.readouterr().out


@pytest.mark.parametrize("data,words", [
    ({"type": "x"}, "JSON list"),
    ([{"name": "x"}], "resources[0]"),
    ([{"type": "t", "name": "n", "inputs": []}], "'inputs' must be an object"),
])
def test_cli_rejects_malformed_resources(tmp_path, capsys, data, words) -> None:
    assert main(["check", "--resources", write(tmp_path, data)]) == EXIT_INVALID
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err


def test_entry_point_only_builds_the_pack() -> None:
    """policies/__main__.py: imports, the sys.path insert, and one call to build_pack()."""
    tree = ast.parse((PACK / "__main__.py").read_text())
    calls = [n for n in tree.body if isinstance(n, ast.Expr) and isinstance(n.value, ast.Call)]
    assert [ast.unparse(c.value) for c in calls] == ["build_pack()"]
    assert not [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]


def test_pack_project_uses_the_project_virtualenv() -> None:
    import yaml

    project = yaml.safe_load((PACK / "PulumiPolicy.yaml").read_text())
    assert project["runtime"]["name"] == "python"
    venv = (PACK / project["runtime"]["options"]["virtualenv"]).resolve()
    assert venv == (ROOT / ".venv").resolve()
    pins = set((PACK / "requirements.txt").read_text().split())
    project_pins = set((ROOT / "requirements.txt").read_text().split())
    assert {p for p in pins if "==" in p} <= project_pins


# Strings that gpu_platform/conventions/ spells: label keys, taints, names. The rules import them instead.
SPELLED = sorted({v for k, v in vars(cv).items() if k.isupper() and isinstance(v, str) and ("/" in v or "." in v)})


@pytest.mark.parametrize("path", sorted((PACK / "gpu_policies").rglob("*.py")),
                         ids=lambda p: p.relative_to(PACK / "gpu_policies").as_posix())
def test_rules_never_spell_a_convention(path: Path) -> None:
    literals = {n.value for n in ast.walk(ast.parse(path.read_text()))
                if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    spelled = [s for s in SPELLED if any(s in lit for lit in literals)]
    assert spelled == [], f"{path.name} spells {spelled}; import them from gpu_platform.conventions"


def test_docs_list_every_rule_with_its_level() -> None:
    doc = (ROOT / "docs" / "policy-pack.md").read_text()
    rows = dict(re.findall(r"^\| `([a-z0-9-]+)` \| (mandatory|advisory) \|", doc, re.M))
    assert rows == {p.name: p.enforcement_level.value for p in POLICIES}
    for p in POLICIES:
        for key in (p.config_schema.properties if p.config_schema else {}):
            assert f"`{key}`" in doc


def test_the_check_is_linear_in_the_stack() -> None:
    """Counting property reads (deterministic, unlike time): four times the teams, four times the reads.
    A stack rule that compared every namespace with every queue would read sixteen times as much."""
    from policies.gpu_policies import offline
    from tests.policy.helpers import world_of

    reads = 0

    def counting(cls, name):
        original = getattr(cls, name)

        def wrapper(self, *args, **kwargs):
            nonlocal reads
            reads += 1
            return original(self, *args, **kwargs)
        return original, wrapper

    patched = [(cls, name, *counting(cls, name)) for cls, name in
               ((offline.ReadOnlyProps, "__getitem__"), (offline.ReadOnlyProps, "get"),
                (offline.ReadOnlyList, "__getitem__"))]
    try:
        for cls, name, _, wrapper in patched:
            setattr(cls, name, wrapper)
        counts = []
        for teams in (10, 40):
            reads = 0
            assert check_resources(world_of(teams)) == []
            counts.append(reads)
    finally:
        for cls, name, original, _ in patched:
            setattr(cls, name, original)
    assert counts[1] / counts[0] <= 4.0, counts
