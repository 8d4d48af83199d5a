"""Supply chain: exact Helm chart versions, and no Kueue API versions Kueue 0.19 has deprecated."""

from __future__ import annotations

from gpu_platform import conventions as cv

from . import objects as o
from .framework import Config, GuardrailResourcePolicy, Report, Resource, of_types
from .settings import FORBIDDEN_API_VERSIONS

# The same expression the spec validates addon versions with (conventions.py).
EXACT_VERSION = cv.EXACT_VERSION
LOCAL_CHART_PREFIXES = ("./", "../", "/")


def check_chart_pinned(r: Resource, cfg: Config, report: Report) -> None:
    chart = o.text(r.props.get("chart")) or ""
    if chart.startswith(LOCAL_CHART_PREFIXES):
        return  # a chart from this repository is pinned by the commit
    version = r.props.get("version")
    if not o.text(version):
        report(f"Helm chart {chart!r} has no version: every deploy would take whatever the repository serves")
    elif not EXACT_VERSION.match(version):
        report(f"Helm chart {chart!r} version {version!r} is not an exact version (no ranges, wildcards or "
               "constraints): pin it, e.g. 1.2.3")


def check_api_versions(r: Resource, cfg: Config, report: Report) -> None:
    kind = o.kube_kind(r.type)
    if kind is not None and kind.api_version in cfg.strings(FORBIDDEN_API_VERSIONS):
        report(f"{kind.kind} uses {kind.api_version}, which this platform does not allow "
               f"(Kueue 0.19 objects are {cv.KUEUE_API_VERSION}; Karpenter's are {cv.KARPENTER_NODEPOOL_API_VERSION} "
               f"and {cv.KARPENTER_NODECLASS_API_VERSION})")


POLICIES = [
    GuardrailResourcePolicy(
        "helm-chart-pinned",
        "Helm releases pin an exact chart version.",
        check_chart_pinned,
        of_types(*o.HELM_TYPES),
        remediation="Set `version` to an exact chart version (the addon's `version` in the stack config).",
    ),
    GuardrailResourcePolicy(
        "no-kueue-v1beta1",
        "No object uses a forbidden API version (Kueue v1beta1, Karpenter v1beta1).",
        check_api_versions,
        lambda t: o.kube_kind(t) is not None,
        settings=(FORBIDDEN_API_VERSIONS,),
        remediation=f"Use {cv.KUEUE_API_VERSION} (cohortName, admissionChecksStrategy, Cohort parentName).",
    ),
]
