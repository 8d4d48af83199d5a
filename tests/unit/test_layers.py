"""The layer contract (docs/architecture.md), held over every import the code can make at run time.

Read from the source with `ast`, so an import inside a function (the lazy kind that used to let the spec layer
reach the components) counts exactly like one at the top of a module, and so do `importlib.import_module`
calls with a literal name. An own check rather than import-linter: the spec layer's rule is an allowlist of
third-party packages (stdlib, pydantic, yaml), which import-linter's forbidden/layers contracts do not state,
and this needs no extra dependency.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Every first-party top-level package, and which first-party packages each may import (itself always).
FIRST_PARTY = ("gpu_platform", "components", "harness", "policies", "localcluster", "simulator", "platform_cli",
               "bench", "tests")
MAY_IMPORT: dict[str, frozenset[str]] = {
    "gpu_platform": frozenset(),
    "components": frozenset({"gpu_platform"}),
    "harness": frozenset({"gpu_platform"}),
    "policies": frozenset({"gpu_platform"}),
    # Tooling for the live cluster and the runbook's recovery: it never renders the program (harness; what a
    # stack declares comes from platform_cli/inventory.py, the fault scenarios are tests/faults' rigging), and
    # only the local Prometheus and telemetry read the monitoring component's rules (LOCALCLUSTER_COMPONENTS).
    "localcluster": frozenset({"gpu_platform", "components"}),
    "simulator": frozenset({"gpu_platform", "localcluster"}),
    # localcluster.signals: the CLI's `simulate` starts a cluster and stops it on SIGTERM as on Ctrl-C.
    "platform_cli": frozenset({"gpu_platform", "components", "harness", "policies", "simulator", "localcluster"}),
}
# The local cluster's Prometheus and GPU telemetry serve the rules and series the stack's monitoring deploys,
# so they take them from the components; no other localcluster module may.
LOCALCLUSTER_COMPONENTS = frozenset({"localcluster.prometheus", "localcluster.telemetry"})
# The spec layer runs anywhere in milliseconds: the standard library, pydantic and yaml, nothing else.
SPEC_THIRD_PARTY = frozenset({"pydantic", "yaml"})
# The root program (what `pulumi up` runs) is the components' entry point and nothing more.
ROOT_PROGRAM_MAY_IMPORT = frozenset({"components"})


def imports_of(source: str, module: str, is_package: bool) -> set[str]:
    """Top-level names of every module `source` imports: statements anywhere in the file (functions too),
    relative imports resolved against `module`, and `importlib.import_module("literal")` calls."""
    found: set[str] = set()
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                resolved = base[: len(base) - (node.level - 1)] + (node.module.split(".") if node.module else [])
                found.add(resolved[0] if resolved else "")
            elif node.module:
                found.add(node.module.split(".")[0])
        elif (isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name))
              and (node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id) == "import_module"
              and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
              and not node.args[0].value.startswith(".")):
            found.add(node.args[0].value.split(".")[0])
    found.discard("__future__")
    return found


def modules_of(package: str) -> list[tuple[str, Path]]:
    out = []
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        out.append((".".join(parts[:-1] if parts[-1] == "__init__" else parts), path))
    return out


def violations(package: str) -> list[str]:
    allowed = MAY_IMPORT[package] | {package}
    out = []
    for module, path in modules_of(package):
        for name in sorted(imports_of(path.read_text(), module, path.name == "__init__.py")):
            if name in FIRST_PARTY and name not in allowed:
                out.append(f"{path.relative_to(ROOT)} imports {name}")
            elif (package == "gpu_platform" and name not in FIRST_PARTY and name not in sys.stdlib_module_names
                  and name not in SPEC_THIRD_PARTY):
                out.append(f"{path.relative_to(ROOT)} imports {name} (the spec layer takes stdlib, pydantic, yaml)")
    return out


@pytest.mark.parametrize("package", sorted(MAY_IMPORT))
def test_a_package_imports_only_the_layers_below_it(package: str) -> None:
    assert violations(package) == []


def test_localcluster_imports_components_only_for_its_prometheus() -> None:
    """The fault scenarios that rendered the program moved to tests/faults/scenarios.py (harness is refused by
    the contract above); a module bringing components back is named."""
    offenders = [f"{path.relative_to(ROOT)} imports components" for module, path in modules_of("localcluster")
                 if module not in LOCALCLUSTER_COMPONENTS
                 and "components" in imports_of(path.read_text(), module, path.name == "__init__.py")]
    assert offenders == [], f"only {sorted(LOCALCLUSTER_COMPONENTS)} may import components: {offenders}"


def test_the_root_program_only_runs_the_components() -> None:
    names = imports_of((ROOT / "__main__.py").read_text(), "__main__", False)
    assert {n for n in names if n in FIRST_PARTY} <= ROOT_PROGRAM_MAY_IMPORT


def test_every_first_party_package_is_under_the_contract() -> None:
    packages = {p.parent.name for p in ROOT.glob("*/__init__.py")}
    assert packages <= set(FIRST_PARTY), f"add {sorted(packages - set(FIRST_PARTY))} to the layer contract"


def test_the_check_sees_lazy_relative_and_importlib_imports() -> None:
    source = (
        "def f():\n"
        "    from components.program import run\n"
        "    from ..policies import x\n"
        "    importlib.import_module('simulator.cli')\n"
        "    import pulumi\n"
    )
    assert imports_of(source, "gpu_platform.cli", False) == {"components", "policies", "simulator", "pulumi"}
    assert imports_of("from . import plan", "gpu_platform", True) == {"gpu_platform"}
    assert imports_of("from .spec import x", "gpu_platform.plan", False) == {"gpu_platform"}
