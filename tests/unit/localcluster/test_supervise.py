"""The local cluster's processes as the driver finds and stops them (localcluster/supervise.py), with real but
trivial processes: `tail -f` of a file in a scratch state directory, started under a component's name (a symlink
named kwok), so no cluster runs. What a user relies on: `pid` names the component itself, `stop` leaves nothing,
a process of the state directory that lost its pid file is still stopped, and nothing else is."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from localcluster.state import Paths
from localcluster.supervise import StartError, Supervisor


@pytest.fixture
def state(tmp_path: Path) -> Path:
    d = tmp_path / "cluster"
    d.mkdir()
    (d / "watched").write_text("")
    return d


def _named(tmp_path: Path, name: str) -> str:
    """`tail` under the name NAME (a component's binary name)."""
    link = tmp_path / name
    link.symlink_to(shutil.which("tail") or "/usr/bin/tail")
    return str(link)


def _gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(") ")[2][:1] == "Z"
    except OSError:
        return True


def test_a_launched_component_is_found_by_its_pid_file_and_stopped(state: Path, tmp_path: Path) -> None:
    sup = Supervisor(Paths(state))
    pid = sup.launch("kwok", [_named(tmp_path, "kwok"), "-f", str(state / "watched")])
    try:
        assert (state / "run" / "kwok.pid").read_text() == f"{pid}\n"
        assert sup.pid_of("kwok") == pid and Path(os.readlink(f"/proc/{pid}/exe")).name == "tail"
        assert os.getsid(pid) == pid   # a session of its own: no terminal signal reaches it
        assert (state / "logs" / "kwok.log").read_text().startswith("=== ")
        sup.stop("kwok")
        assert _gone(pid) and not (state / "run" / "kwok.pid").exists()
        assert sup.pid_of("kwok") is None
    finally:
        if not _gone(pid):
            os.kill(pid, 9)


def test_a_pid_file_naming_another_program_is_not_ours(state: Path) -> None:
    """A crash leaves a pid file whose pid the kernel gives to another program later."""
    sup = Supervisor(Paths(state))
    (state / "run").mkdir()
    (state / "run" / "etcd.pid").write_text(f"{os.getpid()}\n")
    assert sup.pid_of("etcd") is None
    sup.stop("etcd")
    assert not (state / "run" / "etcd.pid").exists()


def test_a_process_of_the_state_directory_without_a_pid_file_is_stopped_as_a_stray(state: Path, tmp_path: Path) -> None:
    sup = Supervisor(Paths(state))
    stray = subprocess.Popen([_named(tmp_path, "kwok"), "-f", str(state / "watched")], start_new_session=True)
    # Popen returns at exec's point of no return, when the kernel closes the close-on-exec pipe and before it sets
    # the new program's arguments up: /proc/PID/cmdline can read empty for a moment (a whole fast run once saw
    # strays() == []). A stray is an established process: wait until its arguments show.
    deadline = time.monotonic() + 5
    while not Path(f"/proc/{stray.pid}/cmdline").read_bytes() and time.monotonic() < deadline:
        time.sleep(0.01)
    # merely mentions the directory: not one of the cluster's programs
    bystander = subprocess.Popen(["tail", "-f", str(state / "watched")], start_new_session=True)
    try:
        assert sup.strays() == [stray.pid]   # Popen returns once it has exec'd
        sup.stop_all()
        assert stray.wait(timeout=5) is not None and bystander.poll() is None
    finally:
        for p in (stray, bystander):
            p.kill()
            p.wait()


def test_a_component_that_exits_while_awaited_is_reported_with_its_name(state: Path) -> None:
    sup = Supervisor(Paths(state))
    pid = sup.launch("kueue", ["env", f"KUEUE_STATE={state}/", "false"])
    deadline = time.monotonic() + 5
    while not _gone(pid) and time.monotonic() < deadline:
        time.sleep(0.01)
    with pytest.raises(StartError) as err:
        sup.wait("kueue", lambda: False, timeout=5)
    assert (str(err.value), err.value.component) == ("kueue exited", "kueue")
