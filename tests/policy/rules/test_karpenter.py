"""The Karpenter rules (policies/gpu_policies/karpenter.py): a NodePool is bounded at its flavor's capacity and
its EC2NodeClass pins its AMI."""

from __future__ import annotations

import pytest

from gpu_platform import conventions as cv

from tests.policy.helpers import TRAIN
from tests.policy.rules.cases import Disallowed, check_disallowed, on_karpenter, spec, template


# (what, rule, mutation, resource the violation names, words the message contains)
DISALLOWED: list[Disallowed] = [
    ("NodePool without limits", "karpenter-nodepool-limits",
     on_karpenter(lambda w: spec(w, "np-train").pop("limits")), "np-train", "without bound"),
    ("NodePool limits above the flavor's capacity", "karpenter-nodepool-limits",
     on_karpenter(lambda w: spec(w, "np-train")["limits"].update(
         {"nodes": str(TRAIN.max_nodes + 1), cv.GPU_RESOURCE: str((TRAIN.max_nodes + 1) * TRAIN.it.gpus)})),
     "np-train", "more than"),
    ("NodePool limits below the flavor's capacity", "karpenter-nodepool-limits",
     on_karpenter(lambda w: spec(w, "np-train")["limits"].update({cv.GPU_RESOURCE: str(TRAIN.it.gpus)})),
     "np-train", "same capacity"),
    ("NodePool of several instance types", "karpenter-nodepool-limits",
     on_karpenter(lambda w: template(w, "np-train")["spec"]["requirements"][0]["values"].append("p5e.48xlarge")),
     "np-train", "cannot be known"),
    ("EC2NodeClass on the latest AMI", "karpenter-ami-pinned",
     on_karpenter(lambda w: spec(w, "nc-train").update(amiSelectorTerms=[{"alias": "al2023@latest"}])),
     "nc-train", "drifts"),
]


@pytest.mark.parametrize("case", DISALLOWED, ids=[c[0] for c in DISALLOWED])
def test_disallowed_is_reported(case: Disallowed) -> None:
    check_disallowed(case)
