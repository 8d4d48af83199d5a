"""GPU node pools on EKS under mocks: what `pulumi up` would create for each pool, and what it must not.

Expectations come from the plan, the catalog and conventions (or are AWS facts stated as such); the
renders are the cached runs of the real program from conftest.
"""

from __future__ import annotations

import base64
import json
import copy
import dataclasses
import email
import re
import tomllib
from typing import Any

import pytest
import yaml

from gpu_platform import catalog, conventions as cv

from tests.conftest import ROOT, background_render, plan_of, rendered, stack_doc
from tests.unit.components.stack_variants import NODE_ROLE_ARN, switched_staging, variant

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
PLACEMENT_GROUP = "aws:ec2/placementGroup:PlacementGroup"
POOL_COMPONENT = "gpu-platform:node_pools:GpuNodePool"
ROLE = "aws:iam/role:Role"
ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
CLUSTER = "aws:eks/cluster:Cluster"

# AWS facts: the EKS node group capacity types, and the AWS managed policies every EKS node needs
# (EKS user guide, "Amazon EKS node IAM role").
EKS_CAPACITY = {"on-demand": "ON_DEMAND", "spot": "SPOT", "capacity-reservation": "ON_DEMAND", "capacity-block": "CAPACITY_BLOCK"}
NODE_POLICIES = {
    "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
    "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy",
    "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryReadOnly",
}


def res(stack: str, type_: str, name: str):
    return rendered(stack).one(type_, f"np-{name}")


def test_every_pool_gets_exactly_its_node_group_and_launch_template():
    plan = plan_of("prod")
    r = rendered("prod")
    names = {f"np-{p.name}" for p in plan.pools}
    assert {x.name for x in r.by_type(NODE_GROUP)} == names
    assert {x.name for x in r.by_type(LAUNCH_TEMPLATE)} == names
    assert len(r.by_type(NODE_GROUP)) == len(r.by_type(LAUNCH_TEMPLATE)) == len(plan.pools)
    for pool in plan.pools:
        component = r.one(POOL_COMPONENT, f"np-{pool.name}")
        ng, lt = res("prod", NODE_GROUP, pool.name), res("prod", LAUNCH_TEMPLATE, pool.name)
        assert component.parent == "node-pools"
        assert ng.parent == lt.parent == component.name
        assert ng.inputs["nodeGroupName"] == cv.node_group_name(plan.cluster.name, pool.name)
        assert ng.inputs["clusterName"] == plan.cluster.name
        # The node group runs on its own template (the mock gives every resource the id "<name>-id"), at the
        # version the provider reports for it (a new template's latestVersion is 1), as the string EKS takes.
        assert ng.inputs["launchTemplate"] == {"id": f"{lt.name}-id", "version": "1"}
        assert lt.name in ng.options["dependencies"]
        # The instance type is named exactly once, in the template (EKS rejects it in both places).
        assert lt.inputs["instanceType"] == pool.instance_type
        assert "instanceTypes" not in ng.inputs
        assert ng.inputs["amiType"] == pool.ami_type
        assert ng.inputs["version"] == plan.cluster.kubernetes_version
        assert ng.inputs["scalingConfig"] == {
            "minSize": pool.group_min, "maxSize": pool.max_nodes, "desiredSize": pool.desired_nodes,
        }
        assert ng.inputs["nodeRepairConfig"] == {"enabled": True}


def test_efa_interfaces_follow_the_current_aws_multi_card_layout():
    """EC2 user guide, efa-acc-inst-types.html (P5/P5e and P6-B200 "use case 1"): primary ENA interface on
    card 0 device 0, EFA-only on card 0 device 1, EFA-only on device 0 of every other card: one EFA device
    per network card, the count the EFA device plugin then advertises."""
    plan = plan_of("prod")
    efa_pools = [p for p in plan.pools if p.fabric == "efa"]
    assert efa_pools, "prod must exercise EFA"
    for pool in plan.pools:
        lt = res("prod", LAUNCH_TEMPLATE, pool.name)
        it = catalog.INSTANCE_TYPES[pool.instance_type]
        interfaces = lt.inputs.get("networkInterfaces")
        if pool.fabric != "efa":
            assert interfaces is None, f"{pool.name}: ethernet pools keep EKS's default interface"
            assert pool.efa_interfaces == 0
            continue
        assert it.efa_only_interfaces, "every catalog EFA type supports EFA-only interfaces"
        layout = [(i["networkCardIndex"], i["deviceIndex"], i["interfaceType"]) for i in interfaces]
        assert layout[:2] == [(0, 0, "interface"), (0, 1, "efa-only")], pool.name
        assert layout[2:] == [(card, 0, "efa-only") for card in range(1, it.network_cards)], pool.name
        efa_devices = sum(kind in ("efa", "efa-only") for _, _, kind in layout)
        assert efa_devices == it.network_cards == pool.efa_interfaces, pool.name
        assert len({(card, device) for card, device, _ in layout}) == len(layout), "no slot used twice"
        # EKS drops its cluster security group once a template names any: every interface carries one.
        groups = {tuple(i["securityGroups"]) for i in interfaces}
        assert len(groups) == 1 and all(groups.pop()), pool.name
        assert all("subnetId" not in i for i in interfaces), "EKS forbids subnets in template interfaces"
    # p5.48xlarge: 32 cards, so 32 EFA devices and 33 interfaces (the ENA primary besides).
    h100 = next(p for p in efa_pools if p.instance_type == "p5.48xlarge")
    assert h100.efa_interfaces == 32
    assert len(res("prod", LAUNCH_TEMPLATE, h100.name).inputs["networkInterfaces"]) == 33


def test_without_efa_only_support_the_primary_is_efa_with_ena():
    from components.node_pools import efa_interface_layout

    pool = dataclasses.replace(next(p for p in plan_of("prod").pools if p.fabric == "efa"), efa_only_interfaces=False)
    layout = efa_interface_layout(pool)
    assert layout[0] == (0, 0, "efa") and all(kind == "efa" and device == 1 for _, device, kind in layout[1:])
    assert len(layout) == pool.efa_interfaces


def test_capacity_block_and_reservation_wiring():
    plan = plan_of("prod")
    assert {p.capacity_type for p in plan.pools} == set(EKS_CAPACITY), "prod must exercise every capacity type"
    for pool in plan.pools:
        ng, lt = res("prod", NODE_GROUP, pool.name), res("prod", LAUNCH_TEMPLATE, pool.name)
        assert ng.inputs["capacityType"] == EKS_CAPACITY[pool.capacity_type], pool.name
        market = lt.inputs.get("instanceMarketOptions")
        target = (lt.inputs.get("capacityReservationSpecification") or {}).get("capacityReservationTarget")
        if pool.capacity_type == "capacity-block":
            assert market == {"marketType": "capacity-block"}
        else:
            assert market is None, pool.name
        if pool.capacity_type in ("capacity-block", "capacity-reservation"):
            assert target == {"capacityReservationId": pool.reservation_id}
            # No spare instances beyond the reservation: old nodes go before new ones launch.
            assert ng.inputs["updateConfig"]["updateStrategy"] == "MINIMAL"
        else:
            assert target is None, pool.name
            assert ng.inputs["updateConfig"]["updateStrategy"] == "DEFAULT"
        assert ng.inputs["updateConfig"]["maxUnavailable"] == pool.node_update_max_unavailable


def test_single_zone_pools_only_get_subnets_of_their_zone():
    """The zone lookup answers as EC2 does (harness.render: prod's subnet-0a1 is in us-east-1a and
    subnet-0b2 in us-east-1b): a pool with a zone gets the cluster's subnets in it, any other pool all."""
    plan = plan_of("prod")
    assert list(plan.cluster.subnet_ids) == ["subnet-0a1", "subnet-0b2"]
    in_zone = {"us-east-1a": ["subnet-0a1"], "us-east-1b": ["subnet-0b2"]}
    assert {p.availability_zone for p in plan.pools} == {None, *in_zone}
    for pool in plan.pools:
        got = res("prod", NODE_GROUP, pool.name).inputs["subnetIds"]
        want = in_zone[pool.availability_zone] if pool.availability_zone else sorted(plan.cluster.subnet_ids)
        assert got == want, pool.name


def _zone_lookup(monkeypatch, zones: dict[str, str], pool_name: str) -> list[str]:
    """What the program gives prod's pool `pool_name` as subnets when cluster.subnetIds are the keys of
    `zones`, each in its zone: components.node_pools' own lookup, run alone under the render mocks (a
    whole render per case would cost seconds)."""
    import pulumi

    from components.node_pools.gpu_node_pool import _one_zone_subnets
    from harness import render

    for subnet, zone in zones.items():
        monkeypatch.setitem(render.SUBNET_ZONES, subnet, zone)
    plan = plan_of("prod")
    cluster = dataclasses.replace(plan.cluster, subnet_ids=tuple(zones))
    (pool,) = [p for p in plan.pools if p.name == pool_name]
    found: list[list[str]] = []

    def program() -> None:
        _one_zone_subnets(cluster, pool, pulumi.InvokeOutputOptions()).apply(found.append)

    render.run_program(program, "prod", {"aws:region": "us-east-1"})
    (ids,) = found
    return ids


def test_a_zone_with_several_of_the_cluster_subnets_gets_them_all(monkeypatch):
    zones = {"subnet-0a1": "us-east-1a", "subnet-0c3": "us-east-1b", "subnet-0b2": "us-east-1b"}
    assert _zone_lookup(monkeypatch, zones, "h200-train") == ["subnet-0b2", "subnet-0c3"]
    assert _zone_lookup(monkeypatch, zones, "h100-train") == ["subnet-0a1"]


def test_a_pool_whose_zone_has_none_of_the_cluster_subnets_fails_the_render_and_says_what_to_add(monkeypatch):
    """EC2 answers an empty list; the program refuses it rather than give the node group no subnet."""
    with pytest.raises(ValueError) as err:
        _zone_lookup(monkeypatch, {"subnet-0b2": "us-east-1b", "subnet-0c3": "us-east-1c"}, "h100-train")
    message = str(err.value)
    assert "pool 'h100-train': none of cluster.subnetIds (subnet-0b2, subnet-0c3) is in availabilityZone " \
           "'us-east-1a'; add a subnet in that zone to cluster.subnetIds" in message, message


@pytest.mark.parametrize("stack", ["prod", "staging"])
def test_placement_groups_only_where_the_plan_says(stack: str):
    plan = plan_of(stack)
    r = rendered(stack)
    wanted = {f"np-{p.name}" for p in plan.pools if p.placement_group}
    assert {x.name for x in r.by_type(PLACEMENT_GROUP)} == wanted
    for pool in plan.pools:
        placement = res(stack, LAUNCH_TEMPLATE, pool.name).inputs.get("placement")
        if pool.placement_group:
            pg = res(stack, PLACEMENT_GROUP, pool.name)
            assert pg.inputs["strategy"] == "cluster"
            assert pg.inputs["name"] == cv.placement_group_name(plan.cluster.name, pool.name)
            assert placement == {"groupName": pg.inputs["name"]}
        else:
            assert placement is None, pool.name


def test_placement_group_defaults_and_switch():
    # Facts of the stacks: staging's on-demand EFA pool gets one; prod's EFA pools are reservations made
    # outside any placement group, so they get none; and the switch turns staging's off.
    assert {x.name for x in rendered("staging").by_type(PLACEMENT_GROUP)} == {"np-h100-train"}
    assert rendered("prod").by_type(PLACEMENT_GROUP) == []
    r = switched_staging()
    assert r.by_type(PLACEMENT_GROUP) == []
    assert "placement" not in r.one(LAUNCH_TEMPLATE, "np-h100-train").inputs


def test_labels_and_taints_exactly_as_conventions_spell_them():
    plan = plan_of("prod")
    sharing_modes = {p.sharing_mode for p in plan.pools}
    assert {"mig", "time-slicing", "full"} <= sharing_modes
    for pool in plan.pools:
        ng = res("prod", NODE_GROUP, pool.name)
        labels = ng.inputs["labels"]
        assert labels == dict(pool.node_labels)
        assert labels[cv.POOL] == pool.name
        assert labels[cv.ACCELERATOR] == pool.accelerator
        assert labels[cv.FABRIC] == pool.fabric
        assert labels[cv.WORKLOAD] == pool.workload
        assert labels[cv.SHARING] == cv.sharing_value(pool.sharing_mode, pool.mig_profile, pool.replicas)
        it = catalog.INSTANCE_TYPES[pool.instance_type]
        form = catalog.ACCELERATORS[pool.accelerator].form_factor
        assert labels[cv.TOPOLOGY] == cv.topology_value(it.gpus, form, it.interconnect)
        if pool.sharing_mode == "mig":
            assert labels[cv.MIG_CONFIG_LABEL] == cv.mig_config_name(pool.mig_profile)
        else:
            assert cv.MIG_CONFIG_LABEL not in labels
        if pool.sharing_mode == "time-slicing":
            assert labels[cv.DEVICE_PLUGIN_CONFIG_LABEL] == cv.device_plugin_config_name(pool.name)
        else:
            assert cv.DEVICE_PLUGIN_CONFIG_LABEL not in labels
        taints = sorted((t["key"], t["value"], t["effect"]) for t in ng.inputs["taints"])
        assert taints == sorted([
            (cv.GPU_TAINT_KEY, cv.GPU_TAINT_VALUE, "NO_SCHEDULE"),
            (cv.WORKLOAD_TAINT_KEY, cv.workload_taint_value(pool.workload), "NO_SCHEDULE"),
        ])


def test_pool_labels_are_cost_tags_on_everything_a_pool_launches():
    plan = plan_of("prod")
    for pool in plan.pools:
        expected = {key: pool.labels[key] for key in cv.POOL_LABEL_KEYS}
        expected.update({
            cv.TAG_PLATFORM: cv.MANAGED_BY_VALUE,
            cv.TAG_ENVIRONMENT: plan.environment,
            cv.TAG_CLUSTER: plan.cluster.name,
        })
        ng, lt = res("prod", NODE_GROUP, pool.name), res("prod", LAUNCH_TEMPLATE, pool.name)
        assert ng.inputs["tags"] == expected
        assert lt.inputs["tags"] == expected
        specs = {s["resourceType"]: s["tags"] for s in lt.inputs["tagSpecifications"]}
        assert {"instance", "volume"} <= set(specs)
        assert all(tags == expected for tags in specs.values())


def test_launch_template_basics():
    plan = plan_of("prod")
    for pool in plan.pools:
        lt = res("prod", LAUNCH_TEMPLATE, pool.name)
        # IMDSv2 only, reachable from pods one hop behind the node (EKS user guide, launch templates).
        assert lt.inputs["metadataOptions"] == {"httpEndpoint": "enabled", "httpTokens": "required", "httpPutResponseHopLimit": 2}
        (volume,) = lt.inputs["blockDeviceMappings"]
        assert volume["deviceName"] == "/dev/xvda"  # AL2023's root volume
        assert volume["ebs"]["volumeSize"] == pool.root_volume_gib
        assert volume["ebs"]["encrypted"] == "true"
        assert lt.inputs["namePrefix"] == cv.launch_template_prefix(plan.cluster.name, pool.name)


def _mime_node_configs(user_data_b64: str) -> list[dict[str, Any]]:
    message = email.message_from_string(base64.b64decode(user_data_b64).decode())
    assert message.is_multipart()
    return [
        yaml.safe_load(part.get_payload())
        for part in message.walk()
        if part.get_content_type() == "application/node.eks.aws"
    ]


def test_local_nvme_is_raid0_through_nodeadm():
    plan = plan_of("prod")
    assert all(p.nvme_gb > 0 for p in plan.pools)
    for pool in plan.pools:
        (config,) = _mime_node_configs(res("prod", LAUNCH_TEMPLATE, pool.name).inputs["userData"])
        assert config["apiVersion"] == "node.eks.aws/v1alpha1" and config["kind"] == "NodeConfig"
        assert config["spec"] == {"instance": {"localStorage": {"strategy": "RAID0"}}}


def test_no_local_storage_setup_without_nvme():
    from components.node_pools import user_data

    pool = plan_of("prod").pools[0]
    assert user_data(pool) is not None
    assert user_data(dataclasses.replace(pool, nvme_gb=0)) is None


def test_bottlerocket_pools_get_toml_ephemeral_storage_and_their_data_volume():
    r = switched_staging()
    lt = r.one(LAUNCH_TEMPLATE, "np-a10g-dev")
    settings = tomllib.loads(base64.b64decode(lt.inputs["userData"]).decode())
    (command,) = settings["settings"]["bootstrap-commands"].values()
    assert ["apiclient", "ephemeral-storage", "init"] in command["commands"]
    assert command["essential"] is True
    assert lt.inputs["blockDeviceMappings"][0]["deviceName"] == "/dev/xvdb"  # Bottlerocket's data volume
    assert r.one(NODE_GROUP, "np-a10g-dev").inputs["amiType"] == "BOTTLEROCKET_x86_64_NVIDIA"


def test_bottlerocket_node_groups_keep_the_operators_device_plugin_and_mig_manager_off():
    """The Bottlerocket NVIDIA AMI runs its own device plugin; a second one from the GPU Operator conflicted
    with it and left CUDA unusable (bottlerocket-os/bottlerocket#4309). The operator keeps a deploy label it
    finds on a node (NVIDIA/gpu-operator controllers/state_manager.go, addGPUStateLabels), so the node group
    sets them "false"; AL2023 pools leave them to the operator."""
    r = switched_staging()
    labels = r.one(NODE_GROUP, "np-a10g-dev").inputs["labels"]
    assert labels["nvidia.com/gpu.deploy.device-plugin"] == "false"
    assert labels["nvidia.com/gpu.deploy.mig-manager"] == "false"
    for name in ("np-h100-train", "np-l40s-infer"):
        assert not [k for k in r.one(NODE_GROUP, name).inputs["labels"] if k.startswith("nvidia.com/gpu.deploy.")], name


# ---------------------------------------------------------------------------------------------------
# EFA: a security group with all traffic to and from itself on every EFA interface

SECURITY_GROUP = "aws:ec2/securityGroup:SecurityGroup"
INGRESS_RULE = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
EGRESS_RULE = "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"


@pytest.mark.parametrize("stack", ["prod", "staging"])
def test_efa_interfaces_carry_a_group_that_allows_all_traffic_to_and_from_itself(stack: str):
    """The EFA user guide's requirement (EC2 user guide, efa-start.html: all inbound and outbound traffic to and
    from the group itself). The cluster group's allow-all CIDR egress does not carry EFA's traffic
    (awslabs/awsome-distributed-ai#546), and older clusters' groups lack the self egress rule."""
    r = rendered(stack)
    (group,) = [g for g in r.by_type(SECURITY_GROUP) if g.parent == "node-pools"]  # (Lustre's: test_data_path.py)
    assert group.inputs["name"] == f"{plan_of(stack).cluster.name}-efa"
    assert group.inputs["vpcId"] == "vpc-00000000"  # the looked-up cluster's VPC (harness mock)
    (ingress,), (egress,) = ([x for x in r.by_type(t) if x.parent == "node-pools"] for t in (INGRESS_RULE, EGRESS_RULE))
    efa_group = egress.inputs["securityGroupId"]
    assert efa_group.startswith("sg-") and efa_group != "sg-00000000"
    for rule in (ingress, egress):
        assert rule.inputs["securityGroupId"] == rule.inputs["referencedSecurityGroupId"] == efa_group
        assert rule.inputs["ipProtocol"] == "-1"  # every protocol and port
        assert "cidrIpv4" not in rule.inputs
    for pool in plan_of(stack).efa_pools:
        for interface in res(stack, LAUNCH_TEMPLATE, pool.name).inputs["networkInterfaces"]:
            assert interface["securityGroups"] == ["sg-00000000", efa_group], pool.name


@background_render()
def staging_without_efa() -> tuple[str, dict[str, Any]]:
    config = copy.deepcopy(stack_doc("staging")["config"])
    for pool in config["gpu-platform:platform"]["pools"]:
        pool["fabric"] = "ethernet"
    return "staging", config


def test_no_efa_security_group_without_an_efa_pool():
    r = staging_without_efa()
    assert r.by_type(SECURITY_GROUP) == r.by_type(INGRESS_RULE) == r.by_type(EGRESS_RULE) == []


# ---------------------------------------------------------------------------------------------------
# capacity blocks: upgrades only at 0 nodes


def test_plan_warns_that_a_capacity_block_node_group_upgrades_only_at_zero():
    """EKS user guide, capacity-blocks-mng.html, Considerations: "When upgrading managed node groups with
    Capacity Blocks, make sure that the desired size of the node group is set to 0"."""
    blocks = [w for w in plan_of("prod").warnings if "capacity-block node group" in w]
    assert blocks == [
        "pool 'h100-train' is a capacity-block node group: EKS upgrades it (cluster.kubernetesVersion, AMI release, "
        "launch template) only at desired size 0; scale node group 'ml-prod-h100-train' to 0 before such a change "
        "reaches it (docs/runbook.md, \"Upgrading a capacity-block node group\")"
    ]
    # Not a capacity reservation (prod's h200-train), nor a capacity block Karpenter provisions.
    assert not [w for w in plan_of("staging-karpenter").warnings if "capacity-block node group" in w]
    # The step the warning names is in the runbook.
    runbook = (ROOT / "docs" / "runbook.md").read_text()
    assert "## Upgrading a capacity-block node group" in runbook
    assert "desiredSize=0" in runbook


# ---------------------------------------------------------------------------------------------------
# the docs say what scales the node groups (the Cluster Autoscaler, Karpenter), and nothing of the time before


def test_no_doc_still_says_nothing_scales_the_node_groups():
    stale = re.compile(r"no (?:cluster )?autoscaler is deployed|nothing scales (?:them|the (?:managed )?node groups) yet",
                       re.IGNORECASE)
    texts = {p.name: p.read_text() for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
                                             *sorted((ROOT / "docs").glob("*.schema.json"))]}
    assert {name for name, text in texts.items() if stale.search(text)} == set()
    assert "## Capacity: reserved and elastic" in texts["node-pools.md"]


def test_desired_size_is_set_at_creation_only_and_prod_is_protected():
    """Only a capacity reservation's size is the stack's (pinned at min = max = desired); every other group's
    desiredSize belongs, after creation, to the autoscaler, EKS (a capacity block) or a person."""
    for stack, protected, pinned in (("prod", True, {"np-h200-train"}), ("staging", False, set())):
        for ng in rendered(stack).by_type(NODE_GROUP):
            ignored = "scalingConfig.desiredSize" in ng.options["ignoreChanges"]
            assert ignored is (ng.name not in pinned), ng.name
            assert ng.options["protect"] is protected, (stack, ng.name)


def test_instance_type_change_is_a_replacement():
    r = rendered("prod")
    for lt in r.by_type(LAUNCH_TEMPLATE):
        assert "instanceType" in lt.options["replaceOnChanges"]
    for ng in r.by_type(NODE_GROUP):
        assert "launchTemplate.id" in ng.options["replaceOnChanges"]
        # Node group names are fixed, so the old group has to go before its replacement is created.
        assert ng.options["deleteBeforeReplace"] is True


def test_node_role_made_here_with_the_eks_node_policies():
    r = rendered("prod")
    (role,) = [x for x in r.by_type(ROLE) if x.name == "np-node-role"]
    assert "ec2.amazonaws.com" in role.inputs["assumeRolePolicy"]
    attachments = [x for x in r.by_type(ATTACHMENT) if x.parent == "node-pools"]
    assert {a.inputs["policyArn"] for a in attachments} == NODE_POLICIES
    for ng in r.by_type(NODE_GROUP):
        assert {a.name for a in attachments} <= set(ng.options["dependencies"]), ng.name
    assert r.by_type(CLUSTER) == [], "prod attaches to an existing cluster"


def test_given_node_role_and_created_cluster():
    r, platform = variant()
    node_pool_roles = [x for x in r.by_type(ROLE) if x.parent == "node-pools"]  # (the EBS CSI role is storage's)
    assert node_pool_roles == [r.one(ROLE, "np-cluster-role")], "no node role when nodeRoleArn is given"
    (cluster,) = r.by_type(CLUSTER)
    assert cluster.inputs["name"] == platform["cluster"]["name"]
    assert cluster.inputs["version"] == platform["cluster"]["kubernetesVersion"]
    assert cluster.inputs["vpcConfig"]["subnetIds"] == platform["cluster"]["subnetIds"]
    # Reachable inside the VPC (nodes, the managed Prometheus collector) and from a laptop or CI runner.
    assert (cluster.inputs["vpcConfig"]["endpointPrivateAccess"], cluster.inputs["vpcConfig"]["endpointPublicAccess"]) \
        == (True, True)
    assert cluster.options["protect"] is False  # staging
    for ng in r.by_type(NODE_GROUP):
        assert ng.inputs["nodeRoleArn"] == NODE_ROLE_ARN
        assert cluster.name in ng.options["dependencies"]


def test_kubeconfig_reaches_the_looked_up_cluster_with_aws_get_token():
    (provider,) = rendered("prod").by_type("pulumi:providers:kubernetes")
    config = yaml.safe_load(provider.inputs["kubeconfig"])
    plan = plan_of("prod")
    (user,) = config["users"]
    assert user["user"]["exec"]["command"] == "aws"
    args = user["user"]["exec"]["args"]
    assert args[args.index("--cluster-name") + 1] == plan.cluster.name
    assert args[args.index("--region") + 1] == plan.region
    (cluster,) = config["clusters"]
    assert cluster["cluster"]["server"].startswith("https://")


def test_local_stack_makes_no_aws_resource():
    r = rendered("local")
    assert [x.type for x in r.resources if x.type.startswith("aws:")] == []
    assert not any(x.type.startswith("gpu-platform:node_pools:") for x in r.resources)


def test_exports_per_pool():
    """What `pulumi stack output nodePools` shows: node group, GPU capacity, labels and taints."""
    import pulumi

    from components.node_pools import EksCluster
    from harness.render import run_program

    plan = plan_of("prod")
    seen: dict[str, Any] = {}

    def program() -> None:
        pulumi.Output.from_input(EksCluster("node-pools", plan).exports()).apply(seen.update)

    run_program(program, "prod", {})
    out = seen["nodePools"]
    assert set(out) == {p.name for p in plan.pools}
    for pool in plan.pools:
        got = out[pool.name]
        assert got["nodeGroup"] == cv.node_group_name(plan.cluster.name, pool.name)
        assert got["capacityGpus"] == pool.max_nodes * catalog.INSTANCE_TYPES[pool.instance_type].gpus
        assert got["labels"] == pool.group_labels  # node_labels, and the autoscaler's GPU label where it has one
        assert got["taints"] == [t.to_k8s() for t in pool.taints]


# --- The system pool and the VPC CNI add-on ---------------------------------------------------------

ADDON = "aws:eks/addon:Addon"


def test_created_cluster_gets_an_untainted_system_pool_the_add_ons_can_run_on():
    """Every GPU node group is tainted; without this node group CoreDNS, Kueue, the GPU Operator and the
    monitoring stack of a cluster created here stay Pending."""
    r, platform = variant()
    system = r.one(NODE_GROUP, "np-system")
    assert system.parent == "node-pools"
    assert system.inputs["nodeGroupName"] == f"{platform['cluster']['name']}-system"
    assert system.inputs.get("taints") in (None, []), "system nodes take untainted pods"
    assert system.inputs["labels"] == {cv.NODE_ROLE: cv.SYSTEM_NODE_ROLE}
    # Not a GPU pool: no pool label (flavors, node rules and the exporter-down alert read it).
    assert not set(cv.POOL_LABEL_KEYS) & set(system.inputs["labels"])
    assert system.inputs["amiType"] == "AL2023_x86_64_STANDARD"
    assert system.inputs["instanceTypes"] == ["m7i.xlarge"]
    assert system.inputs["scalingConfig"]["minSize"] >= 1
    assert system.inputs["subnetIds"] == platform["cluster"]["subnetIds"]
    assert "np-cluster" in system.options["dependencies"]
    # Everything Kubernetes-side waits for it: the provider's kubeconfig depends on the node group.
    (provider,) = r.by_type("pulumi:providers:kubernetes")
    assert "np-system" in provider.options["dependencies"]
    for pool in plan_of("staging").pools:
        assert res_of(r, NODE_GROUP, pool.name).inputs["taints"], f"{pool.name}: GPU pools stay tainted"


def res_of(r, type_: str, name: str):
    return r.one(type_, f"np-{name}")


def test_a_created_cluster_passes_the_policy_pack():
    from policies.gpu_policies.offline import check_resources, format_violations

    r = switched_staging()
    found = check_resources([x.to_json() for x in r.custom])
    assert found == [], format_violations(found, "staging, cluster created here")


def test_attached_clusters_get_no_system_pool_unless_asked():
    assert rendered("prod").by_type(NODE_GROUP) and not [x for x in rendered("prod").by_type(NODE_GROUP) if x.name == "np-system"]
    from gpu_platform.plan import build_plan
    from gpu_platform.spec import load_platform

    raw = copy.deepcopy(stack_doc("prod")["config"]["gpu-platform:platform"])
    raw["cluster"]["systemPool"] = {"instanceType": "m6i.2xlarge", "min": 3, "max": 6}
    sp = build_plan(load_platform(raw)).cluster.system_pool
    assert (sp.instance_type, sp.min_nodes, sp.desired_nodes, sp.max_nodes) == ("m6i.2xlarge", 3, 3, 6)


def vpc_cni_values() -> dict[str, Any]:
    from tests.chart_values import chart_defaults

    return chart_defaults("aws-vpc-cni-1.22.4-values.yaml")


@pytest.mark.parametrize("stack", ["staging", "prod"])
def test_eks_stacks_turn_on_the_vpc_cni_network_policy_agent(stack: str):
    """Without `enableNetworkPolicy` the VPC CNI enforces no NetworkPolicy: the tenants' default-deny
    would be stored and do nothing."""
    from tests.chart_values import unknown_keys

    r = rendered(stack)
    addon = r.one(ADDON, "np-vpc-cni")
    assert addon.inputs["addonName"] == "vpc-cni"
    assert addon.inputs["clusterName"] == plan_of(stack).cluster.name
    config = json.loads(addon.inputs["configurationValues"])
    # A string, as the add-on schema and the chart default ("false") spell it.
    assert config == {"enableNetworkPolicy": "true"}
    assert unknown_keys(config, vpc_cni_values()) == []
    assert vpc_cni_values()["enableNetworkPolicy"] == "false", "the chart's default is off: the setting matters"
    assert addon.inputs["resolveConflictsOnCreate"] == "OVERWRITE"
    assert "addonVersion" not in addon.inputs, "no version given: EKS keeps (or picks) the cluster's"
    # Nodes come up with the agent: every node group waits for the add-on.
    for ng in r.by_type(NODE_GROUP):
        assert "np-vpc-cni" in ng.options["dependencies"], ng.name


def test_existing_clusters_and_unmanaged_cni_get_a_warning_instead():
    from gpu_platform.plan import build_plan
    from gpu_platform.spec import load_platform

    assert rendered("local").by_type(ADDON) == []
    assert any("enableNetworkPolicy" in w and "'existing'" in w for w in plan_of("local").warnings)
    raw = copy.deepcopy(stack_doc("prod")["config"]["gpu-platform:platform"])
    raw["addons"]["vpcCni"] = {"manage": False}
    plan = build_plan(load_platform(raw))
    assert not plan.cluster.manage_vpc_cni
    assert any(w.startswith("addons.vpcCni.manage is false") for w in plan.warnings)
