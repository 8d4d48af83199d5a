"""The labeling rules (policies/gpu_policies/labeling.py): GPU node groups and NodePools carry their pool's
labels and taints, tenant namespaces their team labels, and GPU capacity its cost tags."""

from __future__ import annotations

import pytest

from gpu_platform import conventions as cv

from tests.policy.helpers import ALPHA, INFER, MIG, PLACEMENT_GROUP, TRAIN, cost_tags, find, res, run, world
from tests.policy.rules.cases import Disallowed, add, check_disallowed, inputs, labels_of, on_karpenter, spec, template


# (what, rule, mutation, resource the violation names, words the message contains)
DISALLOWED: list[Disallowed] = [
    ("node group without a pool label", "gpu-node-group-labels",
     lambda w: inputs(w, "ng-train")["labels"].pop(cv.TOPOLOGY), "ng-train", cv.TOPOLOGY),
    ("node group without the GPU taint", "gpu-node-group-labels",
     lambda w: inputs(w, "ng-train")["taints"].pop(0), "ng-train", "GPU taint"),
    ("node group whose workload taint disagrees", "gpu-node-group-labels",
     lambda w: inputs(w, "ng-train")["taints"][1].update(value="inference"), "ng-train", "workload taint"),
    ("node group labelled with another accelerator", "gpu-node-group-labels",
     lambda w: inputs(w, "ng-train").update(instanceTypes=[INFER.instance_type]), "ng-train", cv.ACCELERATOR),
    ("MIG node group without the mig.config label", "gpu-node-group-labels",
     lambda w: inputs(w, "ng-mig")["labels"].pop(cv.MIG_CONFIG_LABEL), "ng-mig", cv.MIG_CONFIG_LABEL),
    ("time-sliced node group without the device-plugin label", "gpu-node-group-labels",
     lambda w: inputs(w, "ng-infer")["labels"].pop(cv.DEVICE_PLUGIN_CONFIG_LABEL), "ng-infer",
     cv.DEVICE_PLUGIN_CONFIG_LABEL),
    ("node group with an unknown sharing value", "gpu-node-group-labels",
     lambda w: inputs(w, "ng-train")["labels"].update({cv.SHARING: "half-gpu"}), "ng-train", "sharing"),
    ("NodePool without a pool label", "gpu-node-group-labels",
     on_karpenter(lambda w: template(w, "np-train")["metadata"]["labels"].pop(cv.SHARING)), "np-train", cv.SHARING),
    ("NodePool whose workload taint disagrees", "gpu-node-group-labels",
     on_karpenter(lambda w: template(w, "np-train")["spec"]["taints"][1].update(value="inference")), "np-train",
     "workload taint"),
    ("NodePool of another accelerator's instance type", "gpu-node-group-labels",
     on_karpenter(lambda w: template(w, "np-train")["spec"]["requirements"][0].update(values=[INFER.instance_type])),
     "np-train", cv.ACCELERATOR),
    ("tenant namespace without cost center", "tenant-namespace-labels",
     lambda w: labels_of(w, "ns-alpha").pop(cv.COST_CENTER), "ns-alpha", cv.COST_CENTER),
    ("tenant namespace with an empty team label", "tenant-namespace-labels",
     lambda w: labels_of(w, "ns-beta").update({cv.TEAM: ""}), "ns-beta", cv.TEAM),
    ("node group without cost tags", "aws-gpu-cost-tags",
     lambda w: inputs(w, "ng-train")["tags"].pop(cv.TAG_CLUSTER), "ng-train", cv.TAG_CLUSTER),
    ("node group cost tag disagreeing with its label", "aws-gpu-cost-tags",
     lambda w: inputs(w, "ng-train")["tags"].update({cv.WORKLOAD: "inference"}), "ng-train", "disagree"),
    ("launch template without instance tags", "aws-gpu-cost-tags",
     lambda w: inputs(w, "lt-train").pop("tagSpecifications"), "lt-train", "instance"),
    ("launch template instance tags incomplete", "aws-gpu-cost-tags",
     lambda w: inputs(w, "lt-train")["tagSpecifications"][0]["tags"].pop(cv.POOL), "lt-train", cv.POOL),
    ("EC2NodeClass without instance cost tags", "aws-gpu-cost-tags",
     on_karpenter(lambda w: spec(w, "nc-train")["tags"].pop(cv.TAG_ENVIRONMENT)), "nc-train", cv.TAG_ENVIRONMENT),
    ("placement group without tags", "aws-gpu-cost-tags",
     add(res(PLACEMENT_GROUP, "pg-train", {"strategy": "cluster"})), "pg-train", "cost tag"),
]


@pytest.mark.parametrize("case", DISALLOWED, ids=[c[0] for c in DISALLOWED])
def test_disallowed_is_reported(case: Disallowed) -> None:
    check_disallowed(case)


def test_system_namespaces_come_from_config() -> None:
    """A namespace listed in systemNamespaces is no tenant: no tenant labels or quota required."""
    w = world()
    labels_of(w, "ns-alpha").pop(cv.TEAM)
    w.remove(find(w, "quota-alpha"))
    assert run("tenant-namespace-labels", w)
    assert run("namespace-resource-quota", w)
    config = {"systemNamespaces": [*cv.RESERVED_NAMESPACES, ALPHA.name]}
    assert run("tenant-namespace-labels", w, config) == []
    assert run("namespace-resource-quota", w, config) == []


def test_required_labels_come_from_config() -> None:
    w = world()
    extra = f"{cv.PREFIX}/owner"
    config = {"requiredLabels": [*cv.TENANT_NAMESPACE_LABEL_KEYS, extra]}
    found = run("tenant-namespace-labels", w, config)
    assert {f.resource for f in found} == {"ns-alpha", "ns-beta"} and all(extra in f.message for f in found)
    pool_config = {"requiredLabels": [*cv.POOL_LABEL_KEYS, extra]}
    assert {f.resource for f in run("gpu-node-group-labels", w, pool_config)} == {f"ng-{p.name}" for p in (TRAIN, INFER, MIG)}


def test_cost_tags_come_from_config() -> None:
    w = world()
    assert run("aws-gpu-cost-tags", w, {"requiredTags": [cv.POOL]}) == []
    missing = f"{cv.PREFIX}/budget"
    found = run("aws-gpu-cost-tags", w, {"requiredTags": [missing]})
    assert found and all(missing in f.message for f in found)


def test_non_gpu_node_group_is_not_checked() -> None:
    """A system node group (no NVIDIA AMI, no GPU instance type, no pool label) needs no pool labels."""
    system = res("aws:eks/nodeGroup:NodeGroup", "ng-system", {"amiType": "AL2023_x86_64_STANDARD",
                                                              "instanceTypes": ["m7i.large"], "labels": {}})
    assert run("gpu-node-group-labels", [system]) == []
    assert run("aws-gpu-cost-tags", [system]) == []


def test_tags_keep_their_values_in_launch_templates() -> None:
    """The instance tags are the pool's tags, so the bill splits like the scheduler does."""
    w = world()
    assert inputs(w, "lt-train")["tagSpecifications"][0]["tags"] == cost_tags(TRAIN)
