"""Supply chain: exact Helm chart versions, no Kueue API versions Kueue 0.19 has deprecated, and images only
from the registries the spec allows."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from gpu_platform import conventions as cv, images

from . import objects as o
from . import stackindex as ix
from .framework import (
    Config, GuardrailResourcePolicy, GuardrailStackPolicy, Report, Resource, StackReport, guarded, of_types,
)
from .settings import FORBIDDEN_API_VERSIONS, SYSTEM_NAMESPACES

# The same expression the spec validates addon versions with (gpu_platform/conventions/).
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


def value_images(values: Any) -> Iterator[str]:
    """Image references in Helm values, by the charts' three shapes: `{repository, image}` (the GPU Operator's
    operands: repository is the registry path, image the name), `{registry, repository, tag}` (Kubeflow Trainer:
    charts/kubeflow-trainer/templates/_helpers.tpl trainer.image joins registry and repository) and
    `{repository, tag}` (Kueue, the EFA plugin: repository is the whole name); and a plain string under an
    `image` key."""
    if isinstance(values, Mapping):
        repo = o.text(values.get("repository"))
        name = values.get("image")
        registry = o.text(values.get("registry"))
        if repo and registry:
            yield f"{registry}/{repo}"
        elif repo:
            yield f"{repo}/{name}" if isinstance(name, str) and name else repo
        elif isinstance(name, str) and name:
            yield name
        for v in values.values():
            yield from value_images(v)
    elif isinstance(values, (list, tuple)):
        for v in values:
            yield from value_images(v)


def release_images(props: Mapping[str, Any]) -> list[str]:
    """What a Helm release runs: the images its values name, and those its chart runs by default
    (images.CHART_DEFAULT_IMAGES: the components leave them at the chart's repositories)."""
    chart = (o.text(props.get("chart")) or "").rstrip("/").rsplit("/", 1)[-1]
    return [*value_images(props.get("values")), *images.CHART_DEFAULT_IMAGES.get(chart, ())]


def platform_registries(resources: Sequence[Resource], report: StackReport) -> list[str] | None:
    """The platform-wide allowlist, as the image admission policy of the stack carries it; None when the
    stack has no such policy (nothing states the list)."""
    found: list[str] | None = None
    for r in resources:
        if not o.is_kind(r.type, "ValidatingAdmissionPolicy", "admissionregistration.k8s.io"):
            continue

        def read(r: Resource = r) -> list[str] | None:
            if o.object_name(r.props, r.name) != cv.TENANT_IMAGE_POLICY:
                return None
            value = o.text(o.annotations(r.props).get(cv.PLATFORM_REGISTRIES_ANNOTATION)) or ""
            return [x for x in value.split(",") if x]

        value = guarded(report, r, read)
        if value is not None:
            found = value
    return found


def check_platform_images(resources: Sequence[Resource], cfg: Config, report: StackReport) -> None:
    allowed = platform_registries(resources, report)
    if allowed is None:
        return
    system = cfg.strings(SYSTEM_NAMESPACES)
    tenants = ix.tenant_namespaces(resources, system, report)
    team_registries: dict[str, list[str]] = {}
    for name, ns in tenants.items():
        value = guarded(report, ns.resource,
                        lambda ns=ns: o.text(o.annotations(ns.resource.props).get(cv.ALLOWED_REGISTRIES_ANNOTATION)))
        if value:
            team_registries[name] = [x for x in value.split(",") if x]
    for r in resources:
        if r.type in o.HELM_TYPES:
            for image in guarded(report, r, lambda r=r: release_images(r.props)) or ():
                if not images.allowed(image, allowed):
                    report(r, f"image {image} ({images.normalize(image)}) is not from images.allowedRegistries "
                              f"({', '.join(allowed)}): the platform's own images come from the same registries")
        elif o.may_hold_pods(r.type):
            def check(r: Resource = r) -> None:
                ns = o.object_namespace(r.props)
                regs = allowed if ns in system else team_registries.get(ns, allowed)
                for ps in o.pod_specs(r.props):
                    for path, c in ps.containers():
                        image = o.text(c.get("image"))
                        if image and not images.allowed(image, regs):
                            report(r, f"{path} image {image} ({images.normalize(image)}) is not from the registries "
                                      f"allowed in namespace {ns} ({', '.join(regs)})")
            guarded(report, r, check)


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
    GuardrailStackPolicy(
        "images-from-allowed-registries",
        "The platform's images (Helm releases, their chart defaults) and the stack's pod specs come from "
        "images.allowedRegistries (a tenant namespace's from its allowed-registries annotation).",
        check_platform_images,
        settings=(SYSTEM_NAMESPACES,),
        remediation="Add the registry to images.allowedRegistries (or the team's allowedRegistries), or mirror the "
                    "image into an allowed one.",
    ),
]
