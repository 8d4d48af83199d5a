"""The network interfaces of an EFA pool's launch template: which card and device gets ENA or EFA."""

from __future__ import annotations

import pulumi
import pulumi_aws as aws

from gpu_platform.plan import PoolPlan

# EC2 launch template NetworkInterfaces[].InterfaceType values.
ENA = "interface"
EFA_WITH_ENA = "efa"
EFA_ONLY = "efa-only"


def efa_interface_layout(pool: PoolPlan) -> list[tuple[int, int, str]]:
    """(network card, device index, interface type) of every interface of an EFA pool's node.

    Follows the EC2 user guide, "Maximize network bandwidth on Amazon EC2 instances with multiple network
    cards" (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-acc-inst-types.html), as it reads
    now: the primary interface (card 0, device 0) is a plain ENA interface, because an EFA-only interface
    cannot be primary; card 0 gets an EFA-only interface at device 1; every further card an EFA-only
    interface at device 0. That is the page's P5/P5e and P6-B200 "use case 1" (all EFA bandwidth, one
    private IP per node): EFA-only interfaces take no subnet IPs. Each card carries exactly one EFA
    device, so a node has PoolPlan.efa_interfaces (= network cards) of them. An instance type without
    EFA-only support (none in the catalog today) keeps the page's earlier layout: EFA with ENA as the
    primary, EFA with ENA at device 1 of every further card."""
    cards = pool.efa_interfaces
    if cards == 0:
        return []
    if pool.efa_only_interfaces:
        return [(0, 0, ENA), (0, 1, EFA_ONLY), *((card, 0, EFA_ONLY) for card in range(1, cards))]
    return [(0, 0, EFA_WITH_ENA), *((card, 1, EFA_WITH_ENA) for card in range(1, cards))]


def efa_interfaces(pool: PoolPlan, security_group_id: pulumi.Input[str],
                   efa_security_group_id: pulumi.Input[str] | None = None) -> list[aws.ec2.LaunchTemplateNetworkInterfaceArgs] | None:
    """The launch template's interfaces for `efa_interface_layout`. Interfaces in a launch template must
    not name a subnet (EKS picks it), and carry the cluster security group, which EKS no longer adds once
    the template sets security groups (EKS user guide, "Customize managed nodes with launch templates" and
    "View Amazon EKS security group requirements"), and the cluster's EFA security group, whose rules allow
    all traffic to and from itself, both of which EFA needs (cluster.efa_security_group)."""
    layout = efa_interface_layout(pool)
    if not layout:
        return None
    groups = [security_group_id, *([efa_security_group_id] if efa_security_group_id is not None else [])]
    return [
        aws.ec2.LaunchTemplateNetworkInterfaceArgs(
            network_card_index=card,
            device_index=device,
            interface_type=kind,
            security_groups=groups,
            delete_on_termination="true",
        )
        for card, device, kind in layout
    ]
