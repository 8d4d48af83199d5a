"""The vocabulary of the models: the value sets (Literals), the field validators and the strict base model."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from .. import conventions as cv, images


Environment = Literal["local", "dev", "staging", "prod"]
Provider = Literal["eks", "existing"]
Fabric = Literal["efa", "ethernet"]
Workload = Literal["training", "inference", "batch", "interactive"]
SharingMode = Literal["full", "mig", "time-slicing"]
CapacityType = Literal["on-demand", "spot", "capacity-reservation", "capacity-block"]
PodSecurity = Literal["baseline", "restricted"]
AmiType = Literal["AL2023_x86_64_NVIDIA", "BOTTLEROCKET_x86_64_NVIDIA"]
SystemAmiType = Literal["AL2023_x86_64_STANDARD", "BOTTLEROCKET_x86_64"]
Provisioner = Literal["managed-node-group", "karpenter"]
KarpenterCapacityType = Literal["on-demand", "spot", "reserved"]


def dns_label(value: str) -> str:
    if len(value) > cv.MAX_LABEL_LENGTH or not cv.DNS1123_LABEL.match(value):
        raise ValueError(
            f"{value!r} is not a DNS-1123 label: use lowercase letters, digits and '-', "
            f"start and end with a letter or digit, at most {cv.MAX_LABEL_LENGTH} characters"
        )
    return value


def label_value(value: str) -> str:
    if len(value) > cv.MAX_LABEL_LENGTH or not cv.LABEL_VALUE.match(value):
        raise ValueError(
            f"{value!r} is not a valid label value: at most {cv.MAX_LABEL_LENGTH} characters of "
            "letters, digits, '-', '_' and '.', starting and ending with a letter or digit"
        )
    return value


def exact_version(value: str) -> str:
    """A chart version that names one release: `latest` or a range would deploy whatever the repository
    serves on the day of the next `pulumi up`, so two deploys of one commit could differ."""
    if not cv.EXACT_VERSION.match(value):
        raise ValueError(
            f"{value!r} is not an exact chart version: write {cv.EXACT_VERSION_FORM}; "
            "'latest', ranges and wildcards are rejected"
        )
    return value


class Strict(BaseModel):
    """Unknown fields are errors (a typo must not silently become a default); fields are camelCase."""

    model_config = ConfigDict(extra="forbid", populate_by_name=False, frozen=True, strict=False)


def registries(value: list[str]) -> list[str]:
    """An image registry allowlist: every entry a registry host (and optional path) as Docker reads it."""
    for entry in value:
        problem = images.registry_problem(entry)
        if problem:
            raise ValueError(problem)
    return value


def role_arn(v: str) -> str:
    if not cv.IAM_ROLE_ARN.match(v):
        raise ValueError(
            f"{v!r} is not an IAM role ARN: write arn:aws:iam::<12-digit account>:role/<path/name> "
            "(arn:aws-cn / arn:aws-us-gov in those partitions); IAM users and STS session ARNs are not accepted"
        )
    return v
