"""SIGTERM ends a command that started a cluster the way Ctrl-C does.

Python's default SIGTERM ends the interpreter at once, without `finally` blocks or `__exit__`, so a
cancelled CI job, `timeout` or `kill` of `simulate`, a benchmark or a test run left the whole cluster it had
started (etcd, kube-apiserver, the controllers, Kueue, KWOK) running. As a KeyboardInterrupt, the same
clean-up that Ctrl-C runs stops it.
"""

from __future__ import annotations

import signal
from types import FrameType

EXIT_INTERRUPTED = 130  # the shell's status for a command ended by SIGINT


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def interrupt_on_sigterm() -> None:
    """Turn SIGTERM into KeyboardInterrupt, unless the process already handles it (or ignores it)."""
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _interrupt)
