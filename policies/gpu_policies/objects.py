"""Reading resource properties the way the policy engine hands them over.

The analyzer passes props as read-only mappings (pulumi_policy's unknown-checking proxies: `Mapping` and
`Sequence`, never `dict` or `list`), with every number as a float (protobuf), and raises
`UnknownValueError` when a rule touches a value that is unknown during preview. Every helper here uses only
the `Mapping`/`Sequence` protocols and lets that exception through, so a rule can never mistake an unknown
for an absent value: the rule framework turns it into a violation (fail closed).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from types import MappingProxyType
from typing import Any

from pulumi_policy.proxy import UNKNOWN_ARRAY_VALUE, UNKNOWN_OBJECT_VALUE, UnknownValueError

from gpu_platform import catalog, conventions as cv

EMPTY: Mapping[str, Any] = MappingProxyType({})

# Pulumi type tokens of the resources the rules read.
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
PLACEMENT_GROUP = "aws:ec2/placementGroup:PlacementGroup"
AWS_GPU_TYPES: tuple[str, ...] = (NODE_GROUP, LAUNCH_TEMPLATE, PLACEMENT_GROUP)
HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
HELM_CHART_V4 = "kubernetes:helm.sh/v4:Chart"
HELM_TYPES: tuple[str, ...] = (HELM_RELEASE, HELM_CHART_V4)
# Token groups of the Kubernetes provider that are not API objects (Helm, YAML and Kustomize components).
_NOT_OBJECT_GROUPS = ("helm.sh", "yaml", "kustomize")

KUEUE_GROUP = cv.KUEUE_API_VERSION.split("/")[0]


def mapping(value: Any) -> Mapping[str, Any]:
    """`value` if it is a mapping, else an empty one (absent and null read the same)."""
    return value if isinstance(value, Mapping) else EMPTY


def sequence(value: Any) -> Sequence[Any]:
    """`value` if it is a list-like (not a string), else an empty tuple."""
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        return value
    return ()


def text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def as_int(value: Any) -> int | None:
    """An integer from an int, an integral float (protobuf turns every number into one) or a digit string."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("+").isdigit():
        return int(value.strip())
    return None


def known_or_none(read: Callable[[], Any]) -> Any:
    """`read()`, or None when it touches a value unknown during preview. Only for optional, provider-computed
    attributes a rule uses as a hint or a fallback (a node group's `instanceTypes` or `amiType` when the
    program leaves them to AWS): what a rule checks is read directly, so an unknown there fails it."""
    try:
        return read()
    except UnknownValueError:
        return None


def is_true(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.lower() == "true")


# Kubernetes quantities: kubernetes.io/docs/reference/kubernetes-api/common-definitions/quantity/
_QUANTITY = re.compile(r"^([+-]?(?:\d+(?:\.\d*)?|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]))?$")
_SUFFIX = {
    "": Decimal(1), "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "k": Decimal("1e3"),
    "M": Decimal("1e6"), "G": Decimal("1e9"), "T": Decimal("1e12"), "P": Decimal("1e15"), "E": Decimal("1e18"),
    "Ki": Decimal(2**10), "Mi": Decimal(2**20), "Gi": Decimal(2**30), "Ti": Decimal(2**40),
    "Pi": Decimal(2**50), "Ei": Decimal(2**60),
}


def quantity(value: Any) -> Decimal | None:
    """A Kubernetes quantity (int, float or string such as "96", "1k", "500m") as a Decimal; None if invalid."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return Decimal(str(value))
    if not isinstance(value, str):
        return None
    m = _QUANTITY.match(value.strip())
    if not m:
        return None
    try:
        number = Decimal(m.group(1))
    except InvalidOperation:
        return None
    if m.group(2):
        return number * (Decimal(10) ** int(m.group(2)[1:]))
    return number * _SUFFIX[m.group(3) or ""]


def whole_units(value: Any) -> int | None:
    """A quantity that is a whole number of units (GPUs, slices, replicas), else None."""
    q = quantity(value)
    if q is None or q != q.to_integral_value():
        return None
    return int(q)


# ---------------------------------------------------------------------------------------------------
# Kubernetes objects


@dataclass(frozen=True, slots=True)
class KubeKind:
    group: str
    version: str
    kind: str

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


@functools.lru_cache(maxsize=1024)
def kube_kind(resource_type: str) -> KubeKind | None:
    """The API group, version and kind of a Kubernetes object from its Pulumi type token.

    Typed resources are `kubernetes:core/v1:Namespace`, `kubernetes:rbac.authorization.k8s.io/v1:RoleBinding`;
    `apiextensions.CustomResource` registers `kubernetes:<apiVersion>:<kind>`. The token is always known,
    unlike props during preview, so rules select their objects by it."""
    if not resource_type.startswith("kubernetes:"):
        return None
    parts = resource_type.split(":")
    if len(parts) != 3 or "/" not in parts[1]:
        return None
    group, version = parts[1].rsplit("/", 1)
    if group in _NOT_OBJECT_GROUPS:
        return None
    return KubeKind("" if group == "core" else group, version, parts[2])


def is_kind(resource_type: str, kind: str, group: str | None = None) -> bool:
    k = kube_kind(resource_type)
    return k is not None and k.kind == kind and (group is None or k.group == group)


def metadata(props: Mapping[str, Any]) -> Mapping[str, Any]:
    return mapping(props.get("metadata"))


def labels(props: Mapping[str, Any]) -> Mapping[str, Any]:
    return mapping(metadata(props).get("labels"))


def annotations(props: Mapping[str, Any]) -> Mapping[str, Any]:
    return mapping(metadata(props).get("annotations"))


def object_name(props: Mapping[str, Any], fallback: str) -> str:
    """metadata.name, or the Pulumi name when it is absent (auto-naming)."""
    return text(metadata(props).get("name")) or fallback


def object_namespace(props: Mapping[str, Any]) -> str:
    """metadata.namespace of a namespaced object; Kubernetes puts an object without one in `default`."""
    return text(metadata(props).get("namespace")) or "default"


def selector_is_empty(selector: Mapping[str, Any]) -> bool:
    return not mapping(selector.get("matchLabels")) and not sequence(selector.get("matchExpressions"))


def selector_matches(selector: Mapping[str, Any], target: Mapping[str, Any]) -> bool:
    """Kubernetes label selector semantics (matchLabels AND every matchExpression)."""
    for key, value in mapping(selector.get("matchLabels")).items():
        if target.get(key) != value:
            return False
    for expr in sequence(selector.get("matchExpressions")):
        expr = mapping(expr)
        key, op = expr.get("key"), expr.get("operator")
        values = list(sequence(expr.get("values")))
        present = key in target
        if op == "In" and not (present and target[key] in values):
            return False
        if op == "NotIn" and present and target[key] in values:
            return False
        if op == "Exists" and not present:
            return False
        if op == "DoesNotExist" and present:
            return False
        if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            return False
    return True


# ---------------------------------------------------------------------------------------------------
# Taints and tolerations


def normalize_effect(effect: Any) -> str:
    """EKS spells taint effects NO_SCHEDULE / NO_EXECUTE / PREFER_NO_SCHEDULE; Kubernetes NoSchedule etc."""
    if not isinstance(effect, str):
        return ""
    if "_" in effect or effect.isupper():
        return "".join(part.capitalize() for part in effect.lower().split("_"))
    return effect


@dataclass(frozen=True, slots=True)
class TaintRef:
    key: str
    value: str
    effect: str

    def __str__(self) -> str:
        return f"{self.key}={self.value}:{self.effect}"


def taints_of(items: Any) -> list[TaintRef]:
    out = []
    for t in sequence(items):
        t = mapping(t)
        out.append(TaintRef(str(t.get("key") or ""), str(t.get("value") or ""), normalize_effect(t.get("effect"))))
    return out


def tolerates(toleration: Mapping[str, Any], taint: TaintRef) -> bool:
    """Kubernetes toleration matching (kubernetes.io/docs/concepts/scheduling-eviction/taint-and-toleration)."""
    effect = normalize_effect(toleration.get("effect"))
    if effect and effect != taint.effect:
        return False
    key = toleration.get("key") or ""
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return key == "" or key == taint.key
    return key == taint.key and (toleration.get("value") or "") == taint.value


def tolerated(tolerations: Any, taint: TaintRef) -> bool:
    return any(tolerates(mapping(t), taint) for t in sequence(tolerations))


def gpu_taint() -> TaintRef:
    return TaintRef(cv.GPU_TAINT_KEY, cv.GPU_TAINT_VALUE, cv.TAINT_EFFECT)


def workload_taint(workload: str) -> TaintRef:
    return TaintRef(cv.WORKLOAD_TAINT_KEY, cv.workload_taint_value(workload), cv.TAINT_EFFECT)


# ---------------------------------------------------------------------------------------------------
# Pod specs inside workload objects


@dataclass(frozen=True, slots=True)
class PodSpec:
    path: str
    spec: Mapping[str, Any]
    template_labels: Mapping[str, Any]

    def containers(self) -> Iterator[tuple[str, Mapping[str, Any]]]:
        for field in ("initContainers", "containers", "ephemeralContainers"):
            for i, c in enumerate(sequence(self.spec.get(field))):
                yield f"{self.path}.{field}[{i}]", mapping(c)


# Kinds whose schema holds no pod template (API reference of each), so the pod spec walk can skip them:
# the bulk of a platform stack is these, one set per tenant namespace.
NO_POD_KINDS = frozenset({
    "Namespace", "ResourceQuota", "LimitRange", "NetworkPolicy", "ConfigMap", "Secret", "Service",
    "ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding", "PriorityClass",
    "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "ClusterQueue", "LocalQueue",
    "ResourceFlavor", "Cohort", "Topology", "WorkloadPriorityClass", "AdmissionCheck", "MultiKueueConfig",
    "MultiKueueCluster", "PrometheusRule", "ServiceMonitor", "PodMonitor",
})


def may_hold_pods(resource_type: str) -> bool:
    """A Kubernetes object whose kind can carry a pod spec (unknown kinds can: CRDs such as JobSet)."""
    k = kube_kind(resource_type)
    return k is not None and k.kind not in NO_POD_KINDS


def pod_specs(props: Mapping[str, Any]) -> list[PodSpec]:
    """Every pod spec in an object: a Pod's own spec, a Deployment's or Job's template, a JobSet's or
    PyTorchJob's nested templates. Found by shape (a mapping with a `containers` list), so any
    workload API, including ones Kueue integrates later, is covered without a list of kinds."""
    found: list[PodSpec] = []

    def walk(node: Mapping[str, Any], path: str, parent: Mapping[str, Any]) -> None:
        if sequence(node.get("containers")):
            found.append(PodSpec(path, node, mapping(mapping(parent.get("metadata")).get("labels"))))
            return
        for key, value in _known_items(node):
            if isinstance(value, Mapping):
                walk(value, f"{path}.{key}", node)
            else:
                for i, item in _known_elements(sequence(value)):
                    if isinstance(item, Mapping):
                        walk(item, f"{path}.{key}[{i}]", node)

    def _known_elements(items: Sequence[Any]) -> Iterator[tuple[int, Any]]:
        for i in range(len(items)):
            try:
                yield i, items[i]
            except UnknownValueError as err:
                if err.unknown_type_sentinel in (UNKNOWN_OBJECT_VALUE, UNKNOWN_ARRAY_VALUE):
                    raise

    def _known_items(node: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
        # An unknown string or number (an image from another resource's output) cannot hide a pod spec;
        # an unknown object or list can, so that one propagates and the rule fails closed.
        for key in node:
            try:
                yield key, node[key]
            except UnknownValueError as err:
                if err.unknown_type_sentinel in (UNKNOWN_OBJECT_VALUE, UNKNOWN_ARRAY_VALUE):
                    raise

    spec = props.get("spec")
    if isinstance(spec, Mapping):
        walk(spec, "spec", props)
    return found


def gpu_resources(container: Mapping[str, Any], field: str) -> dict[str, Any]:
    """GPU resources (whole, MIG slice, shared replica) a container sets under resources.<field>."""
    res = mapping(mapping(container.get("resources")).get(field))
    return {k: v for k, v in res.items() if cv.is_gpu_resource(k)}


# ---------------------------------------------------------------------------------------------------
# Pools read back from their labels


def resource_name_for_sharing(sharing: str) -> str | None:
    """The schedulable resource a pool with this sharing label advertises (mixed MIG strategy,
    time-slicing with renameByDefault), or None for a sharing value conventions never makes."""
    parsed = cv.parse_sharing_value(sharing)
    return None if parsed is None else cv.sharing_resource_name(parsed[0], parsed[1])


def units_per_gpu(accelerator: str, sharing: str) -> int | None:
    """Schedulable units one GPU gives: 1, the MIG slices of the profile, or the time-slicing replicas."""
    parsed = cv.parse_sharing_value(sharing)
    return None if parsed is None else catalog.units_per_gpu(accelerator, *parsed)


# ---------------------------------------------------------------------------------------------------
# What a provisioner says about a pool's nodes: an EKS node group or a Karpenter NodePool, read one way

KARPENTER_GROUP = cv.KARPENTER_NODEPOOL_API_VERSION.split("/")[0]


def is_node_pool(resource_type: str) -> bool:
    """A Karpenter NodePool (karpenter.sh, any version: the forbidden-version rule judges the version)."""
    return is_kind(resource_type, "NodePool", KARPENTER_GROUP)


def is_node_class(resource_type: str) -> bool:
    return is_kind(resource_type, cv.KARPENTER_NODECLASS_KIND, cv.KARPENTER_NODECLASS_GROUP)


def provides_pool_nodes(resource_type: str) -> bool:
    return resource_type == NODE_GROUP or is_node_pool(resource_type)


@dataclass(frozen=True, slots=True)
class PoolNodes:
    """The labels, taints and instance types a pool's nodes get from their provisioner."""

    kind: str  # how messages name the provisioner's resource
    labels: Mapping[str, Any]
    taints: list[TaintRef]
    instance_types: list[str]


def _requirement_values(requirements: Any, key: str) -> list[str]:
    """The values of a NodePool requirement `key In [...]` (what Karpenter may pick for that label)."""
    out: list[str] = []
    for r in map(mapping, sequence(requirements)):
        if r.get("key") == key and r.get("operator") == "In":
            out += [v for v in sequence(r.get("values")) if isinstance(v, str)]
    return out


def node_pool_template(props: Mapping[str, Any]) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    """(template metadata, template spec) of a NodePool: what every node it launches carries."""
    template = mapping(mapping(props.get("spec")).get("template"))
    return mapping(template.get("metadata")), mapping(template.get("spec"))


def node_pool_limits(props: Mapping[str, Any]) -> Mapping[str, Any]:
    return mapping(mapping(props.get("spec")).get("limits"))


def pool_nodes(resource_type: str, props: Mapping[str, Any]) -> PoolNodes:
    """A node group's labels and taints, its instance types only as a hint (AWS computes them from the
    launch template when the program does not set them). A NodePool's template labels and taints and the
    instance types its requirements allow."""
    if is_node_pool(resource_type):
        meta, spec = node_pool_template(props)
        return PoolNodes("NodePool", mapping(meta.get("labels")), taints_of(spec.get("taints")),
                         _requirement_values(spec.get("requirements"), cv.INSTANCE_TYPE_LABEL))
    names = known_or_none(lambda: [text(t) or "" for t in sequence(props.get("instanceTypes"))]) or []
    return PoolNodes("node group", mapping(props.get("labels")), taints_of(props.get("taints")), names)


def pool_max_nodes(resource_type: str, props: Mapping[str, Any]) -> int | None:
    """A node group's max size, a NodePool's `nodes` limit: the most nodes the pool can have."""
    if is_node_pool(resource_type):
        return as_int(node_pool_limits(props).get("nodes"))
    return as_int(mapping(props.get("scalingConfig")).get("maxSize"))
