"""Seeded mutation testing of the fast suites: does a small, realistic bug fail a test?

    python -m bench.mutation --seed 1 --count 200 [--rev REV] [--overlay PATH ...] [--jobs J] [--timeout S]
                             [--files GLOB ...] [--full] [--confirm] [--json OUT] [--report OUT.md]

The tree of one commit (--rev, HEAD by default; `--rev worktree` for the working tree as it is) is copied into a
temporary directory, with --overlay's paths taken from the working tree (tests not committed yet). Each
mutant (bench.mutants: one slip at one spot of one source file) is written there, the fast tests relevant to
that file run with -x (`tests_for`, or the whole fast suite with --full), and the file is restored before the
next. The checkout is never written; the copies are removed at the end, on Ctrl-C or SIGTERM too.

A mutant is KILLED when a test fails, TIMEOUT when its tests do not finish in --timeout seconds (a loop the
slip made endless: caught too), SURVIVED when all pass, EQUIVALENT when bench.mutation_equivalents lists it
with the reason no test can see it (it is not run, and not counted). --confirm runs the whole fast suite again
on each survivor, so a survivor is one no fast test sees. The same seed on the same commit draws the same
mutants.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bench.common import ROOT
from bench.mutants import Mutant, apply, sample
from bench.mutation_equivalents import equivalent_reason
from bench.mutation_report import markdown
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
# Which test files exercise a module beyond those that import it (tests_for). Renders run every component,
# so the plan and the job template reach further than their imports say.
EXTRA: dict[str, tuple[str, ...]] = {
    # The spec's defaults and examples are in the generated config reference; its Karpenter and data fields
    # have refusal tables of their own.
    "gpu_platform/spec/": ("tests/unit/gpu_platform/test_spec.py", "tests/unit/gpu_platform/test_plan.py", "tests/policy/test_stacks.py",
                           "tests/unit/platform_cli/test_config_reference.py", "tests/unit/components/test_karpenter.py",
                           "tests/unit/components/test_data_path.py", "tests/unit/gpu_platform/test_efa_pool_zone.py",
                           "tests/unit/gpu_platform/test_stack_split_claims.py", "tests/unit/gpu_platform/test_receiver_names.py"),
    "gpu_platform/plan/": ("tests/unit/gpu_platform/test_plan.py", "tests/unit/components/test_queues.py", "tests/unit/components/test_tenancy.py",
                           "tests/unit/components/test_node_pools.py", "tests/unit/gpu_platform/test_jobs.py", "tests/policy/test_stacks.py",
                           "tests/unit/platform_cli/test_plan_monitoring.py", "tests/unit/components/test_autoscaler.py",
                           "tests/unit/components/test_observability_managed_names.py", "tests/unit/gpu_platform/test_plan_is_immutable.py",
                           "tests/unit/components/test_namespace_quota_cpu_memory.py",
                           "tests/unit/components/test_node_pools_created_control_plane.py"),
    "gpu_platform/pool_derivations.py": ("tests/unit/gpu_platform/test_plan.py", "tests/unit/components/test_queues.py",
                                         "tests/unit/components/test_node_pools.py", "tests/policy/test_stacks.py"),
    "gpu_platform/jobs.py": ("tests/unit/gpu_platform/test_jobs.py", "tests/unit/gpu_platform/test_job_template_gpus.py",
                             "tests/unit/gpu_platform/test_workload_templates.py", "tests/unit/components/test_admission_cel.py"),
    "gpu_platform/workload_templates.py": ("tests/unit/gpu_platform/test_workload_templates.py", "tests/unit/gpu_platform/test_jobs.py"),
    "components/queues/": ("tests/unit/components/test_queues.py", "tests/unit/components/test_crd_rules.py", "tests/policy/test_stacks.py"),
    "components/node_pools/": ("tests/unit/components/test_node_pools.py", "tests/unit/components/test_node_health.py",
                               "tests/unit/components/test_aws_name_limits.py", "tests/unit/components/test_efa.py",
                               "tests/unit/components/test_autoscaler.py", "tests/policy/test_stacks.py",
                               "tests/unit/components/test_node_pools_created_control_plane.py",
                               "tests/unit/components/test_kubernetes_provider.py"),
    "components/admission/": ("tests/unit/components/test_admission.py", "tests/unit/components/test_admission_cel.py",
                              "tests/unit/components/test_admission_gpu_placement.py", "tests/unit/components/test_security.py",
                              "tests/unit/gpu_platform/test_workload_templates.py"),
    "components/tenancy.py": ("tests/unit/components/test_tenancy.py", "tests/unit/components/test_data_isolation.py",
                              "tests/unit/components/test_tenant_role_bindings.py",
                              "tests/unit/components/test_security.py", "tests/policy/test_stacks.py"),
    "components/platform.py": ("tests/unit/components/test_kubernetes_provider.py",),
    "components/platform_namespace.py": ("tests/unit/components/test_tenancy.py", "tests/unit/components/test_security.py"),
    "components/karpenter.py": ("tests/unit/components/test_karpenter.py", "tests/unit/components/test_crd_rules.py",
                                "tests/unit/components/test_karpenter_controller_statements.py"),
    "components/autoscaler.py": ("tests/unit/components/test_autoscaler.py",),
    "components/gpu_operator.py": ("tests/unit/components/test_gpu_operator.py", "tests/unit/docs/test_docs_chart_values.py"),
    "components/monitoring.py": ("tests/unit/components/test_monitoring.py", "tests/promtool/test_promtool.py"),
    "components/alerts/": ("tests/unit/components/test_monitoring.py", "tests/promtool/test_promtool.py"),
    "components/dashboards.py": ("tests/unit/components/test_monitoring.py", "tests/unit/components/test_dashboard_layout.py"),
    "components/storage.py": ("tests/unit/components/test_data_path.py", "tests/unit/components/test_data_isolation.py",
                              "tests/unit/components/test_data_service_accounts.py", "tests/unit/components/test_data_outlives_the_stack.py"),
    "components/observability.py": ("tests/unit/components/test_observability.py", "tests/unit/components/test_observability_managed_names.py"),
    "components/identity.py": ("tests/unit/components/test_security.py", "tests/unit/components/test_tenancy.py"),
    "components/": ("tests/unit/components/test_platform.py", "tests/unit/components/test_stack_outputs.py",
                    "tests/unit/components/test_helm_release_order.py",
                    "tests/unit/components/test_resource_tree.py", "tests/unit/gpu_platform/test_plan_is_immutable.py"),
    "policies/": ("tests/policy",),
}
TIMEOUT_S = 300
# The whole fast suite of --confirm, but for the tests of the tool chain, scripts and CI workflows: they mutate
# nothing here and read the checkout's own environment (tool cache, git state), which a copy does not have.
CONFIRM_IGNORE = ("tests/unit/scripts/test_pulumi_env.py", "tests/unit/scripts/test_run_tests.py", "tests/unit/scripts/test_tool_cache.py",
                  "tests/unit/scripts/test_workflows.py", "tests/unit/scripts/test_reference_data.py")


def whole_suite() -> list[str]:
    return [*FAST_LAYERS, *(f"--ignore={t}" for t in CONFIRM_IGNORE)]


# --- Which tests ------------------------------------------------------------------------------------------

def _test_files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for layer in FAST_LAYERS for p in (root / layer).rglob("test_*.py"))


def tests_for(root: Path, rel: str) -> list[str]:
    """The fast test files relevant to a source file, the likeliest to fail first (pytest -x stops there): its
    namesake test_<stem>.py, those that import its module (or a name from its package by the module's name),
    the EXTRA ones, and ALWAYS."""
    module = rel[:-3].replace("/", ".").removesuffix(".__init__")
    package, _, stem = module.rpartition(".")
    imports = re.compile(rf"(\b{re.escape(module)}\b|from {re.escape(package)} import [^\n]*\b{re.escape(stem)}\b)")
    files = _test_files(root)
    chosen = [t for t in files if Path(t).stem == f"test_{stem}"]
    chosen += [t for t in files if imports.search((root / t).read_text())]
    for prefix, extra in EXTRA.items():
        if rel.startswith(prefix):
            chosen += extra
    chosen += [t for t in ALWAYS if (root / t).exists()]
    return [t for t in dict.fromkeys(chosen) if t in files or (root / t).is_dir()]


# --- The copies ------------------------------------------------------------------------------------------

def copy_tree(dest: Path, rev: str, overlay: tuple[str, ...] = (), without: tuple[str, ...] = ()) -> None:
    """The tree of commit `rev` (or the working tree's tracked and new files for "worktree"), nothing else: no
    venv, caches or state; `overlay` paths from the working tree on top; `without` left out (a run "before"
    new tests)."""
    if rev == "worktree":
        listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                                capture_output=True, check=True).stdout.decode().split("\0")
        _copy_paths(dest, [p for p in listed if p])
    else:
        archive = subprocess.run(["git", "archive", "--format=tar", rev], cwd=ROOT, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    for path in overlay:
        src = ROOT / path
        _copy_paths(dest, [p.relative_to(ROOT).as_posix() for p in src.rglob("*") if p.is_file()] if src.is_dir() else [path])
    for rel in without:
        (dest / rel).unlink(missing_ok=True)


def _copy_paths(dest: Path, paths: list[str]) -> None:
    for rel in paths:
        src, target = ROOT / rel, dest / rel
        if src.is_symlink():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.unlink(missing_ok=True)
            os.symlink(os.readlink(src), target)
        elif src.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, target)


def test_env(tree: Path) -> dict[str, str]:
    """The copy's environment: its own imports; the reference data where the checkout finds it (the copy has
    no ../shared beside it)."""
    sys.path.insert(0, str(ROOT))
    from tests.reference_data import CRDS_ENV, VALUES_ENV, locate

    found = locate(os.environ)
    # COLUMNS: pytest cuts its summary lines (the failing test and why) at the terminal's width
    env = {**os.environ, "PYTHONPATH": str(tree), "GPU_PLATFORM_MUTATION": "1", "COLUMNS": "400"}
    if not found.problem:
        env[CRDS_ENV], env[VALUES_ENV] = str(found.crds), str(found.values)
    return env


def run_tests(tree: Path, env: dict[str, str], tests: list[str], timeout: float) -> tuple[str, float, str]:
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


# --- Running ----------------------------------------------------------------------------------------------

@dataclass
class Result:
    mutant: str
    status: str          # KILLED, TIMEOUT, SURVIVED, EQUIVALENT
    by: str              # the first failing test, or why it survived / is equivalent
    seconds: float
    tests: list[str] = field(default_factory=list)
    confirmed: bool = False
    index: int = -1      # its place in the seed's sample (--count N draws the first N)
    kind: str = ""


def judge(tree: Path, env: dict[str, str], index: int, m: Mutant, args: argparse.Namespace) -> Result:
    """Write the mutant into the copy, run its tests, restore the file."""
    path = tree / m.file
    original = path.read_text()
    why = equivalent_reason(m, original)
    if why:
        return Result(m.describe(), "EQUIVALENT", why, 0.0, index=index, kind=m.kind)
    tests = whole_suite() if args.full else tests_for(tree, m.file)
    try:
        path.write_text(apply(original, m))
        status, seconds, why = run_tests(tree, env, tests, args.timeout)
        result = Result(m.describe(), {"pass": "SURVIVED", "fail": "KILLED", "timeout": "TIMEOUT"}[status],
                        why if status != "timeout" else f"no end in {args.timeout:.0f} s", seconds, tests, index=index, kind=m.kind)
        if result.status == "SURVIVED" and args.confirm and not args.full:
            status, more, why = run_tests(tree, env, whole_suite(), args.timeout * 3)
            result.seconds += more
            result.confirmed = True
            if status != "pass":
                result.status, result.by = "KILLED", f"(whole suite) {why}"
    finally:
        path.write_text(original)
    return result


def run_all(trees: list[Path], env_of: dict[Path, dict[str, str]], mutants: list[tuple[int, Mutant]],
            args: argparse.Namespace) -> list[Result]:
    """The (index, mutant)s over len(trees) workers, each on its own copy; results in the sample's order."""
    todo: queue.Queue[tuple[int, Mutant]] = queue.Queue()
    for item in mutants:
        todo.put(item)
    results: dict[int, Result] = {}
    lock = threading.Lock()
    stop = threading.Event()

    def work(tree: Path) -> None:
        while not stop.is_set():
            try:
                i, m = todo.get_nowait()
            except queue.Empty:
                return
            result = judge(tree, env_of[tree], i, m, args)
            with lock:
                results[i] = result
                done = [results[k] for k in sorted(results)]
                if args.json:  # after every mutant: a stopped run keeps what it measured
                    args.json.write_text(json.dumps([asdict(r) for r in done], indent=1) + "\n")
                print(f"[{len(results)}/{len(mutants)}] {result.status:<10} {result.mutant}\n"
                      f"         {result.by or ''} ({result.seconds:.0f}s, {len(result.tests)} test paths)", flush=True)

    threads = [threading.Thread(target=work, args=(t,), daemon=True) for t in trees]
    for t in threads:
        t.start()
    try:
        while any(t.is_alive() for t in threads):
            for t in threads:
                t.join(timeout=0.5)
    except BaseException:
        stop.set()
        raise
    return [results[k] for k in sorted(results)]


def aligned(mutants: list[tuple[int, Mutant]], earlier: list[dict]) -> list[tuple[int, Mutant, dict]]:
    """An earlier run's results with the sample's (index, mutant) each is about: by index, or for results written
    before there was one, by aligning their descriptions with the sample in order (both are in the sample's
    order)."""
    if all("index" in r for r in earlier):
        by_index = dict(mutants)
        return [(r["index"], by_index[r["index"]], r) for r in earlier]
    out, at = [], 0
    for r in earlier:
        while at < len(mutants) and mutants[at][1].legacy() != r["mutant"]:
            at += 1
        if at == len(mutants):
            raise SystemExit(f"not in this sample (another seed, commit or --files?): {r['mutant']}")
        out.append((*mutants[at], r))
        at += 1
    return out


def survivors_of(mutants: list[tuple[int, Mutant]], earlier: list[dict]) -> list[tuple[int, Mutant]]:
    """The sample's mutants that survived in an earlier run's results."""
    return [(i, m) for i, m, r in aligned(mutants, earlier) if r["status"] == "SURVIVED"]


def earlier_verdicts(mutants: list[tuple[int, Mutant]], earlier: list[dict]) -> list[Result]:
    """The earlier run's killed (and equivalent) mutants, which an --only run does not run again."""
    return [Result(m.describe(), r["status"], r["by"], r["seconds"], r.get("tests", []), index=i, kind=m.kind)
            for i, m, r in aligned(mutants, earlier) if r["status"] != "SURVIVED"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--count", "--n", dest="n", type=int, default=200, help="mutants to draw")
    parser.add_argument("--rev", default="HEAD", help='the commit to copy ("worktree": the working tree)')
    parser.add_argument("--overlay", nargs="*", default=[], help="paths taken from the working tree on top")
    parser.add_argument("--files", nargs="*", default=list(TARGETS), help="globs of the files to mutate")
    parser.add_argument("--jobs", type=int, default=1, help="mutants run at once, each on a copy of its own")
    parser.add_argument("--timeout", type=float, default=TIMEOUT_S, help="seconds a mutant's tests may take")
    parser.add_argument("--full", action="store_true", help="run the whole fast suite on every mutant")
    parser.add_argument("--confirm", action="store_true", help="run the whole fast suite again on each survivor")
    parser.add_argument("--no-baseline", action="store_true", help="skip the check that the unmutated tree passes")
    parser.add_argument("--list", action="store_true", help="print the sample and exit")
    parser.add_argument("--without", nargs="*", default=[], help="test files to leave out of the copy")
    parser.add_argument("--only", type=Path, help="run only the sample's mutants that survived in this --json file "
                        "(the figure, --json and --report keep that run's other verdicts too)")
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--report", type=Path, help="write a markdown report (survivors with file:line) here")
    args = parser.parse_args(argv)
    interrupt_on_sigterm()

    commit = args.rev if args.rev == "worktree" else subprocess.run(
        ["git", "rev-parse", "--short", args.rev], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    load_before = os.getloadavg()
    started = time.monotonic()
    trees = [Path(tempfile.mkdtemp(prefix="gpu-platform-mutation-")) for _ in range(max(args.jobs, 1))]
    results: list[Result] = []
    try:
        for tree in trees:
            copy_tree(tree, args.rev, tuple(args.overlay), tuple(args.without))
        mutants = list(enumerate(sample(trees[0], args.files, args.seed, args.n)))
        kept: list[Result] = []
        if args.only:
            earlier = json.loads(args.only.read_text())
            kept = earlier_verdicts(mutants, earlier)
            mutants = survivors_of(mutants, earlier)
        if args.list:
            for i, m in mutants:
                print(f"{i:4} {m.describe()}")
            return 0
        env_of = {tree: test_env(tree) for tree in trees}
        if not args.no_baseline:
            union = whole_suite() if args.full or args.confirm else sorted(
                {t for _, m in mutants for t in tests_for(trees[0], m.file)})
            status, seconds, why = run_tests(trees[0], env_of[trees[0]], union, args.timeout * 3)
            print(f"baseline ({len(union)} test paths): {status} in {seconds:.0f}s {why}", flush=True)
            if status != "pass":
                print("the unmutated tree fails its tests: no mutant can be judged", file=sys.stderr)
                return 2
        results = run_all(trees, env_of, mutants, args)
    except KeyboardInterrupt:
        print("interrupted: the copies are removed, the checkout was never changed", file=sys.stderr)
        return 130
    finally:
        for tree in trees:
            shutil.rmtree(tree, ignore_errors=True)
    if kept:  # the figure and --json are the whole sample's: the earlier run's verdicts and this run's on its survivors
        print(f"\n{len(results)} survivors of {args.only} run again; {len(kept)} verdicts kept from it")
        results = sorted([*kept, *results], key=lambda r: r.index)
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in results], indent=1) + "\n")
    counted = [r for r in results if r.status != "EQUIVALENT"]
    caught = sum(r.status in ("KILLED", "TIMEOUT") for r in counted)
    print(f"\nseed {args.seed}, {commit}: {caught}/{len(counted)} killed ({100 * caught / max(len(counted), 1):.1f}%), "
          f"{len(counted) - caught} survived, {len(results) - len(counted)} equivalent (not counted)"
          + (" (survivors confirmed on the whole fast suite)" if args.confirm else ""))
    for r in results:
        if r.status == "SURVIVED":
            print(f"  survived: {r.mutant}")
    if args.report:
        command = "python -m bench.mutation " + " ".join(argv if argv is not None else sys.argv[1:])
        args.report.write_text(markdown(command, args.seed, commit, results, load_before, os.getloadavg(),
                                        time.monotonic() - started))
    return 0


if __name__ == "__main__":
    sys.exit(main())
