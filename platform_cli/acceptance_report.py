"""The acceptance command's report: JSON (schema gpu-platform.io/acceptance/v1), a table for a terminal, Markdown
for a page."""

from __future__ import annotations

from typing import Any

from gpu_platform import acceptance as acc, conventions as cv

from .acceptance_request import Request

JSON_SCHEMA = f"{cv.PREFIX}/acceptance/v1"
FORMATS = ("table", "markdown", "json")


def to_json(verdict: acc.Verdict, r: Request) -> dict[str, Any]:
    """The report as JSON, schema gpu-platform.io/acceptance/v1 (docs/acceptance.md, "JSON"): keys are only ever
    added within a version."""
    return {
        "schema": JSON_SCHEMA,
        "stack": r.label, "team": r.team.name, "pool": r.pool.name, "instance_type": r.pool.instance_type,
        "nodes": r.nodes, "units_per_pod": r.gpus, "resource": r.pool.resource_name,
        "image": r.image, "window_s": r.window_s, "baseline": r.baseline.text if r.baseline else None,
        "job": {"kind": "JobSet", "namespace": r.namespace, "name": r.name},
        "passed": verdict.passed, "exit_code": verdict.exit_code,
        "steps": [{
            "number": res.step, "key": res.spec.key, "title": res.spec.title, "status": res.status,
            "figures": [{"name": f.name, "value": f.value, "unit": f.unit} for f in res.figures],
            "expected": res.expected, "seen": res.seen, "reason": res.reason,
        } for res in verdict.results],
        "problems": verdict.problems(),
    }


def _detail(res: acc.StepResult) -> str:
    if res.status == acc.FAILED:
        return f"expected {res.expected}; seen {res.seen}"
    if res.status == acc.SKIPPED:
        return res.reason or ""
    return ""


def text(verdict: acc.Verdict, r: Request, markdown: bool = False) -> str:
    head = (f"acceptance: stack {r.label}, team {r.team.name}, pool {r.pool.name} ({r.pool.instance_type}), "
            f"{r.nodes} pod(s) x {r.gpus} {r.pool.resource_name}, window {r.window_s}s, job {r.namespace}/{r.name}")
    rows = [(str(res.step), res.spec.key, res.status, ", ".join(f"{f.name} {f.text()}" for f in res.figures) or "-",
             _detail(res) or "-") for res in verdict.results]
    header = ("#", "step", "status", "figures", "expected / seen / why")
    if markdown:
        cell = lambda s: s.replace("|", "\\|")  # noqa: E731
        lines = [f"**{head}**", "", "| " + " | ".join(header) + " |", "|" + " --- |" * len(header),
                 *("| " + " | ".join(cell(c) for c in row) + " |" for row in rows), "", f"**{verdict.summary()}**"]
    else:
        widths = [max(len(row[i]) for row in [header, *rows]) for i in range(3)]
        fmt = lambda row: "  ".join(row[i].ljust(widths[i]) for i in range(3)) + "  " + row[3]  # noqa: E731
        lines = [head, "", fmt(header[:4]), *(fmt(row) for row in rows), "", verdict.summary(),
                 *(f"  {p}" for p in verdict.problems())]
    return "\n".join(lines) + "\n"
