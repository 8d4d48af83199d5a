"""The rules are one package with a module per rule group (components/alerts/), and callers still write
`from components import alerts` and `alerts.rule_file(plan)`, `alerts.DCGM_JOB`: every name of every module is
the package's, and each is defined in exactly one module."""

from __future__ import annotations

import importlib
import pkgutil

from components import alerts
from tests.conftest import plan_of
from tests.unit.gpu_platform.test_conventions_package import defined_names


def submodules() -> dict[str, object]:
    return {info.name: importlib.import_module(f"{alerts.__name__}.{info.name}")
            for info in pkgutil.iter_modules(alerts.__path__)}


def test_the_package_reexports_every_name_of_every_module() -> None:
    missing = sorted(f"{name}.{n}" for name, m in submodules().items() for n in defined_names(m)
                     if getattr(alerts, n, None) is not getattr(m, n))
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


def test_the_groups_render_in_their_order_through_the_package() -> None:
    """What the PrometheusRule deploys and promtool tests, read as every caller reads it."""
    groups = alerts.rule_file(plan_of("prod"))["groups"]
    assert [g["name"] for g in groups] == [
        "gpu-platform.plan", "gpu-platform.recording", "gpu-platform.useful-work", "gpu-platform.gpu-health",
        "gpu-platform.nodes", "gpu-platform.waste", "gpu-platform.queues", "gpu-platform.requeues",
    ]
    assert alerts.DCGM_JOB == "nvidia-dcgm-exporter"
    assert alerts.CLUSTER_QUEUE_TEAM == "gpu_platform:cluster_queue_team:info"
    assert alerts.IDLE_FOR == "30m" and alerts.SEVERITIES == ("critical", "warning", "info")
    assert alerts.prom_label("gpu-platform.io/team") == "gpu_platform_io_team"
    assert "GpuXid79FallenOffBus" in {a.alert for a in alerts.alerts(plan_of("prod"))}
