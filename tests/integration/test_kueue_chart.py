"""The Kueue chart itself (charts/kueue of the sigs.k8s.io/kueue module at the release the stacks pin),
rendered by Helm with exactly the values each stack passes, and its objects server-side dry-run against
the local API server. A values key the chart ignores, a template error or an object the API server would
refuse fails here, before a real cluster sees it.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_platform import conventions as cv
from gpu_platform.kueue_config import chart_values
from tests.chart_values import helm_template, ignored_values
from tests.conftest import ROOT, plan_of
from tests.realtools import BIN, Cluster, require

STACKS = ("local", "staging", "prod")


@pytest.fixture(scope="module")
def chart() -> Path:
    require(("helm", "kueue"))
    out = subprocess.run([str(ROOT / "scripts" / "tools" / "kueue.sh"), "--chart"], capture_output=True, text=True,
                         check=True)
    return Path(out.stdout.strip())


def render(chart: Path, values: dict[str, Any]) -> str:
    return helm_template(BIN / "helm", cv.KUEUE_RELEASE_NAME, chart, cv.KUEUE_NAMESPACE, values)


def changed(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, str) and value in ("IfNotPresent", "Always", "Never"):
        return "Always" if value != "Always" else "Never"
    if isinstance(value, str) and "\n" in value:
        # A YAML document (the controller Configuration): change a setting, not just the text.
        doc = yaml.safe_load(value)
        return yaml.safe_dump({**doc, "clientConnection": {"qps": 1, "burst": 1}}, sort_keys=False)
    if isinstance(value, str):
        return value + "-changed"
    raise AssertionError(f"no mutation for {value!r}")


@pytest.mark.parametrize("stack", STACKS)
def test_every_value_the_stack_passes_changes_what_the_chart_renders(chart: Path, stack: str) -> None:
    ignored = ignored_values(chart_values(plan_of(stack)), lambda v: render(chart, v), changed)
    assert ignored == [], f"values the Kueue chart ignores: {ignored}"


@pytest.mark.parametrize("stack", STACKS)
def test_every_rendered_object_passes_a_server_side_dry_run(chart: Path, cluster: Cluster, stack: str) -> None:
    docs = [d for d in yaml.safe_load_all(render(chart, chart_values(plan_of(stack)))) if d]
    kinds = {d["kind"] for d in docs}
    assert {"Deployment", "CustomResourceDefinition", "MutatingWebhookConfiguration",
            "ValidatingWebhookConfiguration", "ClusterRole"} <= kinds
    # The live cluster already runs Kueue from this chart (its webhooks pointed at loopback): what exists
    # is dry-run replaced, as an install over it would leave it; the rest dry-run created.
    names = cluster.kubectl("get", "-f", "-", "-o", "name", "--ignore-not-found",
                            input=json.dumps({"apiVersion": "v1", "kind": "List", "items": docs})).stdout.split()
    existing = {(n.split("/", 1)[0].split(".", 1)[0], n.split("/", 1)[1]) for n in names}
    key = lambda d: (d["kind"].lower(), d["metadata"]["name"])  # noqa: E731
    done = 0
    for verb, items in (("replace", [d for d in docs if key(d) in existing]),
                        ("create", [d for d in docs if key(d) not in existing])):
        if not items:
            continue
        out = cluster.kubectl(verb, "--dry-run=server", "-f", "-", check=False,
                              input=json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
        assert out.returncode == 0, f"{verb}: {out.stderr[-3000:]}"
        # The controller's pod meets the restricted Pod Security profile the platform gives its namespace.
        assert "would violate PodSecurity" not in out.stderr, out.stderr
        done += len([line for line in out.stdout.splitlines() if line.strip()])
    assert done == len(docs)
