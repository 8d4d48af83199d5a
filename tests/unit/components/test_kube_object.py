"""The platform's labels on its objects (components/kube_object.py and the rule in docs/architecture.md,
"Labels on the platform's objects"): managed-by everywhere, the component label from Tenancy, Storage,
Admission and the platform namespaces, none from Queues and Karpenter. Expected labels are literal: the
team's come from Pulumi.local.yaml, the pool's from Pulumi.staging.yaml's h100-train pool."""

from __future__ import annotations

from typing import Any

import pytest

from components.kube_object import object_labels, object_metadata
from tests.conftest import KARPENTER_STACK, rendered

MANAGED = {"app.kubernetes.io/managed-by": "gpu-platform"}


def labels_of(stack: str, kind: str, name: str, namespace: str | None = None) -> dict[str, Any]:
    found = [o for o in rendered(stack).kubernetes_objects()
             if o["kind"] == kind and o["metadata"]["name"] == name and o["metadata"].get("namespace") == namespace]
    assert len(found) == 1, (kind, name, namespace, len(found))
    return found[0]["metadata"]["labels"]


def test_the_platforms_labels_come_last_so_a_callers_labels_cannot_replace_them() -> None:
    got = object_labels({"app.kubernetes.io/managed-by": "helm", "app.kubernetes.io/component": "x", "a": "b"},
                        component="storage")
    assert got == {"a": "b", "app.kubernetes.io/managed-by": "gpu-platform", "app.kubernetes.io/component": "storage"}


def test_without_a_component_only_managed_by_is_added() -> None:
    assert object_labels() == MANAGED
    assert object_metadata("f", labels={"a": "b"}) == {"name": "f", "labels": {"a": "b", **MANAGED}}
    assert object_metadata("s", "kueue-system") == {"name": "s", "namespace": "kueue-system", "labels": MANAGED}


def test_platform_namespace_labels_say_part_of_the_platform() -> None:
    assert object_labels(component="alerts", part_of=True) == {
        **MANAGED, "app.kubernetes.io/part-of": "gpu-platform", "app.kubernetes.io/component": "alerts",
    }


@pytest.mark.parametrize(("kind", "name"), [
    ("ResourceFlavor", "cpu-only"), ("Cohort", "org"), ("Topology", "aws-network"),
    ("WorkloadPriorityClass", "development"), ("PriorityClass", "development"),
])
def test_queues_objects_carry_managed_by_only(kind: str, name: str) -> None:
    assert labels_of("local", kind, name) == MANAGED


def test_a_cluster_queue_carries_its_teams_labels_and_no_component() -> None:
    assert labels_of("local", "ClusterQueue", "nlp") == {
        **MANAGED, "gpu-platform.io/team": "nlp", "gpu-platform.io/cost-center": "cc-2002",
        "gpu-platform.io/environment": "local",
    }


def test_a_teams_local_queue_is_tenancys() -> None:
    assert labels_of("local", "LocalQueue", "default", "nlp") == {
        **MANAGED, "app.kubernetes.io/component": "tenancy", "gpu-platform.io/team": "nlp",
    }


@pytest.mark.parametrize("kind", ["ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"])
@pytest.mark.parametrize("name", [
    "tenant-workloads.gpu-platform.io", "tenant-priorities.gpu-platform.io", "tenant-network-policies.gpu-platform.io",
    "tenant-images.gpu-platform.io", "tenant-job-cleanup.gpu-platform.io",
])
def test_admission_objects_are_admissions(kind: str, name: str) -> None:
    assert labels_of("local", kind, name) == {**MANAGED, "app.kubernetes.io/component": "admission"}


def test_a_platform_namespace_is_part_of_the_platform_under_its_add_ons_name() -> None:
    labels = labels_of("local", "Namespace", "gpu-operator")
    assert {k: v for k, v in labels.items() if k.startswith("app.kubernetes.io/")} == {
        "app.kubernetes.io/managed-by": "gpu-platform", "app.kubernetes.io/part-of": "gpu-platform",
        "app.kubernetes.io/component": "gpu-operator",
    }


@pytest.mark.parametrize("kind", ["NodePool", "EC2NodeClass"])
def test_karpenter_objects_carry_the_pool_labels_and_no_component(kind: str) -> None:
    assert labels_of(KARPENTER_STACK, kind, "h100-train") == {
        **MANAGED, "gpu-platform.io/pool": "h100-train", "gpu-platform.io/accelerator": "h100-80gb",
        "gpu-platform.io/topology": "8gpu-sxm-nvlink", "gpu-platform.io/fabric": "efa",
        "gpu-platform.io/workload": "training", "gpu-platform.io/sharing": "full-gpu",
    }


def test_the_default_storage_class_is_storages() -> None:
    assert labels_of(KARPENTER_STACK, "StorageClass", "gp3") == {**MANAGED, "app.kubernetes.io/component": "storage"}
