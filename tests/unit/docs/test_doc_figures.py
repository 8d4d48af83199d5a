"""Ports, counts and default lists the docs quote, read from the code that decides them.

Each of these once disagreed with the code and nothing failed: the local Prometheus and GPU telemetry on the API
server's port +19/+20 (the script uses +20/+21), "two admission policies" (the stack has five), a default of 5
allowed registries (11), 7 system namespaces (11). Each test reads the figure from its one source (the script,
the conventions, the rendered stack, the pack's settings, the test runner) and the sentence from the page.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import re
from pathlib import Path

import pytest

from gpu_platform import conventions as cv
from gpu_platform import workload_controllers as wc
from gpu_platform.images import DEFAULT_ALLOWED_REGISTRIES
from localcluster.ports import Ports
from localcluster.workloads import LOCAL
from policies.gpu_policies import settings as st
from tests.conftest import ROOT, plan_of, rendered

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "docs" / "tasks").glob("*.md"))]
DOCS = ROOT / "docs"
NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
           "ten": 10, "eleven": 11, "twelve": 12}
NUMBER = r"(\d+|" + "|".join(NUMBERS) + r")"
VAP = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"


def counts(text: str, noun: str) -> list[int]:
    """Every "N <noun>" (digits or a word: "five admission policies", "11 namespaces") in a text."""
    return [int(n) if n.isdigit() else NUMBERS[n.lower()]
            for n in re.findall(rf"(?i)\b{NUMBER}\s+{noun}\b", text)]


def row(page: Path, first_cell: str) -> str:
    """The one table row of a page whose first cell starts with `first_cell`."""
    (found,) = [line for line in page.read_text().splitlines() if line.startswith(f"| {first_cell}")]
    return found


def cells(line: str) -> list[str]:
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]


def listed(cell: str) -> list[str]:
    """The values a cell lists in code (`a`, `b`), leaving out what its parentheses say about them; `/x` is
    short for the platform's `gpu-platform.io/x`."""
    bare = re.sub(r"\([^()]*\)", "", cell)
    return [f"{cv.PREFIX}{v}" if v.startswith("/") else v for v in re.findall(r"`([^`]+)`", bare)]


def test_counts_reads_digits_and_words() -> None:
    assert counts("the cluster gets two admission policies, then 11 admission policies", "admission policies") == [2, 11]


# ---- ports of the local cluster: localcluster/ports.py decides them, from the API server's port -----------

def script_offsets() -> dict[str, int]:
    """localcluster.ports.Ports' ports at an offset from the API server's: NAME -> offset."""
    ports = Ports(apiserver=0, etcd=100_000)
    values = {name.upper(): getattr(ports, name) for name, attr in vars(Ports).items() if isinstance(attr, property)}
    return {name: n for name, n in values.items() if isinstance(n, int) and n < 100_000}


def test_the_script_still_spells_the_ports_this_test_reads() -> None:
    assert {"KUEUE_WEBHOOK", "KWOK", "SCHEDULER", "PROMETHEUS", "GPU_TELEMETRY"} <= set(script_offsets())


def test_prometheus_and_the_gpu_telemetry_are_where_the_docs_say() -> None:
    off = script_offsets()
    page = DOCS / "local-cluster.md"
    assert f"the API server's port + {off['PROMETHEUS']} |" in row(page, "Prometheus")
    assert f"the API server's port + {off['GPU_TELEMETRY']} |" in row(page, "gpu-telemetry")
    assert f"its API server port + {off['PROMETHEUS']}," in row(DOCS / "report.md", "`--prometheus URL`")


def test_every_port_offset_the_ports_row_names_is_the_scripts() -> None:
    off = script_offsets()
    ports = row(DOCS / "local-cluster.md", "ports")
    for label, name in [("Kueue webhook", "KUEUE_WEBHOOK"), ("Kueue health", "KUEUE_HEALTH"),
                        ("Kueue metrics", "KUEUE_METRICS"), ("KWOK", "KWOK"), ("kube-scheduler", "SCHEDULER"),
                        ("Prometheus", "PROMETHEUS"), ("the GPU telemetry", "GPU_TELEMETRY")]:
        assert f"+{off[name]} {label}" in ports
    assert f"+{off['KARPENTER_METRICS']} and +{off['KARPENTER_HEALTH']} Karpenter metrics and health" in ports
    # Each workload controller takes three ports from its offset: webhook, health, metrics.
    first, last = min(c.port_offset for c in LOCAL.values()), max(c.port_offset for c in LOCAL.values()) + 2
    assert f"+{first} to +{last} the workload controllers'" in ports
    for label, key in [("JobSet", wc.JOBSET), ("LeaderWorkerSet", wc.LWS), ("Trainer", wc.TRAINER),
                       ("KubeRay", wc.KUBERAY)]:
        assert f"{label} +{LOCAL[key].port_offset}" in ports
    assert last < off["PROMETHEUS"] < off["GPU_TELEMETRY"]


# ---- admission policies: what the stack renders -------------------------------------------------------------

def rendered_policies() -> set[str]:
    return {r.inputs["metadata"]["name"] for r in rendered("local").by_type(VAP)}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_count_of_admission_policies_is_the_stacks(page: Path) -> None:
    said = counts(page.read_text(), r"(?:tenant\s+)?(?:admission policies|ValidatingAdmissionPolicies)")
    assert set(said) <= {len(rendered_policies())}, f"{page.name} counts {said}; the stack has {sorted(rendered_policies())}"


def test_tenancy_lists_every_admission_policy_the_stack_makes() -> None:
    text = (DOCS / "tenancy.md").read_text()
    listed_policies = set(re.findall(r"(?m)^\| ValidatingAdmissionPolicy \+ Binding \| `([^`]+)` \|", text))
    assert listed_policies == rendered_policies() == {
        "tenant-workloads.gpu-platform.io", "tenant-priorities.gpu-platform.io",
        "tenant-network-policies.gpu-platform.io", "tenant-images.gpu-platform.io",
        "tenant-job-cleanup.gpu-platform.io"}
    assert counts(text, "admission policies") == [5]


# ---- default registries and namespaces: the conventions and images.py ---------------------------------------

def test_the_default_registries_are_the_specs() -> None:
    default = cells(row(DOCS / "security.md", "`images.allowedRegistries`"))[2]
    assert listed(default) == list(DEFAULT_ALLOWED_REGISTRIES)
    assert counts(default, "registries") == [len(DEFAULT_ALLOWED_REGISTRIES)] == [11]


def test_the_system_namespaces_default_is_the_packs() -> None:
    page = DOCS / "policy-pack.md"
    default = cells(row(page, "`systemNamespaces`"))[3]
    assert listed(default) == list(st.SYSTEM_NAMESPACES.default) == list(cv.RESERVED_NAMESPACES)
    assert counts(default, "namespaces") == [len(cv.RESERVED_NAMESPACES)] == [11]
    # The example config replaces the default: it must repeat every namespace of it.
    (example,) = re.findall(r"```json\n(.*?)```", page.read_text(), re.DOTALL)
    assert set(cv.RESERVED_NAMESPACES) < set(json.loads(example)["namespace-resource-quota"]["systemNamespaces"])


def test_tenancy_names_every_platform_namespace_tenants_get_nothing_in() -> None:
    text = " ".join((DOCS / "tenancy.md").read_text().split())
    (sentence,) = re.findall(r"nothing in the platform's namespaces \(([^)]*)\)", text)
    assert listed(sentence) == list(cv.PLATFORM_NAMESPACES)


SETTING_ROWS = [
    ("`systemNamespaces`", "every tenant rule", st.SYSTEM_NAMESPACES),
    ("`privilegedNamespaces`", "`privileged-namespaces`", st.PRIVILEGED_NAMESPACES),
    ("`allowedLevels`", "`namespace-pod-security`", st.TENANT_PSA_LEVELS),
    ("`requiredLabels`", "`tenant-namespace-labels`", st.TENANT_LABELS),
    ("`requiredLabels`", "`gpu-node-group-labels`, `resource-flavor-matches-pool`", st.POOL_LABELS),
    ("`requiredTags`", "`aws-gpu-cost-tags`", st.COST_TAGS),
    ("`platformGroups`", "`tenant-groups-namespace-scoped`", st.PLATFORM_GROUPS),
    ("`forbiddenApiVersions`", "`no-kueue-v1beta1`", st.FORBIDDEN_API_VERSIONS),
    ("`recommendedLabels`", "`recommended-labels`", st.RECOMMENDED_LABELS),
]


@pytest.mark.parametrize(("key", "used_by", "setting"), SETTING_ROWS, ids=[f"{k}:{u}" for k, u, _ in SETTING_ROWS])
def test_each_pack_setting_default_is_the_packs(key: str, used_by: str, setting: st.Setting) -> None:
    (line,) = [line for line in (DOCS / "policy-pack.md").read_text().splitlines()
               if line.startswith(f"| {key} | {used_by} |")]
    default = cells(line)[3]
    values = listed(default) + (list(cv.POOL_LABEL_KEYS) if "pool labels plus" in default else [])
    assert sorted(values) == sorted(setting.default)
    assert set(counts(default, "pool labels")) <= {len(cv.POOL_LABEL_KEYS)}


# ---- test lanes: scripts/run-tests ---------------------------------------------------------------------------

def test_every_count_of_test_lanes_is_the_runners() -> None:
    loader = importlib.machinery.SourceFileLoader("run_tests", str(ROOT / "scripts" / "run-tests"))
    spec = importlib.util.spec_from_loader("run_tests", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    said = {page.name: counts(page.read_text(), "lanes") for page in PAGES}
    assert {name: n for name, n in said.items() if set(n) - {len(module.LANES)}} == {}
    assert len(module.LANES) == 4 and said["testing.md"] and said["README.md"]
    # How many run side by side: the README's "in four lanes, three at once", testing.md's "at most three side by
    # side" (its flake table tells of an earlier run with four lanes at once, so only "at most N" is read there).
    said_at_once = [n.lower() for n in re.findall(rf"(?i)\blanes, {NUMBER} at once",
                                                  (ROOT / "README.md").read_text())]
    said_at_once += [n.lower() for page in PAGES for n in
                     re.findall(rf"(?i)\bat most {NUMBER} (?:at once|side by side)", page.read_text())]
    assert module.AT_ONCE == 3 and len(said_at_once) >= 2
    assert {NUMBERS.get(n) or int(n) for n in said_at_once} == {module.AT_ONCE}, said_at_once


# ---- alerts: components/alerts -----------------------------------------------------------------------------

def test_every_count_of_alerts_is_the_stacks() -> None:
    """"the 22 alerts" (deploying.md) once said 17 while the rule groups held 22: the count is every alert the
    monitoring component renders, the same for each shipped stack."""
    from components.alerts.rendering import alerts

    rendered = {stack: len(alerts(plan_of(stack))) for stack in ("prod", "staging", "local")}
    said = {page.name: counts(page.read_text(), r"alerts\b(?! above)") for page in PAGES}  # not "the two alerts above"
    assert set(rendered.values()) == {22}
    assert {name: n for name, n in said.items() if set(n) - {22}} == {} and said["deploying.md"] == [22]
