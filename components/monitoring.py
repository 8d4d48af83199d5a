"""Placeholder until its issue lands: registers nothing."""

from __future__ import annotations

from typing import Any

import pulumi

from gpu_platform.plan import Plan


class Monitoring(pulumi.ComponentResource):
    def __init__(self, name: str, plan: Plan, operator: Any, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:monitoring:Monitoring", name, None, opts)
        self.register_outputs({})

    def exports(self) -> dict[str, Any]:
        return {}
