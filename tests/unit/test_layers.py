"""The layer contract (docs/architecture.md), held over every import the code can make at run time.

Read from the source with `ast`, so an import inside a function (the lazy kind that used to let the spec layer
reach the components) counts exactly like one at the top of a module, and so do `importlib.import_module`
calls with a literal name. An own check rather than import-linter: the spec layer's rule is an allowlist of
third-party packages (stdlib, pydantic, yaml), which import-linter's forbidden/layers contracts do not state,
and this needs no extra dependency.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
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


READ_CALLS = frozenset({"import_module", "getattr", "hasattr"})


def _read_by_a_check(node: ast.AST) -> bool:
    """Whether any check below looks at `node`: an import statement, a call of one of READ_CALLS, a `.spec`."""
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return True
    if isinstance(node, ast.Attribute):
        return node.attr == "spec"
    if isinstance(node, ast.Call):
        func = node.func
        return (func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)) in READ_CALLS
    return False


@functools.lru_cache(maxsize=None)
def syntax_nodes(source: str) -> tuple[ast.AST, ...]:
    """The nodes of `source`'s syntax tree the checks read (ast.walk's order), parsed once a session: each check
    reads every module of the code base, and parsing them was most of what the checks cost (the other nodes
    are not kept: every module's whole tree is ~100 MB)."""
    return tuple(node for node in ast.walk(ast.parse(source)) if _read_by_a_check(node))


@functools.lru_cache(maxsize=None)
def source_of(path: Path) -> str:
    return path.read_text()


def imports_of(source: str, module: str, is_package: bool) -> set[str]:
    """Top-level names of every module `source` imports: statements anywhere in the file (functions too),
    relative imports resolved against `module`, and `importlib.import_module("literal")` calls."""
    found: set[str] = set()
    package = module if is_package else module.rpartition(".")[0]
    for node in syntax_nodes(source):
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
        for name in sorted(imports_of(source_of(path), module, path.name == "__init__.py")):
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
                 and "components" in imports_of(source_of(path), module, path.name == "__init__.py")]
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


# Components translate the plan and never read the spec (docs/architecture.md): the Plan does not carry it, and no
# component reaches for a `.spec` attribute (or getattr(x, "spec")) on anything, so none can start to again.
SPEC_READ = "components translate the plan, never the spec: take the value from a Plan field (gpu_platform/plan/)"


def spec_reads(source: str, path: str) -> list[str]:
    """`path:line: expression` for every `.spec` attribute and getattr(..., "spec") in `source`; Kubernetes
    objects' `spec` keys are dict keys and CEL strings, which this does not see."""
    out: list[tuple[int, str]] = []
    for node in syntax_nodes(source):
        if isinstance(node, ast.Attribute) and node.attr == "spec":
            out.append((node.lineno, ast.unparse(node)))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr")
              and len(node.args) > 1 and isinstance(node.args[1], ast.Constant) and node.args[1].value == "spec"):
            out.append((node.lineno, ast.unparse(node)))
    return [f"{path}:{line}: {expr}" for line, expr in sorted(out)]


def test_no_component_reads_the_spec() -> None:
    found = [hit for _, path in modules_of("components")
             for hit in spec_reads(source_of(path), str(path.relative_to(ROOT)))]
    assert found == [], SPEC_READ + ":\n" + "\n".join(found)


def test_the_spec_read_check_names_the_file_and_line() -> None:
    source = (
        "def f(plan, obj):\n"
        "    body = obj['spec']  # a Kubernetes object's spec: a key, not a spec read\n"
        "    cel = 'object.spec.template'\n"
        "    kueue = plan.spec.addons.kueue\n"
        "    return getattr(plan, 'spec'), self.plan.spec\n"
    )
    assert spec_reads(source, "components/x.py") == [
        "components/x.py:4: plan.spec",
        "components/x.py:5: getattr(plan, 'spec')",
        "components/x.py:5: self.plan.spec",
    ]


@pytest.mark.parametrize("stack", ["local", "prod", "staging"])
def test_the_plan_carries_no_spec(stack: str) -> None:
    """Nothing in a built Plan is the spec or a section of it that holds the add-ons: a component handed the
    Plan has no spec to read, under any name."""
    from gpu_platform.plan import Plan
    from gpu_platform.spec import Addons, Platform
    from tests.conftest import plan_of

    assert "spec" not in {f.name for f in dataclasses.fields(Plan)} and not hasattr(plan_of(stack), "spec")
    seen: list[str] = []

    def walk(value: object, where: str) -> None:
        if isinstance(value, (Platform, Addons)):
            seen.append(f"{where} is the spec's {type(value).__name__}")
        elif dataclasses.is_dataclass(value):
            for f in dataclasses.fields(value):
                walk(getattr(value, f.name), f"{where}.{f.name}")
        elif isinstance(value, (tuple, list)):
            for i, item in enumerate(value):
                walk(item, f"{where}[{i}]")
        elif isinstance(value, dict):
            for k, item in value.items():
                walk(item, f"{where}[{k!r}]")

    walk(plan_of(stack), "plan")
    assert seen == [], "\n".join(seen)


# No module reaches back to one that imports it, even lazily or for type hints only: a cycle means two modules
# decide one thing together (docs/architecture.md). Read as imports_of reads them, to the module.
CYCLE_PACKAGES = ("gpu_platform", "components", "policies", "harness", "localcluster", "simulator", "platform_cli")


def module_imports(source: str, module: str, is_package: bool, known: frozenset[str]) -> set[str]:
    """The first-party modules `source` imports, each a module of `known` (a package is its __init__; `from pkg
    import name` is the submodule pkg.name where there is one, else pkg)."""
    found: set[str] = set()
    package = module if is_package else module.rpartition(".")[0]
    for node in syntax_nodes(source):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in known)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + (node.module.split(".") if node.module else []))
            else:
                target = node.module or ""
            if target not in known:
                continue
            subs = {f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in known}
            found |= subs
            if len(subs) < len(node.names):
                found.add(target)
    found.discard(module)
    return found


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def test_no_module_imports_one_that_imports_it() -> None:
    paths = {module: path for package in CYCLE_PACKAGES for module, path in modules_of(package)}
    known = frozenset(paths)
    graph = {m: module_imports(source_of(p), m, p.name == "__init__.py", known) for m, p in paths.items()}
    assert import_cycles(graph) == []


def test_the_cycle_check_sees_type_only_and_lazy_imports() -> None:
    known = frozenset({"p", "p.a", "p.b", "p.c"})
    graph = {
        "p": module_imports("from .a import x", "p", True, known),
        "p.a": module_imports("if TYPE_CHECKING:\n    from .b import B\n", "p.a", False, known),
        "p.b": module_imports("def f():\n    from . import a\n", "p.b", False, known),
        "p.c": module_imports("from p import a", "p.c", False, known),
    }
    assert graph["p.b"] == {"p.a"} and graph["p.c"] == {"p.a"}
    assert import_cycles(graph) == [["p.a", "p.b"]]
