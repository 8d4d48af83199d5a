"""Step 3: what the all-reduce should reach on the pool's instance type (a published nccl-tests bus bandwidth,
or report only and why), and the step's result from the pods' `allreduce` events."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from ..plan import PoolPlan
from .results import Figure, StepResult

# Published nccl-tests all_reduce_perf results (busbw, GB/s = 10^9 bytes/s: NVIDIA/nccl-tests src/all_reduce.cu
# AllReduceGetBw) for two nodes of 8 GPUs over EFA, at a 2 GiB message, from AWS's own benchmark page:
# aws-samples/awsome-distributed-training micro-benchmarks/nccl-tests/README.md, "Results": 2x p4de.24xlarge,
# 2147483648 B, busbw 78.33 (out-of-place); 2x p5.48xlarge, 2147483648 B, busbw 443.72 (the same run reaches
# 487.09 at 16 GiB). No published figure was found for p4d.24xlarge, p5e, p5en, p6-b200 or the G families, so
# those are reported only. Bus bandwidth is comparable across node counts by design (nccl-tests
# doc/PERFORMANCE.md: the 2(n-1)/n correction "should be independent of the number of ranks").
PUBLISHED_ALLREDUCE_BUSBW: Mapping[str, tuple[float, int, int]] = {
    # instance type: (busbw GB/s, message bytes, nodes)
    "p4de.24xlarge": (78.33, 2**31, 2),
    "p5.48xlarge": (443.72, 2**31, 2),
}
PUBLISHED_ALLREDUCE_SOURCE = "aws-samples/awsome-distributed-training micro-benchmarks/nccl-tests/README.md"
# Our threshold, not a published one: a run within 20% of AWS's sample passes; below it the fabric (EFA devices,
# GPUDirect RDMA, the placement group) is suspect.
BUSBW_PASS_FRACTION = 0.8


@dataclass(frozen=True, slots=True)
class BusbwExpectation:
    instance_type: str
    # None: report only (`reason` says why).
    min_gb_per_s: float | None
    published_gb_per_s: float | None = None
    message_bytes: int | None = None
    reason: str | None = None

    def text(self) -> str:
        if self.min_gb_per_s is None:
            return f"report only: {self.reason}"
        return (f"busbw >= {self.min_gb_per_s:.1f} GB/s ({BUSBW_PASS_FRACTION:.0%} of {self.published_gb_per_s} GB/s, "
                f"2 x {self.instance_type} at {self.message_bytes} B, {PUBLISHED_ALLREDUCE_SOURCE})")


def busbw_expectation(pool: PoolPlan) -> BusbwExpectation:
    """What step 3's bus bandwidth must reach on `pool`: a threshold on EFA pools whose instance type has a
    published figure, otherwise report only, with the reason."""
    if not pool.efa_interfaces:
        return BusbwExpectation(pool.instance_type, None, reason=(
            f"pool {pool.name!r} has no EFA ({pool.instance_type} as this stack runs it), so the all-reduce goes over "
            "TCP, for which no figure is published"))
    published = PUBLISHED_ALLREDUCE_BUSBW.get(pool.instance_type)
    if published is None:
        return BusbwExpectation(pool.instance_type, None, reason=(
            f"no published nccl-tests all_reduce figure for {pool.instance_type} (published: "
            f"{', '.join(sorted(PUBLISHED_ALLREDUCE_BUSBW))})"))
    busbw, message, _ = published
    return BusbwExpectation(pool.instance_type, round(busbw * BUSBW_PASS_FRACTION, 2), busbw, message)


def _number(event: Mapping[str, object], key: str) -> float | None:
    value = event.get(key)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def evaluate_allreduce(events: Sequence[Mapping[str, object]], pods: int, expectation: BusbwExpectation) -> StepResult:
    """Step 3 from the pods' `allreduce` events (one per rank): every rank reduced the right sum, and the slowest
    rank's bus bandwidth meets the expectation where there is one."""
    if pods < 2:
        return StepResult.skipped(3, f"a job of {pods} pod has no all-reduce across pods: pass --nodes 2 or more")
    ranks = {e.get("rank"): e for e in events if e.get("event") == "allreduce"}
    if len(ranks) < pods:
        return StepResult.failed(3, f"an allreduce event from each of {pods} pods",
                                 f"{len(ranks)} (ranks {sorted(str(r) for r in ranks)})")
    wrong = sorted(str(r) for r, e in ranks.items() if e.get("correct") is not True)
    if wrong:
        return StepResult.failed(3, "the all-reduce's sum on every rank", f"a wrong sum on rank(s) {', '.join(wrong)}")
    busbw = min(_number(e, "busbw_gb_per_s") or 0.0 for e in ranks.values())
    algbw = min(_number(e, "algbw_gb_per_s") or 0.0 for e in ranks.values())
    first = next(iter(ranks.values()))
    figures = (Figure("busbw", busbw, "GB/s"), Figure("algbw", algbw, "GB/s"),
               Figure("message", int(_number(first, "bytes") or 0), "B"), Figure("ranks", len(ranks)),
               Figure("expected_busbw", expectation.min_gb_per_s, "GB/s"))
    if busbw <= 0:
        return StepResult.failed(3, "a bus bandwidth above 0", f"{busbw} GB/s", *figures)
    if expectation.min_gb_per_s is not None and busbw < expectation.min_gb_per_s:
        return StepResult.failed(3, expectation.text(), f"busbw {busbw:.2f} GB/s", *figures)
    return StepResult.passed(3, *figures, expected=expectation.text())
