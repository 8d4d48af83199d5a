"""A stack rendered under the mocks, as `render`, `check` and `deployer-policy` read it: one stack, or every part
of a split environment's own stack file together."""

from __future__ import annotations

from typing import Any

from gpu_platform.stack_files import load_plan, stack_file


def render_stack(stack: str) -> Any:
    stack_file(stack)  # a clear error for an unknown stack before pulumi is imported
    load_plan(stack, None)  # and for an invalid one
    from components.program import run
    from harness.render import run_program, stack_config
    from harness.split import parts, render_parts, union

    config = stack_config(stack, stack_file(stack).parent)
    split = parts(config)
    if split is not None and stack not in (split[0], *split[1]):
        # A split environment's own stack file: every part, together (the pack's cross-stack rules see both sides).
        return union(render_parts(run, config))
    return run_program(run, stack, config)
