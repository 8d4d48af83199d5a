"""The acceptance test's spec layer is one package of modules by part (gpu_platform/acceptance/), and callers
still write `from gpu_platform import acceptance as acc` and `acc.STEPS`, `acc.verdict(...)`: every name of every
module is the package's, and each is defined in exactly one module."""

from __future__ import annotations

import importlib
import pkgutil

from gpu_platform import acceptance as acc
from tests.unit.gpu_platform.test_conventions_package import defined_names


def submodules() -> dict[str, object]:
    return {info.name: importlib.import_module(f"{acc.__name__}.{info.name}")
            for info in pkgutil.iter_modules(acc.__path__)}


def test_the_package_reexports_every_name_of_every_module() -> None:
    missing = sorted(f"{name}.{n}" for name, m in submodules().items() for n in defined_names(m)
                     if getattr(acc, n, None) is not getattr(m, n))
    assert missing == []


def test_each_name_is_defined_in_one_module_only() -> None:
    seen: dict[str, str] = {}
    twice = []
    for name, m in sorted(submodules().items()):
        for n in sorted(defined_names(m)):
            if n in seen:
                twice.append(f"{n} in {seen[n]} and {name}")
            seen.setdefault(n, name)
    assert twice == []


def test_names_read_as_before_through_the_package() -> None:
    """One name from each part, read as the command reads it."""
    assert [s.key for s in acc.STEPS][:3] == ["queued-job", "data-pull", "all-reduce"]
    assert acc.StepResult.skipped(2, "why").line() == "step 2 (data-pull) skipped: why"
    assert acc.events_from_log('noise\n{"event": "done", "rank": 0}\n') == [{"event": "done", "rank": 0}]
    assert acc.BUSBW_PASS_FRACTION == 0.8 and acc.PUBLISHED_ALLREDUCE_BUSBW["p5.48xlarge"][0] == 443.72
    assert acc.parse_baseline("api=2.50/1M-tokens").per_text == "1M tokens"
