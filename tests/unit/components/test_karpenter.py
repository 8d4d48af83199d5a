"""Karpenter as a pool provisioner: the same pool whichever provisioner makes its nodes (labels, taints,
capacity, flavor, quota, simulated nodes), NodePools and EC2NodeClasses that say what the plan decided
and validate against the real Karpenter 1.15.2 CRD schemas, a controller that runs on the system pool
with the IAM and interruption queue of Karpenter's own CloudFormation, and the Karpenter-only rules of the
spec with their config paths.

Expectations come from the plan, the catalog, the chart's default values (tests/fixtures/charts) and the
CRDs in ../shared/crds/karpenter-v1.15.2 (from the module's charts/karpenter-crd).
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from components.platform import PATCH_FORCE_ANNOTATION
from components.karpenter import INTERRUPTION_EVENTS, controller_policies, node_class, node_pool
from components.queues import cluster_queue, resource_flavor
from gpu_platform import catalog, conventions as cv
from gpu_platform.nodes import fake_nodes
from gpu_platform.plan import build_plan
from gpu_platform.spec import SpecError, load_platform
from tests import crd_schema
from tests.chart_values import chart_defaults, unknown_keys
from tests.conftest import KARPENTER_STACK, plan_of, platform_raw, rendered

STACK = KARPENTER_STACK
RELEASE = "kubernetes:helm.sh/v3:Release"
NODE_POOL = f"kubernetes:{cv.KARPENTER_NODEPOOL_API_VERSION}:NodePool"
NODE_CLASS = f"kubernetes:{cv.KARPENTER_NODECLASS_API_VERSION}:{cv.KARPENTER_NODECLASS_KIND}"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
DEFAULTS = chart_defaults("karpenter-1.15.2-values.yaml")


def objects(kind_type: str) -> dict[str, dict[str, Any]]:
    return {r.inputs["metadata"]["name"]: r.inputs for r in rendered(STACK).by_type(kind_type)}


def release(name: str):
    (r,) = [r for r in rendered(STACK).by_type(RELEASE) if r.inputs["name"] == name]
    return r.inputs


def one(type_: str):
    (r,) = rendered(STACK).by_type(type_)
    return r.inputs


def as_managed_node_groups(raw: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(raw)
    for pool in out["pools"]:
        pool.pop("provisioner", None)
        pool.pop("karpenter", None)
    return out


def force_applied(obj: dict[str, Any]) -> dict[str, Any]:
    """A builder's object as the platform applies it (components.platform.force_apply)."""
    meta = obj["metadata"]
    return {**obj, "metadata": {**meta, "annotations": {**(meta.get("annotations") or {}), PATCH_FORCE_ANNOTATION: "true"}}}


# ---------------------------------------------------------------------------------------------------
# the same pool whichever provisioner


def test_the_fixture_has_a_pool_of_each_provisioner() -> None:
    kinds = {p.provisioner for p in plan_of(STACK).pools}
    assert kinds == {cv.PROVISIONER_KARPENTER, cv.PROVISIONER_MANAGED_NODE_GROUP}


def test_switching_provisioner_changes_no_pool_flavor_quota_or_simulated_node() -> None:
    raw = platform_raw(STACK)
    karpenter = build_plan(load_platform(raw, "us-east-1"), "us-east-1")
    managed = build_plan(load_platform(as_managed_node_groups(raw), "us-east-1"), "us-east-1")
    # Who makes the nodes, and so who scales them: Karpenter, or the Cluster Autoscaler through its group's tags
    # (gpu_platform/plan/autoscaling.py); the pool's units, labels, taints, flavor and quota stay the same.
    scaling = ("provisioner", "karpenter", "scaler", "group_min", "desired_nodes", "autoscaler_tags", "autoscaler_labels")
    strip = lambda p: {k: getattr(p, k) for k in p.__slots__ if k not in scaling}  # noqa: E731
    assert [strip(p) for p in karpenter.pools] == [strip(p) for p in managed.pools]
    assert karpenter.teams == managed.teams
    assert fake_nodes(karpenter) == fake_nodes(managed)
    # What Kueue is told: the rendered flavors of the Karpenter stack are those of the managed plan.
    flavors = {o["metadata"]["name"]: o for o in rendered(STACK).kubernetes_objects() if o["kind"] == "ResourceFlavor"}
    for p in managed.pools:
        assert flavors[p.flavor] == force_applied(resource_flavor(p))
    queues = {o["metadata"]["name"]: o for o in rendered(STACK).kubernetes_objects() if o["kind"] == "ClusterQueue"}
    # ... but for the ProvisioningRequest check: Karpenter implements none, so only the managed plan's
    # ClusterQueues ask the autoscaler for a job's nodes on the pools it would scale.
    assert karpenter.provisioning.flavors == ("a10g-dev",)
    assert managed.provisioning.flavors == ("l40s-infer", "a10g-dev")  # h100-train is a capacity block: reserved
    for t in karpenter.teams:
        assert queues[t.cluster_queue] == force_applied(cluster_queue(t, karpenter))
        without_checks = lambda q: {**q, "spec": {k: v for k, v in q["spec"].items() if k != "admissionChecksStrategy"}}  # noqa: E731
        assert without_checks(cluster_queue(t, karpenter)) == without_checks(cluster_queue(t, managed))


def test_karpenter_pools_get_no_node_group_and_managed_pools_no_node_pool() -> None:
    plan = plan_of(STACK)
    groups = {r.inputs["labels"].get(cv.POOL) for r in rendered(STACK).by_type(NODE_GROUP)} - {None}
    assert groups == {p.name for p in plan.managed_node_group_pools}
    assert set(objects(NODE_POOL)) == set(objects(NODE_CLASS)) == {p.karpenter.nodepool for p in plan.karpenter_pools}


# ---------------------------------------------------------------------------------------------------
# NodePool and EC2NodeClass


def test_every_node_pool_and_node_class_validates_against_the_karpenter_crds() -> None:
    found = [*objects(NODE_POOL).values(), *objects(NODE_CLASS).values()]
    assert len(found) == 2 * len(plan_of(STACK).karpenter_pools)
    for obj in found:
        assert crd_schema.known(obj["apiVersion"], obj["kind"])
        assert crd_schema.validate(obj) == [], obj["metadata"]["name"]


def test_node_template_carries_the_pools_labels_and_taints() -> None:
    for pool in plan_of(STACK).karpenter_pools:
        np = objects(NODE_POOL)[pool.karpenter.nodepool]["spec"]
        assert np["template"]["metadata"]["labels"] == dict(pool.node_labels)
        assert np["template"]["spec"]["taints"] == [t.to_k8s() for t in pool.taints]
        assert np["template"]["spec"]["nodeClassRef"] == {
            "group": cv.KARPENTER_NODECLASS_GROUP, "kind": cv.KARPENTER_NODECLASS_KIND, "name": pool.karpenter.nodeclass}


def requirements(pool) -> dict[str, tuple[str, list[str]]]:
    np = objects(NODE_POOL)[pool.karpenter.nodepool]["spec"]["template"]["spec"]
    return {r["key"]: (r["operator"], r["values"]) for r in np["requirements"]}


def requirements_of(pool) -> dict[str, tuple[str, list[str]]]:
    return {r["key"]: (r["operator"], r["values"]) for r in node_pool(pool)["spec"]["template"]["spec"]["requirements"]}


def test_requirements_pin_instance_type_zone_and_capacity_type() -> None:
    pools = plan_of(STACK).pools_by_name
    train, infer = requirements(pools["h100-train"]), requirements(pools["l40s-infer"])
    assert train[cv.INSTANCE_TYPE_LABEL] == ("In", ["p5.48xlarge"])
    assert train[cv.ZONE_LABEL] == ("In", ["us-east-1a"])
    # A capacity block: reserved capacity only, that block by id, of the capacity-block kind.
    assert train[cv.KARPENTER_CAPACITY_TYPE_LABEL] == ("In", ["reserved"])
    assert train[cv.KARPENTER_CAPACITY_RESERVATION_ID_LABEL] == ("In", [pools["h100-train"].reservation_id])
    assert train[cv.KARPENTER_CAPACITY_RESERVATION_TYPE_LABEL] == ("In", ["capacity-block"])
    assert infer[cv.KARPENTER_CAPACITY_TYPE_LABEL] == ("In", ["on-demand"])
    assert cv.ZONE_LABEL not in infer and cv.KARPENTER_CAPACITY_RESERVATION_ID_LABEL not in infer


def test_limits_are_capacity_max_nodes_and_their_gpus() -> None:
    for pool in plan_of(STACK).karpenter_pools:
        limits = objects(NODE_POOL)[pool.karpenter.nodepool]["spec"]["limits"]
        assert limits == {"nodes": str(pool.max_nodes), cv.GPU_RESOURCE: str(pool.capacity_gpus)}
        assert pool.capacity_units == pool.max_nodes * pool.units_per_node  # what Kueue is told, unchanged


def test_training_pools_never_disrupt_running_work_and_inference_pools_have_a_budget() -> None:
    pools = plan_of(STACK).pools_by_name
    train = objects(NODE_POOL)["h100-train"]["spec"]
    infer = objects(NODE_POOL)["l40s-infer"]["spec"]
    assert train["disruption"]["consolidationPolicy"] == "WhenEmpty"
    assert {"nodes": "0", "reasons": ["Drifted", "Underutilized"]} in train["disruption"]["budgets"]
    assert train["template"]["spec"]["expireAfter"] == "Never"  # expiration is forceful: never on training
    assert infer["disruption"]["consolidationPolicy"] == "WhenEmptyOrUnderutilized"
    assert infer["disruption"]["budgets"] == [{"nodes": "25%"}]
    assert pools["l40s-infer"].karpenter.expire_after == "720h"


def test_node_class_spells_efa_storage_imds_ami_and_reservation() -> None:
    pools = plan_of(STACK).pools_by_name
    train = objects(NODE_CLASS)["h100-train"]["spec"]
    it = catalog.INSTANCE_TYPES["p5.48xlarge"]
    interfaces = train["networkInterfaces"]
    assert interfaces[0] == {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"}
    assert sum(i["interfaceType"] == "efa-only" for i in interfaces) == it.efa_interfaces == pools["h100-train"].efa_interfaces
    assert train["capacityReservationSelectorTerms"] == [{"id": pools["h100-train"].reservation_id}]
    assert train["instanceStorePolicy"] == "RAID0"
    assert train["metadataOptions"]["httpTokens"] == "required" and train["metadataOptions"]["httpPutResponseHopLimit"] == 2
    assert train["amiFamily"] == "AL2023" and train["amiSelectorTerms"] == [{"alias": "al2023@v20251120"}]
    assert train["blockDeviceMappings"][0]["ebs"]["volumeSize"] == "200Gi" and train["blockDeviceMappings"][0]["rootVolume"]
    assert train["subnetSelectorTerms"] == [{"id": s} for s in plan_of(STACK).cluster.subnet_ids]
    assert train["tags"] == plan_of(STACK).pool_tags(pools["h100-train"])
    assert train["role"] == plan_of(STACK).karpenter.node_role
    infer = objects(NODE_CLASS)["l40s-infer"]["spec"]
    assert infer["amiFamily"] == "Bottlerocket" and "networkInterfaces" not in infer
    assert [(b["deviceName"], b["rootVolume"]) for b in infer["blockDeviceMappings"]] == [("/dev/xvda", False), ("/dev/xvdb", True)]


def test_efa_pools_get_the_efa_security_group_beside_the_clusters() -> None:
    """EFA traffic needs a group allowing all traffic to and from itself (the EFA security group); Karpenter
    puts every selected group on every interface, so only EFA pools select it."""
    (rule,) = rendered(STACK).by_type("aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule")
    efa_group = rule.inputs["securityGroupId"]
    assert objects(NODE_CLASS)["h100-train"]["spec"]["securityGroupSelectorTerms"] == [{"id": "sg-00000000"}, {"id": efa_group}]
    assert objects(NODE_CLASS)["l40s-infer"]["spec"]["securityGroupSelectorTerms"] == [{"id": "sg-00000000"}]


def test_bottlerocket_nodes_keep_the_operators_device_plugin_and_mig_manager_off() -> None:
    """Bottlerocket's NVIDIA AMI runs its own device plugin (bottlerocket-os/bottlerocket#4309: a second one
    broke CUDA); the GPU Operator keeps a deploy label it finds on a node, so the NodePool sets them false."""
    infer = objects(NODE_POOL)["l40s-infer"]["spec"]["template"]["metadata"]["labels"]
    assert infer["nvidia.com/gpu.deploy.device-plugin"] == "false"
    assert infer["nvidia.com/gpu.deploy.mig-manager"] == "false"
    train = objects(NODE_POOL)["h100-train"]["spec"]["template"]["metadata"]["labels"]
    assert not [k for k in train if k.startswith("nvidia.com/gpu.deploy.")]


def test_an_efa_pool_outside_a_reservation_gets_its_placement_group() -> None:
    raw = platform_raw(STACK)
    pool(raw, "h100-train")["capacity"] = {"type": "on-demand", "min": 0, "max": 2}
    plan = build_plan(load_platform(raw, "us-east-1"), "us-east-1")
    train = plan.pools_by_name["h100-train"]
    assert train.placement_group
    spec = node_class(plan, train, "role", "sg-1", "sg-2")["spec"]
    assert spec["securityGroupSelectorTerms"] == [{"id": "sg-1"}, {"id": "sg-2"}]
    assert spec["placementGroupSelector"] == {"name": cv.placement_group_name(plan.cluster.name, train.name)}
    assert "capacityReservationSelectorTerms" not in spec
    assert requirements_of(train)[cv.KARPENTER_CAPACITY_TYPE_LABEL] == ("In", ["on-demand"])


# ---------------------------------------------------------------------------------------------------
# the controller


def test_both_charts_are_pinned_from_the_upstream_oci_repository() -> None:
    crds, controller = release(cv.KARPENTER_CRD_RELEASE_NAME), release(cv.KARPENTER_RELEASE_NAME)
    assert crds["chart"] == "oci://public.ecr.aws/karpenter/karpenter-crd"
    assert controller["chart"] == "oci://public.ecr.aws/karpenter/karpenter"
    assert crds["version"] == controller["version"] == "1.15.2"
    assert controller["skipCrds"] is True  # the CRD chart owns them, so upgrades update them
    assert crds["namespace"] == controller["namespace"] == cv.KARPENTER_NAMESPACE


def test_every_controller_value_is_a_key_of_the_chart() -> None:
    # nodeSelector is a label map (its default holds kubernetes.io/os: linux).
    assert unknown_keys(release(cv.KARPENTER_RELEASE_NAME)["values"], DEFAULTS, free=("nodeSelector",)) == []


def test_the_key_check_catches_a_misspelled_key() -> None:
    assert unknown_keys({"settings": {"clusterNmae": "x"}}, DEFAULTS) == ["settings.clusterNmae"]


def test_the_controller_runs_on_the_system_pool_and_tolerates_nothing_gpu() -> None:
    plan = plan_of(STACK)
    values = release(cv.KARPENTER_RELEASE_NAME)["values"]
    system = {**plan.cluster.system_pool.labels, "kubernetes.io/os": "linux"}
    assert all(system.get(k) == v for k, v in values["nodeSelector"].items())
    for pool in plan.pools:
        assert not all(pool.node_labels.get(k) == v for k, v in values["nodeSelector"].items()), pool.name
    assert values["tolerations"] == []
    assert "affinity" not in values  # the chart's own keeps it off nodes Karpenter launches
    assert DEFAULTS["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0][
        "matchExpressions"] == [{"key": cv.KARPENTER_NODEPOOL_LABEL, "operator": "DoesNotExist"}]
    assert values["settings"] == {"clusterName": plan.cluster.name, "interruptionQueue": plan.karpenter.queue,
                                  "featureGates": {"nodeRepair": True}}
    assert values["replicas"] == 2


def test_pod_identity_gives_the_controller_role_to_the_charts_service_account() -> None:
    plan = plan_of(STACK)
    (assoc,) = [r.inputs for r in rendered(STACK).by_type("aws:eks/podIdentityAssociation:PodIdentityAssociation")
                if r.inputs["serviceAccount"] == cv.KARPENTER_SERVICE_ACCOUNT]
    assert (assoc["namespace"], assoc["serviceAccount"]) == (cv.KARPENTER_NAMESPACE, cv.KARPENTER_SERVICE_ACCOUNT)
    assert release(cv.KARPENTER_RELEASE_NAME)["values"]["serviceAccount"]["name"] == cv.KARPENTER_SERVICE_ACCOUNT
    (role,) = [r.inputs for r in rendered(STACK).by_type("aws:iam/role:Role") if r.inputs.get("name") == plan.karpenter.controller_role]
    trust = json.loads(role["assumeRolePolicy"])["Statement"][0]
    assert trust["Principal"] == {"Service": "pods.eks.amazonaws.com"} and set(trust["Action"]) == {"sts:AssumeRole", "sts:TagSession"}
    addons = [r.inputs["addonName"] for r in rendered(STACK).by_type("aws:eks/addon:Addon")]
    assert cv.POD_IDENTITY_AGENT_ADDON in addons


def test_nodes_have_their_role_and_access_entry() -> None:
    plan = plan_of(STACK)
    (role,) = [r for r in rendered(STACK).by_type("aws:iam/role:Role") if r.inputs.get("name") == plan.karpenter.node_role]
    attached = {r.inputs["policyArn"] for r in rendered(STACK).by_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
                if r.name.startswith("karpenter-node-role-")}
    assert attached == {f"arn:aws:iam::aws:policy/{n}" for n in (
        "AmazonEKSWorkerNodePolicy", "AmazonEKS_CNI_Policy", "AmazonEC2ContainerRegistryReadOnly", "AmazonSSMManagedInstanceCore")}
    entry = one("aws:eks/accessEntry:AccessEntry")
    assert entry["type"] == "EC2_LINUX" and entry["clusterName"] == plan.cluster.name


def test_the_interruption_queue_gets_every_event_rule() -> None:
    queue = one("aws:sqs/queue:Queue")
    assert queue["name"] == plan_of(STACK).karpenter.queue and queue["sqsManagedSseEnabled"] is True
    rules = {r.inputs["name"]: json.loads(r.inputs["eventPattern"]) for r in rendered(STACK).by_type("aws:cloudwatch/eventRule:EventRule")}
    assert sorted(p["detail-type"][0] for p in rules.values()) == sorted(d for _, d in INTERRUPTION_EVENTS.values())
    # Short enough for PutRule's 64 characters at every cluster name the spec accepts (test_aws_name_limits.py).
    assert set(rules) == {f"ml-staging-karpenter-{r}" for r in ("health", "spot", "rebalance", "state-change", "reservation")}
    assert len(rendered(STACK).by_type("aws:cloudwatch/eventTarget:EventTarget")) == len(INTERRUPTION_EVENTS)


def test_controller_policies_scope_passrole_to_the_node_role_and_read_the_queue() -> None:
    kp = plan_of(STACK).karpenter
    node_role = "arn:aws:iam::111122223333:role/KarpenterNodeRole-ml-staging"
    queue = "arn:aws:sqs:us-east-1:111122223333:ml-staging-karpenter"
    docs = controller_policies(kp, "ml-staging", "us-east-1", "111122223333", node_role, queue)
    assert set(docs) == {"node-lifecycle", "iam-integration", "eks-integration", "resource-discovery", "interruption"}
    passrole = next(s for s in docs["iam-integration"]["Statement"] if s["Action"] == "iam:PassRole")
    assert passrole["Resource"] == node_role
    assert docs["interruption"]["Statement"][0]["Resource"] == queue
    assert docs["eks-integration"]["Statement"][0]["Resource"] == "arn:aws:eks:us-east-1:111122223333:cluster/ml-staging"
    assert all(len(json.dumps(d)) < 6144 for d in docs.values())  # IAM managed policy size limit
    assert "interruption" not in controller_policies(
        kp.__class__(**{**{k: getattr(kp, k) for k in kp.__slots__}, "queue": None}), "c", "r", "1", "n", None)


def test_no_controller_without_a_karpenter_pool() -> None:
    for stack in ("staging", "prod"):
        assert plan_of(stack).karpenter is None
        assert not [r for r in rendered(stack).by_type(RELEASE) if r.inputs["name"] == cv.KARPENTER_RELEASE_NAME]


# ---------------------------------------------------------------------------------------------------
# what only Karpenter needs: rejected with the config path and why


def pool(raw: dict[str, Any], name: str) -> dict[str, Any]:
    return next(p for p in raw["pools"] if p["name"] == name)


def bad(mutate) -> list[str]:
    raw = platform_raw(STACK)
    mutate(raw)
    with pytest.raises(SpecError) as err:
        load_platform(raw, "us-east-1")
    return [str(p) for p in err.value.problems]


CASES = [
    ("capacity block with an on-demand fallback",
     lambda r: pool(r, "h100-train").update(karpenter={"capacityTypes": ["reserved", "on-demand"]}),
     "pools[0].karpenter.capacityTypes", "a capacity block is only reachable as 'reserved'"),
    ("capacity block without reserved",
     lambda r: pool(r, "h100-train").update(karpenter={"capacityTypes": ["on-demand"]}),
     "pools[0].karpenter.capacityTypes", "a capacity block is only reachable as 'reserved'"),
    ("reserved without a reservation",
     lambda r: pool(r, "l40s-infer").update(karpenter={"capacityTypes": ["reserved"]}),
     "pools[1].karpenter.capacityTypes", "'reserved' needs a reservation"),
    ("minimum nodes", lambda r: pool(r, "l40s-infer")["capacity"].update(min=1),
     "pools[1].capacity.min", "Karpenter keeps no idle nodes"),
    ("karpenter settings on a managed pool", lambda r: pool(r, "a10g-dev").update(karpenter={"amiVersion": "latest"}),
     "pools[2].karpenter", "only for provisioner 'karpenter'"),
    ("no system pool", lambda r: r["cluster"].pop("systemPool"),
     "pools[0].provisioner", "runs on the system pool"),
    ("an AMI version of another family", lambda r: pool(r, "h100-train")["karpenter"].update(amiVersion="v1.46.0"),
     "pools[0].karpenter.amiVersion", "v20240807"),
    ("a budget on a training pool", lambda r: pool(r, "h100-train")["karpenter"].update(disruptionBudget="1"),
     "pools[0].karpenter.disruptionBudget", "never disrupt running work"),
    ("a budget Karpenter cannot read", lambda r: pool(r, "l40s-infer")["karpenter"].update(disruptionBudget="one"),
     "pools[1].karpenter.disruptionBudget", "node count or percentage"),
    ("another Karpenter minor", lambda r: r["addons"]["karpenter"].update(version="1.14.1"),
     "addons.karpenter.version", "1.15.x"),
    ("Karpenter on an existing cluster",
     lambda r: (r["cluster"].update(provider="existing"), r["cluster"].pop("systemPool")),
     "pools[0].provisioner", "only for cluster.provider 'eks'"),
    ("an unknown provisioner", lambda r: pool(r, "a10g-dev").update(provisioner="cluster-autoscaler"),
     "pools[2].provisioner", "karpenter"),
    # Karpenter launches only types whose resources fit the pods' requests (karpenter resources.Fits); EC2 types
    # offer nvidia.com/gpu, so pods of these pools would wait forever (kubernetes-sigs/karpenter#729).
    ("time-slicing on Karpenter",
     lambda r: pool(r, "h100-train").update(sharing={"mode": "time-slicing", "replicas": 2}),
     "pools[0].sharing.mode", "advertise nvidia.com/gpu.shared, which no EC2 instance type offers"),
    ("MIG on Karpenter", lambda r: pool(r, "h100-train").update(sharing={"mode": "mig", "profile": "1g.10gb"}),
     "pools[0].sharing.mode", "use provisioner 'managed-node-group' for MIG and time-slicing pools"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_karpenter_only_rules_name_the_path_and_why(case) -> None:
    _, mutate, path, words = case
    problems = bad(mutate)
    assert any(p.startswith(path) and words in p for p in problems), problems


def test_every_managed_pool_rule_applies_to_karpenter_pools() -> None:
    """EFA instance types, zones and reservations: the same checks, the same paths."""
    problems = bad(lambda r: pool(r, "h100-train").pop("availabilityZone"))
    assert any(p.startswith("pools[0].availabilityZone") for p in problems), problems
    problems = bad(lambda r: pool(r, "l40s-infer").update(fabric="efa", instanceType="g6e.xlarge"))
    assert any(p.startswith("pools[1].fabric") and "does not support EFA" in p for p in problems), problems
    problems = bad(lambda r: pool(r, "h100-train")["capacity"].pop("reservationId"))
    assert any(p.startswith("pools[0].capacity.reservationId") for p in problems), problems


def test_capacity_reservation_may_fall_back_to_on_demand() -> None:
    raw = platform_raw(STACK)
    pool(raw, "h100-train")["capacity"]["type"] = "capacity-reservation"
    pool(raw, "h100-train")["karpenter"]["capacityTypes"] = ["reserved", "on-demand"]
    kp = build_plan(load_platform(raw, "us-east-1"), "us-east-1").pools_by_name["h100-train"].karpenter
    assert kp.capacity_types == ("reserved", "on-demand")
    # The reservation is chosen by the EC2NodeClass; requiring its id would exclude the fallback's instances.
    assert cv.KARPENTER_CAPACITY_RESERVATION_ID_LABEL not in {r.key for r in kp.requirements}


def test_prod_warns_about_an_unpinned_ami() -> None:
    raw = platform_raw(STACK)
    raw["environment"] = "prod"
    pool(raw, "h100-train")["karpenter"].pop("amiVersion")
    warnings = build_plan(load_platform(raw, "us-east-1"), "us-east-1").warnings
    assert any("h100-train" in w and "al2023@latest" in w for w in warnings), warnings


def test_the_plan_shows_each_pools_provisioner() -> None:
    from platform_cli.plan_report import format_plan, plan_data

    data = plan_data(plan_of(STACK))
    assert {p["name"]: p["provisioner"] for p in data["pools"]} == {
        "h100-train": "karpenter", "l40s-infer": "karpenter", "a10g-dev": "managed-node-group"}
    assert data["karpenter"] == "1.15.2"
    assert "capacity-block (karpenter: reserved)" in format_plan(plan_of(STACK), "table", STACK)
