"""Placeholder until its issue lands: registers nothing."""

from __future__ import annotations

from typing import Any

import pulumi

from gpu_platform.plan import Plan


class NodePools(pulumi.ComponentResource):
    kubeconfig = None

    def __init__(self, name: str, plan: Plan, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:node_pools:NodePools", name, None, opts)
        self.register_outputs({})

    def exports(self) -> dict[str, Any]:
        return {}
