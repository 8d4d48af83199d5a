"""Every rule over fixtures shaped as the engine passes them: a compliant world passes; each allowed
variation passes; each disallowed variation is reported by that rule, against the resource at fault."""

from __future__ import annotations

import copy
from typing import Any, Callable

import pytest

from gpu_platform import conventions as cv
from policies.gpu_policies.pack import POLICIES

from tests.policy.helpers import (
    ALPHA,
    BETA,
    CLUSTER_ROLE,
    CLUSTER_ROLE_BINDING,
    DEPLOYMENT,
    INFER,
    MIG,
    NAMESPACE,
    NETWORK_POLICY,
    PLACEMENT_GROUP,
    POD,
    RBAC,
    ROLE,
    ROLE_BINDING,
    TRAIN,
    cost_tags,
    cpu_pod_spec,
    find,
    gpu_pod_spec,
    job,
    meta,
    named,
    res,
    run,
    world,
)

World = list[dict[str, Any]]


def inputs(w: World, name: str) -> dict[str, Any]:
    return find(w, name)["inputs"]


def labels_of(w: World, name: str) -> dict[str, Any]:
    return inputs(w, name)["metadata"]["labels"]


def spec(w: World, name: str) -> dict[str, Any]:
    return inputs(w, name)["spec"]


def quota(w: World, cq: str, flavor: str, resource: str) -> dict[str, Any]:
    """The quota entry of `resource` on `flavor` in ClusterQueue `cq` (a mutable part of the world)."""
    for group in spec(w, cq)["resourceGroups"]:
        for fl in group["flavors"]:
            if fl["name"] == flavor:
                return next(r for r in fl["resources"] if r["name"] == resource)
    raise KeyError((cq, flavor, resource))


def add(*resources: dict[str, Any]) -> Callable[[World], None]:
    return lambda w: w.extend(copy.deepcopy(list(resources)))


def drop(name: str) -> Callable[[World], None]:
    return lambda w: w.remove(find(w, name))


@pytest.mark.parametrize("kind", ["eks", "existing", "karpenter"])
@pytest.mark.parametrize("rule", [p.name for p in POLICIES])
def test_compliant_world_passes(rule: str, kind: str) -> None:
    assert run(rule, world(kind != "existing", karpenter=kind == "karpenter")) == []


def on_karpenter(mutate: Callable[[World], None]) -> Callable[[World], None]:
    """Run `mutate` on the world whose train pool is a Karpenter NodePool and EC2NodeClass."""
    def f(w: World) -> None:
        w[:] = world(karpenter=True)
        mutate(w)
    return f


def template(w: World, name: str) -> dict[str, Any]:
    return spec(w, name)["template"]


# (rule, mutation, resource the violation names, words the message contains)
DISALLOWED: list[tuple[str, str, Callable[[World], None], str | None, str]] = [
    # labeling
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
    # isolation
    ("tenant namespace enforcing privileged", "namespace-pod-security",
     lambda w: labels_of(w, "ns-alpha").update({cv.PSA_ENFORCE: "privileged"}), "ns-alpha", "privileged"),
    ("tenant namespace without an enforce label", "namespace-pod-security",
     lambda w: labels_of(w, "ns-alpha").pop(cv.PSA_ENFORCE), "ns-alpha", cv.PSA_ENFORCE),
    ("privileged namespace not allowlisted", "privileged-namespaces",
     lambda w: labels_of(w, "ns-beta").update({cv.PSA_ENFORCE: "privileged"}), "ns-beta", "privileged"),
    ("system namespace without an enforce label", "privileged-namespaces",
     add(res(NAMESPACE, "ns-kueue", {"metadata": {"name": cv.KUEUE_NAMESPACE}})), "ns-kueue", "default"),
    ("namespace with a bogus Pod Security level", "privileged-namespaces",
     lambda w: labels_of(w, "ns-alpha").update({cv.PSA_ENFORCE: "lenient"}), "ns-alpha", "not a Pod Security level"),
    ("quota dropped", "namespace-resource-quota", drop("quota-alpha"), "ns-alpha", "ResourceQuota"),
    ("MIG resource uncapped", "namespace-resource-quota",
     lambda w: spec(w, "quota-beta")["hard"].pop(f"requests.{MIG.resource}"), "ns-beta", MIG.resource),
    ("quota only in a scope", "namespace-resource-quota",
     lambda w: spec(w, "quota-alpha").update(scopes=["BestEffort"]), "ns-alpha", "ResourceQuota"),
    ("fractional GPU quota", "namespace-resource-quota",
     lambda w: spec(w, "quota-alpha")["hard"].update({f"requests.{TRAIN.resource}": "1500m"}), "ns-alpha",
     "whole number"),
    ("limit range dropped", "namespace-limit-range", drop("limits-alpha"), "ns-alpha", "LimitRange"),
    ("default deny dropped", "namespace-default-deny", drop("deny-alpha"), "ns-alpha", "Ingress and Egress"),
    ("default deny for ingress only", "namespace-default-deny",
     lambda w: spec(w, "deny-alpha").update(policyTypes=["Ingress"]), "ns-alpha", "Egress"),
    ("default deny that selects some pods only", "namespace-default-deny",
     lambda w: spec(w, "deny-alpha").update(podSelector={"matchLabels": {"app": "x"}}), "ns-alpha", "default-deny"),
    ("default deny that allows all ingress", "namespace-default-deny",
     lambda w: spec(w, "deny-alpha").update(ingress=[{}]), "ns-alpha", "Ingress"),
    ("DNS allow dropped", "namespace-dns-allow", drop("dns-alpha"), "ns-alpha", "UDP"),
    ("DNS allowed over TCP only", "namespace-dns-allow",
     lambda w: spec(w, "dns-alpha")["egress"][0].update(ports=[{"port": cv.DNS_PORT}]), "ns-alpha", "UDP"),
    ("local queue dropped", "namespace-local-queue", drop("lq-alpha"), "ns-alpha", "LocalQueue"),
    ("local queue to a missing cluster queue", "namespace-local-queue",
     lambda w: spec(w, "lq-alpha").update(clusterQueue="nope"), "lq-alpha", "not in the stack"),
    ("local queue to another team's cluster queue", "namespace-local-queue",
     lambda w: spec(w, "lq-alpha").update(clusterQueue=BETA.name), "lq-alpha", "does not select"),
    # rbac
    ("tenant RoleBinding to cluster-admin", "tenant-no-cluster-admin",
     lambda w: inputs(w, "rb-alpha-admins")["roleRef"].update(name=cv.CLUSTER_ROLE_CLUSTER_ADMIN), "rb-alpha-admins",
     cv.CLUSTER_ROLE_CLUSTER_ADMIN),
    ("tenant Role with wildcard verbs", "tenant-role-wildcards",
     add(res(ROLE, "role-alpha", {"metadata": meta("power", ALPHA.name),
                                  "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["*"]}]})),
     "role-alpha", "verbs"),
    ("cluster role with wildcard resources bound in a tenant namespace", "tenant-role-wildcards",
     lambda w: w.extend([
         res(CLUSTER_ROLE, "cr-wide", {"metadata": meta("wide"),
                                       "rules": [{"apiGroups": ["apps"], "resources": ["*"], "verbs": ["get"]}]}),
         res(ROLE_BINDING, "rb-wide", {"metadata": meta("wide", BETA.name),
                                       "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "wide"},
                                       "subjects": [{"kind": "Group", "name": "beta-members"}]})]),
     "cr-wide", "resources"),
    ("ClusterRoleBinding for a tenant group", "tenant-groups-namespace-scoped",
     add(res(CLUSTER_ROLE_BINDING, "crb-alpha", {
         "metadata": meta("alpha-view"), "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "view"},
         "subjects": [{"kind": "Group", "name": "alpha-members", "apiGroup": RBAC}]})),
     "crb-alpha", "alpha-members"),
    ("tenant group bound in a system namespace", "tenant-groups-namespace-scoped",
     add(res(ROLE_BINDING, "rb-operator", {
         "metadata": meta("peek", cv.GPU_OPERATOR_NAMESPACE),
         "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "view"},
         "subjects": [{"kind": "Group", "name": "beta-admins", "apiGroup": RBAC}]})),
     "rb-operator", cv.GPU_OPERATOR_NAMESPACE),
    # queues
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
    # workloads
    ("GPU job without the GPU toleration", "workload-gpu-toleration",
     add(job(ALPHA.name, {**gpu_pod_spec(), "tolerations": []})), "job-job", "GPU taint"),
    ("GPU job without a queue name", "workload-queue-name",
     add(job(ALPHA.name, gpu_pod_spec(), queue=False)), "job-job", cv.QUEUE_NAME_LABEL),
    ("GPUs in requests", "workload-gpu-limits-only",
     add(job(ALPHA.name, {**gpu_pod_spec(), "containers": [
         {"name": "m", "image": "x:1", "resources": {"requests": {cv.GPU_RESOURCE: 1}, "limits": {cv.GPU_RESOURCE: 1}}}]})),
     "job-job", "requests"),
    ("fractional GPU limit", "workload-gpu-limits-only",
     add(job(ALPHA.name, {**gpu_pod_spec(), "containers": [
         {"name": "m", "image": "x:1", "resources": {"limits": {MIG.resource: "0.5"}}}]})), "job-job", "whole units"),
    ("two time-sliced replicas in one container", "workload-shared-gpu-per-container",
     add(job(BETA.name, {**gpu_pod_spec(INFER.resource), "containers": [
         {"name": "m", "image": "x:1", "resources": {"limits": {cv.SHARED_GPU_RESOURCE: "2"}}}]})),
     "job-job", "at most 1 time-sliced replica"),
    ("host network in a tenant namespace", "workload-no-host-access",
     add(job(BETA.name, gpu_pod_spec(hostNetwork=True))), "job-job", "hostNetwork"),
    ("hostPath in a tenant namespace", "workload-no-host-access",
     add(job(BETA.name, gpu_pod_spec(volumes=[{"name": "h", "hostPath": {"path": "/"}}]))), "job-job", "hostPath"),
    ("privileged pod in a tenant namespace", "workload-no-privileged",
     add(res(POD, "pod-debug", {"apiVersion": "v1", "kind": "Pod", "metadata": meta("debug", ALPHA.name),
                                "spec": {"containers": [{"name": "sh", "image": "busybox:1.36",
                                                         "securityContext": {"privileged": True}}]}})),
     "pod-debug", "privileged"),
    # supply
    ("chart without a version", "helm-chart-pinned",
     lambda w: inputs(w, "gpu-operator").pop("version"), "gpu-operator", "no version"),
    ("chart with a version range", "helm-chart-pinned",
     lambda w: inputs(w, "gpu-operator").update(version="^26.7.0"), "gpu-operator", "exact"),
    ("chart with a wildcard version", "helm-chart-pinned",
     lambda w: inputs(w, "gpu-operator").update(version="26.7.x"), "gpu-operator", "exact"),
    ("platform chart image from elsewhere", "images-from-allowed-registries",
     lambda w: inputs(w, "gpu-operator").update(values={"operator": {"repository": "quay.io/mirror", "image": "op"}}),
     "gpu-operator", "quay.io/mirror/op"),
    ("chart default registry not allowed", "images-from-allowed-registries",
     lambda w: find(w, "image-policy")["inputs"]["metadata"]["annotations"].update(
         {cv.PLATFORM_REGISTRIES_ANNOTATION: "registry.example"}), "gpu-operator", "nvcr.io/nvidia/gpu-operator"),
    ("tenant job image outside its namespace's registries", "images-from-allowed-registries",
     add(job(ALPHA.name, {**gpu_pod_spec(), "initContainers": [{"name": "i", "image": "busybox:1.37"}]})),
     "job-job", "docker.io/library/busybox:1.37"),
    # karpenter
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
    ("flavor selecting a label the NodePool lacks", "resource-flavor-matches-pool",
     on_karpenter(lambda w: template(w, "np-train")["metadata"]["labels"].update({cv.FABRIC: "efa"})),
     "flavor-train", "NodePool"),
    ("quota above a NodePool's capacity", "nominal-quota-fits-capacity",
     on_karpenter(lambda w: quota(w, "cq-alpha", TRAIN.name, cv.GPU_RESOURCE).update(nominalQuota=str(TRAIN.capacity + 1))),
     "flavor-train", "more than its pool's capacity"),
    ("Karpenter v1beta1 NodePool", "no-kueue-v1beta1",
     on_karpenter(lambda w: find(w, "np-train").update(type=find(w, "np-train")["type"].replace("/v1:", "/v1beta1:"))),
     "np-train", "v1beta1"),
    ("Kueue v1beta1 object", "no-kueue-v1beta1",
     lambda w: find(w, "cq-alpha").update(type=find(w, "cq-alpha")["type"].replace("v1beta2", "v1beta1")),
     "cq-alpha", "v1beta1"),
    ("CPU-only flavor tolerating the GPU taint", "cpu-only-flavor",
     lambda w: spec(w, "flavor-cpu-only").update(tolerations=[{"key": cv.GPU_TAINT_KEY, "operator": "Exists"}]),
     "flavor-cpu-only", "tolerates the GPU taint"),
    ("CPU-only flavor selecting a pool", "cpu-only-flavor",
     lambda w: spec(w, "flavor-cpu-only").update(nodeLabels={cv.POOL: TRAIN.name}), "flavor-cpu-only",
     "selects GPU pool label"),
    ("ClusterQueue granting GPUs on the CPU-only flavor", "cpu-only-flavor",
     lambda w: spec(w, "cq-alpha")["resourceGroups"][0]["flavors"][0]["resources"][2].update(nominalQuota="2"),
     "cq-alpha", "on the CPU-only flavor"),
    ("CPU-only pod tolerating the GPU taint", "workload-no-gpu-squatting",
     add(job(ALPHA.name, cpu_pod_spec(tolerations=[{"key": cv.GPU_TAINT_KEY, "operator": "Exists"}]))),
     "job-job", "requests no GPU but tolerates the GPU taint"),
    ("pod pinned to a node", "workload-no-gpu-squatting",
     add(job(ALPHA.name, gpu_pod_spec(nodeName="train-0"))), "job-job", "sets nodeName"),
    ("tenant namespace granted the system tier", "tenant-priorities",
     lambda w: inputs(w, "ns-alpha")["metadata"]["annotations"].update(
         {cv.ALLOWED_PRIORITIES_ANNOTATION: cv.priority_class_name("system-critical")}),
     "ns-alpha", "system priorities"),
    ("tenant namespace without its grant", "tenant-priorities",
     lambda w: inputs(w, "ns-beta")["metadata"].pop("annotations"), "ns-beta", cv.ALLOWED_PRIORITIES_ANNOTATION),
    ("job above its team's grant", "tenant-priorities",
     add(job(ALPHA.name, gpu_pod_spec(), priority="production-inference")), "job-job", "not granted"),
    # advisory
    ("image on latest", "image-tags-pinned",
     add(job(ALPHA.name, {**gpu_pod_spec(), "containers": [{"name": "m", "image": "registry.example/x:latest"}]})),
     "job-job", "latest"),
    ("image without a tag", "image-tags-pinned",
     add(job(ALPHA.name, {**gpu_pod_spec(), "containers": [{"name": "m", "image": "registry.example:5000/x"}]})),
     "job-job", "no tag"),
    ("object without managed-by", "recommended-labels",
     lambda w: labels_of(w, "cq-alpha").pop(cv.MANAGED_BY), "cq-alpha", cv.MANAGED_BY),
    ("namespace GPU cap below what its queue is admitted for", "namespace-quota-covers-queue",
     lambda w: spec(w, "quota-alpha")["hard"].update({f"requests.{cv.GPU_RESOURCE}": "4"}), "quota-alpha",
     f"caps requests.{cv.GPU_RESOURCE} at 4, but ClusterQueue 'alpha' can be admitted for up to 8"),
]


@pytest.mark.parametrize("case", DISALLOWED, ids=[c[0] for c in DISALLOWED])
def test_disallowed_is_reported(case) -> None:
    _, rule, mutate, resource, words = case
    w = world()
    mutate(w)
    found = run(rule, w)
    assert found, f"{rule} passed a world that breaks it"
    messages = named(found, resource)
    assert messages, f"{rule} reported {found} but nothing against {resource}"
    assert any(words in m for m in messages), messages


def test_every_rule_has_a_disallowed_case() -> None:
    assert {c[1] for c in DISALLOWED} == {p.name for p in POLICIES}


ALLOWED: list[tuple[str, str, Callable[[World], None]]] = [
    # (what, rule, mutation); cases that need config are tested further down
    ("restricted tenant namespace", "namespace-pod-security",
     lambda w: labels_of(w, "ns-alpha").update({cv.PSA_ENFORCE: "restricted"})),
    ("privileged GPU operator namespace", "privileged-namespaces", lambda w: None),
    ("default deny split into two policies", "namespace-default-deny", lambda w: w.extend([
        res(NETWORK_POLICY, "deny-in", {"metadata": meta("deny-in", ALPHA.name),
                                        "spec": {"podSelector": {}}}),  # policyTypes default: Ingress
        res(NETWORK_POLICY, "deny-out", {"metadata": meta("deny-out", ALPHA.name),
                                         "spec": {"podSelector": {}, "policyTypes": ["Egress"]}}),
    ]) or w.remove(find(w, "deny-alpha"))),
    ("DNS port given as a string", "namespace-dns-allow",
     lambda w: spec(w, "dns-alpha")["egress"][0].update(ports=[{"port": str(cv.DNS_PORT), "protocol": "UDP"}])),
    ("RoleBinding to cluster-admin in a system namespace", "tenant-no-cluster-admin",
     lambda w: w.append(res(ROLE_BINDING, "rb-sys", {
         "metadata": meta("sys", cv.KUBE_SYSTEM_NAMESPACE),
         "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": cv.CLUSTER_ROLE_CLUSTER_ADMIN},
         "subjects": [{"kind": "Group", "name": "platform-admins"}]}))),
    ("wildcard ClusterRole bound to no tenant", "tenant-role-wildcards", lambda w: w.append(
        res(CLUSTER_ROLE, "cr-ops", {"metadata": meta("ops"),
                                     "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]}))),
    ("selector by namespace name", "cluster-queue-tenant-scope",
     lambda w: spec(w, "cq-alpha").update(namespaceSelector={"matchExpressions": [
         {"key": cv.NAMESPACE_NAME_LABEL, "operator": "In", "values": [ALPHA.name]}]})),
    ("flavor listing the pool taints as nodeTaints", "resource-flavor-matches-pool",
     lambda w: spec(w, "flavor-train").update(nodeTaints=spec(w, "flavor-train").pop("tolerations"))),
    ("zero quota for another pool's resource on a flavor", "cluster-queue-flavors", lambda w: None),
    ("quotas exactly at capacity", "nominal-quota-fits-capacity",
     lambda w: quota(w, "cq-alpha", TRAIN.name, TRAIN.resource).update(nominalQuota=str(TRAIN.capacity))),
    ("GPU deployment in a tenant namespace done right", "workload-gpu-toleration",
     lambda w: w.append(res(DEPLOYMENT, "dep", {"metadata": meta("serve", BETA.name),
                                                "spec": {"template": {"metadata": {"labels": {
                                                    cv.QUEUE_NAME_LABEL: cv.LOCAL_QUEUE_NAME}},
                                                    "spec": gpu_pod_spec(INFER.resource)}}}))),
    ("queue name on the pod template", "workload-queue-name", lambda w: w.append(res(DEPLOYMENT, "dep", {
        "metadata": meta("serve", BETA.name),
        "spec": {"template": {"metadata": {"labels": {cv.QUEUE_NAME_LABEL: cv.LOCAL_QUEUE_NAME}},
                              "spec": gpu_pod_spec(INFER.resource)}}}))),
    ("one time-sliced replica in each of two containers", "workload-shared-gpu-per-container",
     lambda w: w.append(job(BETA.name, {**gpu_pod_spec(INFER.resource), "containers": [
         {"name": n, "image": "x:1", "resources": {"limits": {cv.SHARED_GPU_RESOURCE: 1}}} for n in ("a", "b")]}))),
    ("GPU limit as a string", "workload-gpu-limits-only", lambda w: w.append(job(ALPHA.name, {
        **gpu_pod_spec(), "containers": [{"name": "m", "image": "x:1", "resources": {"limits": {cv.GPU_RESOURCE: "2"}}}]}))),
    ("host network in a system namespace", "workload-no-host-access",
     lambda w: w.append(job(cv.GPU_OPERATOR_NAMESPACE, gpu_pod_spec(hostNetwork=True)))),
    ("privileged pod in the operator namespace", "workload-no-privileged", lambda w: w.append(
        res(POD, "pod-op", {"metadata": meta("op", cv.GPU_OPERATOR_NAMESPACE), "spec": {
            "containers": [{"name": "c", "image": "nvcr.io/x:1", "securityContext": {"privileged": True}}]}}))),
    ("chart version without a v", "helm-chart-pinned", lambda w: inputs(w, "gpu-operator").update(version="26.7.0")),
    ("chart from this repository", "helm-chart-pinned",
     lambda w: inputs(w, "gpu-operator").update(chart="./charts/local", version=None)),
    ("image by digest", "image-tags-pinned", lambda w: w.append(job(ALPHA.name, {
        **gpu_pod_spec(), "containers": [{"name": "m", "image": "registry.example/x@sha256:" + "0" * 64}]}))),
]


@pytest.mark.parametrize("case", ALLOWED, ids=[c[0] for c in ALLOWED])
def test_allowed_passes(case) -> None:
    _, rule, mutate = case
    w = world()
    mutate(w)
    assert run(rule, w) == []


def test_an_existing_cluster_needs_the_capacity_annotation() -> None:
    """Without node groups a flavor's capacity comes only from its annotation: a missing one fails closed,
    and a present one bounds the quotas."""
    w = world(eks=False)
    find(w, "flavor-train")["inputs"]["metadata"].pop("annotations")
    found = run("nominal-quota-fits-capacity", w)
    assert any("unknown" in m for m in named(found, "flavor-train"))
    find(w, "flavor-infer")["inputs"]["metadata"]["annotations"][cv.FLAVOR_CAPACITY_ANNOTATION] = "4"
    assert any("more than" in m for m in named(run("nominal-quota-fits-capacity", w), "flavor-infer"))


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


def test_privileged_allowlist_comes_from_config() -> None:
    w = world()
    assert run("privileged-namespaces", w, {"privilegedNamespaces": []})[0].resource == "ns-operator"


def test_platform_groups_come_from_config() -> None:
    """A platform group bound in a tenant namespace and cluster-wide is no tenant group once configured."""
    w = world()
    w += [
        res(CLUSTER_ROLE_BINDING, "crb-ops", {"metadata": meta("ops"),
                                              "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "ops"},
                                              "subjects": [{"kind": "Group", "name": "ops-team"}]}),
        res(ROLE_BINDING, "rb-ops", {"metadata": meta("ops", ALPHA.name),
                                     "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": cv.CLUSTER_ROLE_ADMIN},
                                     "subjects": [{"kind": "Group", "name": "ops-team"}]}),
    ]
    assert named(run("tenant-groups-namespace-scoped", w), "crb-ops")
    assert run("tenant-groups-namespace-scoped", w, {"platformGroups": ["ops-team"]}) == []


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
