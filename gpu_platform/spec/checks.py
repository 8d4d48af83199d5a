"""Cross-field checks: everything the models cannot see on their own (names, capacity, quotas, security)."""

from __future__ import annotations

from .. import audit, catalog, conventions as cv, workload_controllers as wc
from ..errors import Problem
from ..pool_derivations import (
    pool_capacity_units, pool_labels, pool_nominal_units, pool_topology_aware, pool_units_per_gpu, runs_bottlerocket,
)
from .data_checks import check_data
from .limits import (
    CLUSTER_AUTOSCALER_IMAGE_TAG, IAM_ROLE_NAME_MAX, KARPENTER_AMI_VERSION, KARPENTER_AMI_VERSION_FORM, KARPENTER_CAPACITY_FALLBACKS,
    KARPENTER_CAPACITY_TYPES,
)
from .platform import Platform
from .pools import KarpenterPool
from .stack_split import check_stack_split

# AWS name limits the cluster name is checked against (tests/unit/components/test_aws_name_limits.py reads each from
# botocore's service model, or says where the model has none):
# EventBridge PutRule Name (events model, shape RuleName: max 64).
EVENTBRIDGE_RULE_NAME_MAX = 64
# SQS CreateQueue QueueName (sqs model, QueueName documentation: "A queue name can have up to 80 characters").
SQS_QUEUE_NAME_MAX = 80
# EKS CreateNodegroup nodegroupName: not in the eks model; EKS user guide, create-managed-node-group.html ("The
# node group name can't be longer than 63 characters") and the API's own error ("nodeGroupName can't be longer
# than 63 characters!", terraform-aws-modules/terraform-aws-eks#1713).
EKS_NODEGROUP_NAME_MAX = 63


def _check_pools(p: Platform, region: str | None) -> list[Problem]:
    out: list[Problem] = []
    seen: dict[str, int] = {}
    for i, pool in enumerate(p.pools):
        at = f"pools[{i}]"
        if pool.name in seen:
            out.append(Problem(f"{at}.name", f"duplicate pool name {pool.name!r} (also pools[{seen[pool.name]}])"))
        seen.setdefault(pool.name, i)
        if pool.name == cv.CPU_FLAVOR:
            out.append(Problem(f"{at}.name", f"{pool.name!r} is reserved for the flavor of CPU-only work; choose another pool name"))
        acc = catalog.ACCELERATORS[pool.accelerator]
        it = catalog.INSTANCE_TYPES[pool.instanceType]
        if it.accelerator != pool.accelerator:
            out.append(Problem(
                f"{at}.instanceType",
                f"{pool.instanceType!r} has {it.accelerator} GPUs, not {pool.accelerator}; instance types with "
                f"{pool.accelerator}: {', '.join(catalog.instance_types_for(pool.accelerator))}",
            ))
        if pool.fabric == "efa" and not it.efa:
            efa_types = [n for n in catalog.instance_types_for(pool.accelerator) if catalog.INSTANCE_TYPES[n].efa]
            out.append(Problem(
                f"{at}.fabric",
                f"{pool.instanceType!r} does not support EFA; use fabric 'ethernet' or one of: "
                f"{', '.join(efa_types) or 'none for this accelerator'}",
            ))
        if pool.sharing.mode == "mig":
            if not acc.supports_mig:
                with_mig = sorted(n for n, a in catalog.ACCELERATORS.items() if a.supports_mig)
                out.append(Problem(
                    f"{at}.sharing.mode",
                    f"{pool.accelerator} does not support MIG; accelerators with MIG: {', '.join(with_mig)}",
                ))
            elif pool.sharing.profile not in acc.mig_profiles:
                out.append(Problem(
                    f"{at}.sharing.profile",
                    f"{pool.accelerator} has no MIG profile {pool.sharing.profile!r}; valid: "
                    f"{', '.join(acc.mig_profiles)}",
                ))
        cap = pool.capacity
        if cap.min > cap.max:
            out.append(Problem(f"{at}.capacity.min", f"min {cap.min} is greater than max {cap.max}"))
        if cap.desired is not None and not cap.min <= cap.desired <= cap.max:
            out.append(Problem(f"{at}.capacity.desired", f"desired {cap.desired} is outside min..max ({cap.min}..{cap.max})"))
        if cap.type in cv.RESERVED_CAPACITY_TYPES and not cap.reservationId:
            out.append(Problem(f"{at}.capacity.reservationId", f"capacity type {cap.type!r} needs a reservationId (cr-...)"))
        if cap.type in ("on-demand", "spot") and cap.reservationId:
            out.append(Problem(
                f"{at}.capacity.reservationId",
                f"reservationId is only valid with capacity type 'capacity-reservation' or 'capacity-block', not {cap.type!r}",
            ))
        if cap.type == "capacity-block" and not pool.availabilityZone:
            out.append(Problem(f"{at}.availabilityZone", "a capacity block lives in a single availability zone: set availabilityZone"))
        if cap.type == "capacity-reservation" and not pool.availabilityZone and p.cluster.provider == "eks":
            out.append(Problem(
                f"{at}.availabilityZone",
                "a capacity reservation lives in a single availability zone: set availabilityZone to the reservation's zone",
            ))
        if pool.fabric == "efa" and not pool.availabilityZone and p.cluster.provider == "eks":
            out.append(Problem(f"{at}.availabilityZone", "EFA pools need a single availabilityZone (EFA traffic does not cross zones)"))
        if runs_bottlerocket(pool) and pool.sharing.mode != "full":
            # Bottlerocket's NVIDIA AMIs run their own device plugin, configured by Bottlerocket settings, and the
            # GPU Operator's plugin and MIG manager are kept off them (pool_derivations.pool_operator_labels): the
            # operator's time-slicing and MIG configs would never reach these nodes.
            out.append(Problem(
                f"{at}.sharing.mode",
                f"{pool.sharing.mode} is set by the GPU Operator's device plugin and MIG manager, which do not run on "
                f"{pool.amiType} nodes (the AMI brings its own device plugin); use amiType 'AL2023_x86_64_NVIDIA' for "
                "MIG or time-slicing, or sharing {mode: full} on Bottlerocket",
            ))
        if pool.placementGroup and pool.fabric != "efa":
            out.append(Problem(f"{at}.placementGroup", "a cluster placement group is only made for fabric 'efa'"))
        if region and pool.availabilityZone and not pool.availabilityZone.startswith(region):
            out.append(Problem(f"{at}.availabilityZone", f"{pool.availabilityZone!r} is not in region {region!r}"))
        for key, value in pool_labels(pool).items():
            if len(value) > cv.MAX_LABEL_LENGTH:
                out.append(Problem(f"{at}.name", f"label {key}={value!r} is over {cv.MAX_LABEL_LENGTH} characters"))
        if p.cluster.provider == "eks" and pool.provisioner == cv.PROVISIONER_MANAGED_NODE_GROUP:
            ng = cv.node_group_name(p.cluster.name, pool.name)
            if len(ng) > EKS_NODEGROUP_NAME_MAX:
                out.append(Problem(f"{at}.name", f"node group name {ng!r} is over {EKS_NODEGROUP_NAME_MAX} characters (EKS limit)"))
    return out


def _check_mig_layouts(p: Platform) -> list[Problem]:
    """One mig-parted layout per profile name (`all-1g.10gb`): a profile name that means different slice
    counts on two accelerators (1g.10gb: 7 on A100 80GB, 4 on A100 40GB) cannot share that layout."""
    out: list[Problem] = []
    first: dict[str, tuple[int, str, int]] = {}
    for i, pool in enumerate(p.pools):
        if pool.sharing.mode != "mig":
            continue
        acc = catalog.ACCELERATORS.get(pool.accelerator)
        profile = acc.mig_profiles.get(pool.sharing.profile) if acc else None
        if profile is None:
            continue  # reported by _check_pools
        seen = first.setdefault(profile.name, (i, pool.accelerator, profile.slices_per_gpu))
        if seen[2] != profile.slices_per_gpu:
            out.append(Problem(
                f"pools[{i}].sharing.profile",
                f"MIG profile {profile.name!r} is {profile.slices_per_gpu} slices per GPU on {pool.accelerator} but "
                f"{seen[2]} on {seen[1]} (pools[{seen[0]}]); one cluster's MIG layouts are named by profile, so "
                "use a profile with the same geometry on both or put the pools in different clusters",
            ))
    return out


def _check_cohorts(p: Platform) -> list[Problem]:
    out: list[Problem] = []
    names: dict[str, int] = {}
    for i, c in enumerate(p.cohorts):
        if c.name in names:
            out.append(Problem(f"cohorts[{i}].name", f"duplicate cohort name {c.name!r} (also cohorts[{names[c.name]}])"))
        names.setdefault(c.name, i)
    for i, c in enumerate(p.cohorts):
        if c.parent is not None and c.parent not in names:
            out.append(Problem(
                f"cohorts[{i}].parent",
                f"unknown cohort {c.parent!r}; defined cohorts: {', '.join(names) or 'none'}",
            ))
    parent = {c.name: c.parent for c in p.cohorts}
    reported: set[str] = set()
    for i, c in enumerate(p.cohorts):
        seen = [c.name]
        cur = parent.get(c.name)
        while cur is not None and cur in parent:
            if cur in seen:
                cycle = seen[seen.index(cur):] + [cur]
                key = min(cycle)
                if key not in reported:
                    reported.add(key)
                    out.append(Problem(f"cohorts[{i}].parent", f"cohort parents form a cycle: {' -> '.join(cycle)}"))
                break
            seen.append(cur)
            cur = parent.get(cur)
    return out


def _check_teams(p: Platform) -> list[Problem]:
    out: list[Problem] = []
    pools = {pool.name: pool for pool in p.pools}
    cohorts = {c.name for c in p.cohorts}
    team_names: dict[str, int] = {}
    ns_owner: dict[str, str] = {}
    contributors: dict[str, list[str]] = {name: [] for name in pools}
    for i, t in enumerate(p.teams):
        at = f"teams[{i}]"
        if t.name in team_names:
            out.append(Problem(f"{at}.name", f"duplicate team name {t.name!r} (also teams[{team_names[t.name]}])"))
        team_names.setdefault(t.name, i)
        for j, ns in enumerate(t.namespace_names):
            ns_at = f"{at}.namespaces[{j}]" if t.namespaces else f"{at}.name"
            if ns in cv.RESERVED_NAMESPACES:
                out.append(Problem(ns_at, f"namespace {ns!r} is reserved; reserved: {', '.join(cv.RESERVED_NAMESPACES)}"))
            elif ns in ns_owner and ns_owner[ns] != f"teams[{i}]":
                out.append(Problem(ns_at, f"duplicate namespace {ns!r} (also used by {ns_owner[ns]})"))
            elif ns in ns_owner:
                out.append(Problem(ns_at, f"namespace {ns!r} is listed twice"))
            ns_owner.setdefault(ns, f"teams[{i}]")
        if t.cohort is not None and t.cohort not in cohorts:
            out.append(Problem(f"{at}.cohort", f"unknown cohort {t.cohort!r}; defined cohorts: {', '.join(sorted(cohorts)) or 'none'}"))
        for pool_name, q in t.quotas.items():
            q_at = f"{at}.quotas.{pool_name}"
            if pool_name not in pools:
                out.append(Problem(q_at, f"unknown pool {pool_name!r}; pools: {', '.join(pools)}"))
                continue
            contributors[pool_name].append(f"{t.name}={q.units}")
            if t.cohort is None:
                for limit in ("borrowingLimit", "lendingLimit"):
                    if getattr(q, limit) is not None:
                        out.append(Problem(f"{q_at}.{limit}", f"{limit} needs the team to be in a cohort (set teams[{i}].cohort)"))
            if q.lendingLimit is not None and q.lendingLimit > q.units:
                out.append(Problem(f"{q_at}.lendingLimit",
                                   f"lendingLimit {q.lendingLimit} is above the nominal quota {q.units_key}={q.units}"))
    nominal_sum = pool_nominal_units(p.teams)
    for i, pool in enumerate(p.pools):
        if pool.name not in nominal_sum:
            continue
        try:
            cap = pool_capacity_units(pool)
        except KeyError:
            continue  # the pool itself is invalid and already reported
        if nominal_sum[pool.name] > cap:
            it = catalog.INSTANCE_TYPES[pool.instanceType]
            per = pool_units_per_gpu(pool)
            how = f"{pool.capacity.max} nodes x {it.gpus} GPUs" + (f" x {per}" if per > 1 else "")
            first = next(j for j, t in enumerate(p.teams) if pool.name in t.quotas)
            out.append(Problem(
                f"teams[{first}].quotas.{pool.name}.{p.teams[first].quotas[pool.name].units_key}",
                f"nominal quotas on pool {pool.name!r} add up to {nominal_sum[pool.name]} "
                f"({', '.join(contributors[pool.name])}) but the pool has {cap} units ({how})",
            ))
    return out


def _check_system_pool(p: Platform) -> list[Problem]:
    c, sp = p.cluster, p.cluster.systemPool
    at = "cluster.systemPool"
    if sp is None:
        return []
    out: list[Problem] = []
    if c.provider != "eks":
        return [Problem(at, "a system pool is an EKS node group: only for provider 'eks' (existing clusters bring their own nodes)")]
    if c.create and sp.min < 1:
        out.append(Problem(
            f"{at}.min",
            f"a cluster created here needs at least one system node (got min {sp.min}): every GPU node is tainted, "
            "so CoreDNS, Kueue, the GPU Operator and the monitoring stack would stay Pending",
        ))
    if sp.min > sp.max:
        out.append(Problem(f"{at}.min", f"min {sp.min} is greater than max {sp.max}"))
    if sp.desired is not None and not sp.min <= sp.desired <= sp.max:
        out.append(Problem(f"{at}.desired", f"desired {sp.desired} is outside min..max ({sp.min}..{sp.max})"))
    for i, pool in enumerate(p.pools):
        if pool.name == cv.SYSTEM_POOL_NAME:
            out.append(Problem(
                f"pools[{i}].name",
                f"pool name {cv.SYSTEM_POOL_NAME!r} is taken by the system pool's node group "
                f"({cv.system_node_group_name(c.name)!r}); rename the GPU pool",
            ))
    if len(cv.system_node_group_name(c.name)) > EKS_NODEGROUP_NAME_MAX:
        out.append(Problem("cluster.name", f"node group name {cv.system_node_group_name(c.name)!r} is over "
                                           f"{EKS_NODEGROUP_NAME_MAX} characters (EKS limit)"))
    return out


def _check_platform(p: Platform, region: str | None) -> list[Problem]:
    out: list[Problem] = _check_system_pool(p)
    if p.cluster.provider == "eks" and not p.cluster.subnetIds:
        out.append(Problem("cluster.subnetIds", "provider 'eks' needs the subnets for node groups (subnetIds)"))
    for itype in p.pricing:
        if itype not in catalog.INSTANCE_TYPES:
            out.append(Problem(f"pricing.{itype}", f"unknown instance type; valid: {', '.join(sorted(catalog.INSTANCE_TYPES))}"))
    prio: dict[str, int] = {}
    for i, pr in enumerate(p.priorities):
        if pr.name in prio:
            out.append(Problem(f"priorities[{i}].name", f"duplicate priority {pr.name!r}"))
        prio.setdefault(pr.name, i)
        if not -2147483648 <= pr.value <= 1000000000:
            out.append(Problem(f"priorities[{i}].value", f"{pr.value} is outside the user range of PriorityClass values (up to 1000000000)"))
    for i, t in enumerate(p.teams):
        for j, name in enumerate(t.priorities or ()):
            if name not in prio:
                out.append(Problem(
                    f"teams[{i}].priorities[{j}]",
                    f"unknown priority {name!r}; priorities: {', '.join(prio) or 'none'}",
                ))
    if p.multiKueue:
        seen: set[str] = set()
        for i, w in enumerate(p.multiKueue.workers):
            if w.name in seen:
                out.append(Problem(f"multiKueue.workers[{i}].name", f"duplicate worker {w.name!r}"))
            seen.add(w.name)
    return out


def _check_security(p: Platform) -> list[Problem]:
    """Identity: a team's groups and the IAM roles mapped into them never reach the platform's
    admin groups or Kubernetes' system: groups, and every principal has one access entry (EKS allows one per
    principal: API reference, CreateAccessEntry.principalArn). Control-plane logging keeps its audit trail."""
    out: list[Problem] = []
    c = p.cluster
    admins = set(c.platformAdmins)
    eks = c.provider == "eks"
    if c.identity is not None and not eks:
        out.append(Problem("cluster.identity", "EKS access entries and OIDC identity providers are EKS APIs: only "
                                               "for provider 'eks' (an existing cluster's owner maps its users)"))
    missing = [t for t in audit.REQUIRED_EKS_LOG_TYPES if t not in c.controlPlaneLogs]
    if missing:
        out.append(Problem("cluster.controlPlaneLogs", f"must include {', '.join(audit.REQUIRED_EKS_LOG_TYPES)} "
                                                       f"(missing: {', '.join(missing)}): the audit trail of who "
                                                       "submitted, read secrets, exec'd and administered"))
    seen: dict[str, str] = {}
    for j, arn in enumerate(c.identity.platformAdminRoles if c.identity else ()):
        at = f"cluster.identity.platformAdminRoles[{j}]"
        if arn in seen:
            out.append(Problem(at, f"{arn} already has an access entry ({seen[arn]}); EKS allows one per principal"))
        seen.setdefault(arn, at)
    for i, t in enumerate(p.teams):
        own: set[str] = set()
        for tier in ("admin", "member", "viewer"):
            for k, g in enumerate(getattr(t.groups, tier)):
                own.add(g)
                if g.startswith(cv.SYSTEM_GROUP_PREFIX):
                    out.append(Problem(
                        f"teams[{i}].groups.{tier}[{k}]",
                        f"{g!r} is a Kubernetes system group (assigned by the API server, e.g. system:authenticated is "
                        "every signed-in user): a team's groups are its own people",
                    ))
        if t.accessEntries and not eks:
            out.append(Problem(f"teams[{i}].accessEntries", "access entries are EKS's: only for provider 'eks'"))
        for j, e in enumerate(t.accessEntries):
            at = f"teams[{i}].accessEntries[{j}]"
            if e.principalArn in seen:
                out.append(Problem(f"{at}.principalArn", f"{e.principalArn} already has an access entry "
                                                         f"({seen[e.principalArn]}); EKS allows one per principal"))
            seen.setdefault(e.principalArn, at)
            for k, g in enumerate(e.groups):
                g_at = f"{at}.groups[{k}]"
                if g.startswith(cv.SYSTEM_GROUP_PREFIX):
                    out.append(Problem(g_at, f"a team's role may not be mapped into the Kubernetes system group {g!r}"))
                elif g in admins:
                    out.append(Problem(g_at, f"{g!r} is a platform admin group (cluster.platformAdmins): a team's role "
                                             "mapped into it would administer every queue; use cluster.identity."
                                             "platformAdminRoles for platform admins"))
                elif g not in own:
                    out.append(Problem(g_at, f"{g!r} is not one of team {t.name!r}'s groups; its groups: "
                                             f"{', '.join(sorted(own)) or 'none'}"))
    return out


def _check_karpenter(p: Platform) -> list[Problem]:
    """What only Karpenter pools need; every rule of _check_pools applies to them as well."""
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
        out += _check_karpenter_names(p)
    return out


def _check_karpenter_names(p: Platform) -> list[Problem]:
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


def _check_workload_controllers(p: Platform) -> list[Problem]:
    """Workload controllers: Kueue's integrations follow the installed controllers, Trainer has its JobSet, and
    Trainer speaks the TrainJob API Kueue 0.19 writes (gpu_platform/workload_controllers.py says why each)."""
    out: list[Problem] = []
    addons = p.addons
    installed = {key: getattr(addons, key).install for key in wc.KEYS}
    for key in wc.KEYS:
        c = wc.CONTROLLERS[key]
        for need in c.requires:
            if installed[key] and not installed[need]:
                out.append(Problem(f"addons.{key}.install",
                                   f"{c.title} needs {wc.CONTROLLERS[need].title} (it runs each of its jobs on it): set "
                                   f"addons.{need}.install true, or addons.{key}.install false"))
    seen: dict[str, int] = {}
    for i, name in enumerate(addons.kueue.integrations):
        at = f"addons.kueue.integrations[{i}]"
        if name in seen:
            out.append(Problem(at, f"duplicate framework {name!r} (also addons.kueue.integrations[{seen[name]}])"))
        seen.setdefault(name, i)
        if name not in cv.KUEUE_FRAMEWORKS:
            out.append(Problem(at, f"unknown Kueue framework {name!r}; Kueue 0.19 frameworks: {', '.join(cv.KUEUE_FRAMEWORKS)}"))
            continue
        key = wc.FRAMEWORK_CONTROLLER.get(name)
        if key is not None and not installed[key]:
            out.append(Problem(at, f"{name!r} queues {wc.CONTROLLERS[key].title} objects, and addons.{key}.install is "
                                   f"false: Kueue would wait for a CRD that never comes; set addons.{key}.install true "
                                   "or remove the framework"))
    if installed[wc.TRAINER] and cv.FRAMEWORK_TRAINJOB in addons.kueue.integrations:
        version = addons.trainer.version
        if wc.version_tuple(version) < wc.TRAINER_MIN_FOR_KUEUE:
            floor = ".".join(str(x) for x in wc.TRAINER_MIN_FOR_KUEUE)
            out.append(Problem("addons.trainer.version",
                               f"Kubeflow Trainer {version} has no TrainJob spec.runtimePatches, which Kueue "
                               f"{addons.kueue.version}'s trainjob integration writes to admit a TrainJob: its "
                               f"TrainJobs would be admitted and never start; use {floor} or later (default "
                               f"{wc.CONTROLLERS[wc.TRAINER].default_version})"))
    return out


def _check_elastic_capacity(p: Platform) -> list[Problem]:
    """What elastic capacity cannot do (gpu_platform/plan/autoscaling.py decides the rest): a topology-aware pool
    that may be at 0 nodes with nothing to provision its nodes first, and an autoscaler built for another
    Kubernetes minor or with an IAM role name AWS refuses."""
    out: list[Problem] = []
    c, ca = p.cluster, p.addons.clusterAutoscaler
    if c.provider != "eks":
        return out
    provisioning = ca.install and ca.provisioningRequests
    for i, pool in enumerate(p.pools):
        cap = pool.capacity
        if (pool.provisioner != cv.PROVISIONER_MANAGED_NODE_GROUP or cap.type in cv.RESERVED_CAPACITY_TYPES
                or cap.min > 0 or provisioning or pool.instanceType not in catalog.INSTANCE_TYPES
                or not pool_topology_aware(pool)):
            continue
        # Kueue's TAS admits a job only onto Ready nodes (kueue v0.19.2 pkg/cache/scheduler/tas_topology_tree.go):
        # at 0 nodes no job fits, it stays suspended, no pod is ever Pending, and no autoscaler scales up for it.
        why = ("addons.clusterAutoscaler.install is false" if not ca.install
               else "addons.clusterAutoscaler.provisioningRequests is false")
        out.append(Problem(
            f"pools[{i}].capacity.min",
            f"pool {pool.name!r} is topology-aware and elastic ({cap.type}) at min 0, and {why}: Kueue places its "
            "jobs only on Ready nodes, so at 0 nodes no job is ever admitted and nothing asks for a node; turn on "
            "addons.clusterAutoscaler with provisioningRequests (Kueue then asks the autoscaler for a job's nodes "
            "before admitting it), or set capacity.min to the nodes the largest job needs",
        ))
    if not ca.install:
        return out
    tag = CLUSTER_AUTOSCALER_IMAGE_TAG.match(ca.imageTag)
    if tag and f"{tag.group(1)}.{tag.group(2)}" != c.kubernetesVersion:
        out.append(Problem(
            "addons.clusterAutoscaler.imageTag",
            f"{ca.imageTag} is the Cluster Autoscaler for Kubernetes {tag.group(1)}.{tag.group(2)}, and the cluster "
            f"runs {c.kubernetesVersion}: the autoscaler is built for one minor (its README, \"Releases\"); use a "
            f"v{c.kubernetesVersion}.x release and the chart release that ships it",
        ))
    role = cv.cluster_autoscaler_role_name(c.name)
    if len(role) > IAM_ROLE_NAME_MAX:
        out.append(Problem("cluster.name", f"{c.name!r} is too long for the Cluster Autoscaler's IAM role {role!r}: "
                                           f"{len(role)} characters and AWS allows {IAM_ROLE_NAME_MAX}; use at most "
                                           f"{len(c.name) - (len(role) - IAM_ROLE_NAME_MAX)} characters, or "
                                           "addons.clusterAutoscaler.install: false"))
    return out


def validate(platform: Platform, region: str | None = None) -> list[Problem]:
    return (_check_pools(platform, region) + _check_mig_layouts(platform) + _check_cohorts(platform)
            + _check_teams(platform) + _check_platform(platform, region) + _check_security(platform)
            + _check_karpenter(platform) + _check_elastic_capacity(platform) + check_data(platform)
            + _check_workload_controllers(platform)
            + check_stack_split(platform.stackSplit, {t.name: t.cohort for t in platform.teams},
                                {c.name: c.parent for c in platform.cohorts}, platform.data.enabled))
