"""What `plan` warns about: what the stack cannot enforce itself (NetworkPolicy, control-plane logging, unmapped
groups) and quotas or pools that leave capacity idle or jobs unadmittable."""

from __future__ import annotations

from typing import Mapping

from .. import audit, conventions as cv, workload_controllers as wc
from .autoscaling import ProvisioningPlan, capacity_warnings
from ..pool_derivations import capacity_block_upgrade_warning
from ..spec import Platform
from .pools import PoolPlan
from .teams import TeamPlan


def network_policy_warning(spec: Platform) -> str | None:
    """The tenants' isolation is NetworkPolicy; who makes sure the cluster enforces it."""
    if not spec.teams:
        return None
    if spec.cluster.provider == "existing":
        return ("cluster.provider 'existing': the tenant NetworkPolicies (default-deny included) only take effect "
                "if the cluster's CNI enforces NetworkPolicy; on EKS set the vpc-cni add-on's "
                f"{cv.VPC_CNI_NETWORK_POLICY_KEY}=\"true\" (docs/deploying.md, What a real EKS account needs)")
    if not spec.addons.vpcCni.manage:
        return ("addons.vpcCni.manage is false: the tenant NetworkPolicies only take effect once the cluster's "
                f"vpc-cni add-on has {cv.VPC_CNI_NETWORK_POLICY_KEY}=\"true\"")
    return None


def security_warnings(teams: tuple[TeamPlan, ...], spec: Platform) -> list[str]:
    """What the stack cannot enforce itself: an attached EKS cluster's control-plane logging, and team
    groups that nothing maps people into (an RBAC subject nobody can be is no access control at all)."""
    out: list[str] = []
    c = spec.cluster
    if c.provider != "eks":
        return out
    if not c.create:
        out.append("cluster.create is false: the stack cannot turn on control-plane logging of an attached "
                   f"cluster; make sure its {', '.join(audit.REQUIRED_EKS_LOG_TYPES)} logs are on (aws eks "
                   "update-cluster-config --logging; `pulumi up` warns when they are not)")
    if c.identity is not None and c.identity.oidc is not None:
        prefix = c.identity.oidc.groupsPrefix
        if prefix:
            for t in teams:
                mapped = {g for _, gs in t.access_entries for g in gs}
                bare = [g for g in (*t.admin_groups, *t.member_groups, *t.viewer_groups)
                        if not g.startswith(prefix) and g not in mapped]
                if bare:
                    out.append(f"team {t.name!r}: groups {', '.join(bare)} lack the OIDC groupsPrefix {prefix!r} and "
                               "no access entry maps them: nobody can be in them")
        return out
    for t in teams:
        mapped = {g for _, gs in t.access_entries for g in gs}
        unmapped = [g for g in (*t.admin_groups, *t.member_groups, *t.viewer_groups) if g not in mapped]
        if unmapped:
            out.append(f"team {t.name!r}: no access entry (teams[].accessEntries) or OIDC provider "
                       f"(cluster.identity.oidc) maps anyone into {', '.join(unmapped)}")
    return out


def deprecation_warnings(spec: Platform) -> list[str]:
    """Keys the stack still spells their former way: they keep working, and the plan says what to write instead."""
    return [f"teams[{i}].quotas.{pool}.gpus: `gpus` is the former name of `units` (it counts the pool's units: MIG "
            f"slices and time-sliced replicas, not GPUs); write units: {quota.units}"
            for i, team in enumerate(spec.teams) for pool, quota in team.quotas.items() if quota.units_key == "gpus"]


def plan_warnings(pools: tuple[PoolPlan, ...], teams: tuple[TeamPlan, ...], spec: Platform,
              provisioning: ProvisioningPlan, used: Mapping[str, int]) -> tuple[str, ...]:
    """`used`: the nominal quotas on each pool (Plan.nominal_units)."""
    out = deprecation_warnings(spec)
    np_warning = network_policy_warning(spec)
    if np_warning:
        out.append(np_warning)
    out += security_warnings(teams, spec)
    for t in teams:
        if not t.quotas:
            out.append(f"team {t.name!r} has no quota on any pool: its jobs can never be admitted")
    for p in pools:
        if p.name not in used:
            out.append(f"pool {p.name!r} has no team quota: nobody can schedule on it")
        elif p.capacity_units and used[p.name] < p.capacity_units // 2:
            out.append(
                f"pool {p.name!r} is under half allocated ({used[p.name]}/{p.capacity_units} {p.resource_name}): "
                "idle capacity or max set too high"
            )
        if p.floor_nodes and p.name not in used:
            out.append(f"pool {p.name!r} keeps {p.floor_nodes} nodes running with no quota on them")
        if p.karpenter is not None and not p.karpenter.pins_ami and spec.environment == "prod":
            out.append(f"pool {p.name!r}: Karpenter AMI alias {p.karpenter.ami_alias}: every AMI release drifts "
                       "the pool's nodes; pin pools[].karpenter.amiVersion in prod")
    out += [w for w in (capacity_block_upgrade_warning(p, spec.cluster) for p in spec.pools) if w]
    for name in spec.addons.kueue.integrations:
        if name not in cv.BUILTIN_FRAMEWORKS and name not in wc.FRAMEWORK_CONTROLLER:
            out.append(f"Kueue framework {name!r}: no platform add-on installs its controller; until its CRD is on the "
                       "cluster Kueue waits for it, and the tenant admission policies do not read its kind's pod "
                       "templates (tenants cannot create it either: no RBAC is granted for it)")
    out += capacity_warnings(spec, pools, provisioning)
    return tuple(out)
