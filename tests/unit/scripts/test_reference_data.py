"""The reference data the tests read (tests/reference_data.py) is what scripts/tools/reference.sh puts in the
tool cache: the same layout as ../shared, fetched from the pinned releases, ../shared only as the offline
fallback, and a missing part named with the variables that supply it.

The tool's runs here are offline and hermetic (a temporary cache, GOPROXY=off with an empty module cache,
a stand-in helm), so they cost milliseconds; only the first test reads the real cache, warm after
`scripts/toolchain`.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from components.gpu_operator import CHART_REPO
from gpu_platform.spec.addons import AddonGpuOperator, AddonKarpenter, AddonKueue
from localcluster import toolcache
from tests import reference_data

ROOT = Path(__file__).resolve().parents[3]
TOOL = ROOT / "scripts" / "tools" / "reference.sh"

# What the tests and the local cluster read, by release: the layout of ../shared.
KUEUE = [f"kueue.x-k8s.io_{n}.yaml" for n in (
    "admissionchecks", "clusterqueues", "cohorts", "localqueues", "multikueueclusters", "multikueueconfigs",
    "provisioningrequestconfigs", "resourceflavors", "topologies", "workloadpriorityclasses", "workloads")]
EXPECTED = sorted(
    [f"crds/kueue-v0.19.2/{n}" for n in KUEUE]
    + [f"crds/karpenter-v1.15.2/{n}.yaml" for n in ("karpenter.k8s.aws_ec2nodeclasses", "karpenter.sh_nodeclaims",
                                                    "karpenter.sh_nodeoverlays", "karpenter.sh_nodepools")]
    + [f"crds/gpu-operator-v26.7.0/nvidia.com_{n}.yaml" for n in ("clusterpolicies", "nvidiadrivers")]
    + [f"crds/prometheus-operator-v0.93.0/monitoring.coreos.com_{n}.yaml"
       for n in ("podmonitors", "prometheusrules", "servicemonitors")]
    + ["reference/gpu-operator-v26.7.0-chart-values.yaml", "reference/kueue-v0.19.2-chart-values.yaml",
       "reference/kube-prometheus-stack-88.5.3-chart-values.yaml", "reference/kube-state-metrics-8.4.0-chart-values.yaml"])
GPU_OPERATOR = [p for p in EXPECTED if "gpu-operator" in p]

# A helm that records its arguments and either fails as an unreachable repository does or untars a chart
# with the GPU Operator's layout (crds/, values.yaml) whose files say where they came from.
FAKE_HELM = """#!/usr/bin/env bash
echo "$*" >>"$(dirname "$0")/helm.args"
[ "${FAKE_HELM_CHART:-}" = 1 ] || { echo 'Error: looks like the repository cannot be reached' >&2; exit 1; }
while [ $# -gt 0 ]; do [ "$1" = --untardir ] && dir=$2; shift; done
mkdir -p "$dir/gpu-operator/crds"
for f in nvidia.com_clusterpolicies.yaml nvidia.com_nvidiadrivers.yaml nvidia.com_gpuclusters.yaml; do
  echo "chart crds/$f" >"$dir/gpu-operator/crds/$f"
done
echo "chart values.yaml" >"$dir/gpu-operator/values.yaml"
"""


def tree(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def offline(tmp_path: Path) -> dict[str, str]:
    """An environment where no upstream source answers: an empty tool cache with the stand-in helm, and Go
    with the module proxy off and an empty module cache."""
    cache = tmp_path / "cache"
    (cache / "bin").mkdir(parents=True)
    helm = cache / "bin" / "helm"
    helm.write_text(FAKE_HELM)
    helm.chmod(0o755)
    env = {k: v for k, v in os.environ.items()
           if k not in (reference_data.CRDS_ENV, reference_data.VALUES_ENV, "GPU_PLATFORM_SHARED")}
    env.update({toolcache.CACHE_ENV: str(cache), "GOPROXY": "off", "GOFLAGS": "", "GOTOOLCHAIN": "local",
                "GOMODCACHE": str(tmp_path / "gomod"), "GPU_PLATFORM_SHARED": "none"})
    return env


def fallback(tmp_path: Path) -> Path:
    """A ../shared stand-in whose every file says it is the fallback's, plus a file no test reads."""
    shared = tmp_path / "shared"
    for rel in EXPECTED:
        (shared / rel).parent.mkdir(parents=True, exist_ok=True)
        (shared / rel).write_text(f"fallback {rel}\n")
    (shared / "docs").mkdir()
    (shared / "docs" / "DESIGN.md").write_text("not reference data\n")
    return shared


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(TOOL), *args], env=env, capture_output=True, text=True, timeout=120)


def test_the_tests_read_the_tool_caches_tree_which_has_every_reference_file() -> None:
    env = {k: v for k, v in os.environ.items() if k not in (reference_data.CRDS_ENV, reference_data.VALUES_ENV)}
    located = reference_data.locate(env)
    home = toolcache.CACHE / "src" / "reference"
    assert (located.crds, located.values) == (home / "crds", home / "reference")
    assert located.problem == ""
    assert sorted(tree(home)) == sorted([*EXPECTED, "SOURCES"])


def test_the_variables_win_over_the_tool(tmp_path: Path) -> None:
    env = {reference_data.CRDS_ENV: str(tmp_path / "c"), reference_data.VALUES_ENV: str(tmp_path / "v")}
    assert reference_data.locate(env) == reference_data.Located(tmp_path / "c", tmp_path / "v")


def test_offline_every_part_comes_from_the_fallback_and_a_stale_release_goes(tmp_path: Path,
                                                                            offline: dict[str, str]) -> None:
    shared = fallback(tmp_path)
    env = {**offline, "GPU_PLATFORM_SHARED": str(shared)}
    out = run(env, "--values", "--crds")
    assert out.returncode == 0, out.stderr
    home = Path(offline[toolcache.CACHE_ENV]) / "src" / "reference"
    assert out.stdout.split() == [str(home / "reference"), str(home / "crds")]
    got = tree(home)
    sources = got.pop("SOURCES").splitlines()
    assert got == {rel: f"fallback {rel}\n" for rel in EXPECTED}
    assert [line.split()[:3] for line in sources] == [
        [part, "fallback", str(shared)]
        for part in ("kueue", "karpenter", "prometheus-operator", "gpu-operator", "kube-prometheus-stack")]
    assert "module lookup disabled by GOPROXY=off" in sources[0]
    assert "repository cannot be reached" in sources[3]

    # A release the pins no longer name (a version bump) leaves the tree on the next run.
    (home / "crds" / "kueue-v0.18.0").mkdir()
    (home / "crds" / "kueue-v0.18.0" / "kueue.x-k8s.io_clusterqueues.yaml").write_text("old\n")
    assert run(env).returncode == 0
    assert sorted(tree(home)) == sorted([*EXPECTED, "SOURCES"])


def test_a_part_without_a_source_is_left_out_and_the_failure_names_the_variables(offline: dict[str, str]) -> None:
    out = run(offline, "--crds", "--values")
    assert out.returncode == 1
    error = out.stderr.splitlines()[-1]
    assert re.findall(r"(?:of |; )(\S+) \(upstream: ", error) == ["kueue", "karpenter", "prometheus-operator",
                                                                 "gpu-operator", "kube-prometheus-stack"]
    assert ("(upstream: go mod download sigs.k8s.io/kueue@v0.19.2: sigs.k8s.io/kueue@v0.19.2: "
            "module lookup disabled by GOPROXY=off)") in error
    assert "gpu-operator (upstream: Error: looks like the repository cannot be reached);" in error
    assert "kube-prometheus-stack (upstream: Error: looks like the repository cannot be reached) and no offline" in error
    assert "GPU_PLATFORM_SHARED=none" in error
    assert "GPU_PLATFORM_CRDS and GPU_PLATFORM_REFERENCE" in error
    located = reference_data.locate(offline)
    assert (located.crds.name, located.values.name) == ("crds", "reference")
    assert "GPU_PLATFORM_CRDS and GPU_PLATFORM_REFERENCE" in located.problem
    assert tree(located.crds.parent).keys() == {"SOURCES"}


def test_the_gpu_operator_chart_is_pulled_from_the_stacks_repository_at_the_pinned_release(
        offline: dict[str, str]) -> None:
    out = run({**offline, "FAKE_HELM_CHART": "1"})
    assert out.returncode == 1  # the modules have no source offline
    cache = Path(offline[toolcache.CACHE_ENV])
    args = (cache / "bin" / "helm.args").read_text().splitlines()[0].split()
    assert args[:6] == ["pull", "gpu-operator", "--repo", CHART_REPO, "--version", AddonGpuOperator().version]
    got = tree(cache / "src" / "reference")
    assert {rel: got[rel] for rel in GPU_OPERATOR} == {
        "crds/gpu-operator-v26.7.0/nvidia.com_clusterpolicies.yaml": "chart crds/nvidia.com_clusterpolicies.yaml\n",
        "crds/gpu-operator-v26.7.0/nvidia.com_nvidiadrivers.yaml": "chart crds/nvidia.com_nvidiadrivers.yaml\n",
        "reference/gpu-operator-v26.7.0-chart-values.yaml": "chart values.yaml\n",
    }
    assert sorted(got) == sorted([*GPU_OPERATOR, "SOURCES"])  # only the CRDs the tests read


def pins(script: str) -> dict[str, str]:
    text = (ROOT / "scripts" / "tools" / script).read_text()
    return dict(re.findall(r"^([A-Z_]+(?:VERSION|GOTOOLCHAIN))=(\S+)$", text, re.M))


def test_the_releases_are_those_the_stacks_deploy_and_the_other_tool_scripts_pin() -> None:
    ref = pins("reference.sh")
    assert ref["KUEUE_VERSION"] == pins("kueue.sh")["KUEUE_VERSION"] == f"v{AddonKueue().version}"
    assert ref["KARPENTER_VERSION"] == pins("karpenter.sh")["KARPENTER_VERSION"] == f"v{AddonKarpenter().version}"
    assert ref["KARPENTER_GOTOOLCHAIN"] == pins("karpenter.sh")["KARPENTER_GOTOOLCHAIN"]
    assert ref["GPU_OPERATOR_VERSION"] == AddonGpuOperator().version
