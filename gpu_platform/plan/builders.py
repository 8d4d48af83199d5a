"""Builds the Plan from a validated spec: every pool, team, cohort and priority, the cluster and the add-ons."""

from __future__ import annotations

from dataclasses import replace
from typing import Mapping

from .. import catalog, conventions as cv, workload_controllers as wc
from .autoscaling import for_cluster_autoscaler, plan_cluster_autoscaler, plan_provisioning, pool_capacity
from ..data import DataPlan, namespace_quota_with_claims, plan_data
from ..karpenter import plan_controller, plan_pool
from ..pool_derivations import (
    pool_capacity_gpus, pool_capacity_units, pool_labels, pool_nominal_units, pool_operator_labels, pool_resource_name,
    pool_topology_aware, pool_units_per_gpu,
)
from ..quota_reach import Reach, reaches_of_spec
from ..spec import Cluster, OidcProvider, Platform, Pool, Team
from .addons import plan_addons
from .cluster import ClusterPlan, OidcProviderPlan, SystemPoolPlan
from .model import Plan
from .ci import CiPlan, plan_ci
from .network import plan_vpc
from .node_reserve import instance_allocatable, pod_cpu_millis, pod_memory_mib
from .pools import PoolPlan, Taint
from .teams import CohortPlan, EgressPlan, PreemptionPlan, PriorityPlan, QuotaPlan, TeamPlan
from .warnings import plan_warnings


def _plan_pool(pool: Pool, spec: Platform) -> PoolPlan:
    pricing = spec.pricing
    it = catalog.INSTANCE_TYPES[pool.instanceType]
    units_per_gpu = pool_units_per_gpu(pool)
    units_per_node = it.gpus * units_per_gpu
    labels = pool_labels(pool)
    node_labels = {**labels, **pool_operator_labels(pool)}
    mig_config = dp_config = None
    if pool.sharing.mode == "mig":
        mig_config = cv.mig_config_name(pool.sharing.profile)
        node_labels[cv.MIG_CONFIG_LABEL] = mig_config
    elif pool.sharing.mode == "time-slicing":
        dp_config = cv.device_plugin_config_name(pool.name)
        node_labels[cv.DEVICE_PLUGIN_CONFIG_LABEL] = dp_config
    taints = (
        Taint(cv.GPU_TAINT_KEY, cv.GPU_TAINT_VALUE),
        Taint(cv.WORKLOAD_TAINT_KEY, cv.workload_taint_value(pool.workload)),
    )
    cap = pool.capacity
    sized = pool_capacity(pool, spec)
    efa = pool.fabric == "efa"
    in_reservation = cap.type in cv.RESERVED_CAPACITY_TYPES
    placement = pool.placementGroup if pool.placementGroup is not None else (efa and not in_reservation)
    return PoolPlan(
        name=pool.name,
        accelerator=pool.accelerator,
        instance_type=pool.instanceType,
        fabric=pool.fabric,
        workload=pool.workload,
        sharing_mode=pool.sharing.mode,
        mig_profile=pool.sharing.profile,
        replicas=pool.sharing.replicas,
        gpus_per_node=it.gpus,
        units_per_gpu=units_per_gpu,
        units_per_node=units_per_node,
        resource_name=pool_resource_name(pool),
        min_nodes=cap.min,
        max_nodes=cap.max,
        desired_nodes=sized.group_desired,
        capacity_units=pool_capacity_units(pool),
        capacity_gpus=pool_capacity_gpus(pool),
        # What a node of the type offers pods as EKS computes it, less the daemonsets (node_reserve.py).
        cpu_millis_per_unit=pod_cpu_millis(instance_allocatable(pool.instanceType)) // units_per_node,
        memory_mib_per_unit=pod_memory_mib(instance_allocatable(pool.instanceType)) // units_per_node,
        labels=labels,
        node_labels=node_labels,
        taints=taints,
        flavor=cv.flavor_name(pool.name),
        topology=cv.TOPOLOGY_NAME if pool_topology_aware(pool) else None,
        mig_config=mig_config,
        device_plugin_config=dp_config,
        capacity_type=cap.type,
        reservation_id=cap.reservationId,
        availability_zone=pool.availabilityZone,
        placement_group=bool(placement and efa),
        efa_interfaces=it.efa_interfaces if efa else 0,
        efa_only_interfaces=it.efa_only_interfaces,
        nvme_gb=it.nvme_gb,
        ami_type=pool.amiType,
        root_volume_gib=pool.rootVolumeGiB,
        usd_per_node_hour=pricing.get(pool.instanceType, catalog.ON_DEMAND_USD_PER_HOUR[pool.instanceType]),
        provisioner=pool.provisioner,
        karpenter=plan_pool(pool),
        capacity_semantics=sized.semantics,
        scaler=sized.scaler,
        reserved_nodes=sized.reserved_nodes,
        group_min=sized.group_min,
    )


def _plan_team(team: Team, spec: Platform, pools: Mapping[str, PoolPlan], gpu_resources: frozenset[str],
               reaches: Mapping[tuple[str, str], Reach]) -> TeamPlan:
    quotas = []
    cost = 0.0
    # Namespace caps: the most the team can ever hold (its reach), so a pod Kueue admits is never refused here.
    caps: dict[str, int] = {}
    cpu_millis = 0
    memory_mib = 0
    for pool_name, q in sorted(team.quotas.items()):
        pp = pools[pool_name]
        quotas.append(QuotaPlan(
            pool=pool_name,
            flavor=pp.flavor,
            resource_name=pp.resource_name,
            nominal=q.units,
            borrowing=q.borrowingLimit,
            lending=q.lendingLimit,
            cpu_millis_per_unit=pp.cpu_millis_per_unit,
            memory_mib_per_unit=pp.memory_mib_per_unit,
            reach=reaches[(team.name, pool_name)],
        ))
        ceiling = reaches[(team.name, pool_name)].units
        caps[pp.resource_name] = caps.get(pp.resource_name, 0) + ceiling
        cpu_millis += ceiling * pp.cpu_millis_per_unit
        memory_mib += ceiling * pp.memory_mib_per_unit
        cost += q.units / pp.units_per_node * pp.usd_per_node_hour
    # A ResourceQuota only limits the resources it lists: every GPU resource a pool advertises is capped,
    # at 0 where the team has no quota, or the namespace could take any number of them.
    for name in gpu_resources:
        caps.setdefault(name, 0)
    lim = team.limits
    hard = {f"requests.{name}": str(units) for name, units in sorted(caps.items())}
    hard.update({
        "requests.cpu": f"{cpu_millis + lim.cpu * 1000}m",
        "requests.memory": f"{memory_mib + lim.memoryGiB * 1024}Mi",
        "pods": str(lim.pods),
        "persistentvolumeclaims": str(lim.persistentVolumeClaims),
        "requests.storage": lim.storage,
    })
    pre = team.preemption or spec.defaultPreemption
    if team.priorities is not None:
        allowed = tuple(team.priorities)
    else:
        allowed = tuple(p.name for p in spec.priorities if p.grantedByDefault)
    return TeamPlan(
        name=team.name,
        namespaces=tuple(team.namespace_names),
        cost_center=team.costCenter,
        cohort=team.cohort,
        admin_groups=tuple(team.groups.admin),
        member_groups=tuple(team.groups.member),
        viewer_groups=tuple(team.groups.viewer),
        pod_security=team.podSecurity,
        quotas=tuple(quotas),
        preemption=PreemptionPlan(pre.reclaimWithinCohort, pre.borrowWithinCohort, pre.withinClusterQueue),
        fair_sharing_weight=team.fairSharingWeight,
        egress=tuple(EgressPlan(e.cidr, tuple(e.ports), e.protocol) for e in team.egress),
        cluster_queue=cv.cluster_queue_name(team.name),
        namespace_labels={
            cv.TEAM: team.name,
            cv.COST_CENTER: team.costCenter,
            cv.ENVIRONMENT: spec.environment,
        },
        namespace_quota=hard,
        usd_per_hour_nominal=round(cost, 2),
        allowed_priorities=allowed,
        topology_resources=tuple(sorted(
            {pools[q].resource_name for q in team.quotas if pools[q].topology}
            - {pools[q].resource_name for q in team.quotas if not pools[q].topology})),
        cpu_only_cpu_millis=lim.cpu * 1000,
        cpu_only_memory_mib=lim.memoryGiB * 1024,
        own_storage=lim.storage,
        own_claims=lim.persistentVolumeClaims,
        allowed_registries=tuple(dict.fromkeys([*spec.images.allowedRegistries, *team.allowedRegistries])),
        access_entries=tuple((e.principalArn, tuple(e.groups)) for e in team.accessEntries),
    )


def _with_platform_claims(team: TeamPlan, data: DataPlan) -> TeamPlan:
    """The team's quota per namespace: its own allowance plus the platform's claims in that namespace (data and
    checkpoints in each, a file system's claim only in the namespace holding it), so no namespace's quota is
    raised by a claim made in another."""
    quotas = {ns: namespace_quota_with_claims(team.namespace_quota, len(data.claims(team.name, ns)))
              for ns in team.namespaces}
    most = max(team.namespaces, key=lambda ns: int(quotas[ns].get("persistentvolumeclaims", "0")))
    return replace(team, namespace_quota=quotas[most], namespace_quotas=quotas)


def _plan_system_pool(c) -> SystemPoolPlan | None:
    sp = c.systemPool
    if sp is None or c.provider != "eks":
        return None
    return SystemPoolPlan(
        node_group_name=cv.system_node_group_name(c.name),
        instance_type=sp.instanceType,
        min_nodes=sp.min,
        max_nodes=sp.max,
        desired_nodes=sp.desired if sp.desired is not None else sp.min,
        ami_type=sp.amiType,
        disk_gib=sp.diskGiB,
        labels={cv.NODE_ROLE: cv.SYSTEM_NODE_ROLE},
    )


def _plan_oidc(o: OidcProvider | None) -> OidcProviderPlan | None:
    if o is None:
        return None
    return OidcProviderPlan(
        name=o.name, issuer_url=o.issuerUrl, client_id=o.clientId, groups_claim=o.groupsClaim,
        username_claim=o.usernameClaim, username_prefix=o.usernamePrefix, groups_prefix=o.groupsPrefix,
        required_claims=dict(o.requiredClaims) or None,
    )


def _access_entries(spec: Platform) -> tuple[tuple[str, tuple[str, ...], str], ...]:
    if spec.cluster.provider != "eks":
        return ()
    out = [(arn, tuple(spec.cluster.platformAdmins), "platform")
           for arn in (spec.cluster.identity.platformAdminRoles if spec.cluster.identity else ())]
    out += [(e.principalArn, tuple(e.groups), t.name) for t in spec.teams for e in t.accessEntries]
    return tuple(out)


def _plan_ci(c: Cluster, region: str | None) -> CiPlan | None:
    if c.ci is None or c.provider != "eks":
        return None
    g = c.ci.github
    return plan_ci(c.name, region, g.repository, g.deployBranch, tuple(g.deployEnvironments), g.createOidcProvider,
                   tuple(g.deployPolicyArns), g.stateBucket, g.secretsKeyArn, g.clusterAccess)


def build_plan(spec: Platform, region: str | None = None, multikueue_role: str = "manager") -> Plan:
    if multikueue_role not in cv.MULTIKUEUE_ROLES:
        raise ValueError(f"multiKueueRole {multikueue_role!r}; valid: {', '.join(cv.MULTIKUEUE_ROLES)}")
    pools = tuple(_plan_pool(p, spec) for p in spec.pools)
    pools = tuple(for_cluster_autoscaler(p) for p in pools)  # its GPU label and Auto Scaling group tags
    by_name = {p.name: p for p in pools}
    gpu_resources = frozenset(p.resource_name for p in pools)  # once, not once per team
    reaches = reaches_of_spec(spec)  # every team's reach on every pool, one cohort tree per pool
    teams = tuple(_plan_team(t, spec, by_name, gpu_resources, reaches) for t in spec.teams)
    data = plan_data(spec, region)
    teams = tuple(_with_platform_claims(t, data) for t in teams)
    c = spec.cluster
    karpenter = plan_controller(spec, region)
    manager = multikueue_role == "manager" and spec.multiKueue is not None and bool(spec.multiKueue.workers)
    provisioning = plan_provisioning(spec, pools, manager)
    nominal = pool_nominal_units(spec.teams)
    autoscaler = plan_cluster_autoscaler(spec, region, pools, karpenter is not None or data.pod_identity_agent)
    return Plan(
        environment=spec.environment,
        region=region,
        cluster=ClusterPlan(
            name=c.name,
            provider=c.provider,
            kubernetes_version=c.kubernetesVersion,
            subnet_ids=tuple(c.subnetIds),
            create=c.create,
            node_role_arn=c.nodeRoleArn,
            platform_admins=tuple(c.platformAdmins),
            system_pool=_plan_system_pool(c),
            manage_vpc_cni=c.provider == "eks" and spec.addons.vpcCni.manage,
            vpc_cni_version=spec.addons.vpcCni.version,
            manage_node_monitoring_agent=c.provider == "eks" and spec.addons.nodeMonitoringAgent.manage,
            node_monitoring_agent_version=spec.addons.nodeMonitoringAgent.version,
            control_plane_logs=tuple(c.controlPlaneLogs) if c.provider == "eks" else (),
            access_entries=_access_entries(spec),
            oidc=_plan_oidc(c.identity.oidc) if c.identity is not None and c.provider == "eks" else None,
            vpc=(plan_vpc(cv.vpc_name(c.name), c.vpc.cidr, tuple(c.vpc.availabilityZones),
                          c.vpc.natGateways == "per-zone") if c.vpc is not None else None),
            ci=_plan_ci(c, region),
        ),
        pools=pools,
        teams=teams,
        cohorts=tuple(CohortPlan(x.name, x.parent, x.fairSharingWeight) for x in spec.cohorts),
        priorities=tuple(PriorityPlan(p.name, p.value, p.description) for p in spec.priorities),
        # MIG slices keep their own resource names only under the mixed strategy; `single` would
        # advertise them as nvidia.com/gpu and break the Kueue flavors' resource names.
        mig_strategy="mixed" if any(p.sharing_mode == "mig" for p in pools) else "single",
        addons=plan_addons(spec),
        nominal_units=nominal,
        warnings=plan_warnings(pools, teams, spec, provisioning, nominal),
        multikueue_role=multikueue_role,
        image_registries=tuple(spec.images.allowedRegistries),
        require_image_digests=spec.images.requireDigests,
        job_ttl_seconds=spec.jobs.ttlSecondsAfterFinished,
        job_max_ttl_seconds=spec.jobs.maxTtlSecondsAfterFinished,
        job_termination_grace_seconds=spec.jobs.terminationGracePeriodSeconds,
        kueue_requeue_limit=spec.addons.kueue.requeueLimit,
        karpenter=karpenter,
        data=data,
        kueue_integrations=wc.effective_frameworks(spec.addons.kueue.integrations),
        workload_controllers=wc.plan_controllers(
            {key: (getattr(spec.addons, key).install, getattr(spec.addons, key).version) for key in wc.KEYS},
            deploy=c.provider == "eks", on_system_pool=c.provider == "eks" and c.systemPool is not None),
        cluster_autoscaler=autoscaler,
        provisioning=provisioning,
    )
