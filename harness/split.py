"""A split environment (`stackSplit`) rendered part by part, as its stacks would deploy it.

The platform stack first; each tenant stack then reads, by StackReference, the platform stack's `kueue`
export as the engine would serve it (taken from the ClusterQueues the platform render registered). The
union of the parts is what `check` of the environment runs the pack over: the rules that tie a tenant
namespace to its ClusterQueue see both sides only there (docs/architecture.md, "Split stacks").
"""

from __future__ import annotations

from typing import Any, Callable

from . import render
from .render import Rendered, run_program

CONFIG_KEY = "gpu-platform:platform"


def parts(config: dict[str, Any]) -> tuple[str, list[str]] | None:
    """(platform stack, tenant stacks) of a split config, None when it is not split."""
    split = (config.get(CONFIG_KEY) or {}).get("stackSplit")
    if not split:
        return None
    return split["platformStack"], [s["stack"] for s in split["tenantStacks"]]


def render_parts(program: Callable[[], None], config: dict[str, Any], project: str = "gpu-platform") -> dict[str, Rendered]:
    """Stack name -> its render, the platform stack first."""
    found = parts(config)
    if found is None:
        raise ValueError("the config has no stackSplit")
    platform_stack, tenant_stacks = found
    organization = config[CONFIG_KEY]["stackSplit"].get("organization", "organization")
    out = {platform_stack: run_program(program, platform_stack, config, project)}
    ref = f"{organization}/{project}/{platform_stack}"
    queues = {r.inputs["metadata"]["name"] for r in out[platform_stack].custom if r.inputs.get("kind") == "ClusterQueue"}
    # The export maps team -> ClusterQueue (components/queues `kueue.clusterQueues`); every ClusterQueue is named
    # after its team (conventions.cluster_queue_name), so the names stand for both.
    render.STACK_OUTPUTS[ref] = {"kueue": {"clusterQueues": {q: q for q in queues}}}
    try:
        for stack in tenant_stacks:
            out[stack] = run_program(program, stack, config, project)
    finally:
        render.STACK_OUTPUTS.pop(ref, None)
    return out


def union(rendered: dict[str, Rendered]) -> Rendered:
    """Every part's resources in one render (each part's own provider included)."""
    return Rendered(resources=[r for part in rendered.values() for r in part.resources],
                    invokes=frozenset().union(*(part.invokes for part in rendered.values())))
