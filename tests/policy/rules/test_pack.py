"""Every rule of the pack (policies/gpu_policies/pack.py) over fixtures shaped as the engine passes them: a
compliant world passes every rule, and every rule has a disallowed case in its own module's file here
(test_<module>.py for policies/gpu_policies/<module>.py), where `ls tests/policy/rules` finds it."""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

import pytest

from policies import gpu_policies
from policies.gpu_policies.pack import POLICIES

from tests.policy.helpers import run, world


def rule_modules() -> dict[str, ModuleType]:
    """The pack's modules that declare rules, by name (not those that read the whole pack's list)."""
    modules = {}
    for info in pkgutil.iter_modules(gpu_policies.__path__):
        module = importlib.import_module(f"{gpu_policies.__name__}.{info.name}")
        if hasattr(module, "POLICIES") and module.POLICIES is not POLICIES:
            modules[info.name] = module
    return modules


@pytest.mark.parametrize("kind", ["eks", "existing", "karpenter"])
@pytest.mark.parametrize("rule", [p.name for p in POLICIES])
def test_compliant_world_passes(rule: str, kind: str) -> None:
    assert run(rule, world(kind != "existing", karpenter=kind == "karpenter")) == []


def test_every_rule_has_a_disallowed_case() -> None:
    """Each rule module's file has a disallowed case for every rule of the module and none for another
    module's rules; the modules together are the pack."""
    modules = rule_modules()
    assert {p.name for m in modules.values() for p in m.POLICIES} == {p.name for p in POLICIES}
    for name, module in modules.items():
        cases = importlib.import_module(f"{__package__}.test_{name}")
        rules = {p.name for p in module.POLICIES}
        assert {c[1] for c in cases.DISALLOWED} == rules, name
        assert {c[1] for c in getattr(cases, "ALLOWED", [])} <= rules, name
