"""Shared bench plumbing: run a measurement in a fresh interpreter, report ratios."""

from __future__ import annotations

import gc
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from localcluster.session import Session

ROOT = Path(__file__).resolve().parent.parent


def child(argv: list[str], timeout: float = 1800) -> dict[str, Any]:
    """Run `python -m <argv>` in a fresh interpreter; it prints one JSON object as its last line."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-m", *argv], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        raise SystemExit(f"bench child {' '.join(argv)} failed:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure(fn: Callable[[], Any]) -> dict[str, Any]:
    """Wall time of fn() and this process's peak RSS afterwards (MiB).

    A function that pauses the cyclic GC leaves every object it allocated in the young generation; the
    collection that follows runs at the next allocation of a tracked object, inside fn() or after it
    returns depending on what it allocates last. It is charged to fn() either way (gc.collect(0) runs
    it now, or finds nothing left), so two programs differing only in that are timed alike."""
    started = time.perf_counter()
    result = fn()
    gc.collect(0)
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"seconds": seconds, "peak_mib": peak, "result": result}


def emit(data: dict[str, Any]) -> None:
    print(json.dumps(data))


def report_figures(figures: dict[str, Any], json_path: str | None) -> None:
    """A live benchmark's figures: on stdout, and in the --json file when one is named."""
    print(json.dumps(figures, indent=2))
    if json_path:
        Path(json_path).write_text(json.dumps(figures, indent=2))


def run_on_session(name: str, session: Session, tmp: Path, keep: bool, body: Callable[[], None],
                   figures: dict[str, Any], json_path: str | None) -> int:
    """A live benchmark's run around its cluster session: body() measures into figures; a SessionError
    exits 2 with the reason; the cluster and its directory go unless --keep, also on Ctrl-C; the figures
    are reported only when the run finished."""
    from localcluster.session import SessionError  # here, so the in-process benches do not load the cluster driver

    try:
        body()
    except SessionError as err:
        print(f"{name}: {err}", file=sys.stderr)
        return 2
    finally:
        if not keep:
            session.stop()
            shutil.rmtree(tmp, ignore_errors=True)
    report_figures(figures, json_path)
    return 0


def verdict(ok: bool) -> str:
    return "ok" if ok else "FAIL"


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a running process (/proc/<pid>/stat, fields 14 and 15, in clock ticks)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def tools_missing(bench: str, tools: tuple[str, ...] | list[str], bin_dir: Path) -> bool:
    """Say which of the tool chain's binaries a benchmark needs are not built yet; True when any is missing."""
    missing = [t for t in tools if not (bin_dir / t).exists()]
    if missing:
        print(f"bench.{bench}: missing {', '.join(missing)}: run scripts/toolchain", file=sys.stderr)
    return bool(missing)
