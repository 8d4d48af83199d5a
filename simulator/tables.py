"""Plain-text and Markdown tables of the reports (the what-if's, simulator/report.py, and the usage report,
platform_cli/usage_report.py): one layout, so the two reports read alike. In the simulator, as the lowest
layer both may import that is not the pure spec layer (tests/unit/test_layers.py)."""

from __future__ import annotations


def text_table(headers: list[str], cells: list[list[str]], markdown: bool = False) -> str:
    """CELLS (already formatted) under HEADERS: a Markdown table, or columns padded to their widest cell."""
    if markdown:
        out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
        return "\n".join(out + ["| " + " | ".join(r) + " |" for r in cells])
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    line = lambda r: "  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip()  # noqa: E731
    return "\n".join([line(headers), line(["-" * w for w in widths])] + [line(r) for r in cells])
