"""Writing a matplotlib figure as the reports' PNGs are written: the what-if's report (simulator/report.py)
and the usage report (platform_cli/usage_report.py) lay out, size and close their figures alike. Here, in
the simulator, as the lowest layer both may import that is not the pure spec layer (tests/unit/test_layers.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

DPI = 110


def save_figure(fig: Any, path: Path) -> Path:
    """Lay out, write and close fig (closed, so a report with many figures does not hold them all); the path
    written, for the report's list of files."""
    import matplotlib.pyplot as plt  # the caller has chosen the backend (matplotlib.use) before drawing

    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path
