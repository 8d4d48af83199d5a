"""Shared fixtures: stack specs, plans and renders (cached per session: each is pure and immutable)."""

from __future__ import annotations

import copy
import functools
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from localcluster.signals import interrupt_on_sigterm
from localcluster.toolcache import BIN

ROOT = Path(__file__).resolve().parent.parent
STACKS = ("local", "staging", "prod")
TOOL_BIN = BIN


def tool(name: str) -> Path | None:
    """A tool from the cache (scripts/toolchain) or, failing that, from PATH."""
    cached = TOOL_BIN / name
    if cached.is_file() and os.access(cached, os.X_OK):
        return cached
    found = shutil.which(name)
    return Path(found) if found else None


def require_tools(*names: str) -> list[Path]:
    """The one rule for every layer: a missing real tool fails the test under CI (CI set), where a skip
    would pass a run that tested nothing, and skips elsewhere with the command that builds it."""
    found = {n: tool(n) for n in names}
    missing = [n for n, p in found.items() if p is None]
    if missing:
        message = f"missing {', '.join(missing)} (tool cache {TOOL_BIN} or PATH): run scripts/toolchain {' '.join(missing)}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return [found[n] for n in names]  # type: ignore[misc]


# Stack files that exist for tests only (not deployed, so not Pulumi.<stack>.yaml at the root).
FIXTURE_STACKS = ROOT / "tests" / "fixtures" / "stacks"
KARPENTER_STACK = "staging-karpenter"


def stack_file(stack: str) -> Path:
    fixture = FIXTURE_STACKS / f"Pulumi.{stack}.yaml"
    return fixture if fixture.is_file() else ROOT / f"Pulumi.{stack}.yaml"


_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@functools.cache
def reference_yaml(path: Path) -> Any:
    """A reference file (CRD, chart values, promtool tests) parsed once per session with libyaml's safe
    loader where PyYAML has it. Shared: read it, never mutate it (copy.deepcopy what a test changes)."""
    return yaml.load(Path(path).read_text(), Loader=_YAML_LOADER)


def load_yaml(text: str) -> Any:
    """YAML text parsed as yaml.safe_load parses it (the same safe tags and values), with libyaml's loader where
    PyYAML has it: 5-10x faster on the chart values, workflows and stack files the tests read."""
    return yaml.load(text, Loader=_YAML_LOADER)


@functools.cache
def stack_doc(stack: str) -> dict[str, Any]:
    return load_yaml(stack_file(stack).read_text())


def platform_raw(stack: str) -> dict[str, Any]:
    """A fresh, mutable copy of a stack's `gpu-platform:platform` value."""
    return copy.deepcopy(stack_doc(stack)["config"]["gpu-platform:platform"])


@functools.cache
def stack_config_of(stack: str):
    """A stack's checked spec and region, loaded once (the Plan does not carry the spec)."""
    from gpu_platform.spec import load_stack_config

    return load_stack_config(stack_doc(stack))


def spec_of(stack: str):
    """A stack's checked spec: what a test compares a render with when the stack's YAML is the truth."""
    return stack_config_of(stack)[0]


@functools.cache
def plan_of(stack: str):
    from gpu_platform.plan import build_plan

    return build_plan(*stack_config_of(stack))


@functools.cache
def rendered(stack: str):
    """The real program run under mocks for a stack: harness.render.Rendered. The stacks most tests
    read come from the render worker when it runs (the same run_program in a process of its own)."""
    from components.program import run
    from harness.render import run_program

    done = None
    if _RENDER_WORKER is not None and stack in RENDER_WORKER_STACKS:
        done = _RENDER_WORKER.get(stack)
    if done is None:
        done = run_program(run, stack, copy.deepcopy(stack_doc(stack)["config"]))
    long_lived()
    return done


def render_config(config: dict[str, Any], stack: str = "test"):
    from components.program import run
    from harness.render import run_program

    return run_program(run, stack, config)


def render_split(config: dict[str, Any]):
    from components.program import run
    from harness.split import render_parts

    return render_parts(run, config)


def render_variant(stack: str, config: dict[str, Any], parts: bool = False):
    """A variant's render, as the worker and the test process make it: the split environment's parts, or one stack."""
    return render_split(config) if parts else render_config(config, stack)


@pytest.fixture(params=STACKS)
def stack(request) -> str:
    return request.param


# --- The cyclic garbage collector ---------------------------------------------------------------------------
# A session holds large object graphs for its whole length: the SDKs it imports (pulumi_aws, pulumi_kubernetes),
# the collected tests, the shared renders. Every full collection walked all of them to free next to nothing (a
# run of the fast layers made 16, ~0.3 s each). gc.freeze() moves every object there is into a generation the
# collector never scans; it is called when collection ends and after each shared render is made, so full
# collections scan what the tests make after that.


def long_lived() -> None:
    import gc

    gc.freeze()


# --- Renders in a process of their own, started with the session ------------------------------------------
# The cached renders of the stacks most tests read cost the test process 4-5 s of CPU, the variants below as
# much again; tests/render_worker.py makes them on the other core while this process collects and runs the
# tests that need none (pytest_collection_modifyitems runs those first). Started only
# when the session includes a layer that reads them (not for a run of the cluster layers alone); set
# GPU_PLATFORM_TEST_RENDER_WORKER=0 to render in-process.

RENDER_WORKER_STACKS = ("prod", "staging", "local", KARPENTER_STACK)
RENDER_LAYERS = ("unit", "policy", "promtool")


class RenderWorker:
    def __init__(self) -> None:
        from tests.render_worker import failed_name, pickle_name

        self.pickle_name, self.failed_name = pickle_name, failed_name
        self.dir = Path(tempfile.mkdtemp(prefix="gpu-platform-renders-"))
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.render_worker", str(self.dir),
                                      *RENDER_WORKER_STACKS], cwd=ROOT, env=_cli_env(), text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.asked = set(RENDER_WORKER_STACKS)

    def ask(self, variants: list[tuple[str, str, dict[str, Any], bool]]) -> None:
        """The variants to render after the stacks, each (name, stack, config, parts: a split environment
        rendered part by part); the worker ends after them."""
        import json

        assert self.proc.stdin is not None
        try:
            for name, stack, config, parts in variants:
                self.proc.stdin.write(json.dumps({"name": name, "stack": stack, "config": config,
                                                  "parts": parts}) + "\n")
            self.proc.stdin.close()
        except BrokenPipeError:  # the worker stopped: get() answers None and the caller renders
            return
        self.asked.update(name for name, _, _, _ in variants)

    def get(self, name: str) -> Any:
        """The worker's render of a stack or variant, or None if it was not asked for it or stopped without
        it (the caller renders)."""
        import gc
        import pickle
        import time

        if name not in self.asked:
            return None
        path, failed = self.dir / self.pickle_name(name), self.dir / self.failed_name(name)
        while not path.exists():
            if failed.exists() or (self.proc.poll() is not None and not path.exists()):
                return None
            time.sleep(0.01)
        collecting = gc.isenabled()
        gc.disable()  # a large object graph: collections during the load find nothing to free
        try:
            return pickle.loads(path.read_bytes())
        finally:
            if collecting:
                gc.enable()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        if self.proc.stdin is not None:
            try:
                self.proc.stdin.close()
            except BrokenPipeError:  # unsent variants of a worker that stopped
                pass
        self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


_RENDER_WORKER: RenderWorker | None = None


# --- Renders of stack variants, by the same worker ----------------------------------------------------------
# A test module that needs a stack rendered with a changed config (the longest cluster name, a switch flipped)
# declares the variant with @background_render: the function returns (stack, config). Once collection has found
# the variants of the modules it collected, their configs go to the worker, which renders them after the
# stacks; the modules that read one run after the others, so that the worker has them ready by then. A module
# reads the variants it declares and those it imports (one declared in a helper module two test modules share).
# Calling the declared name returns the render, made once per session (in-process when the worker is off or
# failed).

_VARIANTS: dict[str, tuple["BackgroundRender", tuple[str, ...]]] = {}


class BackgroundRender:
    def __init__(self, build: Any, params: tuple[str, ...], parts: bool = False) -> None:
        self.build = build
        self.parts = parts
        self.module = build.__module__
        name = f"{build.__module__}:{build.__qualname__}"
        self.keys = {args: f"{name}[{args[0]}]" if args else name for args in ([(p,) for p in params] or [()])}
        for args, key in self.keys.items():
            _VARIANTS[key] = (self, args)
        functools.update_wrapper(self, build)
        self._made: dict[tuple[str, ...], Any] = {}

    def config(self, *args: str) -> tuple[str, dict[str, Any]]:
        """(stack, whole config) of the variant: what is rendered."""
        return self.build(*args)

    def __call__(self, *args: str) -> Any:
        """The render of the variant (harness.render.Rendered), shared by the session: read it, never mutate it."""
        if args not in self._made:
            key = self.keys[args]  # a KeyError: not one of the declared parameters
            done = _RENDER_WORKER.get(key) if _RENDER_WORKER is not None else None
            if done is None:
                stack, config = self.config(*args)
                done = render_variant(stack, config, self.parts)
            long_lived()
            self._made[args] = done
        return self._made[args]


def background_render(*params: str, parts: bool = False) -> Any:
    """Declare a stack variant rendered in the background: `@background_render()` on a function returning
    (stack, config), or `@background_render(*values)` on one taking one of those values (one render each).
    With parts=True the config is a split environment (stackSplit) and the render is harness.split.render_parts'
    dict of its parts' renders (the stack returned is not used)."""
    def declare(build: Any) -> BackgroundRender:
        return BackgroundRender(build, params, parts)
    return declare


def _variants_read(module: Any) -> frozenset[BackgroundRender]:
    """The variants a test module reads: those it declares and those it imports from a helper module."""
    if module is None:
        return frozenset()
    name = module.__name__
    return frozenset({v for v, _ in _VARIANTS.values() if v.module == name}
                     | {value for value in vars(module).values() if isinstance(value, BackgroundRender)})


def _ask_for_variants(items: list[pytest.Item]) -> None:
    """Send the worker the variants of the modules with tests to run, in the order the tests will read them.
    One whose config cannot be made is left out: its test makes it, and fails there with the error."""
    assert _RENDER_WORKER is not None
    first: dict[BackgroundRender, int] = {}
    seen: set[int] = set()
    for position, item in enumerate(items):
        module = getattr(item, "module", None)
        if id(module) not in seen:
            seen.add(id(module))
            for variant in _variants_read(module):
                first.setdefault(variant, position)
    wanted = sorted((key for key, (v, _) in _VARIANTS.items() if v in first),
                    key=lambda key: first[_VARIANTS[key][0]])
    variants = []
    for key in wanted:
        variant, args = _VARIANTS[key]
        try:
            variants.append((key, *variant.config(*args), variant.parts))
        except Exception:  # reported by the test that reads it
            continue
    _RENDER_WORKER.ask(variants)


def _reads_renders(config: pytest.Config) -> bool:
    tests_dir = ROOT / "tests"
    for arg in config.args or [str(tests_dir)]:
        path = Path(str(arg).split("::")[0])
        path = (Path(config.invocation_params.dir) / path).resolve()
        if path == tests_dir or path == ROOT:
            return True
        if path.is_relative_to(tests_dir) and path.relative_to(tests_dir).parts[0] in RENDER_LAYERS:
            return True
    return False


def pytest_configure(config: pytest.Config) -> None:
    global _RENDER_WORKER
    # A cancelled run (CI's cancel, `scripts/run-tests` stopped, `kill`) sends SIGTERM, which would end the
    # interpreter without a fixture's teardown and leave the clusters of the cluster layers running. As a
    # KeyboardInterrupt, pytest tears every fixture down (the clusters stop) and reports the run interrupted.
    interrupt_on_sigterm()
    # Bytecode caches on, as `make test` and scripts/run-tests have them (the Makefile says why) for a `pytest`
    # run directly in an environment that turns them off: from here on, the test modules' rewritten asserts
    # and the modules they import are compiled once, and so are those of the processes the tests start.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    sys.dont_write_bytecode = False
    if os.environ.get("GPU_PLATFORM_TEST_RENDER_WORKER", "1") != "0" and _reads_renders(config):
        _RENDER_WORKER = RenderWorker()


def pytest_unconfigure(config: pytest.Config) -> None:
    global _RENDER_WORKER
    if _RENDER_WORKER is not None:
        _RENDER_WORKER.close()
        _RENDER_WORKER = None


# --- The CLI in a process of its own, started once the render worker is done -------------------------------
# A render of prod in a fresh interpreter (its own hash seed and registration timing) is what proves the
# render deterministic; it costs an interpreter start, the SDK imports and a render (3-9 s on 2 busy cores).
# It runs beside the other tests instead of before the one that reads it: started when the render worker
# has ended (or when collection ends, without a worker), on the core the worker leaves idle while this
# process runs its last tests. Started beside the worker, it slowed the worker and this process alike.

CLI_RENDER_STACK = "prod"


def _cli_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


class CliRender:
    """`python -m platform_cli render --stack <stack> --out <out>` in its own process."""

    def __init__(self, stack: str) -> None:
        self.stack = stack
        self.out = Path(tempfile.mkdtemp(prefix="gpu-platform-cli-render-")) / "out"
        self.proc = subprocess.Popen([sys.executable, "-m", "platform_cli", "render", "--stack", stack,
                                      "--out", str(self.out)], cwd=ROOT, env=_cli_env(), text=True,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        self.result: subprocess.CompletedProcess[str] | None = None

    def wait(self, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        if self.result is None:
            stdout, stderr = self.proc.communicate(timeout=timeout)
            self.result = subprocess.CompletedProcess(self.proc.args, self.proc.returncode, stdout, stderr)
        return self.result

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()
        shutil.rmtree(self.out.parent, ignore_errors=True)


_CLI_RENDERS: dict[str, CliRender] = {}


# Layers whose tests start live local clusters (each suite on its own ports): marked `cluster` (pytest.ini).
CLUSTER_LAYERS = ("integration", "live", "simulate", "multikueue", "faults")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    tests_dir = ROOT / "tests"
    for item in items:
        path = Path(str(item.path))
        if path.is_relative_to(tests_dir) and path.relative_to(tests_dir).parts[0] in CLUSTER_LAYERS:
            item.add_marker(pytest.mark.cluster)
    # The fast layers first (a whole-suite run fails fast, and the background renders are done before any
    # cluster suite starts, whose timings they would disturb). Among them, in the order the render worker
    # makes what they read, so that it is ready when they start: the modules that read no shared render, then
    # those that read the stacks, then those that read variants, and last the tests that wait for the
    # background CLI render. Stable otherwise.
    reads: dict[Any, tuple[bool, bool]] = {}

    def key(item: pytest.Item) -> tuple[bool, ...]:
        module = getattr(item, "module", None)
        if module not in reads:
            reads[module] = (bool(_variants_read(module)), module is not None and _reads_shared_renders(module))
        return (item.get_closest_marker("cluster") is not None, "cli_render" in getattr(item, "fixturenames", ()),
                *reads[module])

    items.sort(key=key)


def _reads_shared_renders(module: Any) -> bool:
    """Whether a test module reads rendered(): itself, or through a helper it imports from another module."""
    import types

    return any(value is rendered
               or (isinstance(value, types.FunctionType) and value.__globals__.get("rendered") is rendered)
               for value in vars(module).values())


_CLI_RENDER_WANTED = False


def pytest_collection_finish(session: pytest.Session) -> None:
    global _CLI_RENDER_WANTED
    if any("cli_render" in getattr(item, "fixturenames", ()) for item in session.items):
        _CLI_RENDER_WANTED = True
        if _RENDER_WORKER is None:
            _cli_render()
    if _RENDER_WORKER is not None:
        _ask_for_variants(session.items)
    long_lived()


# A failed cluster test keeps its clusters' logs: in `make test` a lane's temporary directory is removed when the
# lane ends (scripts/run-tests own_basetemp), and outside it pytest keeps only its last three. Copied to
# GPU_PLATFORM_FAILED_LOGS (default .local/failed-cluster-logs/ in the checkout), one folder per session.
FAILED_LOGS_ENV = "GPU_PLATFORM_FAILED_LOGS"
_FAILED_CLUSTER_TESTS: list[str] = []
_KEPT_LOGS: list[Path] = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: Any) -> Any:
    outcome = yield
    report = outcome.get_result()
    if report.failed and item.get_closest_marker("cluster") is not None:
        _FAILED_CLUSTER_TESTS.append(item.nodeid)


# What a replay (simulator/cli.py simulate_all) leaves in its output folder that explains its figures: its own
# cluster is gone by the time a test reads the report, so these are the logs of a failed simulate test.
REPLAY_OUTPUTS = ("events.jsonl", "report.json")


def keep_cluster_logs(base: Path, into: Path, failed: list[str]) -> Path | None:
    """Copy every cluster's `logs/` folder under BASE (a session's temporary directory), and every replay's events
    and report (REPLAY_OUTPUTS), into a new folder of INTO, with the failed tests' names beside them; the folder, or
    None when there was nothing to keep."""
    import shutil
    import time as _time

    found = sorted(d for d in base.rglob("logs") if d.is_dir())
    outputs = sorted(f for name in REPLAY_OUTPUTS for f in base.rglob(name) if f.is_file())
    if not found and not outputs:
        return None
    dest = into / f"{_time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    for d in found:
        shutil.copytree(d, dest / d.parent.relative_to(base) / "logs", dirs_exist_ok=True)
    for f in outputs:
        (dest / f.parent.relative_to(base)).mkdir(parents=True, exist_ok=True)
        shutil.copy2(f, dest / f.relative_to(base))
    (dest / "FAILED").write_text("".join(f"{name}\n" for name in failed))
    return dest


def pytest_sessionfinish(session: pytest.Session) -> None:
    for render in _CLI_RENDERS.values():
        render.close()
    if _FAILED_CLUSTER_TESTS:
        base = session.config._tmp_path_factory.getbasetemp()  # type: ignore[attr-defined]
        into = Path(os.environ.get(FAILED_LOGS_ENV) or ROOT / ".local" / "failed-cluster-logs")
        kept = keep_cluster_logs(Path(base), into, _FAILED_CLUSTER_TESTS)
        if kept is not None:
            _KEPT_LOGS.append(kept)


def pytest_runtest_logfinish(nodeid: str, location: Any) -> None:
    if _CLI_RENDER_WANTED and CLI_RENDER_STACK not in _CLI_RENDERS and (
            _RENDER_WORKER is None or _RENDER_WORKER.proc.poll() is not None):
        _cli_render()


@pytest.fixture(scope="session")
def cli_render() -> CliRender:
    """The CLI's render of CLI_RENDER_STACK in its own process (already running since the render worker ended;
    started here when it has not yet)."""
    return _cli_render()


def _cli_render() -> CliRender:
    if CLI_RENDER_STACK not in _CLI_RENDERS:  # one process per session (not setdefault: it would start another)
        _CLI_RENDERS[CLI_RENDER_STACK] = CliRender(CLI_RENDER_STACK)
    return _CLI_RENDERS[CLI_RENDER_STACK]


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Timings of the real tools (engine, clusters, Kueue), for the README and closing notes; where a failed
    cluster test's logs were kept."""
    import sys

    for kept in _KEPT_LOGS:
        terminalreporter.write_line(f"cluster logs of the failed tests kept in {kept}")

    realtools = sys.modules.get("tests.realtools")
    timings = getattr(realtools, "TIMINGS", None)
    if timings:
        terminalreporter.write_sep("-", "real engine, cluster and Kueue timings (seconds)")
        for label, seconds in timings.items():
            terminalreporter.write_line(f"{label:<48} {seconds:>8.1f}")
