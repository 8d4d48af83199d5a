"""The network policy every team namespace has to let KubeRay's operator reach its Ray heads through the
default deny, literally: what the unit tests expect the components to render and the live tests expect the
API server to hold after `pulumi up`."""

from __future__ import annotations

from typing import Any

# KubeRay facts (ray-project/kuberay): the operator pod carries app.kubernetes.io/component=kuberay-operator
# (helm-chart/kuberay-operator/templates/deployment.yaml, ray-operator/config/manager/manager.yaml); the platform
# installs it in kuberay-system (upstream's kustomization would use `default`); head pods carry
# ray.io/node-type=head; the dashboard listens on 8265 and Ray Client on 10001 (ray-operator/controllers/ray/
# utils/constant.go). The RayJob controller polls the job on the head's dashboard (rayjob_controller.go).
KUBERAY_ALLOW: dict[str, Any] = {
    "podSelector": {"matchLabels": {"ray.io/node-type": "head"}},
    "policyTypes": ["Ingress"],
    "ingress": [{
        "from": [{
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kuberay-system"}},
            "podSelector": {"matchLabels": {"app.kubernetes.io/component": "kuberay-operator"}},
        }],
        "ports": [{"protocol": "TCP", "port": 8265}, {"protocol": "TCP", "port": 10001}],
    }],
}
