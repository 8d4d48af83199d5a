"""The local cluster's processes: launched detached with a pid file each, found again by any later command,
waited for until they serve, and stopped (TERM, then KILL after 10 s), every one of them.

A process is the cluster's when its pid file names it and its command line names the state directory: a pid file
left by a crash may name a pid the kernel has given to another program since. Every component is launched with
the state directory on its command line (flags, not the environment) for that reason, and `stop` also stops any
process of the state directory that no pid file names (`strays`: a pid file lost or overwritten, a launch cut
short by a crash of the driver itself).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Mapping, Sequence

from .state import ALL_COMPONENTS, Paths

# While a process execs, its command line reads empty: the new image's memory has no arguments until the ELF loader
# has mapped it (torvalds/linux fs/proc/base.c get_mm_cmdline: "Check if process spawned far enough to have
# cmdline", `if (!mm->env_end) return 0`), which for a large Go binary off a busy disk took over 0.2 s here. A live
# process whose command line reads empty is read again, up to this long, before it is called not ours (a kernel
# thread's stays empty).
EMPTY_CMDLINE_GRACE_S = 5.0
STOP_GRACE_S = 10.0      # TERM, then KILL
KILL_WAIT_S = 5.0
# Besides the components' own binaries, a process of the cluster may be `env` (the launcher of those that take a
# variable) or python running the GPU telemetry.
LAUNCHERS = frozenset({"env"})
TELEMETRY_ARGS = ("localcluster", "gpu-telemetry")
# The launched processes' handles, kept so that none is reaped or warned about by this command: a component
# outlives it, and a later command finds it by its pid file.
_LAUNCHED: list[subprocess.Popen[bytes]] = []


class StartError(Exception):
    """A step of a command failed: the message says which and why. COMPONENT: whose log tail explains it."""

    def __init__(self, message: str, component: str | None = None):
        super().__init__(message)
        self.component = component


def log(message: str) -> None:
    print(f"local-cluster: {message}", file=sys.stderr, flush=True)


@dataclass
class Clock:
    """`step` lines carry the seconds since the command began."""

    started: float = field(default_factory=time.monotonic)

    def step(self, message: str) -> None:
        log(f"[{int(time.monotonic() - self.started)}s] {message}")


def _read(path: str) -> bytes:
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, 1 << 16)
    finally:
        os.close(fd)


def _argv(pid: int) -> list[str] | None:
    """The arguments of PID as /proc shows them (a zombie's: none); None when it is gone."""
    try:
        return _read(f"/proc/{pid}/cmdline").decode(errors="replace").split("\0")[:-1]
    except OSError:
        return None


def _cmdline(pid: int) -> list[str] | None:
    """The arguments of PID; None when it is gone or a zombie."""
    try:
        if _read(f"/proc/{pid}/stat").rpartition(b") ")[2][:1] in (b"", b"Z"):
            return None
    except OSError:
        return None
    return _argv(pid)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return _cmdline(pid) is not None   # a zombie has exited


class Supervisor:
    """The processes of the cluster in PATHS.state."""

    def __init__(self, paths: Paths):
        self.paths = paths
        self.marker = f"{paths.state}/"

    def ours(self, argv: Sequence[str]) -> bool:
        return any(self.marker in a for a in argv)

    def pid_of(self, name: str) -> int | None:
        """The pid of component NAME if it is alive and ours."""
        try:
            pid = int(self.paths.pid_file(name).read_text().strip())
        except (OSError, ValueError):
            return None
        deadline = time.monotonic() + EMPTY_CMDLINE_GRACE_S
        while True:
            argv = _cmdline(pid)
            if argv is None:
                return None
            if any(argv):
                return pid if self.ours(argv) else None
            if time.monotonic() > deadline:
                return None
            time.sleep(0.1)

    def exited(self, name: str) -> bool:
        return self.pid_of(name) is None

    def any_running(self, names: Sequence[str] = ALL_COMPONENTS) -> bool:
        return any(self.pid_of(n) is not None for n in names)

    def all_running(self, names: Sequence[str]) -> bool:
        return all(self.pid_of(n) is not None for n in names)

    def launch(self, name: str, argv: Sequence[str], env: Mapping[str, str] | None = None) -> int:
        """Start ARGV as component NAME in a session of its own (it outlives this command and no terminal signal
        reaches it), output appended to its log, and write its pid file. The pid is the component's own from the
        moment it exists (fork and exec, no launcher in between): a check right after sees it, not a shell that has
        not exec'd yet."""
        self.paths.run.mkdir(parents=True, exist_ok=True)
        self.paths.logs.mkdir(parents=True, exist_ok=True)
        pid_file = self.paths.pid_file(name)
        pid_file.unlink(missing_ok=True)
        stamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        with open(self.paths.log(name), "a") as out:
            out.write(f"=== {stamp} {' '.join(argv)}\n")
            out.flush()
            proc = None
            try:
                proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                        env=dict(env) if env is not None else None, start_new_session=True)
            except OSError as err:
                raise StartError(f"{name} did not start: {err}", name) from None
            finally:
                if proc is not None:   # written even when a signal arrives now: stop finds it by this file
                    _LAUNCHED.append(proc)
                    tmp = pid_file.with_name(f"{pid_file.name}.new")
                    tmp.write_text(f"{proc.pid}\n")
                    os.replace(tmp, pid_file)
        return proc.pid

    def wait(self, name: str, ready: Callable[[], bool], timeout: float, what: str | Callable[[], str] = "") -> None:
        """Until READY() holds, while component NAME stays up; StartError naming NAME otherwise (WHAT: the message
        of a timeout, or what makes it once it is known)."""
        deadline = time.monotonic() + timeout
        while True:
            if self.exited(name):
                raise StartError(f"{name} exited", name)
            if ready():
                return
            if time.monotonic() > deadline:
                message = what() if callable(what) else what
                raise StartError(message or f"{name} not ready after {timeout:g}s", name)
            time.sleep(0.2)

    def stop(self, name: str) -> None:
        """TERM, then KILL after STOP_GRACE_S; the pid file goes either way."""
        pid = self.pid_of(name)
        if pid is None:
            self.paths.pid_file(name).unlink(missing_ok=True)
            return
        _signal(pid, signal.SIGTERM)
        if not _wait_gone([pid], STOP_GRACE_S):
            log(f"{name} (pid {pid}) did not stop on TERM; killing it")
            _signal(pid, signal.SIGKILL)
            _wait_gone([pid], KILL_WAIT_S)
        self.paths.pid_file(name).unlink(missing_ok=True)
        log(f"stopped {name} (pid {pid})")

    def stop_all(self) -> None:
        """Every component, last started first, then the strays."""
        for name in reversed(ALL_COMPONENTS):
            self.stop(name)
        self.stop_strays()

    def strays(self) -> list[int]:
        """Processes of this state directory that no pid file names: their command line names the state directory
        and they run a component's binary, a launcher or the telemetry. Never this command or programs that merely
        mention the directory."""
        own = {os.getpid(), os.getppid()}
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) in own:
                continue
            argv = _argv(int(entry))   # most processes are not ours: their state is not read
            if not argv or not self.ours(argv) or _cmdline(int(entry)) is None:
                continue
            base = Path(argv[0]).name
            if base in ALL_COMPONENTS or base in LAUNCHERS:
                found.append(int(entry))
            elif base.startswith("python") and _contains(argv, TELEMETRY_ARGS):
                found.append(int(entry))
        return found

    def stop_strays(self) -> None:
        pids = self.strays()
        for pid in pids:
            argv = " ".join(_cmdline(pid) or [])
            log(f"stopping stray process {pid} of {self.paths.state}: {argv[:120]}")
            _signal(pid, signal.SIGTERM)
        if pids and not _wait_gone(pids, STOP_GRACE_S):
            for pid in pids:
                _signal(pid, signal.SIGKILL)


def _contains(argv: Sequence[str], run: Sequence[str]) -> bool:
    return any(list(argv[i:i + len(run)]) == list(run) for i in range(len(argv)))


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _wait_gone(pids: Sequence[int], timeout: float) -> bool:
    """Until none of PIDS is alive (True) or TIMEOUT passes (False)."""
    deadline = time.monotonic() + timeout
    while any(alive(p) for p in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True
