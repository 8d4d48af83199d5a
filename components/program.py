"""The Pulumi program: stack config -> validated spec -> plan -> GpuPlatform -> stack outputs.

`__main__.py` calls `run()` under the real engine; `harness.render` calls the same function under
mocks, so what `render`, the tests and the policy check see is what `pulumi up` deploys.
"""

from __future__ import annotations

import gc
import os

import pulumi
from pulumi.runtime.mocks import MockMonitor

from gpu_platform import conventions as cv
from gpu_platform.plan import Plan, build_plan
from gpu_platform.errors import Problem
from gpu_platform.spec import SpecError
from gpu_platform.spec.loading import load_stack_platform
from gpu_platform.spec.placeholders import deploy_problems
from gpu_platform.stack_split import PLATFORM, TENANTS, StackPart, plan_for, stack_part

from .platform import GpuPlatform, KubeAccess
from .tenant_stack import TenantStack


def load_plan() -> Plan:
    """Validate before anything is registered: a bad config registers nothing."""
    return load()[0]


def load() -> tuple[Plan, StackPart]:
    """The whole plan and the part of it this stack deploys (a split environment's stacks share one spec)."""
    raw = pulumi.Config(cv.CONFIG_NAMESPACE).get_object(cv.PLATFORM_CONFIG)
    if raw is None:
        raise pulumi.RunError("stack config has no 'gpu-platform:platform' key (see docs/configuration.md)")
    configured_region = pulumi.Config("aws").get("region")
    role = pulumi.Config(cv.CONFIG_NAMESPACE).get(cv.MULTIKUEUE_ROLE_CONFIG) or "manager"
    if role not in cv.MULTIKUEUE_ROLES:
        raise pulumi.RunError(f"gpu-platform:{cv.MULTIKUEUE_ROLE_CONFIG} is {role!r}; valid: {', '.join(cv.MULTIKUEUE_ROLES)}")
    try:
        spec, region = load_stack_platform(raw, configured_region)
        if deploying():
            refuse_placeholders(raw)
        return build_plan(spec, region, role), stack_part(spec, pulumi.get_stack(), pulumi.get_project())
    except SpecError as err:
        lines = "\n".join(f"  {p}" for p in err.problems)
        raise pulumi.RunError(f"invalid gpu-platform:platform ({len(err.problems)} problem(s)):\n{lines}") from None


def deploying() -> bool:
    """`pulumi up` (and `destroy --run-program`) on a real engine: not a preview, and not the mocks `render`, the
    policy check and the tests run the program under, which show what the committed stacks would make."""
    return not pulumi.runtime.is_dry_run() and not isinstance(pulumi.runtime.settings.get_monitor(), MockMonitor)


def refuse_placeholders(raw: object) -> None:
    """A stack still holding the documentation's stand-ins is not deployed (gpu_platform/spec/placeholders.py):
    refused at `up`, before anything is registered, naming each field (docs/architecture.md, "Placeholders are
    refused at deploy, not at preview")."""
    problems = deploy_problems(raw)
    if problems:
        raise SpecError([*problems, Problem("", "placeholders are refused at `pulumi up` (previews and `plan` show "
                                                "them): `python -m platform_cli validate --deploy` lists them")])


def run() -> None:
    # The program is one short process and the SDK keeps every resource and output alive until it ends:
    # the cyclic collector frees next to nothing, while its full passes over the growing heap took ~8 of
    # the program's ~20 CPU seconds in a 100-team `pulumi up` (docs/performance.md). Under mocks,
    # harness.render.run_program restores the collector when the render is done.
    gc.disable()
    plan, part = load()
    cfg = pulumi.Config(cv.CONFIG_NAMESPACE)
    kube = KubeAccess(
        kubeconfig=cfg.get_secret("kubeconfig"),
        context=cfg.get("kubeContext"),
        # GitOps hand-off and offline runs: write manifests instead of applying them.
        render_yaml_to_directory=os.environ.get("GPU_PLATFORM_RENDER_DIR") or cfg.get("renderYamlToDirectory"),
    )
    stack: GpuPlatform | TenantStack
    if part.role == TENANTS:
        stack = TenantStack("tenants", plan_for(plan, part), part, kube)
    else:
        stack = GpuPlatform("platform", plan, kube, tenant_namespaces=part.namespaces)
    for key, value in stack.exports().items():
        pulumi.export(key, value)
    if part.role == PLATFORM and isinstance(stack, GpuPlatform) and stack.eks_cluster is not None:
        # A created cluster's tenant stacks reach it through this export (components/tenant_stack.py).
        pulumi.export("kubeconfig", pulumi.Output.secret(stack.eks_cluster.kubeconfig))
