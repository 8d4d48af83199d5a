"""The stack's Kubernetes provider: server-side apply, and a client rate limit high enough never to pace a
1000-object `up` (qps 500, burst 1000; the client's default 5 qps / burst 10 paced every call, see
components/platform.py and docs/performance.md). World: the local and prod stacks rendered under mocks (the
shared renders)."""

from __future__ import annotations

import json

from tests.conftest import rendered


def test_the_provider_applies_server_side_with_a_client_limit_of_500_qps_and_1000_burst() -> None:
    for stack in ("local", "prod"):
        (provider,) = [x for x in rendered(stack).resources if x.type == "pulumi:providers:kubernetes"]
        assert provider.inputs["enableServerSideApply"] == "true", stack
        assert json.loads(provider.inputs["kubeClientSettings"]) == {"qps": 500.0, "burst": 1000}, stack
    # local (an existing cluster) reaches it through the ambient kubeconfig; prod (EKS) through `aws eks get-token`
    # for its own cluster name
    assert "kubeconfig" not in [x for x in rendered("local").resources if x.type == "pulumi:providers:kubernetes"][0].inputs
    (prod,) = [x for x in rendered("prod").resources if x.type == "pulumi:providers:kubernetes"]
    # the mocks' EKS answer: endpoint https://example.eks.amazonaws.com, CA data "Q0E="
    assert json.loads(prod.inputs["kubeconfig"]) == {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "ml-prod", "cluster": {"server": "https://example.eks.amazonaws.com",
                                                     "certificate-authority-data": "Q0E="}}],
        "contexts": [{"name": "ml-prod", "context": {"cluster": "ml-prod", "user": "ml-prod"}}],
        "current-context": "ml-prod",
        "users": [{"name": "ml-prod", "user": {"exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1", "command": "aws",
            "args": ["--region", "us-east-1", "eks", "get-token", "--cluster-name", "ml-prod", "--output", "json"],
            "interactiveMode": "Never"}}}],
    }
