"""The image policy (`tenant-images`): tenant pods' images come from the registries their namespace allows,
by digest where the platform requires it; the CEL twin of gpu_platform.images' normalisation."""

from __future__ import annotations

from typing import Any

from gpu_platform import conventions as cv, images
from gpu_platform.plan import Plan

from .cel import TRAINJOB, cel_string, has_field, kind_switch
from .matching import SHAPES, matched_apis, resource_rules, tenant_namespace_selector
from .rules import RULES
from .workloads import variables


def image_names(spec: str) -> str:
    """CEL: the images of every container, init container and ephemeral container of a pod spec, as one
    list of strings (mapped first: the three container types are different CEL types)."""
    one = "(has(c.image) ? c.image : '')"
    return (
        f"({spec}.containers.map(c, {one}) + "
        f"({has_field(spec, 'initContainers')} ? {spec}.initContainers.map(c, {one}) : []) + "
        f"({has_field(spec, 'ephemeralContainers')} ? {spec}.ephemeralContainers.map(c, {one}) : []))"
    )


def domain_qualified(i: str) -> str:
    """CEL twin of the first step of images.normalize: a name whose first part is no domain is Docker Hub's."""
    first = f"{i}.split('/')[0]"
    return (f"({i}.contains('/') && ({first}.contains('.') || {first}.contains(':') || {first} == "
            f"{cel_string(images.LOCALHOST)}) ? {i} : {cel_string(images.DOCKER_HUB + '/')} + {i})")


def official_qualified(n: str) -> str:
    """CEL twin of the second step of images.normalize: a one-part Docker Hub name is an official image."""
    hub = images.DOCKER_HUB + "/"
    rest = f"{n}.substring({len(hub)})"
    return (f"({n}.startsWith({cel_string(hub)}) && !{rest}.contains('/') ? "
            f"{cel_string(images.DOCKER_HUB_OFFICIAL + '/')} + {rest} : {n})")


def from_allowed_registry(n: str) -> str:
    """CEL twin of images.from_entry over the namespace's registries, for a normalised reference `n`."""
    return (f"variables.allowedRegistries.exists(r, {n} == r || {n}.startsWith(r + '/') || "
            f"(r.contains('/') && ({n}.startsWith(r + ':') || {n}.startsWith(r + '@'))))")


def image_policy_spec(plan: Plan) -> dict[str, Any]:
    """Tenant pods' images come from the registries their namespace allows (`gpu-platform.io/allowed-
    registries`: images.allowedRegistries plus the team's own), and name a digest when the platform requires
    it. Checked on every pod template of the workload kinds (so a Job is refused when submitted, not when
    its pods fail later), on Pods, and on `kubectl debug`'s ephemeral containers, which arrive as an update
    of the pods/ephemeralcontainers subresource."""
    apis = matched_apis(plan)
    kinds = [api[3] for api in apis]
    annotation = cel_string(cv.ALLOWED_REGISTRIES_ANNOTATION)
    rules = resource_rules(apis) + [{
        "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods/ephemeralcontainers"], "operations": ["UPDATE"],
    }]
    team = next(v for v in variables(apis) if v["name"] == "team")
    validations = [{
        "expression": "size(variables.deniedImages) == 0",
        "messageExpression": (
            f"'{RULES['image-registry']} ' + variables.team + ' may pull from; not allowed: ' + "
            "variables.deniedImages.join(', ') + '; allowed registries: ' + variables.allowedRegistries.join(', ')"
        ),
        "reason": "Forbidden",
    }]
    if plan.require_image_digests:
        validations.append({
            "expression": f"variables.images.all(i, i.contains({cel_string(images.DIGEST_SEPARATOR)}))",
            "messageExpression": (
                "'this platform runs tenant images by digest (image@sha256:...), not by tag: ' + "
                f"variables.images.filter(i, !i.contains({cel_string(images.DIGEST_SEPARATOR)})).join(', ')"
            ),
            "reason": "Forbidden",
        })
    return {
        "failurePolicy": "Fail",
        "matchConstraints": {
            "resourceRules": rules,
            "namespaceSelector": tenant_namespace_selector(),
            "matchPolicy": "Equivalent",
        },
        "matchConditions": [
            {"name": "not-being-deleted", "expression": "!has(object.metadata.deletionTimestamp)"},
        ],
        "variables": [
            {"name": "podTemplates", "expression": kind_switch({k: SHAPES[k].pod_templates for k in kinds}, "[]")},
            {"name": "podSpecs", "expression": "variables.podTemplates.map(t, t.spec)"},
            # One flat list of names without CEL's (absent) flatten: joined and split on a space, which no
            # image reference contains.
            {"name": "imageNames", "expression": (
                f"variables.podSpecs.map(s, {image_names('s')}.join(' ')).join(' ').split(' ').filter(i, i != '') + "
                # A TrainJob's trainer image (its runtime's own images are the platform's: images.CHART_DEFAULT_IMAGES).
                f"({TRAINJOB} && has(object.spec.trainer) && has(object.spec.trainer.image) ? "
                "[object.spec.trainer.image] : [])")},
            {"name": "domainQualified", "expression": f"variables.imageNames.map(i, {domain_qualified('i')})"},
            {"name": "images", "expression": f"variables.domainQualified.map(n, {official_qualified('n')})"},
            {"name": "allowedRegistries", "expression": (
                f"has(namespaceObject.metadata.annotations) && {annotation} in namespaceObject.metadata.annotations ? "
                f"namespaceObject.metadata.annotations[{annotation}].split(',').filter(r, r != '') : []")},
            {"name": "deniedImages", "expression": f"variables.images.filter(n, !{from_allowed_registry('n')})"},
            team,
        ],
        "validations": validations,
    }
