"""An EFA pool the stack makes on EKS must name its availability zone (EFA traffic does not cross zones, so a
pool spread over zones would train across them); on an existing cluster the nodes come from elsewhere and no
zone is asked. World: the spec loaded from the prod and local stack files, in-process."""

from __future__ import annotations

import pytest

from gpu_platform.spec import SpecError, load_platform
from tests.conftest import platform_raw


def test_an_efa_pool_on_eks_without_a_zone_is_refused_at_its_zone() -> None:
    raw = platform_raw("prod")
    h200 = raw["pools"][1]  # h200-train: fabric efa, us-east-1b
    del h200["availabilityZone"]
    h200["capacity"] = {"type": "on-demand", "min": 0, "max": 8}  # no reservation: only the EFA rule asks for a zone
    with pytest.raises(SpecError) as err:
        load_platform(raw, "us-east-1")
    assert [(p.path, p.message) for p in err.value.problems] == [
        ("pools[1].availabilityZone", "EFA pools need a single availabilityZone (EFA traffic does not cross zones)")]


def test_an_efa_pool_on_an_existing_cluster_needs_no_zone() -> None:
    raw = platform_raw("local")  # provider: existing
    raw["pools"][0]["fabric"] = "efa"  # train: p5.48xlarge, no availabilityZone
    assert load_platform(raw).pools[0].fabric == "efa"
