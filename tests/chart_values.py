"""Chart values against the chart's own defaults: every key the platform passes must exist in them.

Shared by the GPU Operator, EFA device plugin and VPC CNI tests. The defaults are reference data: the
upstream values files, copied with their source in a header comment (tests/fixtures/charts), or for the
GPU Operator and Kueue fetched from their releases (tests/reference_data.py).
"""

from __future__ import annotations

import copy
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterator

import yaml

from tests.conftest import load_yaml

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "charts"


def chart_defaults(name: str) -> dict[str, Any]:
    return load_yaml((FIXTURES / name).read_text())


def unknown_keys(values: dict[str, Any], defaults: Any, path: str = "", free: tuple[str, ...] = ()) -> list[str]:
    """Key paths of `values` that the chart defaults do not have. Below a default that is an empty map
    (labels, annotations) or a non-map (lists, scalars) any content is the user's, and so it is below the
    `free` paths (label maps whose default holds an example entry, such as a nodeSelector)."""
    out: list[str] = []
    for key, value in values.items():
        here = f"{path}.{key}" if path else key
        if not isinstance(defaults, dict) or key not in defaults:
            out.append(here)
            continue
        default = defaults[key]
        if isinstance(value, dict) and isinstance(default, dict) and default and here not in free:
            out.extend(unknown_keys(value, default, here, free))
    return out


def leaves(values: dict[str, Any], path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every value the stack sets on a chart, by its key path (an empty map is a value too)."""
    for key, value in values.items():
        if isinstance(value, dict) and value:
            yield from leaves(value, (*path, key))
        else:
            yield (*path, key), value


def ignored_values(values: dict[str, Any], render: Callable[[dict[str, Any]], str],
                   changed: Callable[[Any], Any]) -> list[str]:
    """The key paths whose change leaves the chart's render as it was: values the chart never reads (a
    misspelt key, one from another chart version), which the stack would set for nothing."""
    base = render(values)
    ignored = []
    for path, value in leaves(values):
        mutated = copy.deepcopy(values)
        node = mutated
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = changed(value)
        if render(mutated) == base:
            ignored.append(".".join(path))
    return ignored


def helm_template(helm: Path, release: str, chart: Path, namespace: str, values: dict[str, Any]) -> str:
    """`helm template` of a chart with exactly these values, as the stack's Helm release would install it."""
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
        yaml.safe_dump(values, f)
        f.flush()
        out = subprocess.run([str(helm), "template", release, str(chart), "--namespace", namespace,
                              "--values", f.name, "--kube-version", "1.33"], capture_output=True, text=True)
    assert out.returncode == 0, f"helm template failed: {out.stderr}"
    return out.stdout
