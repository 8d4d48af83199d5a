"""`nominal-quota-fits-capacity` on a preview where a flavor's capacity is not known yet: the rule reports that
flavor as one it cannot verify (failing closed) and goes on, instead of crashing or passing it. World: the
pack's offline engine on tests/policy/helpers.world() (shaped as the engine passes resources)."""

from __future__ import annotations

from pulumi_policy.proxy import UNKNOWN_OBJECT_VALUE

from policies.gpu_policies.offline import check_resources
from tests.policy.helpers import find, policy, world


def test_an_unknown_capacity_annotation_is_reported_against_its_flavor() -> None:
    w = world()
    rule = policy("nominal-quota-fits-capacity")
    assert check_resources(w, policies=[rule]) == []
    assert find(w, "flavor-train")["inputs"]["metadata"]["annotations"] == {"gpu-platform.io/capacity-units": "16"}
    find(w, "flavor-train")["inputs"]["metadata"]["annotations"] = UNKNOWN_OBJECT_VALUE
    assert [(v.urn.rsplit("::", 1)[1], v.message) for v in check_resources(w, policies=[rule])] == [
        ("flavor-train", "cannot be verified: Object value at .metadata.annotations can't be known during preview; "
                         "the rule fails closed on unknown values")]
