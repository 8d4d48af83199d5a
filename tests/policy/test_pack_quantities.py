"""The pack reads Kubernetes quantities as the API server does (kubernetes.io/docs/reference/kubernetes-api/
common-definitions/quantity/): decimal and binary suffixes, exponents, and nothing else. A rule that compares a
quota with a pool's capacity reads both through this. World: pure function."""

from __future__ import annotations

from decimal import Decimal

from policies.gpu_policies.objects.values import parse_quantity, whole_units


def test_every_suffix_has_its_factor() -> None:
    got = {s: parse_quantity(f"3{s}") for s in ("", "n", "u", "m", "k", "M", "G", "T", "P", "E",
                                                  "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")}
    assert got == {
        "": Decimal(3), "n": Decimal("3e-9"), "u": Decimal("3e-6"), "m": Decimal("0.003"), "k": Decimal(3000),
        "M": Decimal(3_000_000), "G": Decimal(3_000_000_000), "T": Decimal(3 * 10**12), "P": Decimal(3 * 10**15),
        "E": Decimal(3 * 10**18), "Ki": Decimal(3072), "Mi": Decimal(3_145_728), "Gi": Decimal(3_221_225_472),
        "Ti": Decimal(3_298_534_883_328), "Pi": Decimal(3_377_699_720_527_872), "Ei": Decimal(3_458_764_513_820_540_928),
    }


def test_exponents_numbers_and_what_is_no_quantity() -> None:
    assert [parse_quantity(v) for v in ("1e3", "1E-3", "1.5", ".5", "+2", 96, 0.5)] == [
        Decimal(1000), Decimal("0.001"), Decimal("1.5"), Decimal("0.5"), Decimal(2), Decimal(96), Decimal("0.5")]
    assert [parse_quantity(v) for v in (True, None, "1 Gi", "1gi", "1KB", "", "e3")] == [None] * 7
    assert [whole_units(v) for v in ("8", "2k", "1500m", "1.0", "7Gi")] == [8, 2000, None, 1, 7 * 2**30]
