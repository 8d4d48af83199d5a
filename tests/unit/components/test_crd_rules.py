"""The reference CRDs' CEL rules (x-kubernetes-validations), evaluated offline on the rendered objects
(tests/crd_schema.py, cel-python): every rule the platform's objects reach is judged, and a copy that
breaks one is refused with the CRD's own message. The integration layer runs the same cases against a
real kube-apiserver (tests/integration/test_karpenter_crds.py)."""

from __future__ import annotations

import copy
from typing import Any, Callable

import pytest

from gpu_platform import conventions as cv
from tests import crd_schema
from tests.conftest import KARPENTER_STACK, rendered
from tests.integration.test_karpenter_crds import REJECTED as KARPENTER_REJECTED


def crd_objects(stack: str) -> list[dict[str, Any]]:
    return [o for o in rendered(stack).kubernetes_objects() if crd_schema.known(o["apiVersion"], o["kind"])]


@pytest.mark.parametrize("stack", ["local", "staging", "prod", KARPENTER_STACK])
def test_every_rule_the_rendered_objects_reach_is_evaluated_and_holds(stack: str) -> None:
    objs = crd_objects(stack)
    kinds = {o["kind"] for o in objs}
    assert {"ClusterQueue", "ResourceFlavor", "LocalQueue"} <= kinds, kinds
    crd_schema.UNEVALUATED.clear()
    for obj in objs:
        assert crd_schema.validate(obj, rules=True) == [], (obj["kind"], obj["metadata"]["name"])
    assert crd_schema.UNEVALUATED == {}, "rules cel-python could not evaluate (left to the API server)"


def _first(stack: str, kind: str, pred: Callable[[dict[str, Any]], bool] = lambda o: True) -> dict[str, Any]:
    return copy.deepcopy(next(o for o in crd_objects(stack) if o["kind"] == kind and pred(o)))


def _hostname_first(o: dict[str, Any]) -> None:
    o["spec"]["levels"] = [{"nodeLabel": "kubernetes.io/hostname"}, *o["spec"]["levels"][:-1]]


def _duplicate_level(o: dict[str, Any]) -> None:
    o["spec"]["levels"] = [*o["spec"]["levels"], o["spec"]["levels"][0]]


def _topology_without_node_labels(o: dict[str, Any]) -> None:
    o["spec"]["nodeLabels"] = {}


def _toleration_seconds_without_no_execute(o: dict[str, Any]) -> None:
    o["spec"]["tolerations"] = [{"key": cv.GPU_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule",
                                 "tolerationSeconds": 30}]


KUEUE_REJECTED = [
    ("hostname above the lowest topology level", lambda: _first("prod", "Topology"), _hostname_first,
     "the kubernetes.io/hostname label can only be used at the lowest level of topology"),
    ("a topology level twice", lambda: _first("prod", "Topology"), _duplicate_level, "must be unique"),
    ("a topology flavor without node labels",
     lambda: _first("prod", "ResourceFlavor", lambda o: "topologyName" in o["spec"]), _topology_without_node_labels,
     "at least one nodeLabel is required when topology is set"),
    ("tolerationSeconds on a NoSchedule toleration", lambda: _first("prod", "ResourceFlavor"),
     _toleration_seconds_without_no_execute, "effect must be 'NoExecute' when 'tolerationSeconds' is set"),
]
# The EFA node class cases stay with the API server (tests/integration/test_karpenter_crds.py): its
# one-EFA-device-per-card rule is quadratic in the 33 interfaces and takes cel-python a second per copy;
# the node class itself is judged offline once above.
CASES = KUEUE_REJECTED + [c for c in KARPENTER_REJECTED if c[1].__name__ != "_efa_node_class"]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_a_copy_breaking_a_rule_is_refused_with_the_crds_message(case) -> None:
    _, make, mutate, message = case
    obj = make()
    assert crd_schema.validate(obj, rules=True) == []
    mutate(obj)
    errors = crd_schema.validate(obj, rules=True)
    assert any(message in e for e in errors), errors


def test_a_rule_whose_function_cel_python_lacks_is_recorded_not_passed() -> None:
    schema = {"type": "object", "properties": {"x": {"type": "string"}},
              "x-kubernetes-validations": [{"rule": "self.x.isFrobnicated()", "message": "frobnicated"},
                                           {"rule": "self.x == 'b'", "message": "x must be b"}]}
    errors: list[str] = []
    crd_schema.UNEVALUATED.clear()
    crd_schema._check_rules({"x": "a"}, schema, ".spec", errors)
    assert errors == [".spec: x must be b"]
    assert list(crd_schema.UNEVALUATED) == [(".spec", "self.x.isFrobnicated()")]
    crd_schema.UNEVALUATED.clear()
