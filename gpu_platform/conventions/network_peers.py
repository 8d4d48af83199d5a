"""The peers and ports the tenant NetworkPolicies open under their default deny: DNS, KubeRay's operator,
the EKS Pod Identity agent, FSx for Lustre, HTTPS."""

from __future__ import annotations

from collections.abc import Iterable

from .labels import COMPONENT
from .namespaces import KUBERAY_NAMESPACE


# ==== Peers and ports the tenant NetworkPolicies open =======================================================
# CoreDNS pods carry k8s-app=kube-dns on EKS and kubeadm clusters (the EKS coredns add-on keeps the label).
DNS_POD_LABELS: dict[str, str] = {"k8s-app": "kube-dns"}
DNS_PORT = 53
# KubeRay's operator reaches every Ray head from its own namespace: the RayJob controller submits and polls
# the job on the head service's dashboard port (ray-project/kuberay ray-operator v1.5.0 controllers/ray/
# rayjob_controller.go: FetchHeadServiceURL(..., DashboardPortName), then GetJobInfo; the RayService
# controller likewise). At v1.5.0 the operator dials no other head port (not GCS, 6379: it reaches GCS health
# only through the dashboard's api/gcs_healthz, controllers/ray/utils/constant.go RayDashboardGCSHealthPath) and
# makes no NetworkPolicy of its own (the networkpolicy_controller.go of later releases, which leaves "Operator
# access ... intentionally omitted ... platforms that need it should inject it", is not in v1.5.0). So the
# tenant default deny must open that path: from pods labelled app.kubernetes.io/component=kuberay-operator
# (its Helm chart, helm-chart/kuberay-operator/templates/deployment.yaml with componentOverride
# kuberay-operator, and its kustomization, ray-operator/config/manager/manager.yaml) in the operator's
# namespace, matched by kubernetes.io/metadata.name so no pod label can forge it, to pods labelled
# ray.io/node-type=head, on the dashboard and Ray Client ports (ray-operator/controllers/ray/utils/constant.go:
# DefaultDashboardPort 8265, DefaultClientPort 10001). The platform installs the operator in a namespace of
# its own (WORKLOAD_CONTROLLER_NAMESPACES); it is reserved, so no team can own it and pass a pod off as the
# operator. (Upstream's kustomization installs into `default`: ray-operator/config/default/kustomization.yaml.)
KUBERAY_API_GROUP = "ray.io"
KUBERAY_OPERATOR_NAMESPACE = KUBERAY_NAMESPACE
KUBERAY_OPERATOR_POD_LABELS: dict[str, str] = {COMPONENT: "kuberay-operator"}
RAY_NODE_TYPE_LABEL = f"{KUBERAY_API_GROUP}/node-type"
RAY_HEAD_POD_LABELS: dict[str, str] = {RAY_NODE_TYPE_LABEL: "head"}
RAY_DASHBOARD_PORT = 8265
RAY_CLIENT_PORT = 10001


def uses_kuberay(integrations: Iterable[str]) -> bool:
    """Whether any enabled Kueue integration is a KubeRay kind (ray.io/rayjob, ray.io/raycluster,
    ray.io/rayservice: Kueue names its frameworks <API group>/<kind>), so KubeRay's operator must reach heads."""
    return any(name.split("/", 1)[0] == KUBERAY_API_GROUP for name in integrations)


# The EKS Pod Identity agent, on every node's host network: SDKs in pods fetch their credentials from it
# (EKS user guide, pod-id-how-it-works.html / pod-identities.html considerations: 169.254.170.23 and
# [fd00:ec2::23], port 80), so a pod under the default deny needs an egress rule to it.
POD_IDENTITY_AGENT_CIDRS = ("169.254.170.23/32", "fd00:ec2::23/128")
POD_IDENTITY_AGENT_PORT = 80
# FSx for Lustre's LNET ports (FSx for Lustre user guide, limit-access-security-groups.html and
# cannot-create-fs.html: "allow inbound traffic on ports 988 and 1018-1023").
LUSTRE_PORT_RANGES = ((988, 988), (1018, 1023))
HTTPS_PORT = 443
