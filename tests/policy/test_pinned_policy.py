"""The pack on the rendered stacks at their edges, with the numbers worked out from the stack files.

prod's a100-mig pool is 4 x p4de.24xlarge x 8 A100 x 7 MIG 1g.10gb slices = 224 units, quoted 56
(llm-finetune) + 112 (vision) + 56 (data-science) = 224: exactly full. local's pools have no node groups
(provider existing); their capacity travels on the flavors' annotation: train 2 x 8 = 16 (8 + 8 quoted),
infer 2 x 4 x 4 = 32 (32), notebooks 1 x 8 x 7 = 56 (28 + 28). One unit more than a pool holds is refused by
`nominal-quota-fits-capacity`, naming the flavor, the sum and the capacity; exactly full is clean.
"""

from __future__ import annotations

import functools
import pickle
from typing import Any

import pytest

from tests.conftest import rendered
from tests.policy.helpers import run

Resources = list[dict[str, Any]]
RULE = "nominal-quota-fits-capacity"
CAPACITY_ANNOTATION = "gpu-platform.io/capacity-units"


@functools.cache
def _data(stack: str) -> tuple[dict[str, Any], ...]:
    return tuple(r.to_json() for r in rendered(stack).custom)


def data(stack: str) -> Resources:
    return pickle.loads(pickle.dumps(list(_data(stack)), protocol=pickle.HIGHEST_PROTOCOL))


def kube(resources: Resources, kind: str, name: str) -> dict[str, Any]:
    (found,) = [r["inputs"] for r in resources
                if r["inputs"].get("kind") == kind and r["inputs"]["metadata"].get("name") == name]
    return found


def gpu_quota(resources: Resources, team: str, flavor: str) -> dict[str, Any]:
    (group,) = kube(resources, "ClusterQueue", team)["spec"]["resourceGroups"]
    (fl,) = [f for f in group["flavors"] if f["name"] == flavor]
    (row,) = [r for r in fl["resources"] if r["name"].startswith("nvidia.com/") and r["nominalQuota"] != "0"]
    return row


def messages(resources: Resources) -> list[str]:
    return [f"{f.resource}: {f.message}" for f in run(RULE, resources)]


def test_prod_mig_pool_exactly_full_is_clean_and_one_slice_more_refused() -> None:
    r = data("prod")
    assert gpu_quota(r, "vision", "a100-mig") == {"name": "nvidia.com/mig-1g.10gb", "nominalQuota": "112",
                                                  "lendingLimit": "56"}
    assert messages(r) == []
    gpu_quota(r, "vision", "a100-mig")["nominalQuota"] = "113"
    (message,) = messages(r)
    assert message == ("kueue-flavor-a100-mig: nominal quotas on flavor 'a100-mig' add up to 225 units (ClusterQueues "
                       "'kueue-cq-data-science', 'kueue-cq-llm-finetune', 'kueue-cq-vision'), more than its pool's "
                       "capacity of 224")


def test_prod_node_group_one_node_smaller_no_longer_holds_the_quotas() -> None:
    r = data("prod")
    (group,) = [x["inputs"] for x in r if x["name"] == "np-a100-mig" and x["type"] == "aws:eks/nodeGroup:NodeGroup"]
    group["scalingConfig"]["maxSize"] = 3
    # 3 x 8 x 7 = 168, below the 224 the flavor's annotation says and the quotas add up to.
    disagrees, over = messages(r)
    assert disagrees.startswith("kueue-flavor-a100-mig: annotation gpu-platform.io/capacity-units=224 disagrees")
    assert "holds 168 units at its max size" in disagrees
    assert "add up to 224 units" in over and "capacity of 168" in over


def test_local_flavors_carry_their_pools_capacity() -> None:
    r = data("local")
    assert {name: kube(r, "ResourceFlavor", name)["metadata"]["annotations"][CAPACITY_ANNOTATION]
            for name in ("train", "infer", "notebooks")} == {"train": "16", "infer": "32", "notebooks": "56"}


@pytest.mark.parametrize("team,flavor,nominal,capacity", [
    ("vision", "train", 9, 16), ("serving", "infer", 33, 32), ("nlp", "notebooks", 29, 56)])
def test_local_one_unit_over_the_annotated_capacity_is_refused(team: str, flavor: str, nominal: int,
                                                               capacity: int) -> None:
    r = data("local")
    assert messages(r) == []
    gpu_quota(r, team, flavor)["nominalQuota"] = str(nominal)
    (message,) = messages(r)
    assert f"flavor {flavor!r} add up to {capacity + 1} units" in message and f"capacity of {capacity}" in message


# Every source of the GPU resource names a namespace quota must cap (the pools' node labels, the flavors' node
# labels, the queues' covered resources): an unknown value in any one of them is reported against the resource
# that holds it, and the rule goes on with the rest of the stack.
@pytest.mark.parametrize("resource,path", [
    ("ng-train", ("labels",)),
    ("flavor-train", ("spec", "nodeLabels")),
    ("cq-alpha", ("spec", "resourceGroups")),
])
def test_namespace_quota_rule_reports_an_unknown_gpu_resource_source_where_it_is(resource: str,
                                                                                 path: tuple[str, ...]) -> None:
    from pulumi_policy.proxy import UNKNOWN_ARRAY_VALUE, UNKNOWN_OBJECT_VALUE

    from policies.gpu_policies.offline import check_resources
    from tests.policy.helpers import find, policy, world

    w = world()
    rule = policy("namespace-resource-quota")
    assert check_resources(w, policies=[rule]) == []
    node = find(w, resource)["inputs"]
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = UNKNOWN_ARRAY_VALUE if path[-1] == "resourceGroups" else UNKNOWN_OBJECT_VALUE
    found = check_resources(w, policies=[rule])
    assert found and all("cannot be verified" in v.message for v in found)
    assert {v.urn.rsplit("::", 1)[1] for v in found} == {resource}, found


def test_a_granted_priority_that_is_no_priority_class_of_the_stack_is_refused() -> None:
    """Pulumi.prod.yaml search-serving: priorities [production-inference, training, development]; a grant of
    one the stack does not define (a typo) would leave the team's jobs refused by admission."""
    r = data("prod")
    assert run("tenant-priorities", r) == []
    ns = kube(r, "Namespace", "search-serving")
    annotations = ns["metadata"]["annotations"]
    key = "gpu-platform.io/allowed-priorities"
    assert annotations[key].split(",") == ["production-inference", "training", "development"]
    annotations[key] = "production-inference,trainig"
    (found,) = run("tenant-priorities", r)
    assert "tenant namespace 'search-serving' is granted 'trainig', which are not PriorityClasses of the stack" in found.message
