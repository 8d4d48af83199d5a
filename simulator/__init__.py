"""What-if: replay a multi-team workload trace through the live local platform and report what it did.

A trace (a file, or a deterministic synthetic one) is replayed as real Kueue-managed Jobs on a local cluster
whose simulated nodes are the stack's pools at `capacity.max`, with the stack's Kubernetes layer deployed by
the real engine: the real Kueue decides admission, borrowing, preemption and fair sharing, KWOK runs each
pod for its job's duration (time compressed by `speed`). `python -m platform_cli simulate` is the entry
point; docs in the README, "What-if simulation".
"""
