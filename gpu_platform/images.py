"""Where images may come from: one reading of an image reference for the job template, the policy pack
and (as its CEL twin in components/admission/images.py) the API server.

A pod with GPU access can reach model artifacts, data and credentials, so what it runs matters as much
as where: an allowed registry is an entry of `images.allowedRegistries` (and a team's own
`teams[].allowedRegistries`), either a registry host (`registry.example.com`, `host:5000`) or a
repository prefix under one (`nvcr.io/nvidia`, `docker.io/library`). An image is allowed when its
normalised reference is the entry or continues it at a path boundary (`/`; for a repository prefix also
the tag `:` or digest `@`), so `registry.k8s.io.evil.example` never passes as `registry.k8s.io`.
"""

from __future__ import annotations

import re
from typing import Iterable

# Docker's reference grammar (distribution/reference, reference.go): a name without a domain is on
# Docker Hub, `docker.io`, and a one-component name is under `library/`. The first component is a domain
# when it contains '.' or ':' or is 'localhost' (normalize.go splitDockerDomain).
DOCKER_HUB = "docker.io"
DOCKER_HUB_OFFICIAL = f"{DOCKER_HUB}/library"
LOCALHOST = "localhost"
DIGEST_SEPARATOR = "@sha256:"

# Registries the platform's own workloads come from, and so the default allowlist: Kueue's controller
# (kueue_config.KUEUE_IMAGE_REPOSITORY), the GPU Operator's operands (nvcr.io/nvidia and its
# cloud-native and k8s sub-repositories: ../shared/reference/gpu-operator-v26.7.0-chart-values.yaml), the
# EFA device plugin (its chart's image.repository: tests/fixtures/charts/aws-efa-k8s-device-plugin-v0.5.30-values.yaml)
# Karpenter's controller (aws/karpenter-provider-aws v1.15.2 charts/karpenter/values.yaml controller.image.repository),
# the workload controllers (workload_controllers.CONTROLLERS image_repository: JobSet and LeaderWorkerSet from
# registry.k8s.io, Trainer from ghcr.io/kubeflow/trainer, KubeRay from quay.io/kuberay), Trainer's torch runtime
# image (docker.io/pytorch: charts/kubeflow-trainer/templates/runtimes/torch-distributed.yaml, v2.2.1) and Ray's
# images (docker.io/rayproject: the RayJob template's head and workers, jobs.RAY_IMAGE), and Docker Hub's official
# images, where the job template's default image lives (jobs.DEFAULT_IMAGE).
DEFAULT_ALLOWED_REGISTRIES: tuple[str, ...] = (
    "registry.k8s.io/kueue",
    "registry.k8s.io/jobset",
    "registry.k8s.io/lws",
    "ghcr.io/kubeflow/trainer",
    "quay.io/kuberay",
    "public.ecr.aws/karpenter",
    "nvcr.io/nvidia",
    "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks",
    f"{DOCKER_HUB}/pytorch",
    f"{DOCKER_HUB}/rayproject",
    DOCKER_HUB_OFFICIAL,
)

# Images a platform chart runs whose repositories its values (as the components write them) leave at the
# chart's defaults, by chart name: the policy pack checks these against the allowlist too. Sources as above.
CHART_DEFAULT_IMAGES: dict[str, tuple[str, ...]] = {
    "gpu-operator": (
        "nvcr.io/nvidia/gpu-operator", "nvcr.io/nvidia/k8s-device-plugin", "nvcr.io/nvidia/cloud-native/dcgm",
        "nvcr.io/nvidia/k8s/dcgm-exporter", "nvcr.io/nvidia/cloud-native/k8s-mig-manager",
        "nvcr.io/nvidia/k8s/container-toolkit", "nvcr.io/nvidia/driver",
    ),
    "aws-efa-k8s-device-plugin": ("602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/aws-efa-k8s-device-plugin",),
    "karpenter": ("public.ecr.aws/karpenter/controller",),
    # The torch-distributed runtime's trainer image (workload_controllers.CONTROLLERS[trainer]).
    "kubeflow-trainer": ("docker.io/pytorch/pytorch",),
}

# An allowlist entry: a registry host (optional port) and optional repository path, lowercase, no scheme,
# tag, digest or trailing slash (distribution/reference's domain and path components).
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_DOMAIN = r"(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*(?::[0-9]+)?"
REGISTRY_ENTRY = re.compile(rf"^{_DOMAIN}(?:/{_COMPONENT})*$")


def has_domain(first: str) -> bool:
    return "." in first or ":" in first or first == LOCALHOST


def registry_problem(entry: str) -> str | None:
    """Why `entry` cannot be an allowlist entry, or None."""
    if not REGISTRY_ENTRY.match(entry):
        return (f"{entry!r} is not a registry or repository prefix: write a host (registry.example.com, "
                "host:5000) optionally followed by a path (nvcr.io/nvidia), lowercase, without https://, tag, "
                "digest or trailing '/'")
    if not has_domain(entry.split("/")[0]):
        return (f"{entry!r} names no registry host (its first part has no '.' or ':'); Docker Hub is "
                f"{DOCKER_HUB} (official images: {DOCKER_HUB_OFFICIAL})")
    return None


def normalize(image: str) -> str:
    """The fully qualified reference: `busybox:1.37` -> `docker.io/library/busybox:1.37`, `org/x` ->
    `docker.io/org/x`. Exactly what the admission policy's CEL computes (components/admission/images.py
    `domain_qualified`, `official_qualified`); the legacy `index.docker.io` domain is left as written (so it
    matches only an entry that names it)."""
    first = image.split("/")[0]
    ref = image if "/" in image and has_domain(first) else f"{DOCKER_HUB}/{image}"
    remote = ref[len(DOCKER_HUB) + 1:]
    if ref.startswith(DOCKER_HUB + "/") and "/" not in remote:
        return f"{DOCKER_HUB_OFFICIAL}/{remote}"
    return ref


def from_entry(image: str, entry: str) -> bool:
    ref = normalize(image)
    if ref == entry or ref.startswith(entry + "/"):
        return True
    return "/" in entry and (ref.startswith(entry + ":") or ref.startswith(entry + "@"))


def allowed(image: str, registries: Iterable[str]) -> bool:
    return any(from_entry(image, r) for r in registries)


def has_digest(image: str) -> bool:
    return DIGEST_SEPARATOR in image


def image_problem(image: str, registries: Iterable[str], require_digest: bool) -> str | None:
    """Why admission would refuse `image` for a team with these registries, or None."""
    regs = list(registries)
    if not allowed(image, regs):
        return f"image {image!r} is not from an allowed registry; allowed: {', '.join(regs)}"
    if require_digest and not has_digest(image):
        return f"image {image!r} names no digest; this platform requires image@sha256:<digest>"
    return None
