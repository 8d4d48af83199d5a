"""The NodePools and EC2NodeClasses of the staging-karpenter stack against the real Karpenter 1.15.2 CRDs on
the live local cluster's API server (installed from ../shared/crds/karpenter-v1.15.2, the module's
charts/karpenter-crd), so their OpenAPI schemas and CEL rules (x-kubernetes-validations) judge every
object as they would on EKS. The offline schema check (tests/crd_schema.py) has no CEL; this does.

Objects are dry-run created on the server: nothing Karpenter-side runs here, and nothing is left behind.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from gpu_platform import conventions as cv
from tests.conftest import KARPENTER_STACK, plan_of, rendered
from tests.realtools import Cluster

KINDS = ("NodePool", cv.KARPENTER_NODECLASS_KIND)


def karpenter_objects() -> list[dict[str, Any]]:
    return [o for o in rendered(KARPENTER_STACK).kubernetes_objects() if o["kind"] in KINDS]


def dry_run(cluster: Cluster, *objs: dict[str, Any]):
    return cluster.kubectl("create", "--dry-run=server", "-o", "name", "-f", "-", check=False,
                           input=json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objs)}))


def test_the_crds_are_served(cluster: Cluster) -> None:
    names = {c["metadata"]["name"] for c in cluster.get("crd")["items"]}
    assert {"nodepools.karpenter.sh", "ec2nodeclasses.karpenter.k8s.aws"} <= names


def test_every_rendered_node_pool_and_node_class_passes_the_crds_and_their_cel_rules(cluster: Cluster) -> None:
    objs = karpenter_objects()
    assert len(objs) == 2 * len(plan_of(KARPENTER_STACK).karpenter_pools)
    out = dry_run(cluster, *objs)
    assert out.returncode == 0, out.stderr
    assert len(out.stdout.split()) == len(objs)


def _one(kind: str, name: str) -> dict[str, Any]:
    return copy.deepcopy(next(o for o in karpenter_objects() if o["kind"] == kind and o["metadata"]["name"] == name))


def _efa_node_class() -> dict[str, Any]:
    pool = next(p for p in plan_of(KARPENTER_STACK).karpenter_pools if p.efa_interfaces)
    return _one(cv.KARPENTER_NODECLASS_KIND, pool.karpenter.nodeclass)


def _node_pool() -> dict[str, Any]:
    return _one("NodePool", plan_of(KARPENTER_STACK).karpenter_pools[0].karpenter.nodepool)


def _no_primary(o: dict[str, Any]) -> None:
    o["spec"]["networkInterfaces"] = o["spec"]["networkInterfaces"][1:]


def _two_efa_on_card_0(o: dict[str, Any]) -> None:
    o["spec"]["networkInterfaces"].append({"networkCardIndex": 0, "deviceIndex": 2, "interfaceType": "efa-only"})


def _restricted_label(o: dict[str, Any]) -> None:
    o["spec"]["template"]["metadata"]["labels"]["karpenter.sh/pool"] = "x"


def _wrong_family(o: dict[str, Any]) -> None:
    o["spec"]["amiFamily"] = "Bottlerocket"


# (what, object, mutation, the CRD's own message)
REJECTED = [
    ("EFA interfaces without the primary ENA interface", _efa_node_class, _no_primary,
     "networkInterfaces must include a primary interface with interfaceType='interface'"),
    ("two EFA-only interfaces on one card", _efa_node_class, _two_efa_on_card_0,
     "can have at most one efa device per network card"),
    ("an AMI family that is not the alias's", _efa_node_class, _wrong_family,
     "amiFamily must be 'AL2023' or 'Custom' when using an AL2023 alias"),
    ("a node label in Karpenter's own domain", _node_pool, _restricted_label,
     'label domain "karpenter.sh" is restricted'),
]


@pytest.mark.parametrize("case", REJECTED, ids=[c[0] for c in REJECTED])
def test_the_cel_rules_are_live(cluster: Cluster, case) -> None:
    """Each rule the rendered objects pass is really enforced: a copy breaking it is refused with its message."""
    _, make, mutate, message = case
    obj = make()
    mutate(obj)
    out = dry_run(cluster, obj)
    assert out.returncode != 0 and message in out.stderr, out.stderr
