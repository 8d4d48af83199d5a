"""The replay's progress line: how much of the trace is done, at what wall-clock pace, and when it will end.

A week of trace at seed scale takes tens of minutes of wall time (docs/performance.md, "Seed scale:
what-if"), so the line says what a user waits for: the trace time done against the wall time spent, the
jobs submitted and finished, and an ETA. The ETA extrapolates the pace observed so far (trace seconds per
wall second), not the nominal speed: a replay that falls behind its schedule (a slow API server, a burst
of arrivals) says so in its ETA.

On a terminal the line is redrawn in place; elsewhere (CI logs, a pipe) a plain line every `every`
seconds, so a log holds a line per interval rather than one per redraw.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence, TextIO

BAR_WIDTH = 20
# Without a terminal, a line every this many wall seconds (docs/what-if.md, "Progress").
PLAIN_EVERY_S = 15.0


@dataclass(frozen=True)
class Progress:
    """Where a replay is: trace seconds done of the horizon after `wall_s` wall seconds, and its jobs."""
    trace_s: float
    horizon_s: float
    wall_s: float
    submitted: int
    due: int
    finished: int
    admitted: int = 0
    evicted: int = 0

    @property
    def fraction(self) -> float:
        return min(1.0, self.trace_s / self.horizon_s) if self.horizon_s > 0 else 1.0

    @property
    def eta_s(self) -> float | None:
        """Wall seconds left at the pace so far; None before any trace time has passed."""
        if self.trace_s <= 0 or self.wall_s <= 0:
            return None
        pace = self.trace_s / self.wall_s
        return max(0.0, self.horizon_s - self.trace_s) / pace


def trace_done(scheduled_s: float, horizon_s: float, due: Sequence[tuple[int, Any]], created: int) -> float:
    """The trace time a replay has really reached: its clock's (wall time x speed), held back to the
    submission of the first job not yet created when the submitters lag (their queue then holds the rest, and
    the replay's end waits for them)."""
    done = min(horizon_s, scheduled_s)
    if created < len(due):
        done = min(done, due[created][1].submit)
    return done


def duration(seconds: float) -> str:
    """A span as a person reads it: 42s, 3m05s, 2h07m (trace hours are given as hours elsewhere)."""
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


def bar(fraction: float, width: int = BAR_WIDTH) -> str:
    filled = int(min(1.0, max(0.0, fraction)) * width)
    return "[" + "#" * filled + "." * (width - filled) + "]"


def line(p: Progress, extra: str = "") -> str:
    """One progress line, e.g. `[#####...............]  25%  trace 6.00/24.00 h in 1m30s  submitted
    300/1200  finished 210  ETA 4m30s`."""
    eta = p.eta_s
    return (f"{bar(p.fraction)} {p.fraction:4.0%}  trace {p.trace_s / 3600:.2f}/{p.horizon_s / 3600:.2f} h "
            f"in {duration(p.wall_s)}  submitted {p.submitted}/{p.due}  admitted {p.admitted}  "
            f"finished {p.finished}  evicted {p.evicted}  ETA {'?' if eta is None else duration(eta)}"
            + (f"  {extra}" if extra else ""))


class Printer:
    """Writes progress lines: redrawn in place on a terminal, otherwise one every `every` seconds. An empty
    line ends the display (a newline on a terminal, nothing otherwise)."""

    def __init__(self, stream: TextIO | None = None, every: float = PLAIN_EVERY_S,
                 clock: Callable[[], float] = time.monotonic, tty: bool | None = None):
        self._stream = stream
        self.every = every
        self.clock = clock
        self._tty = tty
        self._last: float | None = None

    @property
    def stream(self) -> TextIO:
        """The stream given, else sys.stderr as it is when written to (a test may have replaced it)."""
        return self._stream or sys.stderr

    def __call__(self, text: str) -> None:
        if self.stream.isatty() if self._tty is None else self._tty:
            self.stream.write("\r" + text.ljust(120) + ("\n" if not text else ""))
        elif text and (self._last is None or self.clock() - self._last >= self.every):
            self._last = self.clock()
            self.stream.write(text + "\n")
        self.stream.flush()
