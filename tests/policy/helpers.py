"""Fixtures for the policy tests: a small, compliant "world" of resources, and a way to run one policy
over resources shaped as the engine passes them (read-only mappings, lists as tuples, numbers as floats).

The world is built from conventions, the catalog and pulumi's type tokens, never by copying the
components, so a rule test states what a compliant resource looks like independently of them.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Callable, Iterable

from pulumi_policy import (
    PolicyCustomTimeouts,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
)

from gpu_platform import catalog, conventions as cv
from policies.gpu_policies.pack import POLICIES

NAMESPACE = "kubernetes:core/v1:Namespace"
RESOURCE_QUOTA = "kubernetes:core/v1:ResourceQuota"
LIMIT_RANGE = "kubernetes:core/v1:LimitRange"
NETWORK_POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
ROLE = "kubernetes:rbac.authorization.k8s.io/v1:Role"
ROLE_BINDING = "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding"
CLUSTER_ROLE = "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole"
CLUSTER_ROLE_BINDING = "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding"
KUEUE = cv.KUEUE_API_VERSION
LOCAL_QUEUE = f"kubernetes:{KUEUE}:LocalQueue"
CLUSTER_QUEUE = f"kubernetes:{KUEUE}:ClusterQueue"
RESOURCE_FLAVOR = f"kubernetes:{KUEUE}:ResourceFlavor"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
JOB = "kubernetes:batch/v1:Job"
POD = "kubernetes:core/v1:Pod"
HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
VAP = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"
# The world's allowlist: where its tenant pods come from, and the GPU Operator chart's registry.
REGISTRIES = ("registry.example", "nvcr.io/nvidia")
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
PLACEMENT_GROUP = "aws:ec2/placementGroup:PlacementGroup"
NODE_POOL = f"kubernetes:{cv.KARPENTER_NODEPOOL_API_VERSION}:NodePool"
NODE_CLASS = f"kubernetes:{cv.KARPENTER_NODECLASS_API_VERSION}:{cv.KARPENTER_NODECLASS_KIND}"
RBAC = "rbac.authorization.k8s.io"

ENVIRONMENT = "test"
CLUSTER = "test-cluster"


def policy(name: str):
    found = [p for p in POLICIES if p.name == name]
    assert len(found) == 1, f"no single policy named {name}"
    return found[0]


def frozen(value: Any) -> Any:
    """Read-only, as the analyzer hands props over: mappings are MappingProxyType, lists tuples, and every
    number a float (protobuf Struct)."""
    if isinstance(value, dict):
        return MappingProxyType({k: frozen(v) for k, v in value.items()})
    if isinstance(value, list):
        return tuple(frozen(v) for v in value)
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def res(type_: str, name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    return {"type": type_, "name": name, "parent": None, "inputs": inputs}


@dataclass(frozen=True)
class Found:
    resource: str | None  # the Pulumi name of the resource a violation names (None: the stack)
    message: str


OPTIONS = PolicyResourceOptions(False, [], None, [], PolicyCustomTimeouts(0, 0, 0), [], None)


def urn(type_: str, name: str) -> str:
    return f"urn:pulumi:test::gpu-platform::{type_}::{name}"


def handed_over(inputs: dict[str, Any], wrap: Callable[[Any], Any]) -> Any:
    """A resource's inputs as a policy gets them, never the test's own: frozen() builds every mapping and list
    anew (and the rest is immutable), so it needs no copy first; any other wrap gets a deep copy to wrap.
    The copy before frozen() was ~40% of run()'s time in the policy tests."""
    return frozen(inputs) if wrap is frozen else wrap(copy.deepcopy(inputs))


def run(name: str, resources: Iterable[dict[str, Any]], config: dict[str, Any] | None = None,
        wrap: Callable[[Any], Any] = frozen) -> list[Found]:
    """Run one policy the way the analyzer does: a resource policy once per resource, a stack policy once."""
    p = policy(name)
    resources = list(resources)
    names = {urn(r["type"], r["name"]): r["name"] for r in resources}
    found: list[Found] = []
    if isinstance(p, ResourceValidationPolicy):
        for r in resources:
            args = ResourceValidationArgs(r["type"], handed_over(r["inputs"], wrap), urn(r["type"], r["name"]),
                                          r["name"], OPTIONS, None, config)
            p.validate(args, lambda msg, _urn=None, r=r: found.append(Found(r["name"], msg)))
    else:
        stack = [PolicyResource(r["type"], handed_over(r["inputs"], wrap), urn(r["type"], r["name"]), r["name"],
                                OPTIONS, None, None, [], {}) for r in resources]
        p.validate(StackValidationArgs(stack, config),
                   lambda msg, u=None: found.append(Found(names.get(u) if u else None, msg)))
    return found


def named(found: list[Found], resource: str) -> list[str]:
    return [f.message for f in found if f.resource == resource]


# ---------------------------------------------------------------------------------------------------
# the world: two pools and two teams, compliant with every rule


@dataclass(frozen=True)
class Pool:
    name: str
    instance_type: str
    workload: str
    sharing: str  # a conventions.sharing_value
    max_nodes: int

    @property
    def it(self) -> catalog.InstanceType:
        return catalog.INSTANCE_TYPES[self.instance_type]

    @property
    def labels(self) -> dict[str, str]:
        it = self.it
        acc = catalog.ACCELERATORS[it.accelerator]
        return {
            cv.POOL: self.name,
            cv.ACCELERATOR: it.accelerator,
            cv.TOPOLOGY: cv.topology_value(it.gpus, acc.form_factor, it.interconnect),
            cv.FABRIC: "ethernet",
            cv.WORKLOAD: self.workload,
            cv.SHARING: self.sharing,
        }

    @property
    def resource(self) -> str:
        mode, profile, _ = cv.parse_sharing_value(self.sharing)
        if mode == "mig":
            return cv.mig_resource(profile)
        return cv.SHARED_GPU_RESOURCE if mode == "time-slicing" else cv.GPU_RESOURCE

    @property
    def capacity(self) -> int:
        mode, profile, replicas = cv.parse_sharing_value(self.sharing)
        acc = catalog.ACCELERATORS[self.it.accelerator]
        per_gpu = acc.mig_profiles[profile].slices_per_gpu if mode == "mig" else (replicas or 1)
        return self.max_nodes * self.it.gpus * per_gpu

    @property
    def taints(self) -> list[dict[str, str]]:
        return [
            {"key": cv.GPU_TAINT_KEY, "value": cv.GPU_TAINT_VALUE, "effect": cv.TAINT_EFFECT},
            {"key": cv.WORKLOAD_TAINT_KEY, "value": cv.workload_taint_value(self.workload), "effect": cv.TAINT_EFFECT},
        ]


TRAIN = Pool("train", "p5.48xlarge", "training", cv.sharing_value("full"), 2)
INFER = Pool("infer", "g6e.12xlarge", "inference", cv.sharing_value("time-slicing", replicas=2), 2)
MIG = Pool("mig", "p4de.24xlarge", "batch", cv.sharing_value("mig", "1g.10gb"), 1)
POOLS = (TRAIN, INFER, MIG)


def cost_tags(pool: Pool) -> dict[str, str]:
    return {**pool.labels, cv.TAG_PLATFORM: cv.MANAGED_BY_VALUE, cv.TAG_ENVIRONMENT: ENVIRONMENT,
            cv.TAG_CLUSTER: CLUSTER}


def node_group(pool: Pool) -> dict[str, Any]:
    node_labels = dict(pool.labels)
    mode, profile, _ = cv.parse_sharing_value(pool.sharing)
    if mode == "mig":
        node_labels[cv.MIG_CONFIG_LABEL] = cv.mig_config_name(profile)
    elif mode == "time-slicing":
        node_labels[cv.DEVICE_PLUGIN_CONFIG_LABEL] = cv.device_plugin_config_name(pool.name)
    return res(NODE_GROUP, f"ng-{pool.name}", {
        "amiType": "AL2023_x86_64_NVIDIA",
        "clusterName": CLUSTER,
        "labels": node_labels,
        # EKS spells taint effects in upper snake case (EKS API Taint.effect).
        "taints": [{**t, "effect": "NO_SCHEDULE"} for t in pool.taints],
        "scalingConfig": {"minSize": 0, "maxSize": pool.max_nodes, "desiredSize": 0},
        "launchTemplate": {"id": f"lt-{pool.name}-id"},
        "tags": cost_tags(pool),
    })


def launch_template(pool: Pool) -> dict[str, Any]:
    return res(LAUNCH_TEMPLATE, f"lt-{pool.name}", {
        "instanceType": pool.instance_type,
        "tags": cost_tags(pool),
        "tagSpecifications": [{"resourceType": "instance", "tags": cost_tags(pool)},
                              {"resourceType": "volume", "tags": cost_tags(pool)}],
    })


def node_labels(pool: Pool) -> dict[str, str]:
    out = dict(pool.labels)
    mode, profile, _ = cv.parse_sharing_value(pool.sharing)
    if mode == "mig":
        out[cv.MIG_CONFIG_LABEL] = cv.mig_config_name(profile)
    elif mode == "time-slicing":
        out[cv.DEVICE_PLUGIN_CONFIG_LABEL] = cv.device_plugin_config_name(pool.name)
    return out


def node_pool(pool: Pool) -> dict[str, Any]:
    """A Karpenter NodePool for the pool, as Karpenter's NodePool API spells one (karpenter.sh/v1)."""
    return res(NODE_POOL, f"np-{pool.name}", {
        "apiVersion": cv.KARPENTER_NODEPOOL_API_VERSION, "kind": "NodePool",
        "metadata": meta(pool.name),
        "spec": {
            "template": {
                "metadata": {"labels": node_labels(pool)},
                "spec": {
                    "nodeClassRef": {"group": cv.KARPENTER_NODECLASS_GROUP, "kind": cv.KARPENTER_NODECLASS_KIND,
                                     "name": pool.name},
                    "requirements": [
                        {"key": cv.INSTANCE_TYPE_LABEL, "operator": "In", "values": [pool.instance_type]},
                        {"key": cv.KARPENTER_CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
                    ],
                    "taints": pool.taints,
                },
            },
            "limits": {"nodes": str(pool.max_nodes), cv.GPU_RESOURCE: str(pool.max_nodes * pool.it.gpus)},
            "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "10m"},
        },
    })


def node_class(pool: Pool) -> dict[str, Any]:
    return res(NODE_CLASS, f"nc-{pool.name}", {
        "apiVersion": cv.KARPENTER_NODECLASS_API_VERSION, "kind": cv.KARPENTER_NODECLASS_KIND,
        "metadata": meta(pool.name, labels={**pool.labels, cv.MANAGED_BY: cv.MANAGED_BY_VALUE}),
        "spec": {"role": "KarpenterNodeRole-test", "amiSelectorTerms": [{"alias": "al2023@v20240807"}],
                 "subnetSelectorTerms": [{"id": "subnet-0a"}], "securityGroupSelectorTerms": [{"id": "sg-0a"}],
                 "tags": cost_tags(pool)},
    })


def flavor(pool: Pool, annotate: bool = True) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": cv.flavor_name(pool.name), "labels": {cv.MANAGED_BY: cv.MANAGED_BY_VALUE}}
    if annotate:
        meta["annotations"] = {cv.FLAVOR_CAPACITY_ANNOTATION: str(pool.capacity)}
    return res(RESOURCE_FLAVOR, f"flavor-{pool.name}", {
        "apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": meta,
        "spec": {"nodeLabels": pool.labels, "tolerations": [{**t, "operator": "Equal"} for t in pool.taints]},
    })


def cpu_only_flavor() -> dict[str, Any]:
    return res(RESOURCE_FLAVOR, "flavor-cpu-only", {
        "apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": meta(cv.CPU_FLAVOR), "spec": {},
    })


@dataclass(frozen=True)
class Team:
    name: str
    quotas: dict[str, int]  # pool -> nominal units

    @property
    def labels(self) -> dict[str, str]:
        return {cv.TEAM: self.name, cv.COST_CENTER: f"cc-{self.name}", cv.ENVIRONMENT: ENVIRONMENT}


ALPHA = Team("alpha", {TRAIN.name: 8, MIG.name: 28})
BETA = Team("beta", {INFER.name: 8})
TEAMS = (ALPHA, BETA)
GPU_RESOURCES = sorted({p.resource for p in POOLS})


def meta(name: str, namespace: str | None = None, **extra: Any) -> dict[str, Any]:
    m: dict[str, Any] = {"name": name, "labels": {cv.MANAGED_BY: cv.MANAGED_BY_VALUE}, **extra}
    if namespace:
        m["namespace"] = namespace
    return m


GRANTED_PRIORITIES = "training,research,development"


def namespace(team: Team, level: str = "baseline") -> dict[str, Any]:
    m = meta(team.name)
    m["labels"].update({**team.labels, cv.PSA_ENFORCE: level})
    m["annotations"] = {cv.ALLOWED_PRIORITIES_ANNOTATION: GRANTED_PRIORITIES}
    return res(NAMESPACE, f"ns-{team.name}", {"apiVersion": "v1", "kind": "Namespace", "metadata": m})


def tenant_objects(team: Team) -> list[dict[str, Any]]:
    ns = team.name
    by_pool = {p.name: p for p in POOLS}
    hard = {f"requests.{r}": "0" for r in GPU_RESOURCES}
    hard.update({f"requests.{by_pool[p].resource}": str(n) for p, n in team.quotas.items()})
    hard.update({"requests.cpu": "64", "requests.memory": "256Gi"})
    groups = [f"{team.name}-admins", f"{team.name}-members"]
    return [
        namespace(team),
        res(RESOURCE_QUOTA, f"quota-{ns}", {"apiVersion": "v1", "kind": "ResourceQuota",
                                            "metadata": meta("quota", ns), "spec": {"hard": hard}}),
        res(LIMIT_RANGE, f"limits-{ns}", {"apiVersion": "v1", "kind": "LimitRange", "metadata": meta("limits", ns),
                                          "spec": {"limits": [{"type": "Container", "default": {"cpu": "1"},
                                                               "defaultRequest": {"cpu": "100m"}}]}}),
        res(NETWORK_POLICY, f"deny-{ns}", {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                                           "metadata": meta("default-deny", ns),
                                           "spec": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}}),
        res(NETWORK_POLICY, f"dns-{ns}", {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                                          "metadata": meta("allow-dns", ns),
                                          "spec": {"podSelector": {}, "policyTypes": ["Egress"], "egress": [{
                                              "to": [{"namespaceSelector": {"matchLabels": {
                                                  cv.NAMESPACE_NAME_LABEL: cv.KUBE_SYSTEM_NAMESPACE}}}],
                                              "ports": [{"port": cv.DNS_PORT, "protocol": "UDP"},
                                                        {"port": cv.DNS_PORT, "protocol": "TCP"}]}]}}),
        res(LOCAL_QUEUE, f"lq-{ns}", {"apiVersion": KUEUE, "kind": "LocalQueue",
                                      "metadata": meta(cv.LOCAL_QUEUE_NAME, ns),
                                      "spec": {"clusterQueue": cv.cluster_queue_name(team.name)}}),
        res(ROLE_BINDING, f"rb-{ns}-admins", {"apiVersion": f"{RBAC}/v1", "kind": "RoleBinding",
                                              "metadata": meta("admins", ns),
                                              "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole",
                                                          "name": cv.CLUSTER_ROLE_ADMIN},
                                              "subjects": [{"kind": "Group", "name": groups[0], "apiGroup": RBAC}]}),
        res(ROLE_BINDING, f"rb-{ns}-members", {"apiVersion": f"{RBAC}/v1", "kind": "RoleBinding",
                                               "metadata": meta("members", ns),
                                               "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole",
                                                           "name": cv.BATCH_USER_CLUSTER_ROLE},
                                               "subjects": [{"kind": "Group", "name": groups[1], "apiGroup": RBAC}]}),
        cluster_queue(team),
    ]


def cluster_queue(team: Team) -> dict[str, Any]:
    by_pool = {p.name: p for p in POOLS}
    covered = ["cpu", "memory", *sorted({by_pool[p].resource for p in team.quotas})]
    flavors = [{"name": cv.CPU_FLAVOR, "resources": [{"name": "cpu", "nominalQuota": "4"},
                                                     {"name": "memory", "nominalQuota": "16Gi"},
                                                     *({"name": r, "nominalQuota": "0"} for r in covered[2:])]}]
    for p, n in sorted(team.quotas.items()):
        resources = [{"name": "cpu", "nominalQuota": "8"}, {"name": "memory", "nominalQuota": "64Gi"}]
        resources += [{"name": r, "nominalQuota": str(n if r == by_pool[p].resource else 0)} for r in covered[2:]]
        flavors.append({"name": cv.flavor_name(p), "resources": resources})
    return res(CLUSTER_QUEUE, f"cq-{team.name}", {
        "apiVersion": KUEUE, "kind": "ClusterQueue", "metadata": meta(cv.cluster_queue_name(team.name)),
        "spec": {"namespaceSelector": {"matchLabels": {cv.TEAM: team.name}},
                 "resourceGroups": [{"coveredResources": covered, "flavors": flavors}]},
    })


def world(eks: bool = True, karpenter: bool = False) -> list[dict[str, Any]]:
    """A compliant stack: node groups and launch templates (eks) or none (an `existing` cluster); with
    `karpenter`, the train pool's nodes come from a NodePool and EC2NodeClass instead."""
    out: list[dict[str, Any]] = []
    for p in POOLS:
        if eks and karpenter and p is TRAIN:
            out += [node_pool(p), node_class(p)]
        elif eks:
            out += [node_group(p), launch_template(p)]
        out.append(flavor(p))
    out.append(cpu_only_flavor())
    for t in TEAMS:
        out += tenant_objects(t)
    operator_ns = res(NAMESPACE, "ns-operator", {"apiVersion": "v1", "kind": "Namespace", "metadata": meta(
        cv.GPU_OPERATOR_NAMESPACE, labels={cv.MANAGED_BY: cv.MANAGED_BY_VALUE, cv.PSA_ENFORCE: "privileged"})})
    out.append(operator_ns)
    out.append(res(HELM_RELEASE, "gpu-operator", {"chart": "gpu-operator", "version": "v26.7.0",
                                                 "namespace": cv.GPU_OPERATOR_NAMESPACE,
                                                 "repositoryOpts": {"repo": "https://helm.ngc.nvidia.com/nvidia"}}))
    out.append(res(VAP, "image-policy", {"apiVersion": "admissionregistration.k8s.io/v1",
                                         "kind": "ValidatingAdmissionPolicy",
                                         "metadata": meta(cv.TENANT_IMAGE_POLICY, annotations={
                                             cv.PLATFORM_REGISTRIES_ANNOTATION: ",".join(REGISTRIES)}),
                                         "spec": {}}))
    return out


def find(resources: list[dict[str, Any]], name: str) -> dict[str, Any]:
    """The resource of that Pulumi name (to mutate a copy of a world in place)."""
    found = [r for r in resources if r["name"] == name]
    assert len(found) == 1, name
    return found[0]


def gpu_pod_spec(resource: str = cv.GPU_RESOURCE, **extra: Any) -> dict[str, Any]:
    """A pod spec a tenant may run: GPUs in limits, the GPU taint tolerated."""
    return {
        "containers": [{"name": "main", "image": "registry.example/train:1.4.2",
                        "resources": {"limits": {resource: 1}}}],
        "tolerations": [{"key": cv.GPU_TAINT_KEY, "operator": "Equal", "value": cv.GPU_TAINT_VALUE,
                         "effect": cv.TAINT_EFFECT}],
        **extra,
    }


def cpu_pod_spec(**extra: Any) -> dict[str, Any]:
    """A pod spec without GPUs."""
    return {"containers": [{"name": "main", "image": "registry.example/prep:1.0",
                            "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}], **extra}


def job(namespace: str, spec: dict[str, Any], queue: bool = True, name: str = "job",
        priority: str | None = None) -> dict[str, Any]:
    m = meta(name, namespace)
    if queue:
        m["labels"][cv.QUEUE_NAME_LABEL] = cv.LOCAL_QUEUE_NAME
    if priority:
        m["labels"][cv.PRIORITY_CLASS_LABEL] = priority
    return res(JOB, f"job-{name}", {"apiVersion": "batch/v1", "kind": "Job", "metadata": m,
                                     "spec": {"template": {"spec": spec}}})


def world_of(teams: int) -> list[dict[str, Any]]:
    """A compliant world with `teams` teams (zero quotas, so any number fits the pools)."""
    out = [r for r in world() if not any(r["name"].endswith(f"-{t.name}") for t in TEAMS)]
    for i in range(teams):
        out += tenant_objects(Team(f"team-{i:04d}", {TRAIN.name: 0, INFER.name: 0}))
    return out
