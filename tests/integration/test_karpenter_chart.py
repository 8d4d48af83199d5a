"""The Karpenter controller chart itself (charts/karpenter of github.com/aws/karpenter-provider-aws v1.15.2, the
release the stacks pin), rendered by Helm with exactly the values the staging-karpenter stack passes: every
value changes what the chart renders, the controller lands on the system pool and tolerates no taint, and
every object passes a server-side dry run on the live local cluster.
"""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_platform import conventions as cv
from tests.chart_values import helm_template, ignored_values
from tests.conftest import KARPENTER_STACK, ROOT, plan_of, rendered
from tests.realtools import BIN, Cluster, require


@pytest.fixture(scope="module")
def chart() -> Path:
    require(("helm",))
    out = subprocess.run([str(ROOT / "scripts" / "tools" / "karpenter.sh"), "--chart"], capture_output=True,
                         text=True, check=True)
    return Path(out.stdout.strip())


def values() -> dict[str, Any]:
    (r,) = [r for r in rendered(KARPENTER_STACK).by_type("kubernetes:helm.sh/v3:Release")
            if r.inputs["name"] == cv.KARPENTER_RELEASE_NAME]
    return copy.deepcopy(r.inputs["values"])


def render(chart: Path, vals: dict[str, Any]) -> str:
    return helm_template(BIN / "helm", cv.KARPENTER_RELEASE_NAME, chart, cv.KARPENTER_NAMESPACE, vals)


def changed(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, list):
        return [*value, {"key": "example.com/changed", "operator": "Exists"}]
    if isinstance(value, str):
        return value + "-changed"
    raise AssertionError(f"no mutation for {value!r}")


def deployment(text: str) -> dict[str, Any]:
    (d,) = [d for d in yaml.safe_load_all(text) if d and d["kind"] == "Deployment"]
    return d


def test_every_value_the_stack_passes_changes_what_the_chart_renders(chart: Path) -> None:
    ignored = ignored_values(values(), lambda v: render(chart, v), changed)
    assert ignored == [], f"values the Karpenter chart ignores: {ignored}"


def test_the_controller_runs_on_the_system_pool_with_the_stacks_settings(chart: Path) -> None:
    plan = plan_of(KARPENTER_STACK)
    pod = deployment(render(chart, values()))["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"kubernetes.io/os": "linux", **plan.cluster.system_pool.labels}
    assert "tolerations" not in pod
    assert pod["serviceAccountName"] == cv.KARPENTER_SERVICE_ACCOUNT
    env = {e["name"]: e.get("value") for e in pod["containers"][0]["env"]}
    assert env["CLUSTER_NAME"] == plan.cluster.name
    assert env["INTERRUPTION_QUEUE"] == plan.karpenter.queue
    affinity = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert {"key": cv.KARPENTER_NODEPOOL_LABEL, "operator": "DoesNotExist"} in affinity["nodeSelectorTerms"][0]["matchExpressions"]


def test_every_rendered_object_passes_a_server_side_dry_run(chart: Path, cluster: Cluster) -> None:
    docs = [d for d in yaml.safe_load_all(render(chart, values())) if d]
    assert {"Deployment", "ServiceAccount", "ClusterRole", "PodDisruptionBudget"} <= {d["kind"] for d in docs}
    out = cluster.kubectl("create", "--dry-run=server", "-o", "name", "-f", "-", check=False,
                          input=json.dumps({"apiVersion": "v1", "kind": "List", "items": docs}))
    assert out.returncode == 0, out.stderr[-3000:]
    assert len(out.stdout.split()) == len(docs)
