"""Rendered values pinned to literals worked out by hand from the stack files, not read from the plan.

The component tests compare a render with the Plan it was made from, so a bug in the plan moves both sides
and passes. Here every expected value is a literal: the stack YAML's numbers (Pulumi.<stack>.yaml,
tests/fixtures/stacks) put through the arithmetic written out beside each one, with the instance types' sizes
from the catalog's table (AWS instance type specifications) and the node's allocatable as EKS computes it
(gpu_platform/plan/node_reserve.py: usable memory = nominal - ceil(7.5% of nominal), Karpenter's VM overhead;
kube-reserved CPU 6% of the first core, 1% of the second, 0.5% of the next two, 0.25% of the rest;
kube-reserved memory 255 MiB + 11 MiB x the ENI max pods, ENIs x (IPv4 per ENI - 1) + 2; 100 MiB eviction),
less the platform's daemonsets budgeted at 1 vCPU and 2 GiB. A slip in the spec, the plan, the components or
the job template changes a literal here and fails.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from gpu_platform.jobs import JobRequest, job
from harness.render import Rendered
from tests.conftest import background_render, plan_of, rendered, stack_doc

CLUSTER_QUEUE = "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"
COHORT = "kubernetes:kueue.x-k8s.io/v1beta2:Cohort"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
NETWORK_POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
NAMESPACE = "kubernetes:core/v1:Namespace"
RELEASE = "kubernetes:helm.sh/v3:Release"

# Per-unit CPU (millicores) and memory (MiB) of a pool: the node's allocatable less the daemonset budget
# (1000m, 2048 Mi), split evenly over its units.
#   p5.48xlarge (192 vCPU, 2048 GiB, 8 H100; 2 ENIs x 50 IPv4 -> 2 x 49 + 2 = 100 pods), whole GPUs, 8 units:
#     CPU reserve 60+10+5+5 + 188 x 2.5 = 550m, + 1000m daemonsets = 1550m; (192000 - 1550) // 8 = 23806m
#     memory 2097152 - ceil(2097152 x 0.075 = 157286.4) = 1939865 usable; - (255 + 11 x 100 = 1355)
#     - 100 = 1938410 allocatable; - 2048 = 1936362; // 8 = 242045 Mi
#   p5en.48xlarge (as p5, but 4 ENIs x 50 -> 198 pods): memory 1939865 - (255 + 11 x 198 = 2433) - 100
#     - 2048 = 1935284; // 8 = 241910 Mi; CPU as p5, 23806m
#   g6e.12xlarge (48 vCPU, 384 GiB, 4 L40S; 10 ENIs x 30 -> 292 pods) time-sliced x2, 8 units:
#     CPU 80 + 44 x 2.5 + 1000 = 1190m; (48000 - 1190) // 8 = 5851m; memory 393216 - ceil(29491.2) = 363724;
#     - (255 + 11 x 292 = 3467) - 100 - 2048 = 358109; // 8 = 44763 Mi
#   p4de.24xlarge (96 vCPU, 1152 GiB, 8 A100 80GB; 15 ENIs x 50 -> 737 pods) as MIG 1g.10gb (7 a GPU), 56 units:
#     CPU 80 + 92 x 2.5 + 1000 = 1310m; (96000 - 1310) // 56 = 1690m; memory 1179648 - ceil(88473.6) = 1091174;
#     - (255 + 11 x 737 = 8362) - 100 - 2048 = 1080664; // 56 = 19297 Mi
#   g6.12xlarge (48 vCPU, 192 GiB, 4 L4; 8 ENIs x 30 -> 234 pods) time-sliced x4, 16 units:
#     CPU (48000 - 1190) // 16 = 2925m; memory 196608 - ceil(14745.6) = 181862; - (255 + 11 x 234 = 2829)
#     - 100 - 2048 = 176885; // 16 = 11055 Mi
#   g5.xlarge (4 vCPU, 16 GiB, 1 A10G; 4 ENIs x 15 -> 58 pods), 1 unit: CPU 4000 - 80 - 1000 = 2920m;
#     memory 16384 - ceil(1228.8) = 15155; - (255 + 11 x 58 = 893) - 100 - 2048 = 12114 Mi
# Quantities in the API server's canonical form: whole cores without a suffix, else millicores; memory in
# the largest binary suffix that keeps it whole, else Mi.


def cluster_queue(r: Rendered, team: str) -> dict[str, Any]:
    (cq,) = [x.inputs for x in r.by_type(CLUSTER_QUEUE) if x.inputs["metadata"]["name"] == team]
    return cq["spec"]


def flavor(r: Rendered, team: str, name: str) -> list[dict[str, str]]:
    (group,) = cluster_queue(r, team)["resourceGroups"]
    (found,) = [f for f in group["flavors"] if f["name"] == name]
    return found["resources"]


# (stack, team, flavor) -> the flavor's resources, whole.
QUOTAS: dict[tuple[str, str, str], list[dict[str, str]]] = {
    # prod llm-pretrain h100-train {units: 96, borrowingLimit: 32}: 96 x 23806m, 96 x 242045 Mi (23236320 Mi is
    # 22691.71875 Gi: stays Mi); 32 x 23806m, 32 x 242045 Mi. Its other pool (h200-train) is whole GPUs too.
    ("prod", "llm-pretrain", "h100-train"): [
        {"name": "cpu", "nominalQuota": "2285376m", "borrowingLimit": "761792m"},
        {"name": "memory", "nominalQuota": "23236320Mi", "borrowingLimit": "7745440Mi"},
        {"name": "nvidia.com/gpu", "nominalQuota": "96", "borrowingLimit": "32"},
    ],
    # prod h200-train {units: 32, lendingLimit: 16} on p5en.48xlarge (192 vCPU, 2048 GiB, 8 H200: CPU as p5,
    # memory 241910 Mi a unit for its 198 pods): 32 x 241910 = 7741120 Mi, 16 x 241910 = 3870560 Mi.
    ("prod", "llm-pretrain", "h200-train"): [
        {"name": "cpu", "nominalQuota": "761792m", "lendingLimit": "380896m"},
        {"name": "memory", "nominalQuota": "7741120Mi", "lendingLimit": "3870560Mi"},
        {"name": "nvidia.com/gpu", "nominalQuota": "32", "lendingLimit": "16"},
    ],
    # prod search-serving l40s-infer {units: 64, borrowingLimit: 16}: 64 x 5851m, 64 x 44763 Mi = 2864832 Mi;
    # 16 x 5851m, 16 x 44763 Mi = 716208 Mi.
    ("prod", "search-serving", "l40s-infer"): [
        {"name": "cpu", "nominalQuota": "374464m", "borrowingLimit": "93616m"},
        {"name": "memory", "nominalQuota": "2864832Mi", "borrowingLimit": "716208Mi"},
        {"name": "nvidia.com/gpu.shared", "nominalQuota": "64", "borrowingLimit": "16"},
    ],
    # prod vision a100-mig {units: 112, lendingLimit: 56}: 112 x 1690m, 112 x 19297 Mi = 2161264 Mi; 56 x 1690m,
    # 56 x 19297 Mi = 1080632 Mi; vision also quotes l4-interactive's time-sliced resource, which this flavor
    # does not advertise: 0.
    ("prod", "vision", "a100-mig"): [
        {"name": "cpu", "nominalQuota": "189280m", "lendingLimit": "94640m"},
        {"name": "memory", "nominalQuota": "2161264Mi", "lendingLimit": "1080632Mi"},
        {"name": "nvidia.com/gpu.shared", "nominalQuota": "0"},
        {"name": "nvidia.com/mig-1g.10gb", "nominalQuota": "112", "lendingLimit": "56"},
    ],
    # prod llm-finetune h100-train {units: 32, borrowingLimit: 32, lendingLimit: 16}: all three limits
    # (32 x 242045 = 7745440 Mi, 16 x 242045 = 3872720 Mi).
    ("prod", "llm-finetune", "h100-train"): [
        {"name": "cpu", "nominalQuota": "761792m", "borrowingLimit": "761792m", "lendingLimit": "380896m"},
        {"name": "memory", "nominalQuota": "7745440Mi", "borrowingLimit": "7745440Mi", "lendingLimit": "3872720Mi"},
        {"name": "nvidia.com/gpu", "nominalQuota": "32", "borrowingLimit": "32", "lendingLimit": "16"},
        {"name": "nvidia.com/mig-1g.10gb", "nominalQuota": "0"},
    ],
    # local serving infer {units: 32} on g6.12xlarge x4 replicas: 32 x 2925m = 93600m, 32 x 11055 Mi = 353760 Mi.
    ("local", "serving", "infer"): [
        {"name": "cpu", "nominalQuota": "93600m"},
        {"name": "memory", "nominalQuota": "353760Mi"},
        {"name": "nvidia.com/gpu.shared", "nominalQuota": "32"},
    ],
    # local nlp train {units: 8, borrowingLimit: 4, lendingLimit: 4}: 8 x 23806m = 190448m, 8 x 242045 Mi =
    # 1936360 Mi; 4 x 23806m = 95224m, 4 x 242045 Mi = 968180 Mi.
    ("local", "nlp", "train"): [
        {"name": "cpu", "nominalQuota": "190448m", "borrowingLimit": "95224m", "lendingLimit": "95224m"},
        {"name": "memory", "nominalQuota": "1936360Mi", "borrowingLimit": "968180Mi", "lendingLimit": "968180Mi"},
        {"name": "nvidia.com/gpu", "nominalQuota": "8", "borrowingLimit": "4", "lendingLimit": "4"},
        {"name": "nvidia.com/mig-1g.10gb", "nominalQuota": "0"},
    ],
    # staging llm-pretrain a10g-dev {units: 4} on g5.xlarge: 4 x 2920m = 11680m, 4 x 12114 Mi = 48456 Mi.
    ("staging", "llm-pretrain", "a10g-dev"): [
        {"name": "cpu", "nominalQuota": "11680m"},
        {"name": "memory", "nominalQuota": "48456Mi"},
        {"name": "nvidia.com/gpu", "nominalQuota": "4"},
    ],
}


@pytest.mark.parametrize("key", QUOTAS, ids=["/".join(k) for k in QUOTAS])
def test_quota_cpu_memory_and_units_per_flavor_are_the_hand_worked_values(key: tuple[str, str, str]) -> None:
    stack, team, name = key
    assert flavor(rendered(stack), team, name) == QUOTAS[key]


def test_flavors_are_in_pool_order_after_the_cpu_only_flavor() -> None:
    # prod pools in config order: h100-train, h200-train, l40s-infer, a100-mig, l4-interactive.
    (group,) = cluster_queue(rendered("prod"), "llm-finetune")["resourceGroups"]
    assert group["coveredResources"] == ["cpu", "memory", "nvidia.com/gpu", "nvidia.com/mig-1g.10gb"]
    assert [f["name"] for f in group["flavors"]] == ["cpu-only", "h100-train", "h200-train", "a100-mig"]
    (group,) = cluster_queue(rendered("prod"), "data-science")["resourceGroups"]
    assert [f["name"] for f in group["flavors"]] == ["cpu-only", "a100-mig", "l4-interactive"]


# What a team gets unless it sets its own: the spec's defaultPreemption default (docs/config-reference.md).
DEFAULT_PREEMPTION = {"reclaimWithinCohort": "Any", "borrowWithinCohort": {"policy": "Never"},
                      "withinClusterQueue": "LowerPriority"}


def test_preemption_override_and_default_are_rendered_whole() -> None:
    r = rendered("prod")
    # Pulumi.prod.yaml: search-serving preemption {reclaimWithinCohort: LowerPriority, borrowWithinCohort:
    # Never, withinClusterQueue: LowerOrNewerEqualPriority}.
    assert cluster_queue(r, "search-serving")["preemption"] == {
        "reclaimWithinCohort": "LowerPriority", "borrowWithinCohort": {"policy": "Never"},
        "withinClusterQueue": "LowerOrNewerEqualPriority"}
    for team in ("llm-pretrain", "llm-finetune", "vision", "recsys", "data-science"):
        assert cluster_queue(r, team)["preemption"] == DEFAULT_PREEMPTION, team


@pytest.mark.parametrize("stack", ["local", "staging", "prod", "staging-karpenter"])
def test_every_cluster_queue_has_the_whole_flavor_fungibility_and_strategy(stack: str) -> None:
    # Try the next flavor before borrowing or preempting in this one (docs/tenancy.md), in both cases.
    for cq in rendered(stack).by_type(CLUSTER_QUEUE):
        spec = cq.inputs["spec"]
        assert spec["flavorFungibility"] == {"whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "TryNextFlavor"}
        assert spec["queueingStrategy"] == "BestEffortFIFO"


def test_fair_sharing_weights_cohorts_and_namespace_selectors() -> None:
    r = rendered("prod")
    # search-serving fairSharingWeight 2, every other team the default 1.
    weights = {cq.inputs["metadata"]["name"]: cq.inputs["spec"]["fairSharing"] for cq in r.by_type(CLUSTER_QUEUE)}
    assert weights == {"llm-pretrain": {"weight": "1"}, "llm-finetune": {"weight": "1"}, "vision": {"weight": "1"},
                       "search-serving": {"weight": "2"}, "recsys": {"weight": "1"}, "data-science": {"weight": "1"}}
    cohorts = {c.inputs["metadata"]["name"]: c.inputs["spec"] for c in r.by_type(COHORT)}
    assert cohorts == {"org": {}, "research": {"parentName": "org"},
                       "product": {"parentName": "org", "fairSharing": {"weight": "2"}}}
    assert {cq.inputs["metadata"]["name"]: cq.inputs["spec"].get("cohortName") for cq in r.by_type(CLUSTER_QUEUE)} == {
        "llm-pretrain": "research", "llm-finetune": "research", "vision": "research",
        "search-serving": "product", "recsys": "product", "data-science": "product"}
    assert cluster_queue(r, "data-science")["namespaceSelector"] == {
        "matchLabels": {"gpu-platform.io/team": "data-science"}}


def test_cpu_only_flavor_never_lends_across_a_cohort_and_holds_no_gpu() -> None:
    (group,) = cluster_queue(rendered("prod"), "vision")["resourceGroups"]
    cpu_only = group["flavors"][0]
    assert cpu_only["name"] == "cpu-only"
    gpu_rows = [r for r in cpu_only["resources"] if r["name"].startswith("nvidia.com/")]
    assert gpu_rows == [{"name": "nvidia.com/gpu.shared", "nominalQuota": "0", "borrowingLimit": "0"},
                        {"name": "nvidia.com/mig-1g.10gb", "nominalQuota": "0", "borrowingLimit": "0"}]
    assert all(r["borrowingLimit"] == "0" for r in cpu_only["resources"])


# Node group sizes (docs/node-pools.md, "Capacity: reserved and elastic"): an elastic pool's group is created
# at capacity.desired, default min; a capacity reservation is pinned at min = max = desired = its size; a
# capacity block is created at desiredSize max with minSize 0 (EKS scales it up when the block starts and
# must be able to reach 0 before it ends).
SCALING = {
    "prod": {
        "np-h100-train": {"minSize": 0, "maxSize": 16, "desiredSize": 16},   # capacity-block, 16..16
        "np-h200-train": {"minSize": 8, "maxSize": 8, "desiredSize": 8},     # capacity-reservation, 8..8
        "np-l40s-infer": {"minSize": 2, "maxSize": 16, "desiredSize": 2},    # on-demand, 2..16
        "np-a100-mig": {"minSize": 0, "maxSize": 4, "desiredSize": 0},       # on-demand, 0..4
        "np-l4-interactive": {"minSize": 1, "maxSize": 8, "desiredSize": 1}, # spot, 1..8
    },
    "staging": {
        "np-h100-train": {"minSize": 0, "maxSize": 2, "desiredSize": 0},
        "np-l40s-infer": {"minSize": 1, "maxSize": 4, "desiredSize": 1},
        "np-a10g-dev": {"minSize": 0, "maxSize": 8, "desiredSize": 0},
    },
}


SCALING["staging-karpenter"] = {
    # Karpenter's pools (h100-train, l40s-infer) have no node group; a10g-dev is spot 0..8, and the system pool
    # {instanceType: m7i.xlarge, min: 2, max: 4} starts at its min.
    "np-a10g-dev": {"minSize": 0, "maxSize": 8, "desiredSize": 0},
    "np-system": {"minSize": 2, "maxSize": 4, "desiredSize": 2},
}


@pytest.mark.parametrize("stack", SCALING)
def test_node_group_sizes_are_the_stack_files(stack: str) -> None:
    groups = {ng.name: ng.inputs["scalingConfig"] for ng in rendered(stack).by_type(NODE_GROUP)
              if ng.name.startswith("np-")}
    assert groups == SCALING[stack]


def test_node_group_names_are_cluster_dash_pool() -> None:
    names = {ng.name: (ng.inputs["nodeGroupName"], ng.inputs.get("instanceTypes"))
             for ng in rendered("staging-karpenter").by_type(NODE_GROUP)}
    # The pool's instance type comes from its launch template; the system pool names its own.
    assert names == {"np-a10g-dev": ("ml-staging-a10g-dev", None), "np-system": ("ml-staging-system", ["m7i.xlarge"])}


def test_capacity_types_reach_the_node_groups() -> None:
    types = {ng.name: ng.inputs["capacityType"] for ng in rendered("prod").by_type(NODE_GROUP) if ng.name.startswith("np-")}
    # EKS capacityType: ON_DEMAND for on-demand and capacity reservations, CAPACITY_BLOCK for a block, SPOT.
    assert types == {"np-h100-train": "CAPACITY_BLOCK", "np-h200-train": "ON_DEMAND", "np-l40s-infer": "ON_DEMAND",
                     "np-a100-mig": "ON_DEMAND", "np-l4-interactive": "SPOT"}


def test_prod_configured_egress_is_rendered_whole() -> None:
    # Pulumi.prod.yaml search-serving egress: [{cidr: 10.20.0.0/16, ports: [443]}] (protocol default TCP).
    (np,) = [x.inputs for x in rendered("prod").by_type(NETWORK_POLICY)
             if x.name == "tenant-search-serving-allow-configured-egress"]
    assert np["metadata"]["namespace"] == "search-serving"
    assert np["spec"] == {"podSelector": {}, "policyTypes": ["Egress"], "egress": [
        {"to": [{"ipBlock": {"cidr": "10.20.0.0/16"}}], "ports": [{"protocol": "TCP", "port": 443}]}]}
    # No other team configured egress.
    assert [x.name for x in rendered("prod").by_type(NETWORK_POLICY) if x.name.endswith("-allow-configured-egress")] == [
        "tenant-search-serving-allow-configured-egress"]


def test_dns_is_allowed_over_udp_and_tcp() -> None:
    (np,) = [x.inputs for x in rendered("local").by_type(NETWORK_POLICY) if x.name == "tenant-vision-allow-dns"]
    assert np["spec"]["egress"] == [{
        "to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
                "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}],
        "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]}]


# --- One sharing mode per stack: the DCGM exporter's env, and a UDP egress entry -------------------------

def _local_with(pools: list[str], teams: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The local stack with the GPU Operator on, only `pools`, and only `teams` (name -> changes)."""
    config = copy.deepcopy(stack_doc("local")["config"])
    platform = config["gpu-platform:platform"]
    platform["addons"]["gpuOperator"] = {"install": True}
    platform["pools"] = [p for p in platform["pools"] if p["name"] in pools]
    platform["teams"] = [{**t, **teams[t["name"]]} for t in platform["teams"] if t["name"] in teams]
    return config


@background_render()
def time_slicing_only() -> tuple[str, dict[str, Any]]:
    """Only the time-sliced infer pool (serving's), and serving may reach an NTP and a DNS server over UDP."""
    return "local", _local_with(["infer"], {"serving": {"egress": [
        {"cidr": "10.30.0.0/24", "ports": [123, 53], "protocol": "UDP"}, {"cidr": "10.40.0.0/16"}]}})


@background_render()
def mig_only() -> tuple[str, dict[str, Any]]:
    """Only the MIG notebooks pool (vision's and nlp's, whose train quotas go with the train pool)."""
    return "local", _local_with(["notebooks"], {
        "vision": {"quotas": {"notebooks": {"gpus": 28}}},
        "nlp": {"quotas": {"notebooks": {"gpus": 28}}}})


def dcgm_env(r: Rendered) -> list[dict[str, str]] | None:
    (release,) = [x for x in r.by_type(RELEASE) if x.name == "gpu-operator"]
    return release.inputs["values"]["dcgmExporter"].get("env")


def test_dcgm_exporter_env_per_sharing_mode() -> None:
    # dcgm-exporter maps GPUs to pods for nvidia.com/gpu and nvidia.com/mig-* by itself; a time-sliced
    # resource needs NVIDIA_RESOURCE_NAMES and KUBERNETES_VIRTUAL_GPUS (NVIDIA/dcgm-exporter pkg/cmd/app.go).
    shared = [{"name": "NVIDIA_RESOURCE_NAMES", "value": "nvidia.com/gpu.shared"},
              {"name": "KUBERNETES_VIRTUAL_GPUS", "value": "true"}]
    assert dcgm_env(time_slicing_only()) == shared
    assert dcgm_env(mig_only()) == []
    # staging-karpenter: every pool whole GPUs.
    assert dcgm_env(rendered("staging-karpenter")) == []
    # prod and staging have a time-sliced pool beside the others.
    assert dcgm_env(rendered("prod")) == shared
    assert dcgm_env(rendered("staging")) == shared


def test_a_udp_egress_entry_keeps_its_protocol_and_every_port() -> None:
    (np,) = [x.inputs for x in time_slicing_only().by_type(NETWORK_POLICY)
             if x.name == "tenant-serving-allow-configured-egress"]
    assert np["spec"]["egress"] == [
        {"to": [{"ipBlock": {"cidr": "10.30.0.0/24"}}],
         "ports": [{"protocol": "UDP", "port": 123}, {"protocol": "UDP", "port": 53}]},
        {"to": [{"ipBlock": {"cidr": "10.40.0.0/16"}}], "ports": [{"protocol": "TCP", "port": 443}]},
    ]


# --- The job template -----------------------------------------------------------------------------------

def test_a_multi_node_job_fails_on_its_first_counted_failure_and_one_node_retries_three_times() -> None:
    """A gang job restarted pod by pod would run with a member missing: backoffLimit 0 from two nodes on
    (Kueue requeues the whole job; docs/submitting-work.md); a one-node job may retry 3 times."""
    plan = plan_of("local")
    (one,) = job(plan, JobRequest(team="vision", pool="train", gpus=8, nodes=1, name="one"))
    assert (one["spec"]["backoffLimit"], one["spec"]["parallelism"], one["spec"]["completions"]) == (3, 1, 1)
    assert "completionMode" not in one["spec"]
    two, service = job(plan, JobRequest(team="vision", pool="train", gpus=6, nodes=2, name="two"))
    assert (two["spec"]["backoffLimit"], two["spec"]["parallelism"], two["spec"]["completions"]) == (0, 2, 2)
    assert two["spec"]["completionMode"] == "Indexed"
    env = two["spec"]["template"]["spec"]["containers"][0]["env"]
    assert {"name": "GPU_PLATFORM_NODES", "value": "2"} in env
    assert {"name": "GPU_PLATFORM_COORDINATOR", "value": "two-0.two"} in env
    assert service["spec"] == {"clusterIP": "None", "selector": {"batch.kubernetes.io/job-name": "two"},
                               "publishNotReadyAddresses": True}


def test_a_whole_node_job_asks_for_the_hand_worked_node_share() -> None:
    # local train: p5.48xlarge, 8 units: 8 x 23806m = 190448m and 8 x 242045 Mi = 1936360 Mi; a time-sliced
    # infer pod holds 1 of 16 units of a g6.12xlarge: 2925m and 11055 Mi.
    plan = plan_of("local")
    (obj,) = job(plan, JobRequest(team="vision", pool="train", gpus=8, name="j"))
    (c,) = obj["spec"]["template"]["spec"]["containers"]
    assert c["resources"]["limits"]["nvidia.com/gpu"] == "8"
    assert (c["resources"]["limits"]["cpu"], c["resources"]["limits"]["memory"]) == ("190448m", "1936360Mi")
    (obj,) = job(plan, JobRequest(team="serving", pool="infer", gpus=1, name="j"))
    (c,) = obj["spec"]["template"]["spec"]["containers"]
    assert c["resources"]["limits"]["nvidia.com/gpu.shared"] == "1"
    assert (c["resources"]["limits"]["cpu"], c["resources"]["limits"]["memory"]) == ("2925m", "11055Mi")
    assert obj["spec"]["ttlSecondsAfterFinished"] == 3600
    assert obj["metadata"]["namespace"] == "serving"


def test_a_jobs_labels_and_security_context_are_whole() -> None:
    """Pulumi.local.yaml serving: cost center cc-3001, quota on infer, priorities [production-inference, ...]."""
    (obj,) = job(plan_of("local"), JobRequest(team="serving", pool="infer", gpus=1, name="j",
                                              priority="production-inference"))
    assert obj["metadata"] == {"name": "j", "namespace": "serving", "labels": {
        "kueue.x-k8s.io/queue-name": "default", "gpu-platform.io/team": "serving", "gpu-platform.io/pool": "infer",
        "app.kubernetes.io/managed-by": "gpu-platform", "kueue.x-k8s.io/priority-class": "production-inference"}}
    pod = obj["spec"]["template"]
    assert pod["metadata"]["labels"] == {"gpu-platform.io/team": "serving", "gpu-platform.io/cost-center": "cc-3001",
                                         "gpu-platform.io/pool": "infer", "kueue.x-k8s.io/queue-name": "default"}
    (c,) = pod["spec"]["containers"]
    # The restricted Pod Security profile (serving's podSecurity: restricted), as nobody (65534).
    assert c["securityContext"] == {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
                                    "runAsNonRoot": True, "runAsUser": 65534}
    assert pod["spec"]["priorityClassName"] == "production-inference"


def test_a_namespace_quota_caps_every_gpu_resource_at_the_teams_reach() -> None:
    """prod search-serving holds l40s-infer {units: 64, borrowingLimit: 16} in cohort product, where recsys lends
    at most 24 (lendingLimit 24) of the l40s-infer pool's 16 x 8 = 128: its reach is min(64 + 16, 64 + 24, 128)
    = 80 time-sliced units. Every other GPU resource the stack's pools advertise is capped at 0."""
    (quota,) = [x.inputs for x in rendered("prod").by_type("kubernetes:core/v1:ResourceQuota")
                if x.inputs["metadata"]["namespace"] == "search-serving"]
    gpus = {k: v for k, v in quota["spec"]["hard"].items() if k.startswith("requests.nvidia.com/")}
    assert gpus == {"requests.nvidia.com/gpu": "0", "requests.nvidia.com/gpu.shared": "80",
                    "requests.nvidia.com/mig-1g.10gb": "0"}


def test_dashboards_settings_are_whole() -> None:
    """Each dashboard read-only, over the last day refreshed every minute, in the viewer's time zone, with
    the template variables a team and pool filter need (the data source first)."""
    import json

    boards = {}
    for cm in rendered("prod").by_type("kubernetes:core/v1:ConfigMap"):
        if "grafana_dashboard" in cm.inputs["metadata"].get("labels", {}):
            ((_, body),) = cm.inputs["data"].items()
            board = json.loads(body)
            boards[board["uid"]] = board
    settings = {uid: {k: v for k, v in b.items() if k not in ("panels", "templating", "description")}
                for uid, b in boards.items()}
    common = {"tags": ["gpu-platform"], "editable": False, "schemaVersion": 39, "time": {"from": "now-24h", "to": "now"},
              "refresh": "1m", "timezone": "browser"}
    assert settings == {
        "gpu-platform-fleet": {"uid": "gpu-platform-fleet", "title": "GPU fleet: allocation and utilization", **common},
        "gpu-platform-queues": {"uid": "gpu-platform-queues", "title": "GPU queues: wait and admissions by ClusterQueue",
                                **common},
        "gpu-platform-gpu-health": {"uid": "gpu-platform-gpu-health", "title": "GPU health", **common},
    }
    pool_variable = boards["gpu-platform-fleet"]["templating"]["list"][1]
    assert {k: v for k, v in pool_variable.items() if k not in ("query", "definition")} == {
        "name": "pool", "label": "pool", "type": "query", "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "includeAll": True, "multi": True, "allValue": ".*", "refresh": 2, "sort": 1,
        "current": {"text": "All", "value": "$__all"}}
