"""The live local cluster: its driver and what its processes are given.

`scripts/local-cluster` is the entry point of the driver (`cli.py`): ports (`ports.py`), state and settings
(`state.py`), PKI and kubeconfigs (`pki.py`), the processes' pid files, readiness and stop (`supervise.py`), the
components in start order (`control_plane.py`, `addon_processes.py`, `realnode/`), the whole start, stop and
restart with what a failed or interrupted start undoes (`lifecycle.py`). The rest of the package decides what the
processes are given, from the same plan and the same functions the stack uses, so the local cluster behaves as
the stack's real one would: simulated nodes from the pools, Kueue's Configuration from gpu_platform.kueue_config,
Kueue's CRDs, RBAC and webhooks rendered from its real Helm chart (`python -m localcluster --help` lists those
files' commands, which the driver runs in-process).
"""
