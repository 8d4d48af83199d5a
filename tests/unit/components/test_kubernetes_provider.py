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
    user = json.loads(prod.inputs["kubeconfig"])["users"][0]["user"]["exec"]
    assert user["command"] == "aws" and user["args"][-4:] == ["--cluster-name", "ml-prod", "--output", "json"]
