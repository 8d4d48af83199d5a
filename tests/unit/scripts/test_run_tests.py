"""What `make test` (scripts/run-tests) and the suites promise when a run fails or is cancelled: the failing
lane's failures are repeated at the end, and a stopped run tears its fixtures (the clusters) down."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from types import ModuleType

from tests.conftest import ROOT


def run_tests_module() -> ModuleType:
    loader = importlib.machinery.SourceFileLoader("run_tests", str(ROOT / "scripts" / "run-tests"))
    spec = importlib.util.spec_from_loader("run_tests", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def test_a_lanes_failure_lines_are_kept_for_the_end_of_the_run(capsys) -> None:
    rt = run_tests_module()
    results: dict[str, int] = {}
    failures: dict = {}
    lane = ("import sys; print('tests/a.py::test_ok PASSED'); "
            "print('FAILED tests/a.py::test_b - AssertionError: boom'); print('ERROR tests/c.py - fixture'); sys.exit(1)")
    rt.run_lane("queues", [sys.executable, "-c", lane], results, threading.Lock(), failures)
    assert results == {"queues": 1}
    assert list(failures["queues"]) == ["FAILED tests/a.py::test_b - AssertionError: boom", "ERROR tests/c.py - fixture"]
    assert "[queues] tests/a.py::test_ok PASSED" in capsys.readouterr().out


def test_every_cluster_test_file_runs_in_exactly_one_lane_and_the_engine_lanes_replay_has_its_own_ports() -> None:
    rt = run_tests_module()
    lanes = {n: rt.lane_args(ps, rt.LANES) for n, ps in rt.LANES.items()}
    assert lanes["simulate"] == ["tests/simulate", "tests/multikueue", "--ignore=tests/simulate/test_elastic_kinds.py",
                                 "--ignore=tests/simulate/test_node_failure.py"]
    assert lanes["engine"] == ["tests/integration", "tests/faults", "tests/simulate/test_elastic_kinds.py",
                               "tests/simulate/test_node_failure.py"]
    assert lanes["live"] == ["tests/live", "--ignore=tests/live/test_real_node.py", "--ignore=tests/live/test_acceptance.py"]
    assert lanes["node"] == ["tests/live/test_real_node.py", "tests/live/test_acceptance.py"]
    assert rt.one_lane(rt.LANES) == ["tests/live", "tests/integration", "tests/faults", "tests/simulate", "tests/multikueue"]
    files = [f.relative_to(ROOT).as_posix() for d in ("integration", "live", "faults", "simulate", "multikueue")
             for f in (ROOT / "tests" / d).glob("test_*.py")]
    for f in files:
        runs = [n for n, args in lanes.items()
                if (f in args or any(f.startswith(a + "/") for a in args)) and f"--ignore={f}" not in args]
        assert len(runs) == 1, (f, runs)
    # The Session default ports (localcluster/session.py) are the simulate lane's; the engine lane's differ.
    assert rt.LANE_ENV["engine"]["GPU_PLATFORM_SIM_APISERVER_PORT"] != "28443"
    assert "simulate" not in rt.LANE_ENV


def test_a_stopped_run_sends_its_lanes_sigterm(tmp_path: Path) -> None:
    rt = run_tests_module()
    marker, ready = tmp_path / "terminated", tmp_path / "ready"
    child = (f"import signal, sys, time, pathlib\n"
             f"signal.signal(signal.SIGTERM, lambda *a: (pathlib.Path({str(marker)!r}).write_text('x'), sys.exit(143)))\n"
             f"pathlib.Path({str(ready)!r}).write_text('x')\n"
             f"time.sleep(30)\n")
    results: dict[str, int] = {}
    lane = threading.Thread(target=rt.run_lane, args=("engine", [sys.executable, "-c", child], results,
                                                      threading.Lock(), {}))
    lane.start()
    deadline = time.monotonic() + 10
    while not ready.exists() and time.monotonic() < deadline:   # the child's handler installed
        time.sleep(0.02)
    rt.stop_lanes(signal.SIGTERM, None)
    lane.join(10)
    assert marker.read_text() == "x" and results == {"engine": 143}


def test_sigterm_tears_a_pytest_runs_fixtures_down(tmp_path: Path) -> None:
    """tests/conftest.py turns SIGTERM into an interrupt, so a cancelled run stops its clusters (their
    fixtures' finally blocks run) instead of leaving them behind."""
    torn_down = tmp_path / "torn-down"
    (tmp_path / "test_slow.py").write_text(textwrap.dedent(f"""
        import pathlib, time
        import pytest

        @pytest.fixture
        def resource():
            try:
                yield
            finally:
                pathlib.Path({str(torn_down)!r}).write_text("stopped")

        def test_waits(resource):
            pathlib.Path({str(tmp_path / 'started')!r}).write_text("x")
            time.sleep(30)
    """))
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.conftest",
                             "-c", os.devnull, "--rootdir", str(tmp_path), str(tmp_path / "test_slow.py")],
                            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 30
    while not (tmp_path / "started").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=30)
    assert torn_down.read_text() == "stopped", out
    assert proc.returncode == 2, out   # pytest's "interrupted"
    assert "KeyboardInterrupt" in out and "signal 15" in out, out


def test_lanes_run_at_most_n_at_once_in_their_order_and_none_start_after_a_stop() -> None:
    rt = run_tests_module()
    running: list[str] = []
    log: list[tuple[str, str, int]] = []
    lock = threading.Lock()

    def lane(name: str, seconds: float):
        def run() -> None:
            with lock:
                running.append(name)
                log.append(("start", name, len(running)))
            time.sleep(seconds)
            with lock:
                running.remove(name)
        return name, run

    rt.run_at_most(3, [lane("live", 0.3), lane("engine", 0.2), lane("node", 0.05), lane("simulate", 0.05)])
    # The fourth (simulate) starts only when the first to end (node) has ended: three at most side by side.
    assert [(event, name) for event, name, _ in log] == [("start", "live"), ("start", "engine"), ("start", "node"),
                                                         ("start", "simulate")]
    assert max(n for _, _, n in log) == 3
    rt.STOPPING.set()
    try:
        log.clear()
        rt.run_at_most(1, [lane("a", 0.01), lane("b", 0.01)])
        assert log == []          # a stopped run starts nothing more
    finally:
        rt.STOPPING.clear()


def test_each_lane_gets_a_temporary_directory_no_other_pytest_run_rotates_and_it_is_removed_after() -> None:
    # pytest keeps only the last 3 numbered /tmp/pytest-of-USER/pytest-N directories across all of a user's
    # sessions: a lane in the default one could lose its clusters' state to any other pytest started meanwhile.
    rt = run_tests_module()
    own, base = rt.own_basetemp("simulate", ["-x"])
    assert base is not None and base.name.startswith("gpu-platform-simulate-") and base.is_dir()
    assert own == [f"--basetemp={base / 'tmp'}", "-x"]
    assert "pytest-of-" not in str(base)
    seen = base / "seen"
    results: dict[str, int] = {}
    child = f"import pathlib; pathlib.Path({str(seen)!r}).write_text('ran')"
    rt.run_lane("simulate", [sys.executable, "-c", child], results, threading.Lock(), {}, base)
    assert results == {"simulate": 0}
    assert not base.exists()          # removed when the lane ended (a failure's logs are copied out before)
    # A caller's own --basetemp gets a folder per lane (pytest wipes it at a session's start) and is kept.
    assert rt.own_basetemp("live", ["--basetemp=/somewhere"]) == (["--basetemp=/somewhere/live"], None)
    assert rt.own_basetemp("node", ["-x", "--basetemp", "/somewhere", "-k", "t"]) == (
        ["--basetemp=/somewhere/node", "-x", "-k", "t"], None)
