"""Seeded mutation testing of the fast suites: does a small, realistic bug fail a test?

    python -m bench.mutation --seed 29 --n 40 [--files GLOB ...] [--full] [--confirm] [--json OUT]

The tree is copied (the files git tracks) into a temporary directory; each mutant changes one spot of one
source file there, runs the fast tests relevant to that file (`tests_for`, or the whole fast suite with
--full), and is restored before the next. The checkout is never written; the copy is removed at the end,
on Ctrl-C or SIGTERM too. A mutant is KILLED when a test fails (or the run times out), SURVIVED when all
pass; --confirm runs the whole fast suite again on each survivor, so a survivor is one no fast test sees.

The mutations are the slips a reviewer misses (`mutations`): a comparison flipped (< and <=, == and !=,
in and not in), an integer off by one, a dict entry dropped, two labels or arguments swapped, True and
False or `and` and `or` exchanged, a `not` dropped, + and - exchanged. Sites in docstrings, type
annotations and f-strings are skipped, and so is a mutant that does not compile. The sample is drawn
uniformly over every site of the target files with random.Random(seed), so a seed names one sample.
"""

from __future__ import annotations

import argparse
import ast
import copy
import fnmatch
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterator

from bench.common import ROOT
from localcluster.signals import interrupt_on_sigterm

# What the issue names: the spec, the plan, the components, the policy pack and the job template.
TARGETS = (
    "gpu_platform/spec/*.py", "gpu_platform/plan/*.py", "gpu_platform/pool_derivations.py",
    "components/*.py", "components/*/*.py", "policies/gpu_policies/*.py", "policies/gpu_policies/*/*.py",
    "gpu_platform/jobs.py", "gpu_platform/workload_templates.py",
)
FAST_LAYERS = ("tests/unit", "tests/policy", "tests/promtool")
# Tests that pin literal values from the stack files: relevant to every target.
ALWAYS = ("tests/unit/components/test_pinned_values.py", "tests/unit/gpu_platform/test_spec_boundaries.py",
          "tests/policy/test_pinned_policy.py")
# Which test files exercise a module beyond those that name it (tests_for). Renders run every component,
# so the plan and the job template reach further than their imports say.
EXTRA: dict[str, tuple[str, ...]] = {
    # The spec's defaults and examples are in the generated config reference; its Karpenter and data fields
    # have refusal tables of their own.
    "gpu_platform/spec/": ("tests/unit/gpu_platform/test_spec.py", "tests/unit/gpu_platform/test_plan.py", "tests/policy/test_stacks.py",
                           "tests/unit/platform_cli/test_config_reference.py", "tests/unit/components/test_karpenter.py",
                           "tests/unit/components/test_data_path.py"),
    "gpu_platform/plan/": ("tests/unit/gpu_platform/test_plan.py", "tests/unit/components/test_queues.py", "tests/unit/components/test_tenancy.py",
                             "tests/unit/components/test_node_pools.py", "tests/unit/gpu_platform/test_jobs.py", "tests/policy/test_stacks.py"),
    "gpu_platform/pool_derivations.py": ("tests/unit/gpu_platform/test_plan.py", "tests/unit/components/test_queues.py",
                                         "tests/unit/components/test_node_pools.py", "tests/policy/test_stacks.py"),
    "gpu_platform/jobs.py": ("tests/unit/gpu_platform/test_jobs.py", "tests/unit/gpu_platform/test_job_template_gpus.py",
                             "tests/unit/gpu_platform/test_workload_templates.py", "tests/unit/components/test_admission_cel.py"),
    "gpu_platform/workload_templates.py": ("tests/unit/gpu_platform/test_workload_templates.py", "tests/unit/gpu_platform/test_jobs.py"),
    "components/queues/": ("tests/unit/components/test_queues.py", "tests/unit/components/test_crd_rules.py", "tests/policy/test_stacks.py"),
    "components/node_pools/": ("tests/unit/components/test_node_pools.py", "tests/unit/components/test_node_health.py",
                               "tests/unit/components/test_aws_name_limits.py", "tests/unit/components/test_efa.py",
                               "tests/policy/test_stacks.py"),
    "components/admission/": ("tests/unit/components/test_admission.py", "tests/unit/components/test_admission_cel.py",
                                "tests/unit/components/test_admission_gpu_placement.py", "tests/unit/components/test_security.py",
                                "tests/unit/gpu_platform/test_workload_templates.py"),
    "components/tenancy.py": ("tests/unit/components/test_tenancy.py", "tests/unit/components/test_data_isolation.py",
                              "tests/unit/components/test_security.py", "tests/policy/test_stacks.py"),
    "components/platform_namespace.py": ("tests/unit/components/test_tenancy.py", "tests/unit/components/test_security.py"),
    "components/karpenter.py": ("tests/unit/components/test_karpenter.py", "tests/unit/components/test_crd_rules.py"),
    "components/autoscaler.py": ("tests/unit/components/test_autoscaler.py",),
    "components/gpu_operator.py": ("tests/unit/components/test_gpu_operator.py", "tests/unit/docs/test_docs_chart_values.py"),
    "components/monitoring.py": ("tests/unit/components/test_monitoring.py", "tests/promtool/test_promtool.py"),
    "components/alerts/": ("tests/unit/components/test_monitoring.py", "tests/promtool/test_promtool.py"),
    "components/dashboards.py": ("tests/unit/components/test_monitoring.py",),
    "components/storage.py": ("tests/unit/components/test_data_path.py", "tests/unit/components/test_data_isolation.py"),
    "components/identity.py": ("tests/unit/components/test_security.py", "tests/unit/components/test_tenancy.py"),
    "components/": ("tests/unit/components/test_platform.py",),
    "policies/": ("tests/policy",),
}
TIMEOUT_S = 600
# The whole fast suite of --confirm, but for the tests of the tool chain, scripts and CI workflows: they mutate
# nothing here and read the checkout's own environment (tool cache, git state), which a copy does not have.
CONFIRM_IGNORE = ("tests/unit/scripts/test_pulumi_env.py", "tests/unit/scripts/test_run_tests.py", "tests/unit/scripts/test_tool_cache.py",
                  "tests/unit/scripts/test_workflows.py", "tests/unit/scripts/test_reference_data.py")


def whole_suite() -> list[str]:
    return [*FAST_LAYERS, *(f"--ignore={t}" for t in CONFIRM_IGNORE)]


# --- Mutations ----------------------------------------------------------------------------------------------

FLIP: dict[type, type] = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq,
                          ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot,
                          ast.IsNot: ast.Is}


# Swapping these calls' arguments is a TypeError on the first call, not a bug a test has to find.
BUILTINS = {"isinstance", "issubclass", "getattr", "hasattr", "setattr"}


@dataclass
class Mutant:
    file: str            # relative to the tree
    line: int
    kind: str
    before: str          # the source segment replaced
    after: str           # what replaces it
    start: tuple[int, int]
    end: tuple[int, int]

    def describe(self) -> str:
        return f"{self.file}:{self.line} {self.kind}: {_short(self.before)}  ->  {_short(self.after)}"


def _short(text: str, width: int = 110) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."


def _skipped_nodes(tree: ast.AST) -> set[int]:
    """ids of nodes a mutation must not touch: docstrings, annotations, f-strings (their inner positions are
    not reliable before Python 3.12)."""
    skip: set[int] = set()

    def all_of(node: ast.AST | None) -> None:
        if node is not None:
            skip.update(id(n) for n in ast.walk(node))

    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            all_of(node.returns)
            for a in [*node.args.args, *node.args.kwonlyargs, *node.args.posonlyargs, node.args.vararg,
                      node.args.kwarg]:
                if a is not None:
                    all_of(a.annotation)
        elif isinstance(node, ast.AnnAssign):
            all_of(node.annotation)
        elif isinstance(node, ast.JoinedStr):
            all_of(node)
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            all_of(node)
        elif isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            all_of(node)
    return skip


def _label_kind(node: ast.AST) -> str | None:
    """What a swap may exchange: two string literals, or two names (cv.POOL and cv.TEAM), never one of each."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return "str"
    if isinstance(node, (ast.Attribute, ast.Name)):
        return "name"
    return None


def _swaps(values: list[ast.expr]) -> Iterator[tuple[int, int]]:
    """Neighbouring pairs of the same label kind that differ."""
    labelled = [(i, _label_kind(v)) for i, v in enumerate(values) if _label_kind(v)]
    for (a, ka), (b, kb) in zip(labelled, labelled[1:]):
        if ka == kb and ast.dump(values[a]) != ast.dump(values[b]):
            yield a, b


def _variants(node: ast.AST) -> Iterator[tuple[str, ast.AST]]:
    """(kind, mutated copy of node) for every mutation of this node."""
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in FLIP:
        new = copy.deepcopy(node)
        new.ops = [FLIP[type(node.ops[0])]()]
        yield "flip comparison", new
    elif isinstance(node, ast.Constant) and type(node.value) is bool:
        yield "flip boolean", ast.Constant(not node.value)
    elif isinstance(node, ast.Constant) and type(node.value) is int:
        yield "off by one", ast.Constant(node.value + 1 if node.value <= 0 else node.value - 1 if node.value > 1 else 2)
    elif isinstance(node, ast.BoolOp):
        new = copy.deepcopy(node)
        new.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        yield "and/or", new
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        yield "drop not", copy.deepcopy(node.operand)
    elif isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)) and not any(
            isinstance(side, ast.JoinedStr) or (isinstance(side, ast.Constant) and isinstance(side.value, str))
            for side in (node.left, node.right)):
        new = copy.deepcopy(node)
        new.op = ast.Sub() if isinstance(node.op, ast.Add) else ast.Add()
        yield "+/-", new
    elif isinstance(node, ast.Dict) and len(node.keys) >= 2 and all(k is not None for k in node.keys):
        for i in range(len(node.keys)):
            new = copy.deepcopy(node)
            del new.keys[i], new.values[i]
            yield "drop dict key", new
        for a, b in _swaps(node.values):
            new = copy.deepcopy(node)
            new.values[a], new.values[b] = new.values[b], new.values[a]
            yield "swap labels", new
    elif isinstance(node, ast.Call) and len(node.args) >= 2 and not (
            isinstance(node.func, ast.Name) and node.func.id in BUILTINS):
        for a, b in _swaps(node.args):
            new = copy.deepcopy(node)
            new.args[a], new.args[b] = new.args[b], new.args[a]
            yield "swap arguments", new


def mutations(root: Path, rel: str) -> list[Mutant]:
    source = (root / rel).read_text()
    tree = ast.parse(source)
    skip = _skipped_nodes(tree)
    lines = [line.encode() for line in source.splitlines(keepends=True)]
    out = []
    for node in ast.walk(tree):
        if id(node) in skip or not hasattr(node, "lineno") or node.end_lineno is None:
            continue
        (l1, c1), (l2, c2) = (node.lineno, node.col_offset), (node.end_lineno, node.end_col_offset)
        segment = (lines[l1 - 1][c1:c2] if l1 == l2 else
                   lines[l1 - 1][c1:] + b"".join(lines[l1:l2 - 1]) + lines[l2 - 1][:c2]).decode()
        for kind, new in _variants(node):
            after = ast.unparse(new)
            if "\n" in segment or "\n" in after:
                after = f"({after})"
            out.append(Mutant(rel, node.lineno, kind, segment, after, (node.lineno, node.col_offset),
                              (node.end_lineno, node.end_col_offset)))
    return out


def apply(source: str, m: Mutant) -> str:
    """source with m's segment replaced (positions are UTF-8 byte offsets, as ast gives them)."""
    lines = source.splitlines(keepends=True)
    (l1, c1), (l2, c2) = m.start, m.end
    head = lines[l1 - 1].encode()[:c1].decode()
    tail = lines[l2 - 1].encode()[c2:].decode()
    return "".join(lines[: l1 - 1]) + head + m.after + tail + "".join(lines[l2:])


# --- Which tests ------------------------------------------------------------------------------------------

def _test_files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for layer in FAST_LAYERS for p in (root / layer).glob("test_*.py"))


def tests_for(root: Path, rel: str) -> list[str]:
    """The fast test files relevant to a source file: those that import its module (or a name from its
    package by the module's name), its namesake test_<stem>.py, the EXTRA ones, and ALWAYS."""
    module = rel[:-3].replace("/", ".").removesuffix(".__init__")
    package, _, stem = module.rpartition(".")
    imports = re.compile(rf"(\b{re.escape(module)}\b|from {re.escape(package)} import [^\n]*\b{re.escape(stem)}\b)")
    chosen = [t for t in _test_files(root) if Path(t).stem == f"test_{stem}" or imports.search((root / t).read_text())]
    for prefix, extra in EXTRA.items():
        if rel.startswith(prefix):
            chosen += extra
    chosen += [t for t in ALWAYS if (root / t).exists()]
    return sorted(set(chosen))


# --- Running ----------------------------------------------------------------------------------------------

def copy_tree(dest: Path, without: tuple[str, ...] = ()) -> None:
    """The files git tracks (and the working tree's changes and new files), nothing else: no venv, caches or
    state; `without` leaves files out (a run "before" new tests)."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        if rel in without:
            continue
        src = ROOT / rel
        if src.is_file() and not src.is_symlink():
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, target)
        elif src.is_symlink():
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(os.readlink(src), target)


def test_env(tree: Path) -> dict[str, str]:
    """The copy's environment: its own imports; the reference data where the checkout finds it (the copy has
    no ../shared beside it)."""
    sys.path.insert(0, str(ROOT))
    from tests.reference_data import CRDS_ENV, VALUES_ENV, locate

    found = locate(os.environ)
    env = {**os.environ, "PYTHONPATH": str(tree), "GPU_PLATFORM_MUTATION": "1"}
    if not found.problem:
        env[CRDS_ENV], env[VALUES_ENV] = str(found.crds), str(found.values)
    return env


def run_tests(tree: Path, env: dict[str, str], tests: list[str], timeout: float = TIMEOUT_S) -> tuple[str, float, str]:
    """('pass' | 'fail' | 'timeout', seconds, the first failing test's line)."""
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "--no-header",
                             "-m", "not cluster", *tests], cwd=tree, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        proc.communicate()
        return "timeout", time.monotonic() - started, ""
    except BaseException:
        os.killpg(proc.pid, 9)
        proc.communicate()
        raise
    seconds = time.monotonic() - started
    failed = next((line for line in out.splitlines() if line.startswith(("FAILED", "ERROR"))), "")
    if proc.returncode == 0:
        return "pass", seconds, ""
    if proc.returncode == 5:  # no tests collected: nothing saw the mutant
        return "pass", seconds, "no tests collected"
    last = out.strip().splitlines()[-1] if out.strip() else f"exit {proc.returncode}"
    return "fail", seconds, failed or last


@dataclass
class Result:
    mutant: str
    status: str          # KILLED, SURVIVED
    by: str              # the first failing test, or why
    seconds: float
    tests: list[str]
    confirmed: bool = False


def sample(tree: Path, patterns: list[str], seed: int, n: int) -> list[Mutant]:
    files = sorted({str(p.relative_to(tree)) for pat in patterns for p in tree.glob(pat) if p.name != "__init__.py"
                    or p.stat().st_size > 200})
    every = [m for rel in files for m in mutations(tree, rel)]
    rng = random.Random(seed)
    rng.shuffle(every)
    chosen = []
    sources: dict[str, str] = {}
    for m in every:
        source = sources.setdefault(m.file, (tree / m.file).read_text())
        try:
            compile(apply(source, m), m.file, "exec")
        except SyntaxError:
            continue
        chosen.append(m)
        if len(chosen) == n:
            break
    return chosen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=29)
    parser.add_argument("--n", type=int, default=40, help="mutants to run")
    parser.add_argument("--files", nargs="*", default=list(TARGETS), help="globs of the files to mutate")
    parser.add_argument("--full", action="store_true", help="run the whole fast suite on every mutant")
    parser.add_argument("--confirm", action="store_true", help="run the whole fast suite again on each survivor")
    parser.add_argument("--no-baseline", action="store_true", help="skip the check that the unmutated tree passes")
    parser.add_argument("--list", action="store_true", help="print the sample and exit")
    parser.add_argument("--without", nargs="*", default=[], help="test files to leave out of the copy")
    parser.add_argument("--only", type=Path, help="run only the sample's mutants that survived in this --json file")
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args(argv)
    interrupt_on_sigterm()

    tree = Path(tempfile.mkdtemp(prefix="gpu-platform-mutation-"))
    results: list[Result] = []
    try:
        copy_tree(tree, tuple(args.without))
        mutants = sample(tree, args.files, args.seed, args.n)
        if args.only:
            survived = {r["mutant"] for r in json.loads(args.only.read_text()) if r["status"] == "SURVIVED"}
            mutants = [m for m in mutants if m.describe() in survived]
        if args.list:
            for m in mutants:
                print(m.describe())
            return 0
        env = test_env(tree)
        if not args.no_baseline:
            union = whole_suite() if args.full or args.confirm else sorted(
                {t for m in mutants for t in tests_for(tree, m.file)})
            status, seconds, why = run_tests(tree, env, union)
            print(f"baseline ({len(union)} test paths): {status} in {seconds:.0f}s {why}", flush=True)
            if status != "pass":
                print("the unmutated tree fails its tests: no mutant can be judged", file=sys.stderr)
                return 2
        for i, m in enumerate(mutants, 1):
            path = tree / m.file
            original = path.read_text()
            tests = whole_suite() if args.full else tests_for(tree, m.file)
            try:
                path.write_text(apply(original, m))
                status, seconds, why = run_tests(tree, env, tests)
                result = Result(m.describe(), "SURVIVED" if status == "pass" else "KILLED",
                                why if status != "timeout" else "timeout", seconds, tests)
                if result.status == "SURVIVED" and args.confirm and not args.full:
                    status, more, why = run_tests(tree, env, whole_suite())
                    result.seconds += more
                    result.confirmed = True
                    if status != "pass":
                        result.status, result.by = "KILLED", f"(whole suite) {why}"
            finally:
                path.write_text(original)
            results.append(result)
            if args.json:  # after every mutant: a stopped run keeps what it measured
                args.json.write_text(json.dumps([asdict(r) for r in results], indent=1) + "\n")
            print(f"[{i}/{len(mutants)}] {result.status:<8} {result.mutant}\n"
                  f"         {result.by or ''} ({result.seconds:.0f}s, {len(tests)} test paths)", flush=True)
    except KeyboardInterrupt:
        print("interrupted: the copy is removed, the checkout was never changed", file=sys.stderr)
        return 130
    finally:
        shutil.rmtree(tree, ignore_errors=True)
        if args.json and results:
            args.json.write_text(json.dumps([asdict(r) for r in results], indent=1) + "\n")
    killed = sum(r.status == "KILLED" for r in results)
    print(f"\nseed {args.seed}: {killed}/{len(results)} killed ({100 * killed / max(len(results), 1):.0f}%), "
          f"{len(results) - killed} survived" + (" (survivors confirmed on the whole fast suite)" if args.confirm else ""))
    for r in results:
        if r.status == "SURVIVED":
            print(f"  survived: {r.mutant}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
