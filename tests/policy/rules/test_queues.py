"""The queue rules (policies/gpu_policies/queues.py): ClusterQueues select one team's namespaces, flavors match
their pool and one workload, quotas fit the pools' capacity and the namespaces' caps cover them."""

from __future__ import annotations

import pytest

from gpu_platform import conventions as cv

from tests.policy.helpers import ALPHA, BETA, INFER, MIG, TRAIN, find, named, run, world
from tests.policy.rules.cases import (
    Allowed, Disallowed, check_allowed, check_disallowed, drop, inputs, on_karpenter, quota, spec, template,
)


# (what, rule, mutation, resource the violation names, words the message contains)
DISALLOWED: list[Disallowed] = [
    ("cluster queue selector cleared", "cluster-queue-namespace-selector",
     lambda w: spec(w, "cq-alpha").update(namespaceSelector={}), "cq-alpha", "empty"),
    ("cluster queue selector removed", "cluster-queue-namespace-selector",
     lambda w: spec(w, "cq-alpha").pop("namespaceSelector"), "cq-alpha", "no namespaceSelector"),
    ("cluster queue selecting a system namespace", "cluster-queue-tenant-scope",
     lambda w: spec(w, "cq-alpha").update(namespaceSelector={"matchExpressions": [
         {"key": cv.NAMESPACE_NAME_LABEL, "operator": "In", "values": [ALPHA.name, cv.KUBE_SYSTEM_NAMESPACE]}]}),
     "cq-alpha", cv.KUBE_SYSTEM_NAMESPACE),
    ("cluster queue selecting every namespace but one", "cluster-queue-tenant-scope",
     lambda w: spec(w, "cq-alpha").update(namespaceSelector={"matchExpressions": [
         {"key": cv.NAMESPACE_NAME_LABEL, "operator": "NotIn", "values": [BETA.name]}]}),
     "cq-alpha", "system namespace"),
    ("cluster queue selecting two teams", "cluster-queue-tenant-scope",
     lambda w: spec(w, "cq-alpha").update(namespaceSelector={"matchExpressions": [
         {"key": cv.TEAM, "operator": "Exists"}]}), "cq-alpha", "several teams"),
    ("flavor without a pool label", "resource-flavor-matches-pool",
     lambda w: spec(w, "flavor-train")["nodeLabels"].pop(cv.FABRIC), "flavor-train", cv.FABRIC),
    ("flavor of a pool with no node group", "resource-flavor-matches-pool",
     lambda w: spec(w, "flavor-train")["nodeLabels"].update({cv.POOL: "ghost"}), "flavor-train", "no node group"),
    ("flavor selecting a label its node group lacks", "resource-flavor-matches-pool",
     lambda w: spec(w, "flavor-train")["nodeLabels"].update({cv.FABRIC: "efa"}), "flavor-train", cv.FABRIC),
    ("flavor not tolerating the GPU taint", "resource-flavor-matches-pool",
     lambda w: spec(w, "flavor-infer")["tolerations"].pop(0), "flavor-infer", "GPU taint"),
    ("flavor not tolerating a node group taint", "resource-flavor-matches-pool",
     lambda w: inputs(w, "ng-infer")["taints"].append({"key": "dedicated", "value": "x", "effect": "NO_EXECUTE"}),
     "flavor-infer", "dedicated"),
    ("flavor without the workload label", "flavor-single-workload",
     lambda w: spec(w, "flavor-train")["nodeLabels"].pop(cv.WORKLOAD), "flavor-train", "every workload"),
    ("flavor tolerating every workload taint", "flavor-single-workload",
     lambda w: spec(w, "flavor-train")["tolerations"][1].update(operator="Exists", value=None), "flavor-train",
     "Exists"),
    ("flavor tolerating another workload", "flavor-single-workload",
     lambda w: spec(w, "flavor-train")["tolerations"][1].update(value="inference"), "flavor-train", "inference"),
    ("flavor matching training and inference node groups", "flavor-single-workload",
     lambda w: spec(w, "flavor-train").update(nodeLabels={cv.ACCELERATOR: TRAIN.labels[cv.ACCELERATOR]}) or
     inputs(w, "ng-infer")["labels"].update({cv.ACCELERATOR: TRAIN.labels[cv.ACCELERATOR]}),
     "flavor-train", "training"),
    ("cluster queue using a missing flavor", "cluster-queue-flavors",
     drop("flavor-infer"), "cq-beta", "infer"),
    ("cluster queue quoting whole GPUs on a MIG flavor", "cluster-queue-flavors",
     lambda w: quota(w, "cq-alpha", MIG.name, TRAIN.resource).update(nominalQuota="4"),
     "cq-alpha", MIG.resource),
    ("quotas over a node group's capacity", "nominal-quota-fits-capacity",
     lambda w: inputs(w, "ng-train")["scalingConfig"].update(maxSize=0.0), "flavor-train", "capacity"),
    ("capacity annotation disagreeing with the node group", "nominal-quota-fits-capacity",
     lambda w: inputs(w, "flavor-train")["metadata"]["annotations"].update(
         {cv.FLAVOR_CAPACITY_ANNOTATION: str(TRAIN.capacity * 2)}), "flavor-train", "disagrees"),
    ("non-numeric nominal quota", "nominal-quota-fits-capacity",
     lambda w: quota(w, "cq-beta", INFER.name, INFER.resource).update(nominalQuota="lots"),
     "cq-beta", "whole number"),
    ("flavor selecting a label the NodePool lacks", "resource-flavor-matches-pool",
     on_karpenter(lambda w: template(w, "np-train")["metadata"]["labels"].update({cv.FABRIC: "efa"})),
     "flavor-train", "NodePool"),
    ("quota above a NodePool's capacity", "nominal-quota-fits-capacity",
     on_karpenter(lambda w: quota(w, "cq-alpha", TRAIN.name, cv.GPU_RESOURCE).update(nominalQuota=str(TRAIN.capacity + 1))),
     "flavor-train", "more than its pool's capacity"),
    ("CPU-only flavor tolerating the GPU taint", "cpu-only-flavor",
     lambda w: spec(w, "flavor-cpu-only").update(tolerations=[{"key": cv.GPU_TAINT_KEY, "operator": "Exists"}]),
     "flavor-cpu-only", "tolerates the GPU taint"),
    ("CPU-only flavor selecting a pool", "cpu-only-flavor",
     lambda w: spec(w, "flavor-cpu-only").update(nodeLabels={cv.POOL: TRAIN.name}), "flavor-cpu-only",
     "selects GPU pool label"),
    ("ClusterQueue granting GPUs on the CPU-only flavor", "cpu-only-flavor",
     lambda w: spec(w, "cq-alpha")["resourceGroups"][0]["flavors"][0]["resources"][2].update(nominalQuota="2"),
     "cq-alpha", "on the CPU-only flavor"),
    ("namespace GPU cap below what its queue is admitted for", "namespace-quota-covers-queue",
     lambda w: spec(w, "quota-alpha")["hard"].update({f"requests.{cv.GPU_RESOURCE}": "4"}), "quota-alpha",
     f"caps requests.{cv.GPU_RESOURCE} at 4, but ClusterQueue 'alpha' can be admitted for up to 8"),
]


@pytest.mark.parametrize("case", DISALLOWED, ids=[c[0] for c in DISALLOWED])
def test_disallowed_is_reported(case: Disallowed) -> None:
    check_disallowed(case)


# (what, rule, mutation); cases that need config have tests of their own
ALLOWED: list[Allowed] = [
    ("selector by namespace name", "cluster-queue-tenant-scope",
     lambda w: spec(w, "cq-alpha").update(namespaceSelector={"matchExpressions": [
         {"key": cv.NAMESPACE_NAME_LABEL, "operator": "In", "values": [ALPHA.name]}]})),
    ("flavor listing the pool taints as nodeTaints", "resource-flavor-matches-pool",
     lambda w: spec(w, "flavor-train").update(nodeTaints=spec(w, "flavor-train").pop("tolerations"))),
    ("zero quota for another pool's resource on a flavor", "cluster-queue-flavors", lambda w: None),
    ("quotas exactly at capacity", "nominal-quota-fits-capacity",
     lambda w: quota(w, "cq-alpha", TRAIN.name, TRAIN.resource).update(nominalQuota=str(TRAIN.capacity))),
]


@pytest.mark.parametrize("case", ALLOWED, ids=[c[0] for c in ALLOWED])
def test_allowed_passes(case: Allowed) -> None:
    check_allowed(case)


def test_an_existing_cluster_needs_the_capacity_annotation() -> None:
    """Without node groups a flavor's capacity comes only from its annotation: a missing one fails closed,
    and a present one bounds the quotas."""
    w = world(eks=False)
    find(w, "flavor-train")["inputs"]["metadata"].pop("annotations")
    found = run("nominal-quota-fits-capacity", w)
    assert any("unknown" in m for m in named(found, "flavor-train"))
    find(w, "flavor-infer")["inputs"]["metadata"]["annotations"][cv.FLAVOR_CAPACITY_ANNOTATION] = "4"
    assert any("more than" in m for m in named(run("nominal-quota-fits-capacity", w), "flavor-infer"))
