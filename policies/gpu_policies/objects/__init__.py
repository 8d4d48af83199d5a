"""Reading resource properties the way the policy engine hands them over: the rules' vocabulary (`o.<name>`).

The analyzer passes props as read-only mappings (pulumi_policy's unknown-checking proxies: `Mapping` and
`Sequence`, never `dict` or `list`), with every number as a float (protobuf), and raises
`UnknownValueError` when a rule touches a value that is unknown during preview. Every helper here uses only
the `Mapping`/`Sequence` protocols and lets that exception through, so a rule can never mistake an unknown
for an absent value: the rule framework turns it into a violation (fail closed).

One module per concern: values (mappings, text, numbers, quantities), kinds (type tokens, Kubernetes
kinds), metadata (labels, annotations, selectors), taints, pods (pod specs in any workload) and pools (a
pool read back from its node group or NodePool). This package re-exports them for the rules.
"""

from __future__ import annotations

from .values import EMPTY, as_int, is_true, known_or_none, mapping, parse_quantity, sequence, text, whole_units
from .kinds import (
    AWS_GPU_TYPES, HELM_CHART_V4, HELM_RELEASE, HELM_TYPES, KUEUE_GROUP, KubeKind, LAUNCH_TEMPLATE, NODE_GROUP,
    PLACEMENT_GROUP, is_kind, kube_kind,
)
from .metadata import (
    annotations, labels, metadata, object_name, object_namespace, selector_is_empty, selector_matches,
)
from .taints import TaintRef, gpu_taint, normalize_effect, taints_of, tolerated, tolerates, workload_taint
from .pods import NO_POD_KINDS, PodSpec, gpu_resources, may_hold_pods, pod_specs
from .pools import (
    KARPENTER_GROUP, PoolNodes, is_node_class, is_node_pool, node_pool_limits, node_pool_template,
    pool_max_nodes, pool_nodes, provides_pool_nodes, resource_name_for_sharing, units_per_gpu,
)
