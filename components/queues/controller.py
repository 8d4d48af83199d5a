"""The Kueue controller: its namespace and Helm release, with the Configuration from gpu_platform.kueue_config.

Every other Kueue object waits on this release: the CRDs and the validating webhooks come with it.
"""

from __future__ import annotations

from typing import Sequence

import pulumi
import pulumi_kubernetes as k8s

from gpu_platform import conventions as cv
from gpu_platform.kueue_config import KUEUE_CHART, chart_values
from gpu_platform.plan import Plan

from ..platform_namespace import platform_namespace


def controller(parent: pulumi.Resource, plan: Plan,
               after: Sequence[pulumi.Resource] = ()) -> tuple[k8s.core.v1.Namespace, k8s.helm.v3.Release]:
    """Kueue's namespace (restricted PSA) and its Helm release with the stack's chart values, after `after`
    (the ProvisioningRequest CRD, which Kueue looks for once, when it starts)."""
    kueue = plan.addons.kueue
    # The controller pod meets the restricted profile (runAsNonRoot, RuntimeDefault seccomp, no
    # privilege escalation, all capabilities dropped: the chart's securityContext).
    namespace, _ = platform_namespace(
        parent, plan, cv.KUEUE_NAMESPACE, "kueue", enforce=cv.PSA_RESTRICTED, warn_audit=cv.PSA_RESTRICTED,
        logical_name="kueue-namespace")
    release = k8s.helm.v3.Release(
        "kueue",
        name=cv.KUEUE_RELEASE_NAME,
        chart=KUEUE_CHART,
        version=kueue.version,
        namespace=cv.KUEUE_NAMESPACE,
        create_namespace=False,
        values=chart_values(plan),
        opts=pulumi.ResourceOptions(parent=parent, depends_on=[namespace, *after]),
    )
    return namespace, release
