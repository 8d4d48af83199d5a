"""The supply rules (policies/gpu_policies/supply.py): charts pinned to an exact version, no v1beta1 Kueue or
Karpenter objects, and images from the allowed registries."""

from __future__ import annotations

import pytest

from gpu_platform import conventions as cv

from tests.policy.helpers import ALPHA, find, gpu_pod_spec, job
from tests.policy.rules.cases import Allowed, Disallowed, add, check_allowed, check_disallowed, inputs, on_karpenter


# (what, rule, mutation, resource the violation names, words the message contains)
DISALLOWED: list[Disallowed] = [
    ("chart without a version", "helm-chart-pinned",
     lambda w: inputs(w, "gpu-operator").pop("version"), "gpu-operator", "no version"),
    ("chart with a version range", "helm-chart-pinned",
     lambda w: inputs(w, "gpu-operator").update(version="^26.7.0"), "gpu-operator", "exact"),
    ("chart with a wildcard version", "helm-chart-pinned",
     lambda w: inputs(w, "gpu-operator").update(version="26.7.x"), "gpu-operator", "exact"),
    ("platform chart image from elsewhere", "images-from-allowed-registries",
     lambda w: inputs(w, "gpu-operator").update(values={"operator": {"repository": "quay.io/mirror", "image": "op"}}),
     "gpu-operator", "quay.io/mirror/op"),
    ("chart default registry not allowed", "images-from-allowed-registries",
     lambda w: find(w, "image-policy")["inputs"]["metadata"]["annotations"].update(
         {cv.PLATFORM_REGISTRIES_ANNOTATION: "registry.example"}), "gpu-operator", "nvcr.io/nvidia/gpu-operator"),
    ("tenant job image outside its namespace's registries", "images-from-allowed-registries",
     add(job(ALPHA.name, {**gpu_pod_spec(), "initContainers": [{"name": "i", "image": "busybox:1.37"}]})),
     "job-job", "docker.io/library/busybox:1.37"),
    ("Karpenter v1beta1 NodePool", "no-kueue-v1beta1",
     on_karpenter(lambda w: find(w, "np-train").update(type=find(w, "np-train")["type"].replace("/v1:", "/v1beta1:"))),
     "np-train", "v1beta1"),
    ("Kueue v1beta1 object", "no-kueue-v1beta1",
     lambda w: find(w, "cq-alpha").update(type=find(w, "cq-alpha")["type"].replace("v1beta2", "v1beta1")),
     "cq-alpha", "v1beta1"),
]


@pytest.mark.parametrize("case", DISALLOWED, ids=[c[0] for c in DISALLOWED])
def test_disallowed_is_reported(case: Disallowed) -> None:
    check_disallowed(case)


# (what, rule, mutation); cases that need config have tests of their own
ALLOWED: list[Allowed] = [
    ("chart version without a v", "helm-chart-pinned", lambda w: inputs(w, "gpu-operator").update(version="26.7.0")),
    ("chart from this repository", "helm-chart-pinned",
     lambda w: inputs(w, "gpu-operator").update(chart="./charts/local", version=None)),
]


@pytest.mark.parametrize("case", ALLOWED, ids=[c[0] for c in ALLOWED])
def test_allowed_passes(case: Allowed) -> None:
    check_allowed(case)
