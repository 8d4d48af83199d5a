"""Advisory rules: reported, never blocking."""

from __future__ import annotations

from . import objects as o
from .framework import ADVISORY, Config, GuardrailResourcePolicy, Report, Resource, quoted
from .labeling import missing_values
from .settings import RECOMMENDED_LABELS

LATEST = "latest"


def image_pin_problem(image: str) -> str | None:
    """None when the image names a digest or a tag other than `latest`."""
    if "@" in image:
        return None
    last = image.rsplit("/", 1)[-1]
    if ":" not in last:
        return "has no tag (pulls :latest)"
    if last.rsplit(":", 1)[1] == LATEST:
        return "uses the mutable :latest tag"
    return None


def check_image_tags(r: Resource, cfg: Config, report: Report) -> None:
    for ps in o.pod_specs(r.props):
        for path, c in ps.containers():
            image = o.text(c.get("image"))
            if image is None:
                continue
            problem = image_pin_problem(image)
            if problem:
                report(f"{path} image {image!r} {problem}: pin a version tag or a digest")


def check_recommended_labels(r: Resource, cfg: Config, report: Report) -> None:
    missing = missing_values(o.labels(r.props), cfg.strings(RECOMMENDED_LABELS))
    if missing:
        report(f"{o.object_name(r.props, r.name)!r} lacks recommended label(s) {quoted(missing)}")


def _is_kube_object(t: str) -> bool:
    return o.kube_kind(t) is not None


POLICIES = [
    GuardrailResourcePolicy(
        "image-tags-pinned",
        "Container images name a version tag or a digest, never :latest or no tag.",
        check_image_tags,
        o.may_hold_pods,
        level=ADVISORY,
    ),
    GuardrailResourcePolicy(
        "recommended-labels",
        "Kubernetes objects carry the recommended app labels.",
        check_recommended_labels,
        _is_kube_object,
        level=ADVISORY,
        settings=(RECOMMENDED_LABELS,),
    ),
]
