"""Hardware facts the plan is derived from: accelerators, MIG geometries, EC2 GPU instance types, prices.

Facts are data, not logic, and every table names where it comes from so a reviewer can check it
against the vendor's page instead of trusting this file. Prices are on-demand list prices and only
feed cost estimates; a stack overrides them with `pricing:` in its config.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping


@dataclass(frozen=True, slots=True)
class MigProfile:
    """One MIG geometry: `slices_per_gpu` instances of this profile fit on one GPU when the GPU is
    partitioned uniformly (the mig-parted `all-<profile>` layout)."""

    name: str
    slices_per_gpu: int
    memory_gb: int


@dataclass(frozen=True, slots=True)
class Accelerator:
    name: str
    model: str
    memory_gb: int
    form_factor: str  # sxm | pcie
    mig_profiles: Mapping[str, MigProfile] = field(default_factory=dict)

    @property
    def supports_mig(self) -> bool:
        return bool(self.mig_profiles)


def _mig(*profiles: tuple[str, int]) -> Mapping[str, MigProfile]:
    out = {}
    for name, count in profiles:
        mem = int(name.split(".")[1].removesuffix("gb"))
        out[name] = MigProfile(name=name, slices_per_gpu=count, memory_gb=mem)
    return MappingProxyType(out)


# MIG geometries: NVIDIA Multi-Instance GPU User Guide, "Supported MIG Profiles"
# (https://docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-mig-profiles.html): per GPU,
# the profile names and the "Number of Instances Available" column, which is the count here (the
# most instances of that one profile a GPU holds). The guide tabulates A100-SXM4-40GB and says
# A100-SXM4-80GB uses the same geometry with doubled memory names; H100/H200/B200 have their own
# sections (not re-read for this check). Verified (names and counts, 2026-08) against NVIDIA
# mig-parted's uniform layouts,
# github.com/NVIDIA/mig-parted deployments/systemd/config-default.yaml (`all-<profile>`: A100-40GB
# 1g.10gb = 4, 80GB parts 1g.10gb = 7, H200 and B200 blocks) and
# deployments/container/nvidia-mig-manager-example-hopper-blackwell.yaml. Media-extension (+me)
# variants are left out: at most one per GPU, same memory as the plain 1g profile.
ACCELERATORS: Mapping[str, Accelerator] = MappingProxyType(
    {
        a.name: a
        for a in (
            Accelerator(
                "h100-80gb", "NVIDIA H100 80GB HBM3", 80, "sxm",
                _mig(("1g.10gb", 7), ("1g.20gb", 4), ("2g.20gb", 3), ("3g.40gb", 2), ("4g.40gb", 1), ("7g.80gb", 1)),
            ),
            Accelerator(
                "h200-141gb", "NVIDIA H200 141GB HBM3e", 141, "sxm",
                _mig(("1g.18gb", 7), ("1g.35gb", 4), ("2g.35gb", 3), ("3g.71gb", 2), ("4g.71gb", 1), ("7g.141gb", 1)),
            ),
            Accelerator(
                "b200-180gb", "NVIDIA B200 180GB HBM3e", 180, "sxm",
                _mig(("1g.23gb", 7), ("1g.45gb", 4), ("2g.45gb", 3), ("3g.90gb", 2), ("4g.90gb", 1), ("7g.180gb", 1)),
            ),
            Accelerator(
                "a100-40gb", "NVIDIA A100 40GB", 40, "sxm",
                _mig(("1g.5gb", 7), ("1g.10gb", 4), ("2g.10gb", 3), ("3g.20gb", 2), ("4g.20gb", 1), ("7g.40gb", 1)),
            ),
            Accelerator(
                "a100-80gb", "NVIDIA A100 80GB", 80, "sxm",
                _mig(("1g.10gb", 7), ("1g.20gb", 4), ("2g.20gb", 3), ("3g.40gb", 2), ("4g.40gb", 1), ("7g.80gb", 1)),
            ),
            # Ada and Ampere GA102 parts have no MIG (MIG user guide, "Supported GPUs").
            Accelerator("l40s-48gb", "NVIDIA L40S", 48, "pcie"),
            Accelerator("l4-24gb", "NVIDIA L4", 24, "pcie"),
            Accelerator("a10g-24gb", "NVIDIA A10G", 24, "pcie"),
        )
    }
)


@dataclass(frozen=True, slots=True)
class InstanceType:
    name: str
    accelerator: str
    gpus: int
    vcpus: int
    memory_gib: int
    efa: bool
    network_cards: int
    interconnect: str  # nvswitch | pcie
    nvme_gb: int  # total local instance-store NVMe, 0 when none
    efa_only_interfaces: bool  # secondary network cards can be EFA-only (no IP) interfaces
    enis: int  # network interfaces on the default network card (ENI_LIMITS)
    ipv4_per_eni: int  # IPv4 addresses per network interface (ENI_LIMITS)

    @property
    def efa_interfaces(self) -> int:
        """EFA interfaces a launch template attaches: one per network card (AWS EC2 user guide,
        "Maximize network bandwidth on Amazon EC2 instances with multiple network cards",
        https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-acc-inst-types.html)."""
        return self.network_cards if self.efa else 0


# Network interfaces on the default network card and IPv4 addresses per interface, the two figures EKS sizes
# a node's max pods from (ENIs x (IPv4 per ENI - 1) + 2) and so its kube-reserved memory
# (plan/node_reserve.py). From awslabs/amazon-eks-ami at tag v20260724,
# nodeadm/internal/kubelet/instance-info.jsonl (`defaultMaxENIs`, `ipv4AddressesPerInterface`: the table
# nodeadm reads), checked against the max pods of templates/shared/runtime/eni-max-pods.txt at v20251120
# (the last tag that carries the file; every row below gives its figure, e.g. p5.48xlarge 2 x 49 + 2 = 100,
# p4d.24xlarge 15 x 49 + 2 = 737, g6.4xlarge 8 x 29 + 2 = 234). Multi-card types count card 0 only: the VPC
# CNI gives pods addresses from the default card (aws/karpenter-provider-aws v1.14.1,
# pkg/providers/instancetype/types.go ENILimitedPods), so p5.48xlarge has 2 here, not every card's.
# The EC2 reference is "IP addresses per network interface per instance type"
# (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/AvailableIpPerENI.html), not re-read here.
ENI_LIMITS: Mapping[str, tuple[int, int]] = MappingProxyType(
    {
        "p5.48xlarge": (2, 50), "p5e.48xlarge": (2, 50), "p5en.48xlarge": (4, 50), "p6-b200.48xlarge": (4, 50),
        "p4d.24xlarge": (15, 50), "p4de.24xlarge": (15, 50),
        "g6e.xlarge": (4, 15), "g6e.2xlarge": (4, 15), "g6e.4xlarge": (8, 30), "g6e.8xlarge": (8, 30),
        "g6e.12xlarge": (10, 30), "g6e.16xlarge": (15, 50), "g6e.24xlarge": (10, 50), "g6e.48xlarge": (10, 50),
        "g6.xlarge": (4, 15), "g6.2xlarge": (4, 15), "g6.4xlarge": (8, 30), "g6.8xlarge": (8, 30),
        "g6.12xlarge": (8, 30), "g6.16xlarge": (15, 50), "g6.24xlarge": (15, 50), "g6.48xlarge": (15, 50),
        "g5.xlarge": (4, 15), "g5.2xlarge": (4, 15), "g5.4xlarge": (8, 30), "g5.8xlarge": (8, 30),
        "g5.12xlarge": (15, 50), "g5.16xlarge": (8, 30), "g5.24xlarge": (15, 50), "g5.48xlarge": (7, 50),
    }
)


def _it(name, acc, gpus, vcpus, mem, efa, cards, ic, nvme, efa_only=False) -> InstanceType:
    enis, ipv4 = ENI_LIMITS[name]
    return InstanceType(name, acc, gpus, vcpus, mem, efa, cards, ic, nvme, efa_only, enis, ipv4)


# EC2 accelerated computing instances.
#   GPUs, vCPUs, memory (GiB), instance store, network cards: AWS "Amazon EC2 instance types -
#     Accelerated computing" specifications (https://docs.aws.amazon.com/ec2/latest/instancetypes/ac.html:
#     "Instance specifications", "Instance store specifications", "Network specifications").
#   EFA per size: EFA user guide "Supported instance types"
#     (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa.html#efa-instance-types) and
#     DescribeInstanceTypes NetworkInfo.EfaSupported; in G5/G6/G6e only 8xlarge and up support EFA.
#   Network cards = DescribeInstanceTypes NetworkInfo.MaximumNetworkCards, which equals
#     EfaInfo.MaximumEfaInterfaces for every EFA type below.
#   nvme_gb = DescribeInstanceTypes InstanceStorageInfo.TotalSizeInGB (decimal GB). For
#     P5/P5e/P5en/P6-B200 the API reports 8 x 3800 GB = 30400 while AWS product and Capacity Block
#     pricing pages say "8 x 3.84 TB"; the API figure is used (ac.html was not re-read for it).
#   efa_only: AWS What's New 2024-10-24, "AWS announces EFA update for scalability with AI/ML
#     applications" (https://aws.amazon.com/about-aws/whats-new/2024/10/
#     aws-efa-updates-scalability-ai-ml-applications/): EFA-only interfaces are available on all
#     EFA-supported instance types, as secondary interfaces only (never the primary, device index 0
#     on card 0). So it is True for every EFA type; on the single-card types there is no secondary
#     card and the flag changes nothing.
# The docs pages above are the reference; what was actually compared, row by row (2026-08), is
# DescribeInstanceTypes output as published in getmoto/moto
# moto/ec2/resources/instance_types.json (GPUs, vCPUs, MiB, disks, EfaSupported, MaximumNetworkCards)
# and aws/amazon-vpc-cni-k8s pkg/vpc/vpc_ip_resource_limit.go (network cards per type).
INSTANCE_TYPES: Mapping[str, InstanceType] = MappingProxyType(
    {
        t.name: t
        for t in (
            # P5 family: 8 GPUs on NVSwitch, 3200 Gbps EFA across 32 (p5/p5e) or 16 (p5en) cards.
            _it("p5.48xlarge", "h100-80gb", 8, 192, 2048, True, 32, "nvswitch", 8 * 3800, True),
            _it("p5e.48xlarge", "h200-141gb", 8, 192, 2048, True, 32, "nvswitch", 8 * 3800, True),
            _it("p5en.48xlarge", "h200-141gb", 8, 192, 2048, True, 16, "nvswitch", 8 * 3800, True),
            # P6-B200: 8 B200 on NVSwitch (NVLink 5), 3200 Gbps EFAv4 over 8 cards.
            _it("p6-b200.48xlarge", "b200-180gb", 8, 192, 2048, True, 8, "nvswitch", 8 * 3800, True),
            # P4d/P4de: 8 A100 on NVSwitch, 400 Gbps EFA over 4 cards.
            _it("p4d.24xlarge", "a100-40gb", 8, 96, 1152, True, 4, "nvswitch", 8 * 1000, True),
            _it("p4de.24xlarge", "a100-80gb", 8, 96, 1152, True, 4, "nvswitch", 8 * 1000, True),
            # G6e: L40S on PCIe; EFA from 8xlarge up; 2 cards on 24xlarge, 4 on 48xlarge.
            _it("g6e.xlarge", "l40s-48gb", 1, 4, 32, False, 1, "pcie", 250),
            _it("g6e.2xlarge", "l40s-48gb", 1, 8, 64, False, 1, "pcie", 450),
            _it("g6e.4xlarge", "l40s-48gb", 1, 16, 128, False, 1, "pcie", 600),
            _it("g6e.8xlarge", "l40s-48gb", 1, 32, 256, True, 1, "pcie", 900, True),
            _it("g6e.12xlarge", "l40s-48gb", 4, 48, 384, True, 1, "pcie", 3800, True),
            _it("g6e.16xlarge", "l40s-48gb", 1, 64, 512, True, 1, "pcie", 1900, True),
            _it("g6e.24xlarge", "l40s-48gb", 4, 96, 768, True, 2, "pcie", 3800, True),
            _it("g6e.48xlarge", "l40s-48gb", 8, 192, 1536, True, 4, "pcie", 7600, True),
            # G6: L4 on PCIe; EFA from 8xlarge up; one network card on every size.
            _it("g6.xlarge", "l4-24gb", 1, 4, 16, False, 1, "pcie", 250),
            _it("g6.2xlarge", "l4-24gb", 1, 8, 32, False, 1, "pcie", 450),
            _it("g6.4xlarge", "l4-24gb", 1, 16, 64, False, 1, "pcie", 600),
            _it("g6.8xlarge", "l4-24gb", 1, 32, 128, True, 1, "pcie", 900, True),
            _it("g6.12xlarge", "l4-24gb", 4, 48, 192, True, 1, "pcie", 3760, True),
            _it("g6.16xlarge", "l4-24gb", 1, 64, 256, True, 1, "pcie", 1880, True),
            _it("g6.24xlarge", "l4-24gb", 4, 96, 384, True, 1, "pcie", 3760, True),
            _it("g6.48xlarge", "l4-24gb", 8, 192, 768, True, 1, "pcie", 7520, True),
            # G5: A10G on PCIe; EFA from 8xlarge up; one network card on every size.
            _it("g5.xlarge", "a10g-24gb", 1, 4, 16, False, 1, "pcie", 250),
            _it("g5.2xlarge", "a10g-24gb", 1, 8, 32, False, 1, "pcie", 450),
            _it("g5.4xlarge", "a10g-24gb", 1, 16, 64, False, 1, "pcie", 600),
            _it("g5.8xlarge", "a10g-24gb", 1, 32, 128, True, 1, "pcie", 900, True),
            _it("g5.12xlarge", "a10g-24gb", 4, 48, 192, True, 1, "pcie", 3800, True),
            _it("g5.16xlarge", "a10g-24gb", 1, 64, 256, True, 1, "pcie", 1900, True),
            _it("g5.24xlarge", "a10g-24gb", 4, 96, 384, True, 1, "pcie", 3800, True),
            _it("g5.48xlarge", "a10g-24gb", 8, 192, 768, True, 1, "pcie", 7600, True),
        )
    }
)

# On-demand hourly list prices, USD, us-east-1 (US East (N. Virginia)), Linux, shared tenancy:
# AWS "Amazon EC2 On-Demand Pricing" (https://aws.amazon.com/ec2/pricing/on-demand/, the same
# figures as the Price List API). P4d/P4de/P5/P5en are the rates after AWS's June 2025 reduction
# of up to 45% on those families' On-Demand prices (p5.48xlarge 98.32 -> 55.04; the exact
# announcement and effective dates were not re-read here).
# Figures checked 2026-08, rounded to the cent (G sizes to 1/10 cent) from the list values
# p5en 63.296, p6-b200 113.9328, p4d 21.957642, p4de 27.44705, g6.xlarge 0.8048, g6e.2xlarge 2.24208.
# The live page could not be read from here: these were checked against published Price List
# extracts in public repositories (dstack `dstack offer` output for p5en in us-east-1, cost tables
# that agree to the fourth decimal for P4/P5/P6-B200/G5/G6/G6e), not against aws.amazon.com itself.
# p5e.48xlarge has no On-Demand list price (AWS sells it through EC2 Capacity Blocks and
# reservations); its entry is the p5en rate as a same-GPU proxy, not a published figure.
# p6-b200.48xlarge: 113.9328 was found quoted without a region and for us-east-2, not for
# us-east-1 specifically; us-east-1 is assumed equal (p5en lists 63.296 in both regions).
# Estimates only: a stack's `pricing:` map overrides any entry.
ON_DEMAND_USD_PER_HOUR: Mapping[str, float] = MappingProxyType(
    {
        "p5.48xlarge": 55.04,
        "p5e.48xlarge": 63.30,  # proxy: p5en rate, no On-Demand list price exists
        "p5en.48xlarge": 63.30,
        "p6-b200.48xlarge": 113.93,
        "p4d.24xlarge": 21.96,
        "p4de.24xlarge": 27.45,
        "g6e.xlarge": 1.861,
        "g6e.2xlarge": 2.242,
        "g6e.4xlarge": 3.004,
        "g6e.8xlarge": 4.529,
        "g6e.12xlarge": 10.493,
        "g6e.16xlarge": 7.577,
        "g6e.24xlarge": 15.066,
        "g6e.48xlarge": 30.131,
        "g6.xlarge": 0.805,
        "g6.2xlarge": 0.978,
        "g6.4xlarge": 1.323,
        "g6.8xlarge": 2.014,
        "g6.12xlarge": 4.602,
        "g6.16xlarge": 3.397,
        "g6.24xlarge": 6.675,
        "g6.48xlarge": 13.35,
        "g5.xlarge": 1.006,
        "g5.2xlarge": 1.212,
        "g5.4xlarge": 1.624,
        "g5.8xlarge": 2.448,
        "g5.12xlarge": 5.672,
        "g5.16xlarge": 4.096,
        "g5.24xlarge": 8.144,
        "g5.48xlarge": 16.288,
    }
)


# CPU instance types a system pool may use (cluster.systemPool.instanceType): x86 general purpose sizes,
# so the system pool runs the standard x86 EKS AMIs. Names as in AWS "Amazon EC2 instance types -
# General purpose" (https://docs.aws.amazon.com/ec2/latest/instancetypes/gp.html, "Instance
# specifications"); no vCPU or memory figure is used for them, so none is recorded here.
SYSTEM_INSTANCE_TYPES: frozenset[str] = frozenset(
    f"{family}.{size}"
    for family in ("m6i", "m7i", "m7a")
    for size in ("large", "xlarge", "2xlarge", "4xlarge")
)

# ENI_LIMITS of the general-purpose sizes the system pool and the simulated CPU nodes use, by size: the same
# for m6i, m7i and m7a (awslabs/amazon-eks-ami v20260724, nodeadm/internal/kubelet/instance-info.jsonl).
GENERAL_PURPOSE_ENI_LIMITS: Mapping[str, tuple[int, int]] = MappingProxyType(
    {"large": (3, 10), "xlarge": (4, 15), "2xlarge": (4, 15), "4xlarge": (8, 30), "8xlarge": (8, 30)}
)


def instance_types_for(accelerator: str) -> list[str]:
    return sorted(n for n, t in INSTANCE_TYPES.items() if t.accelerator == accelerator)


def units_per_gpu(accelerator: str, mode: str, profile: str | None, replicas: int | None) -> int | None:
    """Schedulable units one GPU gives under a sharing mode: 1, the MIG profile's slices or the time-slicing
    replicas; None where the catalog has no such profile (the spec rejects it; the policy pack reports it).

    The one computation of it: the plan (through pool_derivations) and the policy pack (from a pool's
    sharing label) both call this."""
    if mode == "mig":
        acc = ACCELERATORS.get(accelerator)
        mig = acc.mig_profiles.get(profile or "") if acc else None
        return mig.slices_per_gpu if mig else None
    if mode == "time-slicing":
        return None if replicas is None else int(replicas)
    return 1
