"""The order `pulumi up` installs the charts in: each Helm release waits for what it needs on its first start
(its namespace and config maps, the CRDs it watches, the Pod Identity agent and IAM policies it takes its AWS
credentials from, the JobSet controller Trainer runs on). A release that starts early crash-loops or runs
without credentials until someone restarts it. World: prod and staging-karpenter rendered under mocks (the
shared renders); a resource's dependencies are the resources it was told to wait for, by name."""

from __future__ import annotations

from tests.conftest import KARPENTER_STACK, rendered

RELEASE = "kubernetes:helm.sh/v3:Release"
# release -> (its component, what it waits for)
COMMON = {
    "aws-efa-k8s-device-plugin": ("efa-device-plugin", []),
    "gpu-operator": ("gpu-operator", ["gpu-operator-device-plugin-config", "gpu-operator-mig-parted-config", "ns-gpu-operator"]),
    "jobset": ("workload-controllers", ["jobset-namespace"]),
    "kubeflow-trainer": ("workload-controllers", ["jobset", "kubeflow-trainer-namespace"]),
    "kuberay-operator": ("workload-controllers", ["kuberay-operator-namespace"]),
    "kueue": ("queues", ["kueue-namespace", "provisioning-request-crd"]),
    "lws": ("workload-controllers", ["lws-namespace"]),
}


def releases(stack: str) -> dict[str, tuple[str | None, list[str]]]:
    return {x.name: (x.parent, x.options["dependencies"]) for x in rendered(stack).by_type(RELEASE)}


def test_prods_releases_wait_for_their_namespaces_configs_crds_and_credentials() -> None:
    assert releases("prod") == {
        **COMMON,
        "cluster-autoscaler": ("cluster-autoscaler", ["cluster-autoscaler", "cluster-autoscaler", "provisioning-request-crd",
                                                      "storage-pod-identity-agent"]),
        "kube-prometheus-stack": ("observability", ["ns-monitoring"]),
    }


def test_karpenter_waits_for_its_crds_policies_and_pod_identity() -> None:
    got = releases(KARPENTER_STACK)
    assert {k: v for k, v in got.items() if k.startswith("karpenter")} == {
        "karpenter-crd": ("karpenter", []),
        "karpenter": ("karpenter", ["karpenter-controller", "karpenter-crd", "karpenter-eks-integration",
                                    "karpenter-iam-integration", "karpenter-interruption", "karpenter-node-lifecycle",
                                    "karpenter-pod-identity-agent", "karpenter-resource-discovery"]),
    }
    assert got["cluster-autoscaler"] == ("cluster-autoscaler", ["cluster-autoscaler", "cluster-autoscaler",
                                                                "karpenter-pod-identity-agent", "provisioning-request-crd"])
