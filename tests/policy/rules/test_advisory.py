"""The advisory rules (policies/gpu_policies/advisory.py): image tags pinned and the recommended labels set."""

from __future__ import annotations

import pytest

from gpu_platform import conventions as cv

from tests.policy.helpers import ALPHA, gpu_pod_spec, job
from tests.policy.rules.cases import Allowed, Disallowed, add, check_allowed, check_disallowed, labels_of


# (what, rule, mutation, resource the violation names, words the message contains)
DISALLOWED: list[Disallowed] = [
    ("image on latest", "image-tags-pinned",
     add(job(ALPHA.name, {**gpu_pod_spec(), "containers": [{"name": "m", "image": "registry.example/x:latest"}]})),
     "job-job", "latest"),
    ("image without a tag", "image-tags-pinned",
     add(job(ALPHA.name, {**gpu_pod_spec(), "containers": [{"name": "m", "image": "registry.example:5000/x"}]})),
     "job-job", "no tag"),
    ("object without managed-by", "recommended-labels",
     lambda w: labels_of(w, "cq-alpha").pop(cv.MANAGED_BY), "cq-alpha", cv.MANAGED_BY),
]


@pytest.mark.parametrize("case", DISALLOWED, ids=[c[0] for c in DISALLOWED])
def test_disallowed_is_reported(case: Disallowed) -> None:
    check_disallowed(case)


# (what, rule, mutation); cases that need config have tests of their own
ALLOWED: list[Allowed] = [
    ("image by digest", "image-tags-pinned", lambda w: w.append(job(ALPHA.name, {
        **gpu_pod_spec(), "containers": [{"name": "m", "image": "registry.example/x@sha256:" + "0" * 64}]}))),
]


@pytest.mark.parametrize("case", ALLOWED, ids=[c[0] for c in ALLOWED])
def test_allowed_passes(case: Allowed) -> None:
    check_allowed(case)
