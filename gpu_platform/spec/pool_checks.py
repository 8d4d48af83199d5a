"""Cross-field checks of the GPU pools and the system pool: each pool against the catalog (instance type,
accelerator, EFA, MIG profiles), its capacity and placement, its labels' and node group's name lengths; one MIG
layout per profile name across pools; the system pool against the cluster and the GPU pools' names."""

from __future__ import annotations

from .. import catalog, conventions as cv
from ..errors import Problem
from ..pool_derivations import pool_labels, runs_bottlerocket
from .platform import Platform


# AWS name limits the cluster name is checked against (tests/unit/components/test_aws_name_limits.py reads each from
# botocore's service model, or says where the model has none):


# EKS CreateNodegroup nodegroupName: not in the eks model; EKS user guide, create-managed-node-group.html ("The
# node group name can't be longer than 63 characters") and the API's own error ("nodeGroupName can't be longer
# than 63 characters!", terraform-aws-modules/terraform-aws-eks#1713).
EKS_NODEGROUP_NAME_MAX = 63


def check_pools(p: Platform, region: str | None) -> list[Problem]:
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


def check_mig_layouts(p: Platform) -> list[Problem]:
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
            continue  # reported by check_pools
        seen = first.setdefault(profile.name, (i, pool.accelerator, profile.slices_per_gpu))
        if seen[2] != profile.slices_per_gpu:
            out.append(Problem(
                f"pools[{i}].sharing.profile",
                f"MIG profile {profile.name!r} is {profile.slices_per_gpu} slices per GPU on {pool.accelerator} but "
                f"{seen[2]} on {seen[1]} (pools[{seen[0]}]); one cluster's MIG layouts are named by profile, so "
                "use a profile with the same geometry on both or put the pools in different clusters",
            ))
    return out


def check_system_pool(p: Platform) -> list[Problem]:
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
