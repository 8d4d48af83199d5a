"""Elastic capacity: what each capacity type runs, the Cluster Autoscaler on `eks` stacks, the Auto
Scaling group tags that make a group the autoscaler's, Kueue's ProvisioningRequest check, the refusals and
warnings, and the cost at min and at max.

Expectations are literal: the pools of Pulumi.prod.yaml and Pulumi.staging.yaml, the staging-karpenter fixture
and Pulumi.local.yaml, and upstream facts with their source (kubernetes/autoscaler at tag cluster-autoscaler-1.33.6
and cluster-autoscaler-chart-9.51.0, kubernetes-sigs/kueue at tag v0.19.2). The autoscaler's chart is not
reachable offline, so its values are asserted as written; each key is a key of the chart's
charts/cluster-autoscaler/values.yaml at tag cluster-autoscaler-chart-9.51.0 (cloudProvider, awsRegion,
autoDiscovery.clusterName, autoDiscovery.tags, image.tag, fullnameOverride, rbac.serviceAccount.name,
rbac.additionalRules, extraArgs, nodeSelector, tolerations). Renders are the cached runs of conftest.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from gpu_platform import conventions as cv
from gpu_platform.plan import build_plan
from gpu_platform.spec import SpecError, load_platform
from platform_cli.plan_report import format_plan, plan_data
from tests.conftest import KARPENTER_STACK, plan_of, platform_raw, rendered
from tests.unit.components.iam_lint import parliament_findings
from tests.unit.components.kueue_schema import validate_kueue

ASG_TAG = "aws:autoscaling/tag:Tag"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
RELEASE = "kubernetes:helm.sh/v3:Release"
KUEUE = f"kubernetes:{cv.KUEUE_API_VERSION}:"
# What the mock monitor answers for the caller's account (harness/render.py).
ACCOUNT = "000000000000"


def asg_tags(stack: str) -> dict[str, dict[str, str]]:
    """Auto Scaling group tags by node group component (np-<pool>)."""
    out: dict[str, dict[str, str]] = {}
    for t in rendered(stack).by_type(ASG_TAG):
        out.setdefault(t.parent, {})[t.inputs["tag"]["key"]] = t.inputs["tag"]["value"]
    return out


def release(stack: str, name: str) -> dict[str, Any]:
    (r,) = [r for r in rendered(stack).by_type(RELEASE) if r.inputs["name"] == name]
    return r.inputs


def problems(raw: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(SpecError) as err:
        load_platform(raw, "us-east-1")
    return {p.path: p.message for p in err.value.problems}


# ---------------------------------------------------------------------------------------------------
# capacity semantics: reserved runs whole, elastic scales min..max


def test_each_capacity_type_gets_its_node_group_sizes() -> None:
    """prod: the capacity block is created at its 16 nodes from min 0 (EKS launches them when the block starts
    and scales the group to 0 forty minutes before it ends: EKS user guide, capacity-blocks-mng.html); the
    capacity reservation is pinned at its 8; the on-demand and spot pools scale between min and max."""
    sizes = {ng.name: ng.inputs["scalingConfig"] for ng in rendered("prod").by_type(NODE_GROUP)}
    assert sizes == {
        "np-h100-train": {"minSize": 0, "maxSize": 16, "desiredSize": 16},
        "np-h200-train": {"minSize": 8, "maxSize": 8, "desiredSize": 8},
        "np-l40s-infer": {"minSize": 2, "maxSize": 16, "desiredSize": 2},
        "np-a100-mig": {"minSize": 0, "maxSize": 4, "desiredSize": 0},
        "np-l4-interactive": {"minSize": 1, "maxSize": 8, "desiredSize": 1},
    }
    plan = plan_of("prod")
    assert {p.name: (p.capacity_semantics, p.scaler, p.reserved_nodes) for p in plan.pools} == {
        "h100-train": ("reserved", "reservation", 16),
        "h200-train": ("reserved", "reservation", 8),
        "l40s-infer": ("elastic", "cluster-autoscaler", 0),
        "a100-mig": ("elastic", "cluster-autoscaler", 0),
        "l4-interactive": ("elastic", "cluster-autoscaler", 0),
    }


def test_a_capacity_block_is_scaled_by_eks_at_its_start_and_end_and_by_nothing_else() -> None:
    """What EKS documents for a capacity block's node group instead of scheduled actions of our own: a non-zero
    desiredSize at creation is launched once the block is active, and EKS's own scheduled action ("Amazon EKS
    Node Group Capacity Scaledown Before Reservation End") scales it to 0 before the end. So the stack writes
    no schedule, leaves desiredSize to EKS after creation, and gives the block's group no autoscaler tags."""
    r = rendered("prod")
    assert r.by_type("aws:autoscaling/schedule:Schedule") == []
    (block,) = [ng for ng in r.by_type(NODE_GROUP) if ng.name == "np-h100-train"]
    assert block.inputs["capacityType"] == "CAPACITY_BLOCK"
    assert block.options["ignoreChanges"] == ["scalingConfig.desiredSize"]
    assert "np-h100-train" not in asg_tags("prod") and "np-h200-train" not in asg_tags("prod")


def test_reserved_pools_asked_to_run_less_are_named_with_the_idle_nodes_and_their_cost() -> None:
    raw = platform_raw("prod")
    raw["pools"][0]["capacity"]["min"] = 0  # h100-train, a 16-node capacity block of p5.48xlarge at $55.04/h
    raw["pools"][1]["capacity"]["min"] = 2  # h200-train, an 8-node reservation of p5en.48xlarge at $63.30/h
    plan = build_plan(load_platform(raw, "us-east-1"), "us-east-1")
    warnings = [w for w in plan.warnings if "paid for whole" in w]
    assert warnings == [
        "pool 'h100-train' is a capacity block of 16 nodes, paid for whole while it is active: capacity.min 0 would "
        "leave 16 of them ($880.64/h) idle, so the node group runs all 16; set capacity.min to 16 to say so",
        "pool 'h200-train' is a capacity reservation of 8 nodes, paid for whole while it is active: capacity.min 2 "
        "would leave 6 of them ($379.80/h) idle, so the node group runs all 8; set capacity.min to 8 to say so",
    ]
    # ... and the groups still run the reservation.
    assert {p.name: (p.group_min, p.desired_nodes) for p in plan.pools if p.reserved_nodes} == {
        "h100-train": (0, 16), "h200-train": (8, 8)}
    # prod as committed asks for what it pays for: no such warning.
    assert not [w for w in plan_of("prod").warnings if "paid for whole" in w]


def test_karpenter_pools_stay_karpenters_and_their_idle_reservation_and_topology_are_named() -> None:
    plan = plan_of(KARPENTER_STACK)
    assert {p.name: p.scaler for p in plan.pools} == {
        "h100-train": "karpenter", "l40s-infer": "karpenter", "a10g-dev": "cluster-autoscaler"}
    assert set(asg_tags(KARPENTER_STACK)) == {"np-a10g-dev"}  # no autoscaler tag on a Karpenter pool
    assert plan.cluster_autoscaler is not None and plan.cluster_autoscaler.node_groups == ("ml-staging-a10g-dev",)
    warnings = [w for w in plan.warnings if w.startswith("pool 'h100-train'")]
    assert (
        "pool 'h100-train' is a capacity block of 2 nodes, paid for whole while it is active, and Karpenter launches "
        "nodes only for pending pods: while no job runs there, 2 reserved nodes ($86.32/h) are paid for and idle"
    ) in warnings
    assert any("topology-aware and provisioned by Karpenter, which implements no ProvisioningRequest" in w
               and "use provisioner 'managed-node-group' with addons.clusterAutoscaler" in w for w in warnings)


def test_an_elastic_pool_nothing_scales_is_named() -> None:
    raw = platform_raw("prod")
    raw["addons"]["clusterAutoscaler"] = {"install": False}
    plan = build_plan(load_platform(raw, "us-east-1"), "us-east-1")
    assert plan.cluster_autoscaler is None
    assert ("pool 'a100-mig' is on-demand (0..4 nodes) but addons.clusterAutoscaler.install is false: nothing "
            "scales it, it stays at 0 nodes until someone changes its node group's desired size") in plan.warnings
    assert {p.name: p.scaler for p in plan.pools if p.capacity_semantics == "elastic"} == {
        "l40s-infer": "none", "a100-mig": "none", "l4-interactive": "none"}


# ---------------------------------------------------------------------------------------------------
# node-template and discovery tags on every elastic group


def test_every_elastic_group_and_only_those_carry_the_autoscalers_tags() -> None:
    assert set(asg_tags("prod")) == {"np-l40s-infer", "np-a100-mig", "np-l4-interactive"}
    assert set(asg_tags("staging")) == {"np-h100-train", "np-l40s-infer", "np-a10g-dev"}
    assert asg_tags("local") == {}
    for stack in ("prod", "staging", KARPENTER_STACK):
        groups = {ng.parent: ng.inputs["nodeGroupName"] for ng in rendered(stack).by_type(NODE_GROUP)}
        for t in rendered(stack).by_type(ASG_TAG):
            # The group EKS made for the node group (mock name eks-<node group>-<uuid>), not the instances.
            assert t.inputs["autoscalingGroupName"].startswith(f"eks-{groups[t.parent]}-"), t.name
            assert t.inputs["tag"]["propagateAtLaunch"] is False


def test_a_mig_pools_template_is_its_slices_and_no_whole_gpu() -> None:
    assert asg_tags("prod")["np-a100-mig"] == {
        "gpu-platform.io/capacity": "elastic",
        "k8s.io/cluster-autoscaler/node-template/label/gpu-platform.io/pool": "a100-mig",
        "k8s.io/cluster-autoscaler/node-template/label/gpu-platform.io/accelerator": "a100-80gb",
        "k8s.io/cluster-autoscaler/node-template/label/gpu-platform.io/topology": "8gpu-sxm-nvlink",
        "k8s.io/cluster-autoscaler/node-template/label/gpu-platform.io/fabric": "ethernet",
        "k8s.io/cluster-autoscaler/node-template/label/gpu-platform.io/workload": "batch",
        "k8s.io/cluster-autoscaler/node-template/label/gpu-platform.io/sharing": "mig-1g.10gb",
        "k8s.io/cluster-autoscaler/node-template/label/nvidia.com/mig.config": "all-1g.10gb",
        "k8s.io/cluster-autoscaler/node-template/taint/nvidia.com/gpu": "present:NoSchedule",
        "k8s.io/cluster-autoscaler/node-template/taint/gpu-platform.io/workload": "batch:NoSchedule",
        # p4de.24xlarge: 8 A100 80GB x 7 slices of 1g.10gb; with the mixed strategy no whole GPU is left.
        "k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/mig-1g.10gb": "56",
        "k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu": "0",
    }


def test_a_time_sliced_pools_template_is_its_replicas_and_no_whole_gpu() -> None:
    assert asg_tags("prod")["np-l40s-infer"] == {
        "gpu-platform.io/capacity": "elastic",
        "k8s.io/cluster-autoscaler/node-template/label/gpu-platform.io/pool": "l40s-infer",
        "k8s.io/cluster-autoscaler/node-template/label/gpu-platform.io/accelerator": "l40s-48gb",
        "k8s.io/cluster-autoscaler/node-template/label/gpu-platform.io/topology": "4gpu-pcie",
        "k8s.io/cluster-autoscaler/node-template/label/gpu-platform.io/fabric": "ethernet",
        "k8s.io/cluster-autoscaler/node-template/label/gpu-platform.io/workload": "inference",
        "k8s.io/cluster-autoscaler/node-template/label/gpu-platform.io/sharing": "time-sliced-2",
        "k8s.io/cluster-autoscaler/node-template/label/nvidia.com/device-plugin.config": "pool-l40s-infer",
        "k8s.io/cluster-autoscaler/node-template/taint/nvidia.com/gpu": "present:NoSchedule",
        "k8s.io/cluster-autoscaler/node-template/taint/gpu-platform.io/workload": "inference:NoSchedule",
        # g6e.12xlarge: 4 L40S x 2 replicas, advertised as nvidia.com/gpu.shared (renameByDefault).
        "k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu.shared": "8",
        "k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu": "0",
    }


def test_an_efa_pools_template_has_its_gpus_and_efa_devices() -> None:
    assert asg_tags("staging")["np-h100-train"] == {
        "gpu-platform.io/capacity": "elastic",
        "k8s.io/cluster-autoscaler/node-template/label/gpu-platform.io/pool": "h100-train",
        "k8s.io/cluster-autoscaler/node-template/label/gpu-platform.io/accelerator": "h100-80gb",
        "k8s.io/cluster-autoscaler/node-template/label/gpu-platform.io/topology": "8gpu-sxm-nvlink",
        "k8s.io/cluster-autoscaler/node-template/label/gpu-platform.io/fabric": "efa",
        "k8s.io/cluster-autoscaler/node-template/label/gpu-platform.io/workload": "training",
        "k8s.io/cluster-autoscaler/node-template/label/gpu-platform.io/sharing": "full-gpu",
        # Whole GPUs: the autoscaler's GPU label (README "Special note on GPU instances"), here as on the nodes.
        "k8s.io/cluster-autoscaler/node-template/label/k8s.amazonaws.com/accelerator": "nvidia-h100-80gb",
        "k8s.io/cluster-autoscaler/node-template/taint/nvidia.com/gpu": "present:NoSchedule",
        "k8s.io/cluster-autoscaler/node-template/taint/gpu-platform.io/workload": "training:NoSchedule",
        # p5.48xlarge: 8 H100 and 32 EFA interfaces, one vpc.amazonaws.com/efa device each.
        "k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu": "8",
        "k8s.io/cluster-autoscaler/node-template/resources/vpc.amazonaws.com/efa": "32",
    }


def test_every_template_label_and_taint_is_one_the_node_group_gives_its_nodes() -> None:
    """The template describes the nodes the group makes: its labels and taints are the node group's own."""
    for stack in ("prod", "staging"):
        tags = asg_tags(stack)
        for ng in rendered(stack).by_type(NODE_GROUP):
            if ng.name not in tags:
                continue
            labels = {k.removeprefix(cv.CLUSTER_AUTOSCALER_LABEL_TAG): v for k, v in tags[ng.name].items()
                      if k.startswith(cv.CLUSTER_AUTOSCALER_LABEL_TAG)}
            taints = {k.removeprefix(cv.CLUSTER_AUTOSCALER_TAINT_TAG): v for k, v in tags[ng.name].items()
                      if k.startswith(cv.CLUSTER_AUTOSCALER_TAINT_TAG)}
            assert labels == ng.inputs["labels"], ng.name
            assert taints == {t["key"]: f"{t['value']}:NoSchedule" for t in ng.inputs["taints"]}, ng.name
            assert {t["effect"] for t in ng.inputs["taints"]} == {"NO_SCHEDULE"}


def test_every_tag_fits_the_auto_scaling_groups_limits() -> None:
    """CreateOrUpdateTags: keys up to 128 characters, values up to 256 (botocore autoscaling model, TagKey and
    TagValue), at most 50 tags a group (EC2 Auto Scaling user guide, ec2-auto-scaling-tagging.html); EKS puts
    its own few beside these."""
    from botocore.loaders import Loader

    shapes = Loader().load_service_model("autoscaling", "service-2")["shapes"]
    assert (shapes["TagKey"]["max"], shapes["TagValue"]["max"]) == (128, 256)
    for stack in ("prod", "staging", KARPENTER_STACK):
        for group, tags in asg_tags(stack).items():
            assert len(tags) <= 40, (stack, group)
            assert all(len(k) <= 128 and len(v) <= 256 for k, v in tags.items()), (stack, group)


def test_the_stack_adds_only_its_own_tags_never_the_discovery_keys_eks_owns() -> None:
    """EKS tags every managed node group's Auto Scaling group with k8s.io/cluster-autoscaler/enabled and
    k8s.io/cluster-autoscaler/<cluster> itself (EKS user guide, managed-node-groups.html: "Amazon EKS tags managed
    node group resources so that they are configured to use the Kubernetes Cluster Autoscaler"). A Tag resource
    of the stack's on either key would delete EKS's tag when it goes (a pool made reserved, the autoscaler turned
    off, the stack destroyed), and with it the group's discovery. So the stack adds only gpu-platform.io/capacity
    and the node-template tags, and the autoscaler still requires all three discovery keys."""
    for stack, cluster in (("prod", "ml-prod"), ("staging", "ml-staging"), (KARPENTER_STACK, "ml-staging")):
        keys = {t.inputs["tag"]["key"] for t in rendered(stack).by_type(ASG_TAG)}
        assert "gpu-platform.io/capacity" in keys, stack
        assert not keys & {"k8s.io/cluster-autoscaler/enabled", f"k8s.io/cluster-autoscaler/{cluster}"}, stack
        assert {k.split("/node-template/")[0] for k in keys if k.startswith("k8s.io/")} == {
            "k8s.io/cluster-autoscaler"}, stack
    assert release("prod", "cluster-autoscaler")["values"]["autoDiscovery"]["tags"] == [
        "k8s.io/cluster-autoscaler/enabled", "k8s.io/cluster-autoscaler/ml-prod", "gpu-platform.io/capacity=elastic"]


def test_whole_gpu_groups_the_autoscaler_scales_carry_its_gpu_label() -> None:
    """A node that is Ready before its device plugin has registered its GPUs looks to the autoscaler like a
    finished node without GPUs, and it scales up again (cloudprovider/aws/README.md, "Special note on GPU
    instances"); with k8s.amazonaws.com/accelerator=<gpu-type> it counts as unready until nvidia.com/gpu is
    allocatable (processors/customresources/gpu_processor.go). Only on whole-GPU groups: a MIG or time-sliced
    node keeps nvidia.com/gpu at 0 and would stay unready for good. On the node group (the nodes) and as a
    node-template tag (a group scaled from zero)."""
    gpu_label = "k8s.amazonaws.com/accelerator"
    staging = {ng.name: ng.inputs["labels"].get(gpu_label) for ng in rendered("staging").by_type(NODE_GROUP)}
    assert staging == {"np-h100-train": "nvidia-h100-80gb", "np-l40s-infer": None, "np-a10g-dev": "nvidia-a10g-24gb"}
    assert asg_tags("staging")["np-a10g-dev"][f"{cv.CLUSTER_AUTOSCALER_LABEL_TAG}{gpu_label}"] == "nvidia-a10g-24gb"
    assert f"{cv.CLUSTER_AUTOSCALER_LABEL_TAG}{gpu_label}" not in asg_tags("staging")["np-l40s-infer"]  # time-sliced
    # prod: the whole-GPU pools are reserved (nothing scales them), the elastic ones MIG or time-sliced.
    assert [ng.name for ng in rendered("prod").by_type(NODE_GROUP) if gpu_label in ng.inputs["labels"]] == []
    # Karpenter's whole-GPU pools carry none: Karpenter itself waits for the GPUs before it calls a node
    # initialized (kubernetes-sigs/karpenter pkg/controllers/nodeclaim/lifecycle/initialization.go).
    nodepools = {o["metadata"]["name"]: o["spec"]["template"]["metadata"]["labels"]
                 for o in rendered(KARPENTER_STACK).kubernetes_objects() if o["kind"] == "NodePool"}
    assert len(nodepools) == 2 and not [n for n, labels in nodepools.items() if gpu_label in labels]
    (a10g,) = [ng for ng in rendered(KARPENTER_STACK).by_type(NODE_GROUP) if ng.name == "np-a10g-dev"]
    assert a10g.inputs["labels"][gpu_label] == "nvidia-a10g-24gb"


# ---------------------------------------------------------------------------------------------------
# the autoscaler's release, IAM and CRD


def test_the_autoscaler_release_values() -> None:
    r = release("prod", "cluster-autoscaler")
    assert (r["chart"], r["version"], r["repositoryOpts"], r["namespace"]) == (
        "cluster-autoscaler", "9.51.0", {"repo": "https://kubernetes.github.io/autoscaler"}, "kube-system")
    assert r["values"] == {
        "cloudProvider": "aws",
        "awsRegion": "us-east-1",
        "autoDiscovery": {"clusterName": "ml-prod", "tags": [
            "k8s.io/cluster-autoscaler/enabled", "k8s.io/cluster-autoscaler/ml-prod", "gpu-platform.io/capacity=elastic"]},
        "image": {"tag": "v1.33.6"},
        "fullnameOverride": "cluster-autoscaler",
        "rbac": {
            "serviceAccount": {"name": "cluster-autoscaler"},
            # FAQ.md, "Enabling ProvisioningRequest Support", step 4 (the 9.51.0 ClusterRole has neither).
            "additionalRules": [
                {"apiGroups": [""], "resources": ["podtemplates"], "verbs": ["get", "list", "watch"]},
                {"apiGroups": ["autoscaling.x-k8s.io"],
                 "resources": ["provisioningrequests", "provisioningrequests/status"],
                 "verbs": ["get", "list", "watch", "update", "patch", "delete"]},
            ],
        },
        "extraArgs": {
            "scale-down-unneeded-time": "10m",
            "scale-down-delay-after-add": "10m",
            "max-node-provision-time": "15m",
            "enable-provisioning-requests": "true",
            "kube-api-content-type": "application/json",
        },
        # prod attaches to a cluster without a system pool: any untainted node, never a (tainted) GPU node.
        "nodeSelector": {},
        "tolerations": [],
    }
    # On a cluster with a system pool, its nodes.
    assert release(KARPENTER_STACK, "cluster-autoscaler")["values"]["nodeSelector"] == {"gpu-platform.io/node-role": "system"}


def test_the_autoscalers_flags_follow_the_spec() -> None:
    raw = platform_raw("prod")
    raw["addons"]["clusterAutoscaler"] = {"scaleDownUnneededTime": "2m", "scaleDownDelayAfterAdd": "1m30s",
                                          "maxNodeProvisionTime": "25m", "provisioningRequests": False}
    ca = build_plan(load_platform(raw, "us-east-1"), "us-east-1").cluster_autoscaler
    assert ca is not None and ca.args == {
        "scale-down-unneeded-time": "2m", "scale-down-delay-after-add": "1m30s", "max-node-provision-time": "25m"}


def test_the_autoscaler_may_describe_everything_and_resize_only_the_elastic_groups() -> None:
    """cloudprovider/aws/README.md, "Full Cluster Autoscaler Features Policy (Recommended)": its actions, the
    first block on every resource, the second (the two that change a group) restricted to the elastic groups."""
    (policy,) = [p for p in rendered("prod").by_type("aws:iam/policy:Policy") if p.parent == "cluster-autoscaler"]
    document = json.loads(policy.inputs["policy"])
    assert policy.inputs["name"] == "ml-prod-cluster-autoscaler"
    read, nodegroups, scale = document["Statement"]
    assert (read["Effect"], read["Resource"], read["Action"]) == ("Allow", "*", [
        "autoscaling:DescribeAutoScalingGroups", "autoscaling:DescribeAutoScalingInstances",
        "autoscaling:DescribeLaunchConfigurations", "autoscaling:DescribeScalingActivities", "ec2:DescribeImages",
        "ec2:DescribeInstanceTypes", "ec2:DescribeLaunchTemplateVersions",
        "ec2:GetInstanceTypesFromInstanceRequirements"])
    # The one read that takes a resource, on the elastic node groups (arn ...:nodegroup/<cluster>/<name>/<uuid>).
    assert (nodegroups["Action"], nodegroups["Resource"]) == (["eks:DescribeNodegroup"], [
        f"arn:aws:eks:us-east-1:{ACCOUNT}:nodegroup/ml-prod/ml-prod-{pool}/*"
        for pool in ("a100-mig", "l4-interactive", "l40s-infer")])
    assert scale["Action"] == ["autoscaling:SetDesiredCapacity", "autoscaling:TerminateInstanceInAutoScalingGroup"]
    prefix = f"arn:aws:autoscaling:us-east-1:{ACCOUNT}:autoScalingGroup:*:autoScalingGroupName/eks-ml-prod-"
    assert [a.removeprefix(prefix).rsplit("-", 5)[0] for a in scale["Resource"]] == [
        "a100-mig", "l4-interactive", "l40s-infer"]  # never h100-train, h200-train or a system group


def test_the_autoscalers_iam_documents_pass_parliament() -> None:
    for r in rendered("prod").custom:
        if r.parent != "cluster-autoscaler":
            continue
        if r.type == "aws:iam/policy:Policy":
            assert parliament_findings(json.loads(r.inputs["policy"])) == []
        if r.type == "aws:iam/role:Role":
            trust = json.loads(r.inputs["assumeRolePolicy"])
            assert trust == {"Version": "2012-10-17", "Statement": [
                {"Effect": "Allow", "Principal": {"Service": "pods.eks.amazonaws.com"},
                 "Action": ["sts:AssumeRole", "sts:TagSession"]}]}
            for statement in trust["Statement"]:
                statement["Resource"] = f"arn:aws:iam::123456789012:role/{r.inputs['name']}"
            assert parliament_findings(trust) == []


def test_pod_identity_gives_the_role_to_the_charts_service_account() -> None:
    (assoc,) = [r.inputs for r in rendered("prod").by_type("aws:eks/podIdentityAssociation:PodIdentityAssociation")
                if r.parent == "cluster-autoscaler"]
    assert (assoc["clusterName"], assoc["namespace"], assoc["serviceAccount"]) == (
        "ml-prod", "kube-system", "cluster-autoscaler")
    # The data path manages prod's Pod Identity agent, Karpenter's controller the fixture's: never a second one.
    for stack in ("prod", KARPENTER_STACK):
        agents = [r for r in rendered(stack).by_type("aws:eks/addon:Addon")
                  if r.inputs["addonName"] == cv.POD_IDENTITY_AGENT_ADDON]
        assert len(agents) == 1 and agents[0].parent != "cluster-autoscaler", stack


def test_the_provisioning_request_crd_comes_before_kueue_and_the_autoscaler() -> None:
    """Neither the chart nor the autoscaler installs it (FAQ.md step 5); Kueue sets up its ProvisioningRequest
    controller only if it is served when Kueue starts (cmd/kueue/main.go)."""
    r = rendered("prod")
    (crd,) = [x for x in r.resources if x.type == "kubernetes:yaml/v2:ConfigFile"]
    assert crd.inputs == {"file": "https://raw.githubusercontent.com/kubernetes/autoscaler/cluster-autoscaler-1.33.6/"
                                  "cluster-autoscaler/apis/config/crd/autoscaling.x-k8s.io_provisioningrequests.yaml"}
    (kueue,) = [x for x in r.by_type(RELEASE) if x.inputs["name"] == "kueue"]
    (ca,) = [x for x in r.by_type(RELEASE) if x.inputs["name"] == "cluster-autoscaler"]
    assert "provisioning-request-crd" in kueue.options["dependencies"]
    assert {"provisioning-request-crd", "storage-pod-identity-agent"} <= set(ca.options["dependencies"])
    # Kueue's pod rolls when ProvisioningRequests come or go (charts/kueue/values.yaml podAnnotations).
    assert release("prod", "kueue")["values"]["controllerManager"]["manager"]["podAnnotations"] == {
        "gpu-platform.io/provisioning-request-crd": "autoscaling.x-k8s.io/v1"}


def test_no_autoscaler_crd_or_check_on_the_local_stack() -> None:
    """The live local cluster runs no autoscaler: a ProvisioningRequest check nobody answers is inactive, and
    an inactive check keeps its ClusterQueue from admitting anything (kueue v0.19.2 pkg/cache/scheduler/
    clusterqueue.go updateWithAdmissionChecks)."""
    plan = plan_of("local")
    assert plan.cluster_autoscaler is None
    assert (plan.provisioning.enabled, plan.provisioning.reason) == (False, (
        "cluster.provider is 'existing': the stack deploys no autoscaler there, and a ProvisioningRequest check "
        "nobody answers would keep every queue that has it from admitting anything"))
    r = rendered("local")
    kinds = {o["kind"] for o in r.kubernetes_objects()}
    assert not kinds & {"AdmissionCheck", "ProvisioningRequestConfig"}
    assert [x for x in r.resources if x.type == "kubernetes:yaml/v2:ConfigFile"] == []
    assert all("admissionChecksStrategy" not in o["spec"] for o in r.kubernetes_objects() if o["kind"] == "ClusterQueue")


# ---------------------------------------------------------------------------------------------------
# Kueue's ProvisioningRequest check


def kueue(stack: str, kind: str) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in rendered(stack).kubernetes_objects() if o["kind"] == kind}


def test_the_provisioning_request_config_and_admission_check() -> None:
    (prc,) = kueue("prod", "ProvisioningRequestConfig").values()
    (ac,) = kueue("prod", "AdmissionCheck").values()
    assert prc["spec"] == {
        "provisioningClassName": "best-effort-atomic-scale-up.autoscaling.x-k8s.io",
        # The GPU resources of the pools the autoscaler provisions (l40s-infer, l4-interactive; a100-mig).
        "managedResources": ["nvidia.com/gpu.shared", "nvidia.com/mig-1g.10gb"],
        # test_provisioning_retries_outlast_a_gpu_node_boot says why.
        "retryStrategy": {"backoffLimitCount": 5, "backoffBaseSeconds": 60, "backoffMaxSeconds": 1800},
    }
    assert prc["metadata"]["name"] == "best-effort-atomic-scale-up"
    assert ac["metadata"]["name"] == "provisioning-request"
    assert ac["spec"] == {
        "controllerName": "kueue.x-k8s.io/provisioning-request",
        "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig",
                       "name": "best-effort-atomic-scale-up"},
    }
    (staging_prc,) = kueue("staging", "ProvisioningRequestConfig").values()
    assert staging_prc["spec"]["managedResources"] == ["nvidia.com/gpu", "nvidia.com/gpu.shared"]


def test_provisioning_retries_outlast_a_gpu_node_boot() -> None:
    """On AWS the best-effort-atomic class marks a request Provisioned as soon as the group's size is raised,
    before any node exists (cloudprovider/aws AtomicIncreaseSize is not implemented, the executor falls back to
    IncreaseSize; provisioningrequest/besteffortatomic), and the booking expires 10 minutes later
    (processors/provreq/processor.go). A topology-aware job whose nodes are not Ready by then is sent back and
    its request retried; when the retries are spent Kueue rejects the check and deactivates the workload
    (kueue v0.19.2 pkg/controller/admissionchecks/provisioning/controller.go). So the backoffs alone must add up
    to a GPU node's boot: registered within maxNodeProvisionTime (prod: 15m), GPUs allocatable up to 15 minutes
    after Ready (cluster-autoscaler core/static_autoscaler.go)."""
    boot = 15 * 60 + 15 * 60
    for stack in ("prod", "staging"):
        (prc,) = kueue(stack, "ProvisioningRequestConfig").values()
        assert prc["spec"]["retryStrategy"] == {"backoffLimitCount": 5, "backoffBaseSeconds": 60,
                                                "backoffMaxSeconds": 1800}, stack
    # Kueue waits base * 2^(n-1), at most the max, before the n-th retry (pkg/workload/admissionchecks.go).
    assert 60 + 120 + 240 + 480 + 960 == 1860 >= boot
    assert 60 + 120 + 240 < boot  # Kueue's default, 3 retries: 7 minutes
    # A longer registration bound buys more retries: 45m + 15m = 3600 s needs a sixth (3660 s).
    raw = platform_raw("prod")
    raw["addons"]["clusterAutoscaler"] = {"maxNodeProvisionTime": "45m"}
    from components.queues.objects import provisioning_request_config
    plan = build_plan(load_platform(raw, "us-east-1"), "us-east-1")
    assert provisioning_request_config(plan.provisioning)["spec"]["retryStrategy"] == {
        "backoffLimitCount": 6, "backoffBaseSeconds": 60, "backoffMaxSeconds": 1800}
    assert 1860 + 1800 >= 45 * 60 + 15 * 60 > 1860


def test_the_autoscaler_may_delete_the_provisioning_requests_it_is_done_with() -> None:
    """The autoscaler deletes a ProvisioningRequest 7 days after it was Provisioned or Failed
    (processors/provreq/processor.go DeleteOldProvReqs, defaultTerminalProvReqTTL; provreqclient/client.go
    DeleteProvisioningRequest): without `delete` the API server refuses, and finished requests pile up in the
    team namespaces (FAQ.md step 4's role has it)."""
    rules = release("prod", "cluster-autoscaler")["values"]["rbac"]["additionalRules"]
    (requests,) = [r for r in rules if "provisioningrequests" in r["resources"]]
    assert requests["apiGroups"] == ["autoscaling.x-k8s.io"]
    assert "delete" in requests["verbs"]


@pytest.mark.parametrize("stack", ["prod", "staging", KARPENTER_STACK])
def test_the_check_and_its_config_are_valid_kueue_objects(stack: str) -> None:
    """Against Kueue v0.19.2's CRDs (../shared/crds/kueue-v0.19.2), the ClusterQueues that name the check too."""
    for kind in ("ProvisioningRequestConfig", "AdmissionCheck", "ClusterQueue"):
        objects = kueue(stack, kind)
        assert objects, (stack, kind)
        for name, obj in objects.items():
            assert validate_kueue(obj) == [], (stack, kind, name)


def test_the_check_runs_only_on_the_flavors_the_autoscaler_provisions() -> None:
    """Per team: the check on its elastic pools' flavors (onFlavors); the reserved training pools and the
    CPU-only flavor admit as before."""
    checks = {name: q["spec"].get("admissionChecksStrategy") for name, q in kueue("prod", "ClusterQueue").items()}
    on = lambda *flavors: {"admissionChecks": [{"name": "provisioning-request", "onFlavors": list(flavors)}]}  # noqa: E731
    assert checks == {
        "llm-pretrain": None,  # h100-train and h200-train only: reserved
        "llm-finetune": on("a100-mig"),
        "vision": on("a100-mig", "l4-interactive"),
        "search-serving": on("l40s-infer"),
        "recsys": on("l40s-infer", "l4-interactive"),
        "data-science": on("a100-mig", "l4-interactive"),
    }
    # staging's topology-aware h100-train starts at 0 nodes: its queues get the check there too.
    staging = {name: q["spec"].get("admissionChecksStrategy") for name, q in kueue("staging", "ClusterQueue").items()}
    assert staging == {"llm-pretrain": on("h100-train", "a10g-dev"), "vision": on("h100-train", "a10g-dev"),
                       "search-serving": on("l40s-infer")}


def test_a_multikueue_manager_asks_no_autoscaler_for_nodes() -> None:
    raw = platform_raw("prod")
    raw["multiKueue"] = {"workers": [{"name": "us-west", "kubeconfigSecret": "usWestKubeconfig"}]}
    plan = build_plan(load_platform(raw, "us-east-1"), "us-east-1")
    assert (plan.provisioning.enabled, plan.provisioning.reason) == (
        False, "a MultiKueue manager: its jobs run on the workers, which provision their own nodes")
    worker = build_plan(load_platform(raw, "us-east-1"), "us-east-1", multikueue_role="worker")
    assert worker.provisioning.enabled


# ---------------------------------------------------------------------------------------------------
# refusals: each names its field and the way out


def test_a_topology_aware_elastic_pool_at_zero_without_provisioning_is_refused() -> None:
    raw = platform_raw("staging")  # h100-train: p5.48xlarge on EFA (topology-aware), on-demand, min 0
    raw["addons"]["clusterAutoscaler"] = {"install": False}
    found = problems(copy.deepcopy(raw))
    assert set(found) == {"pools[0].capacity.min"}
    assert found["pools[0].capacity.min"] == (
        "pool 'h100-train' is topology-aware and elastic (on-demand) at min 0, and addons.clusterAutoscaler.install "
        "is false: Kueue places its jobs only on Ready nodes, so at 0 nodes no job is ever admitted and nothing asks "
        "for a node; turn on addons.clusterAutoscaler with provisioningRequests (Kueue then asks the autoscaler for "
        "a job's nodes before admitting it), or set capacity.min to the nodes the largest job needs")
    raw["addons"]["clusterAutoscaler"] = {"provisioningRequests": False}
    assert "and addons.clusterAutoscaler.provisioningRequests is false:" in problems(copy.deepcopy(raw))[
        "pools[0].capacity.min"]
    # Either way out validates: a warm minimum (then plan says it never grows past it), or provisioning.
    raw["pools"][0]["capacity"]["min"] = 1
    plan = build_plan(load_platform(raw, "us-east-1"), "us-east-1")
    assert any(w.startswith("pool 'h100-train' is topology-aware and elastic without ProvisioningRequest")
               and "admits no job larger than its 1 running nodes" in w for w in plan.warnings)
    load_platform(platform_raw("staging"), "us-east-1")


def test_pools_that_are_not_refused_at_zero() -> None:
    """Not topology-aware (a MIG pool), reserved (runs its reservation), or on an `existing` cluster (its
    nodes come from elsewhere): none of these is the stack's to refuse."""
    raw = platform_raw("prod")
    raw["addons"]["clusterAutoscaler"] = {"install": False}
    load_platform(raw, "us-east-1")  # a100-mig at min 0, the reserved training pools
    load_platform(platform_raw("local"))  # train: topology-aware at min 0 on an existing cluster


def test_an_autoscaler_built_for_another_kubernetes_minor_is_refused() -> None:
    raw = platform_raw("prod")
    raw["addons"]["clusterAutoscaler"] = {"imageTag": "v1.32.4"}
    assert problems(raw) == {"addons.clusterAutoscaler.imageTag": (
        "v1.32.4 is the Cluster Autoscaler for Kubernetes 1.32, and the cluster runs 1.33: the autoscaler is built "
        "for one minor (its README, \"Releases\"); use a v1.33.x release and the chart release that ships it")}


@pytest.mark.parametrize("field,value,message", [
    ("imageTag", "1.33.6", "'1.33.6' is not a Cluster Autoscaler release: write vMAJOR.MINOR.PATCH, e.g. v1.33.6"),
    ("version", "latest", "'latest' is not an exact chart version"),
    ("scaleDownUnneededTime", "10 minutes", "'10 minutes' is not a Go duration such as 30s, 10m or 1h30m"),
    ("scaleDownDelayAfterAdd", "5", "'5' is not a Go duration such as 30s, 10m or 1h30m"),
    ("maxNodeProvisionTime", "15mins", "'15mins' is not a Go duration such as 30s, 10m or 1h30m"),
])
def test_bad_autoscaler_settings_are_refused_by_field(field: str, value: str, message: str) -> None:
    raw = platform_raw("prod")
    raw["addons"]["clusterAutoscaler"] = {field: value}
    found = problems(raw)
    assert list(found) == [f"addons.clusterAutoscaler.{field}"]
    assert message in found[f"addons.clusterAutoscaler.{field}"]


def test_a_cluster_name_too_long_for_the_autoscalers_role_is_refused() -> None:
    raw = platform_raw("prod")
    raw["cluster"]["name"] = "c" * 46
    found = problems(raw)
    assert found["cluster.name"] == (
        f"'{'c' * 46}' is too long for the Cluster Autoscaler's IAM role '{'c' * 46}-cluster-autoscaler': 65 "
        "characters and AWS allows 64; use at most 45 characters, or addons.clusterAutoscaler.install: false")


# ---------------------------------------------------------------------------------------------------
# what plan shows: $/h at min and at max


def test_plan_prices_each_pool_at_min_and_at_max_and_the_total() -> None:
    """At min: the reservations whole (16 x $55.04, 8 x $63.30) and the elastic pools' minimum (2 g6e.12xlarge
    at $10.49, 1 g6.12xlarge at $4.60, no p4de); at max every pool full."""
    data = plan_data(plan_of("prod"))
    assert {p["name"]: (p["usdPerHourMin"], p["usdPerHourMax"], p["scaledBy"], p["provisioningRequest"])
            for p in data["pools"]} == {
        "h100-train": (880.64, 880.64, "reservation", False),
        "h200-train": (506.4, 506.4, "reservation", False),
        "l40s-infer": (20.99, 167.89, "cluster-autoscaler", True),
        "a100-mig": (0.0, 109.8, "cluster-autoscaler", True),
        "l4-interactive": (4.6, 36.82, "cluster-autoscaler", True),
    }
    assert (data["usdPerHourMin"], data["usdPerHourMax"]) == (1412.63, 1701.55)
    text = format_plan(plan_of("prod"), "text", "prod")
    assert "$1,412.63/h at min to $1,701.55/h at max" in text
    total = [line for line in text.splitlines() if line.startswith("total")]
    assert total and total[0].split()[-2:] == ["1,412.63", "1,701.55"]
    # Karpenter keeps no node, so its elastic pool costs nothing at min; its capacity block is paid whole.
    karpenter = {p["name"]: p["usdPerHourMin"] for p in plan_data(plan_of(KARPENTER_STACK))["pools"]}
    assert karpenter == {"h100-train": 86.32, "l40s-infer": 0.0, "a10g-dev": 0.0}
