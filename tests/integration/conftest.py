"""Real components only: the Pulumi CLI, our Python language host, the Kubernetes provider and the live
local cluster (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, Kueue, KWOK), all from the
tool cache (`scripts/toolchain`). Under CI a missing tool fails the test; elsewhere it skips.

Each session gets its own file backend, its own local cluster of the `local` stack (state directory and
ports apart from a user's `make up` cluster) and stops that cluster at the end.
"""

from __future__ import annotations

import os
from typing import Iterator

import pytest

from tests.realtools import CLUSTER_TOOLS, ENGINE_TOOLS, Cluster, Engine, new_engine, require, running_cluster

# Apart from the defaults of `scripts/local-cluster` (16443/23790), so a user's cluster keeps running; every
# test, benchmark and simulator cluster port is below the ephemeral range (32768-60999), where an outgoing
# connection of any process could take it between the free-port check and the bind.
TEST_APISERVER_PORT = os.environ.get("GPU_PLATFORM_TEST_APISERVER_PORT", "26443")
TEST_ETCD_PORT = os.environ.get("GPU_PLATFORM_TEST_ETCD_PORT", "24790")


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    require(CLUSTER_TOOLS)
    with running_cluster(tmp_path_factory.mktemp("cluster"), TEST_APISERVER_PORT, TEST_ETCD_PORT, "local") as c:
        yield c


@pytest.fixture(scope="session")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Engine:
    require(ENGINE_TOOLS)
    return new_engine(tmp_path_factory.mktemp("backend"))
