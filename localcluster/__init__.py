"""The live local cluster's data: what `scripts/local-cluster` applies and the configuration its processes read.

`scripts/local-cluster` runs the processes (etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
Kueue, KWOK); this package decides what they are given, from the same plan and the same functions the
stack uses, so the local cluster behaves as the stack's real one would: simulated nodes from the pools,
Kueue's Configuration from gpu_platform.kueue_config, Kueue's CRDs, RBAC and webhooks rendered from its
real Helm chart. `python -m localcluster --help` lists the commands the script calls.
"""
