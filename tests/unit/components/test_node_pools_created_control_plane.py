"""The EKS control plane a stack creates (cluster.create: true), whole: its version, its audit logs, access
entries as its only way in (authenticationMode API: the teams' and admins' access entries are how anyone gets
in, no aws-auth ConfigMap), both endpoints and the stack's subnets. World: staging with cluster.create true
rendered under mocks (tests/unit/components/stack_variants.py's switched staging). It imports the
variant's declaration so that tests/conftest.py runs it with the variant's other readers, once the worker has
rendered it (a module that only called variant() ran early and waited ~25 s for the render)."""

from __future__ import annotations

from tests.unit.components.stack_variants import switched_staging, variant  # noqa: F401 (read: runs with its readers)


def test_the_created_control_plane_takes_access_entries_only_and_logs_audit() -> None:
    r, _ = variant()
    (cluster,) = r.by_type("aws:eks/cluster:Cluster")
    assert (cluster.name, cluster.parent) == ("np-cluster", "node-pools")
    assert {k: v for k, v in cluster.inputs.items() if k != "roleArn"} == {
        "name": "ml-staging",
        "version": "1.33",
        "enabledClusterLogTypes": ["audit", "authenticator"],
        "accessConfig": {"authenticationMode": "API", "bootstrapClusterCreatorAdminPermissions": True},
        "vpcConfig": {"endpointPublicAccess": True, "endpointPrivateAccess": True,
                      "subnetIds": ["subnet-0staging1a", "subnet-0staging1b"]},
        "tags": {"gpu-platform.io/environment": "staging", "gpu-platform.io/cluster": "ml-staging",
                 "gpu-platform.io/platform": "gpu-platform"},
    }
