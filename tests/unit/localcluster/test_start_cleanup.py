"""What a start that fails or is interrupted undoes (localcluster/lifecycle.py): every process it started is stopped,
whatever ended it (SIGTERM, Ctrl-C, a component that never came up, a bug), with the reason said first; the
command exits 1 and its own signal handling is as before. Mocks: the start's steps and the processes are stand-ins
(no cluster runs); the signals are real, sent to this process."""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from localcluster import lifecycle
from localcluster.state import Paths
from localcluster.supervise import StartError


@dataclass
class Processes:
    stopped: list[str] = field(default_factory=list)

    def stop_all(self) -> None:
        self.stopped.append("all")


@dataclass
class Ctx:
    paths: Paths
    sup: Processes = field(default_factory=Processes)


@pytest.fixture
def ctx(tmp_path: Path) -> Ctx:
    return Ctx(Paths(tmp_path))


def _signal_self(sig: int):
    def steps() -> None:
        os.kill(os.getpid(), sig)
        raise AssertionError("the signal should have ended the start")
    return steps


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_during_a_start_stops_what_it_started(ctx: Ctx, sig: int, capsys: pytest.CaptureFixture[str]) -> None:
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    assert lifecycle.guarded(ctx, _signal_self(sig)) == 1  # type: ignore[arg-type]
    assert ctx.sup.stopped == ["all"]
    assert capsys.readouterr().err == "local-cluster: error: interrupted: stopping what this start started\n"
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before


def test_a_component_that_never_came_up_is_named_with_its_log(ctx: Ctx, capsys: pytest.CaptureFixture[str]) -> None:
    ctx.paths.logs.mkdir()
    ctx.paths.log("kueue").write_text("".join(f"line {i}\n" for i in range(30)))

    def steps() -> None:
        raise StartError("kueue exited", "kueue")

    assert lifecycle.guarded(ctx, steps) == 1  # type: ignore[arg-type]
    err = capsys.readouterr().err
    assert err.startswith(f"local-cluster: error: kueue exited; last lines of {ctx.paths.log('kueue')}:\nline 5\n")
    assert err.endswith("line 29\n") and ctx.sup.stopped == ["all"]


def test_any_other_failure_stops_too(ctx: Ctx, capsys: pytest.CaptureFixture[str]) -> None:
    def steps() -> None:
        raise KeyError("status")

    assert lifecycle.guarded(ctx, steps) == 1  # type: ignore[arg-type]
    assert capsys.readouterr().err == ("local-cluster: error: start failed (KeyError: 'status'): stopping what it "
                                       "started\n")
    assert ctx.sup.stopped == ["all"]


def test_a_second_signal_waits_for_the_clean_up(ctx: Ctx, capsys: pytest.CaptureFixture[str]) -> None:
    def stop_all() -> None:
        os.kill(os.getpid(), signal.SIGTERM)   # arrives while the clean-up runs
        ctx.sup.stopped.append("all, despite a second SIGTERM")

    ctx.sup.stop_all = stop_all  # type: ignore[method-assign]
    assert lifecycle.guarded(ctx, _signal_self(signal.SIGTERM)) == 1  # type: ignore[arg-type]
    assert ctx.sup.stopped == ["all, despite a second SIGTERM"]
    assert "SIGTERM during the clean-up: it finishes first" in capsys.readouterr().err
