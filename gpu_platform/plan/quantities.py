"""CPU and memory as the canonical Kubernetes quantity strings the API server stores and reads back."""

from __future__ import annotations


def cpu_quantity(millis: int) -> str:
    """CPU in the canonical form the API server stores (4000m -> "4", 95224m stays), so what the stack sends
    is what it reads back: a non-canonical quantity in a ClusterQueue is a diff on every preview."""
    if millis % 1000:
        return f"{millis}m"
    cores = millis // 1000
    return f"{cores // 1000}k" if cores and cores % 1000 == 0 else str(cores)


def memory_quantity(mib: int) -> str:
    """Memory in canonical binary form (16384Mi -> "16Gi"): the largest power-of-1024 suffix that keeps it whole."""
    for suffix, factor in (("Ti", 1024 * 1024), ("Gi", 1024)):
        if mib and mib % factor == 0:
            return f"{mib // factor}{suffix}"
    return f"{mib}Mi"
