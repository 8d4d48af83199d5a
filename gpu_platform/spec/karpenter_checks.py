"""Cross-field checks of Karpenter pools: what only they need (an EKS cluster, no warm minimum, whole GPUs,
EFA-only interfaces, capacity types that fit the pool's, an AMI release of its family, a budget only for
inference, a system pool for the controller) and AWS names that fit with the cluster's name in front."""

from __future__ import annotations

from .. import catalog, conventions as cv
from ..errors import Problem
from .limits import (
    IAM_ROLE_NAME_MAX, KARPENTER_AMI_VERSION, KARPENTER_AMI_VERSION_FORM, KARPENTER_CAPACITY_FALLBACKS,
    KARPENTER_CAPACITY_TYPES,
)
from .platform import Platform
from .pools import KarpenterPool


# AWS name limits the cluster name is checked against (tests/unit/components/test_aws_name_limits.py reads each from
# botocore's service model, or says where the model has none):
# EventBridge PutRule Name (events model, shape RuleName: max 64).
EVENTBRIDGE_RULE_NAME_MAX = 64
# SQS CreateQueue QueueName (sqs model, QueueName documentation: "A queue name can have up to 80 characters").
SQS_QUEUE_NAME_MAX = 80


def check_karpenter(p: Platform) -> list[Problem]:
    """What only Karpenter pools need; every rule of check_pools applies to them as well."""
    out: list[Problem] = []
    c = p.cluster
    karpenter_pools = [i for i, pool in enumerate(p.pools) if pool.provisioner == cv.PROVISIONER_KARPENTER]
    for i, pool in enumerate(p.pools):
        at = f"pools[{i}]"
        if pool.provisioner != cv.PROVISIONER_KARPENTER:
            if pool.karpenter is not None:
                out.append(Problem(f"{at}.karpenter", f"only for provisioner {cv.PROVISIONER_KARPENTER!r} (this pool is {pool.provisioner!r})"))
            continue
        if c.provider != "eks":
            out.append(Problem(f"{at}.provisioner", "Karpenter launches EC2 instances: only for cluster.provider 'eks' "
                               f"(existing clusters bring their own nodes); use {cv.PROVISIONER_MANAGED_NODE_GROUP!r}"))
            continue
        cap = pool.capacity
        if cap.min > 0 or (cap.desired or 0) > 0:
            field = "min" if cap.min > 0 else "desired"
            out.append(Problem(
                f"{at}.capacity.{field}",
                f"Karpenter keeps no idle nodes: it launches them for pending pods only, so {field} must be 0 "
                f"(got {getattr(cap, field)}); use provisioner {cv.PROVISIONER_MANAGED_NODE_GROUP!r} for a warm minimum",
            ))
        if pool.sharing.mode != "full":
            # Karpenter launches an instance type only if the pending pods' requests fit what the type offers
            # (kubernetes-sigs/karpenter pkg/utils/resources/resources.go Fits, via fits() in pkg/controllers/
            # provisioning/scheduling/nodeclaim.go), and an EC2 GPU type offers nvidia.com/gpu only: a pod asking
            # for nvidia.com/gpu.shared or nvidia.com/mig-* never gets a node (kubernetes-sigs/karpenter#729; EKS
            # user guide, device-management-nvidia-time-slicing.html: time-slicing works with Karpenter only with
            # static capacity). NodeOverlay, which could add that capacity, is behind an alpha feature gate.
            shared = cv.sharing_resource_name(pool.sharing.mode, pool.sharing.profile)
            out.append(Problem(
                f"{at}.sharing.mode",
                f"{pool.sharing.mode} pools advertise {shared}, which no EC2 instance type offers, so Karpenter would "
                f"never launch a node for their pods; use provisioner {cv.PROVISIONER_MANAGED_NODE_GROUP!r} for MIG "
                "and time-slicing pools, or sharing {mode: full}",
            ))
        it = catalog.INSTANCE_TYPES[pool.instanceType]
        if pool.fabric == "efa" and it.efa and not it.efa_only_interfaces:
            out.append(Problem(
                f"{at}.fabric",
                f"{pool.instanceType!r} has no EFA-only interfaces, and an EC2NodeClass's networkInterfaces take only "
                f"'interface' and 'efa-only'; use provisioner {cv.PROVISIONER_MANAGED_NODE_GROUP!r} for it",
            ))
        k = pool.karpenter or KarpenterPool()
        if k.capacityTypes is not None:
            required = KARPENTER_CAPACITY_TYPES[cap.type]
            allowed = required + KARPENTER_CAPACITY_FALLBACKS[cap.type]
            missing = [t for t in required if t not in k.capacityTypes]
            extra = [t for t in k.capacityTypes if t not in allowed]
            if missing or extra:
                why = ("a capacity block is only reachable as 'reserved', and nothing else may launch beside it"
                       if cap.type == "capacity-block" else
                       "'reserved' needs a reservation (capacity.type capacity-reservation or capacity-block with a "
                       "reservationId)" if "reserved" in extra else
                       f"capacity type {cap.type!r} is {list(required)}, optionally falling back to "
                       f"{list(KARPENTER_CAPACITY_FALLBACKS[cap.type]) or 'nothing'}")
                out.append(Problem(f"{at}.karpenter.capacityTypes",
                                   f"{k.capacityTypes} does not fit capacity.type {cap.type!r}: {why}; valid: "
                                   f"{list(required)}" + (f" or {list(allowed)}" if allowed != required else "")))
        if k.amiVersion != "latest" and not KARPENTER_AMI_VERSION[pool.amiType].match(k.amiVersion):
            out.append(Problem(
                f"{at}.karpenter.amiVersion",
                f"{k.amiVersion!r} is not a {pool.amiType} AMI release: write 'latest' or a version such as "
                f"{KARPENTER_AMI_VERSION_FORM[pool.amiType]}",
            ))
        if k.disruptionBudget is not None and pool.workload != "inference":
            out.append(Problem(
                f"{at}.karpenter.disruptionBudget",
                f"{pool.workload} pools never disrupt running work (no consolidation of busy nodes, no drift "
                "replacement); a disruption budget is for inference pools",
            ))
    if karpenter_pools and c.provider == "eks":
        if c.systemPool is None:
            out.append(Problem(
                f"pools[{karpenter_pools[0]}].provisioner",
                "Karpenter's controller runs on the system pool, never on nodes it provisions: set cluster.systemPool",
            ))
        out += check_karpenter_names(p)
    return out


def check_karpenter_names(p: Platform) -> list[Problem]:
    """Karpenter's AWS names start with the cluster name: one problem for the name that overruns its API's
    limit the most, with the longest cluster name that fits them all."""
    c = p.cluster
    names = [("IAM role", cv.karpenter_node_role_name(c.name), IAM_ROLE_NAME_MAX),
             ("IAM role", cv.karpenter_controller_role_name(c.name), IAM_ROLE_NAME_MAX)]
    if p.addons.karpenter.interruptionQueue:
        names.append(("SQS queue", cv.karpenter_queue_name(c.name), SQS_QUEUE_NAME_MAX))
        names += [("EventBridge rule", cv.karpenter_rule_name(c.name, rule), EVENTBRIDGE_RULE_NAME_MAX)
                  for rule in cv.KARPENTER_INTERRUPTION_RULES]
    what, name, limit = max(names, key=lambda n: len(n[1]) - n[2])
    over = len(name) - limit
    if over <= 0:
        return []
    return [Problem("cluster.name", f"{c.name!r} is too long for Karpenter's AWS names: {what} name {name!r} would be "
                                    f"{len(name)} characters and AWS allows {limit}; use at most "
                                    f"{len(c.name) - over} characters")]
