"""Stack variants more than one component test reads, each rendered once a session by the render worker
(tests/conftest.py's background_render)."""

from __future__ import annotations

import copy
from typing import Any

from tests.conftest import background_render, stack_doc

NODE_ROLE_ARN = "arn:aws:iam::123456789012:role/existing-gpu-nodes"


@background_render()
def switched_staging() -> tuple[str, dict[str, Any]]:
    """Staging with the switches flipped: control plane created here, a given node role, the EFA pool's
    placement group off, and a Bottlerocket pool. One render (by the render worker) shared by the node pool and
    security tests."""
    config = copy.deepcopy(stack_doc("staging")["config"])
    platform = config["gpu-platform:platform"]
    platform["cluster"]["create"] = True
    platform["cluster"]["nodeRoleArn"] = NODE_ROLE_ARN
    by_name = {p["name"]: p for p in platform["pools"]}
    by_name["h100-train"]["placementGroup"] = False
    by_name["a10g-dev"]["amiType"] = "BOTTLEROCKET_x86_64_NVIDIA"
    return "staging", config


def variant():
    """The switched staging render and its platform config."""
    return switched_staging(), switched_staging.config()[1]["gpu-platform:platform"]
