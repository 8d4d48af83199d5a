"""Labeling: pool labels and taints on GPU node groups, tenant labels on namespaces, cost tags on AWS.

Pool labels are scheduling selectors (Kueue flavors), quota dimensions and cost tags at once, so a
missing or wrong one misroutes jobs or bills; these rules check them where they are set.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpu_platform import catalog, conventions as cv

from . import objects as o
from .framework import Config, GuardrailResourcePolicy, Report, Resource, of_types, quoted
from .settings import COST_TAGS, POOL_LABELS, SYSTEM_NAMESPACES, TENANT_LABELS


def instance_types(props: Mapping[str, Any]) -> list[str]:
    """A node group's instance types when known: AWS computes them from the launch template when the
    program does not set them, so in a preview's stack outputs they may be unknown."""
    names = o.known_or_none(lambda: [o.text(t) or "" for t in o.sequence(props.get("instanceTypes"))])
    return names or []


def is_gpu_pool_nodes(resource_type: str, props: Mapping[str, Any]) -> bool:
    """A GPU node group (an NVIDIA AMI, a GPU instance type from the catalog, or any pool label) or a GPU
    NodePool (a catalog GPU instance type in its requirements, or any pool label on its nodes)."""
    if resource_type == o.NODE_GROUP and "NVIDIA" in (o.known_or_none(lambda: o.text(props.get("amiType"))) or "").upper():
        return True
    nodes = o.pool_nodes(resource_type, props)
    if any(t in catalog.INSTANCE_TYPES for t in nodes.instance_types):
        return True
    return any(k in nodes.labels for k in cv.POOL_LABEL_KEYS)


def is_gpu_node_group(props: Mapping[str, Any]) -> bool:
    return is_gpu_pool_nodes(o.NODE_GROUP, props)


def missing_values(found: Mapping[str, Any], keys: tuple[str, ...]) -> list[str]:
    return [k for k in keys if not o.text(found.get(k))]


def check_node_group_labels(r: Resource, cfg: Config, report: Report) -> None:
    """The same rule for both provisioners: what a node group's labels and taints must be, a Karpenter
    NodePool's node template must be too."""
    if not is_gpu_pool_nodes(r.type, r.props):
        return
    nodes = o.pool_nodes(r.type, r.props)
    what = f"GPU {nodes.kind}"
    node_labels, taints = nodes.labels, nodes.taints
    missing = missing_values(node_labels, cfg.strings(POOL_LABELS))
    if missing:
        report(f"{what} lacks pool label(s) {quoted(missing)}: Kueue flavors, quotas and cost "
               "allocation select on them")
    gpu = o.gpu_taint()
    if gpu not in taints:
        report(f"{what} lacks the GPU taint {gpu}: pods that never asked for a GPU would land on it")
    workload = o.text(node_labels.get(cv.WORKLOAD))
    if workload:
        expected = o.workload_taint(workload)
        if expected not in taints:
            report(f"{what} lacks the workload taint {expected} matching its {cv.WORKLOAD} label: "
                   "training and inference would share nodes")
        others = [t for t in taints if t.key == cv.WORKLOAD_TAINT_KEY and t != expected]
        if others:
            report(f"{what} has workload taint(s) {quoted(map(str, others))} that disagree with its "
                   f"{cv.WORKLOAD} label {workload!r}")

    accelerator = o.text(node_labels.get(cv.ACCELERATOR))
    for it_name in nodes.instance_types:
        it = catalog.INSTANCE_TYPES.get(it_name)
        if it is None:
            continue
        if accelerator and accelerator != it.accelerator:
            report(f"{cv.ACCELERATOR}={accelerator!r} but instance type {it.name} has {it.accelerator!r} GPUs")
        acc = catalog.ACCELERATORS[it.accelerator]
        topology = cv.topology_value(it.gpus, acc.form_factor, it.interconnect)
        found = o.text(node_labels.get(cv.TOPOLOGY))
        if found and found != topology:
            report(f"{cv.TOPOLOGY}={found!r} but instance type {it.name} is {topology!r}")

    sharing = o.text(node_labels.get(cv.SHARING))
    if sharing:
        parsed = cv.parse_sharing_value(sharing)
        if parsed is None:
            report(f"{cv.SHARING}={sharing!r} is not a sharing value the platform knows "
                   f"({cv.sharing_value('full')}, mig-<profile>, time-sliced-<replicas>)")
            return
        mode, profile, _ = parsed
        if mode == "mig":
            if accelerator and o.units_per_gpu(accelerator, sharing) is None:
                report(f"MIG profile {profile!r} does not exist on {accelerator!r}")
            want = cv.mig_config_name(profile or "")
            if node_labels.get(cv.MIG_CONFIG_LABEL) != want:
                report(f"MIG pool needs {cv.MIG_CONFIG_LABEL}={want!r} so the GPU Operator's MIG manager "
                       "partitions its GPUs")
        elif mode == "time-slicing" and not o.text(node_labels.get(cv.DEVICE_PLUGIN_CONFIG_LABEL)):
            report(f"time-sliced pool needs the {cv.DEVICE_PLUGIN_CONFIG_LABEL} label so the device plugin "
                   "advertises its replicas")


def check_namespace_labels(r: Resource, cfg: Config, report: Report) -> None:
    name = o.object_name(r.props, r.name)
    if name in cfg.strings(SYSTEM_NAMESPACES):
        return
    missing = missing_values(o.labels(r.props), cfg.strings(TENANT_LABELS))
    if missing:
        report(f"tenant namespace {name!r} lacks label(s) {quoted(missing)} (team, cost center and "
               "environment drive queue selection and cost allocation)")


def check_cost_tags(r: Resource, cfg: Config, report: Report) -> None:
    props = r.props
    if r.type == o.NODE_GROUP and not is_gpu_node_group(props):
        return
    required = cfg.strings(COST_TAGS)
    if o.is_node_class(r.type):
        # An EC2NodeClass's tags go on every instance, volume, interface and launch template Karpenter makes
        # for it (pkg/apis/v1/ec2nodeclass.go, Tags), and its labels name its pool.
        if not any(k in o.labels(props) for k in cv.POOL_LABEL_KEYS) and not any(
                k in o.mapping(o.mapping(props.get("spec")).get("tags")) for k in cv.POOL_LABEL_KEYS):
            return  # not a GPU pool's node class
        tags = o.mapping(o.mapping(props.get("spec")).get("tags"))
        missing = missing_values(tags, required)
        if missing:
            report(f"EC2NodeClass lacks cost tag(s) {quoted(missing)} in spec.tags: the GPU instances Karpenter "
                   "launches would carry none")
        wrong = [k for k in cv.POOL_LABEL_KEYS if k in tags and k in o.labels(props) and tags[k] != o.labels(props)[k]]
        if wrong:
            report(f"cost tag(s) {quoted(wrong)} disagree with the EC2NodeClass's labels of the same keys")
        return
    tags = o.mapping(props.get("tags"))
    missing = missing_values(tags, required)
    if missing:
        report(f"lacks cost tag(s) {quoted(missing)}")
    if r.type == o.NODE_GROUP:
        node_labels = o.mapping(props.get("labels"))
        wrong = [k for k in cv.POOL_LABEL_KEYS if k in tags and k in node_labels and tags[k] != node_labels[k]]
        if wrong:
            report(f"cost tag(s) {quoted(wrong)} disagree with the node labels of the same keys")
    if r.type == o.LAUNCH_TEMPLATE:
        # Node group tags tag the node group only; instances get tags from the launch template's
        # tag specifications (EKS launch template docs; github.com/aws/containers-roadmap/issues/608).
        instance_tags = None
        for spec in o.sequence(props.get("tagSpecifications")):
            spec = o.mapping(spec)
            if spec.get("resourceType") == "instance":
                instance_tags = o.mapping(spec.get("tags"))
        if instance_tags is None:
            report("has no tagSpecifications for resourceType 'instance': the GPU instances, which are the "
                   "cost, would carry no cost tags")
        else:
            missing = missing_values(instance_tags, required)
            if missing:
                report(f"instance tag specification lacks cost tag(s) {quoted(missing)}")


POLICIES = [
    GuardrailResourcePolicy(
        "gpu-node-group-labels",
        "GPU node groups and Karpenter NodePools carry the pool, accelerator, topology, fabric, workload and "
        "sharing labels, the GPU taint and a workload taint matching their workload label.",
        check_node_group_labels,
        o.provides_pool_nodes,
        settings=(POOL_LABELS,),
        remediation="Build node groups and NodePools from PoolPlan.node_labels and PoolPlan.taints "
                    "(components/node_pools/, components/karpenter.py).",
    ),
    GuardrailResourcePolicy(
        "tenant-namespace-labels",
        "Tenant namespaces carry the team, cost-center and environment labels.",
        check_namespace_labels,
        lambda t: o.is_kind(t, "Namespace", ""),
        settings=(TENANT_LABELS, SYSTEM_NAMESPACES),
        remediation="Label the namespace with TeamPlan.namespace_labels, or list it in systemNamespaces.",
    ),
    GuardrailResourcePolicy(
        "aws-gpu-cost-tags",
        "AWS GPU pool resources (node groups, launch templates and their instance tags, placement groups, "
        "Karpenter EC2NodeClasses' instance tags) carry the cost tags.",
        check_cost_tags,
        lambda t: t in o.AWS_GPU_TYPES or o.is_node_class(t),
        settings=(COST_TAGS,),
        remediation="Tag with Plan.pool_tags(pool), and add a tag specification for instances.",
    ),
]
