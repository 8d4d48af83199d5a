"""Where the tests find the upstream reference data: the reference CRDs and the charts' default values.

scripts/tools/reference.sh fetches them from their pinned upstream sources into the tool cache, with
../shared beside the checkout only as the offline fallback, so a clone tests itself anywhere.
GPU_PLATFORM_CRDS and GPU_PLATFORM_REFERENCE (when set and not empty) name other directories and win. A
part the tool found no source for is absent, and reading one of its files fails naming the variable.
"""

from __future__ import annotations

import functools
import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOOL = ROOT / "scripts" / "tools" / "reference.sh"
CRDS_ENV = "GPU_PLATFORM_CRDS"
VALUES_ENV = "GPU_PLATFORM_REFERENCE"


@dataclass(frozen=True)
class Located:
    """The two directories, and why a part is missing from them (empty when the tool had everything)."""

    crds: Path
    values: Path
    problem: str = ""


def locate(env: Mapping[str, str]) -> Located:
    """The directories under the environment `env`: the variables', else the tool's (one run of the tool, which
    is warm in about 20 ms and fetches only when the cache lacks a file)."""
    crds, values = env.get(CRDS_ENV), env.get(VALUES_ENV)
    if crds and values:
        return Located(Path(crds), Path(values))
    out = subprocess.run(["bash", str(TOOL), "--crds", "--values"], env=dict(env), capture_output=True, text=True)
    printed = out.stdout.split()
    if len(printed) != 2:
        raise RuntimeError(f"{TOOL.relative_to(ROOT)} --crds --values failed (exit {out.returncode}): "
                           f"{out.stderr.strip()}\nset {CRDS_ENV} and {VALUES_ENV} to the reference directories")
    errors = [line.removeprefix("toolchain: error: ") for line in out.stderr.splitlines()
              if line.startswith("toolchain: error: ")]
    problem = "; ".join(errors) or (f"{TOOL.relative_to(ROOT)} exited {out.returncode}" if out.returncode else "")
    return Located(Path(crds or printed[0]), Path(values or printed[1]), problem)


@functools.cache
def located() -> Located:
    return locate(os.environ)


def crd_dir() -> Path:
    return located().crds


def reference_dir() -> Path:
    return located().values


def _require(path: Path, env: str) -> Path:
    if not path.is_file():
        raise FileNotFoundError(f"reference file {path} is missing: "
                                + (located().problem or f"set {env} to a directory that has it"))
    return path


def crd_file(release: str, name: str) -> Path:
    """A reference CRD file, e.g. crd_file("gpu-operator-v26.7.0", "nvidia.com_clusterpolicies.yaml")."""
    return _require(crd_dir() / release / name, CRDS_ENV)


def values_file(name: str) -> Path:
    """An upstream chart's default values, e.g. values_file("kueue-v0.19.2-chart-values.yaml")."""
    return _require(reference_dir() / name, VALUES_ENV)
