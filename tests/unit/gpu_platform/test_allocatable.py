"""A node's allocatable as EKS computes it, and what the plan gives a pod from it: literals worked by hand.

The formula (gpu_platform/plan/node_reserve.py, with its sources):
  allocatable CPU    = vCPUs x 1000 - kube-reserved CPU (6% of core 1, 1% of core 2, 0.5% of cores 3-4,
                       0.25% of the rest, in whole millicores per range)
  allocatable memory = nominal MiB - ceil(nominal MiB x 0.075)           (Karpenter's VM overhead)
                       - (255 + 11 x max pods), max pods = ENIs x (IPv4 per ENI - 1) + 2   (nodeadm)
                       - 100                                              (evictionHard memory.available)
A pod of the platform gets that less the daemonset budget, 1000m and 2048 Mi.
"""

from __future__ import annotations

import pytest

from gpu_platform import catalog
from gpu_platform.jobs import JobRequest, job
from gpu_platform.nodes import fake_nodes, kwok_instance_type_resources
from gpu_platform.plan import build_plan
from gpu_platform.plan.node_reserve import eni_max_pods, instance_allocatable, kube_reserved_cpu_millis
from gpu_platform.spec import load_platform
from tests.conftest import plan_of, platform_raw

# instance type -> (allocatable CPU millicores, allocatable memory Mi), by hand:
ALLOCATABLE = {
    # g6.4xlarge: 16 vCPU, 64 GiB = 65536 MiB, 8 ENIs x 30 IPv4.
    #   CPU 60 + 10 + 2000 x 0.5% (10) + 12000 x 0.25% (30) = 110m; 16000 - 110 = 15890m
    #   memory 65536 - ceil(4915.2) = 60620; pods 8 x 29 + 2 = 234, 255 + 2574 = 2829; 60620 - 2829 - 100 = 57691
    "g6.4xlarge": (15890, 57691),
    # g5.xlarge: 4 vCPU, 16 GiB = 16384 MiB, 4 ENIs x 15 IPv4.
    #   CPU 60 + 10 + 10 = 80m; 4000 - 80 = 3920m
    #   memory 16384 - ceil(1228.8) = 15155; pods 4 x 14 + 2 = 58, 255 + 638 = 893; 15155 - 893 - 100 = 14162
    "g5.xlarge": (3920, 14162),
    # g6e.12xlarge: 48 vCPU, 384 GiB = 393216 MiB, 10 ENIs x 30 IPv4.
    #   CPU 80 + 44000 x 0.25% (110) = 190m; 48000 - 190 = 47810m
    #   memory 393216 - ceil(29491.2) = 363724; pods 10 x 29 + 2 = 292, 255 + 3212 = 3467;
    #   363724 - 3467 - 100 = 360157
    "g6e.12xlarge": (47810, 360157),
    # p4d.24xlarge: 96 vCPU, 1152 GiB = 1179648 MiB, 15 ENIs x 50 IPv4 (card 0).
    #   CPU 80 + 92000 x 0.25% (230) = 310m; 96000 - 310 = 95690m
    #   memory 1179648 - ceil(88473.6) = 1091174; pods 15 x 49 + 2 = 737, 255 + 8107 = 8362;
    #   1091174 - 8362 - 100 = 1082712
    "p4d.24xlarge": (95690, 1082712),
    # p5.48xlarge: 192 vCPU, 2048 GiB = 2097152 MiB, 2 ENIs x 50 IPv4 on card 0 (of 32 cards).
    #   CPU 80 + 188000 x 0.25% (470) = 550m; 192000 - 550 = 191450m
    #   memory 2097152 - ceil(157286.4) = 1939865; pods 2 x 49 + 2 = 100, 255 + 1100 = 1355;
    #   1939865 - 1355 - 100 = 1938410
    "p5.48xlarge": (191450, 1938410),
}

# pytorch/ci-infra#1082: a g6.4xlarge EKS node (AL2023, Karpenter) reports 58981Mi allocatable (us-east-1;
# 58983Mi in us-east-2).
G6_4XLARGE_MEASURED_ALLOCATABLE_MIB = 58981


@pytest.mark.parametrize("instance_type", ALLOCATABLE)
def test_allocatable_is_the_hand_worked_eks_figure(instance_type: str) -> None:
    alloc = instance_allocatable(instance_type)
    assert (alloc.cpu_millis, alloc.memory_mib) == ALLOCATABLE[instance_type]
    it = catalog.INSTANCE_TYPES[instance_type]
    assert (alloc.capacity_cpu_millis, alloc.capacity_memory_mib) == (it.vcpus * 1000, it.memory_gib * 1024)


def test_g6_4xlarge_allocatable_is_below_the_measured_node_by_the_overhead_karpenter_assumes() -> None:
    # The measured node kept 65536 - (58981 + 2829 + 100) = 3626 MiB (5.5%) for the kernel and firmware;
    # Karpenter assumes 4916 (7.5%), so the figure here is 4916 - 3626 = 1290 Mi under the real node's: what
    # Karpenter would schedule on a g6.4xlarge it has not yet seen, and what a real one offers, both hold it.
    alloc = instance_allocatable("g6.4xlarge")
    assert G6_4XLARGE_MEASURED_ALLOCATABLE_MIB - alloc.memory_mib == 1290
    assert 65536 - (G6_4XLARGE_MEASURED_ALLOCATABLE_MIB + 2829 + 100) == 3626


def test_a_one_gpu_job_on_g6_4xlarge_fits_a_real_node_beside_the_daemonsets() -> None:
    # staging's a10g-dev pool as L4 on g6.4xlarge: 1 GPU a node, so one unit is the node's whole pod share.
    # Before: 65536 - (255 + 11 x 110 + 100 + 2048) = 61923 Mi, over the 58981 Mi the node has: never scheduled.
    raw = platform_raw("staging")
    (pool,) = [p for p in raw["pools"] if p["name"] == "a10g-dev"]
    pool.update(accelerator="l4-24gb", instanceType="g6.4xlarge")
    plan = build_plan(load_platform(raw, "us-east-1"), "us-east-1")
    (obj,) = job(plan, JobRequest(team="llm-pretrain", pool="a10g-dev", gpus=1, name="j"))
    limits = obj["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
    # 15890 - 1000 = 14890m; 57691 - 2048 = 55643 Mi, within 58981 - 2048 = 56933 Mi.
    assert (limits["cpu"], limits["memory"]) == ("14890m", "55643Mi")
    assert int(limits["memory"].removesuffix("Mi")) <= G6_4XLARGE_MEASURED_ALLOCATABLE_MIB - 2048


# max pods per instance type in awslabs/amazon-eks-ami templates/shared/runtime/eni-max-pods.txt at v20251120,
# the file EKS published the formula's results in: the catalog's ENI figures must give each.
ENI_MAX_PODS_TXT = {
    "p5.48xlarge": 100, "p5e.48xlarge": 100, "p5en.48xlarge": 198, "p6-b200.48xlarge": 198,
    "p4d.24xlarge": 737, "p4de.24xlarge": 737,
    "g6e.xlarge": 58, "g6e.2xlarge": 58, "g6e.4xlarge": 234, "g6e.8xlarge": 234, "g6e.12xlarge": 292,
    "g6e.16xlarge": 737, "g6e.24xlarge": 492, "g6e.48xlarge": 492,
    "g6.xlarge": 58, "g6.2xlarge": 58, "g6.4xlarge": 234, "g6.8xlarge": 234, "g6.12xlarge": 234,
    "g6.16xlarge": 737, "g6.24xlarge": 737, "g6.48xlarge": 737,
    "g5.xlarge": 58, "g5.2xlarge": 58, "g5.4xlarge": 234, "g5.8xlarge": 234, "g5.12xlarge": 737,
    "g5.16xlarge": 234, "g5.24xlarge": 737, "g5.48xlarge": 345,
}


def test_every_catalog_type_has_the_eks_ami_max_pods() -> None:
    assert {name: eni_max_pods(it.enis, it.ipv4_per_eni) for name, it in catalog.INSTANCE_TYPES.items()} \
        == ENI_MAX_PODS_TXT


def test_kube_reserved_cpu_rounds_each_range_down_to_whole_millicores() -> None:
    # nodeadm computes each range in integer millicores: 5 vCPUs give 1000 x 0.25% = 2.5 -> 2m, not 3m.
    assert [kube_reserved_cpu_millis(v) for v in (1, 2, 3, 4, 5, 6)] == [60, 70, 75, 80, 82, 85]


def test_simulated_gpu_nodes_advertise_nominal_capacity_and_eks_allocatable_less_the_daemonsets() -> None:
    # local infer: g6.12xlarge (48 vCPU, 192 GiB, 8 ENIs x 30). Allocatable 48000 - 190 = 47810m and
    # 196608 - ceil(14745.6) - (255 + 11 x 234) - 100 = 178933 Mi; less 1000m and 2048 Mi for the daemonsets
    # that do not run on the simulated nodes.
    nodes = [n for n in fake_nodes(plan_of("local"), autoscaled=False)["items"] if n["metadata"]["name"] == "infer-0"]
    (status,) = [n["status"] for n in nodes]
    assert {k: status["capacity"][k] for k in ("cpu", "memory")} == {"cpu": "48", "memory": "192Gi"}
    assert {k: status["allocatable"][k] for k in ("cpu", "memory")} == {"cpu": "46810m", "memory": "176885Mi"}


def test_simulated_system_nodes_use_the_same_arithmetic() -> None:
    # The two simulated CPU nodes (no system pool in local): m7i.8xlarge, 32 vCPU, 128 GiB, 8 ENIs x 30.
    # CPU 80 + 28000 x 0.25% (70) = 150m: 32000 - 150 - 1000 = 30850m. Memory 131072 - ceil(9830.4) = 121241;
    # - 2829 - 100 = 118312 allocatable; - 2048 = 116264 Mi.
    plan = plan_of("local")
    assert plan.cluster.system_pool is None
    cpu = [n for n in fake_nodes(plan)["items"] if n["metadata"]["name"] == "cpu-0"]
    (status,) = [n["status"] for n in cpu]
    assert (status["allocatable"]["cpu"], status["allocatable"]["memory"]) == ("30850m", "116264Mi")


def test_karpenter_kwok_instance_types_give_added_nodes_the_registered_nodes_allocatable() -> None:
    # Karpenter's KWOK provider keeps 100m and 10Mi of what an instance type offers: offer 46810 + 100 and
    # 176885 + 10 so the nodes it adds have what infer-0 has.
    infer = plan_of("local").pools_by_name["infer"]
    assert kwok_instance_type_resources(infer) == {"cpu": "46910m", "memory": "176895Mi", "pods": "110"}
