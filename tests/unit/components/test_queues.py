"""Kueue under mocks: the controller release, flavors, topology, cohorts, ClusterQueues, priorities, MultiKueue.

Expectations come from the plan and conventions, from the reference CRDs and chart values in
../shared, or are Kueue / Kubernetes facts stated as such with their source (github.com/kubernetes-sigs/kueue
at tag v0.19.2 unless said otherwise). Renders are the cached runs of the real program from conftest.
"""

from __future__ import annotations

import copy
import functools
import json
from fractions import Fraction
from typing import Any, Iterable, Mapping

import pytest

from harness.render import SECRET_PLACEHOLDER, Recorded, Rendered
from gpu_platform import conventions as cv
from tests.conftest import background_render, load_yaml, plan_of, render_config, rendered, spec_of, stack_doc
from tests.reference_data import values_file
from tests.unit.components.kueue_schema import validate_kueue

RELEASE = "kubernetes:helm.sh/v3:Release"
NAMESPACE = "kubernetes:core/v1:Namespace"
SECRET = "kubernetes:core/v1:Secret"
PRIORITY_CLASS = "kubernetes:scheduling.k8s.io/v1:PriorityClass"
KUEUE = f"kubernetes:{cv.KUEUE_API_VERSION}:"
COMPONENT = "queues"

# Kubernetes facts (k8s.io/kubernetes pkg/apis/scheduling: HighestUserDefinablePriority,
# SystemPriorityClassPrefix; validation.ValidatePriorityClass).
HIGHEST_USER_PRIORITY = 1_000_000_000
SYSTEM_PRIORITY_PREFIX = "system-"

# Kueue facts.
# The built-in integration names Kueue 0.19.2 accepts in integrations.frameworks (every `FrameworkName`
# under pkg/controller/jobs; pkg/config/validation.go rejects any other).
KUEUE_FRAMEWORKS = {
    "batch/job", "pod", "deployment", "statefulset", "jobset.x-k8s.io/jobset",
    "leaderworkerset.x-k8s.io/leaderworkerset", "kubeflow.org/jaxjob", "kubeflow.org/mpijob",
    "kubeflow.org/paddlejob", "kubeflow.org/pytorchjob", "kubeflow.org/tfjob", "kubeflow.org/xgboostjob",
    "ray.io/rayjob", "ray.io/raycluster", "ray.io/rayservice", "sparkoperator.k8s.io/sparkapplication",
    "trainer.kubeflow.org/trainjob", "workload.codeflare.dev/appwrapper",
}
# fairSharing.preemptionStrategies must be one of these lists (pkg/config/validation.go validStrategySets).
FAIR_SHARING_STRATEGY_SETS = (
    ["LessThanOrEqualToFinalShare"], ["LessThanInitialShare"],
    ["LessThanOrEqualToFinalShare", "LessThanInitialShare"],
)
# Field names (json tags) of the controller's Configuration, config.kueue.x-k8s.io/v1beta2
# (apis/config/v1beta2/configuration_types.go; leaderElection is component-base's
# LeaderElectionConfiguration). Kueue decodes its config strictly (pkg/config/config.go,
# serializer.EnableStrict): an unknown key stops the controller from starting. LEAF ends the walk;
# ANY_KEYS is a map with free keys.
LEAF: None = None
ANY_KEYS = "*"
LABEL_SELECTOR = {"matchLabels": ANY_KEYS, "matchExpressions": {"key": LEAF, "operator": LEAF, "values": LEAF}}
CONFIG_FIELDS: dict[str, Any] = {
    "apiVersion": LEAF, "kind": LEAF, "namespace": LEAF,
    "webhook": {"port": LEAF, "host": LEAF, "certDir": LEAF},
    "leaderElection": {
        "leaderElect": LEAF, "leaseDuration": LEAF, "renewDeadline": LEAF, "retryPeriod": LEAF,
        "resourceLock": LEAF, "resourceName": LEAF, "resourceNamespace": LEAF,
    },
    "metrics": {
        "bindAddress": LEAF, "enableClusterQueueResources": LEAF,
        "customLabels": {"name": LEAF, "sourceLabelKey": LEAF, "sourceAnnotationKey": LEAF, "sourceKind": LEAF,
                         "trackedValues": LEAF},
        "localQueueMetrics": {"enable": LEAF, "localQueueSelector": LABEL_SELECTOR},
    },
    "health": {"healthProbeBindAddress": LEAF, "readinessEndpointName": LEAF, "livenessEndpointName": LEAF},
    "pprofBindAddress": LEAF,
    "controller": {"groupKindConcurrency": ANY_KEYS, "cacheSyncTimeout": LEAF},
    "tls": {"minVersion": LEAF, "cipherSuites": LEAF, "curvePreferences": LEAF},
    "manageJobsWithoutQueueName": LEAF,
    "managedJobsNamespaceSelector": LABEL_SELECTOR,
    "internalCertManagement": {"enable": LEAF, "webhookServiceName": LEAF, "webhookSecretName": LEAF},
    "waitForPodsReady": {
        "timeout": LEAF, "blockAdmission": LEAF, "recoveryTimeout": LEAF,
        "requeuingStrategy": {"timestamp": LEAF, "backoffLimitCount": LEAF, "backoffBaseSeconds": LEAF,
                              "backoffMaxSeconds": LEAF},
    },
    "clientConnection": {"qps": LEAF, "burst": LEAF},
    "integrations": {"frameworks": LEAF, "externalFrameworks": LEAF, "labelKeysToCopy": LEAF},
    "multiKueue": {"gcInterval": LEAF, "origin": LEAF, "workerLostTimeout": LEAF, "dispatcherName": LEAF,
                   "externalFrameworks": {"name": LEAF}, "clusterProfile": ANY_KEYS,
                   "incrementalDispatcherConfig": {"stepSize": LEAF}},
    "fairSharing": {"preemptionStrategies": LEAF},
    "admissionFairSharing": {"usageHalfLifeTime": LEAF, "usageSamplingInterval": LEAF, "resourceWeights": ANY_KEYS},
    "resources": {"quotaCheckStrategy": LEAF, "excludeResourcePrefixes": LEAF, "transformations": ANY_KEYS,
                  "deviceClassMappings": ANY_KEYS},
    "featureGates": ANY_KEYS,
    "objectRetentionPolicies": {"workloads": {"afterFinished": LEAF, "afterDeactivatedByKueue": LEAF}},
    "visibilityServer": {"bindAddress": LEAF, "bindPort": LEAF},
}
# Paths of the chart's default controller config that the platform deliberately replaces.
CONFIG_OVERRIDES = {("integrations", "frameworks")}



@functools.cache
def chart_defaults() -> dict[str, Any]:
    return load_yaml(values_file("kueue-v0.19.2-chart-values.yaml").read_text())


# ---------------------------------------------------------------------------------------------------
# Helpers


def mine(r: Rendered) -> list[Recorded]:
    return [x for x in r.custom if x.parent == COMPONENT]


def kueue_objects(r: Rendered, kind: str | None = None) -> list[dict[str, Any]]:
    return [x.inputs for x in mine(r) if x.type.startswith(KUEUE) and (kind is None or x.type == KUEUE + kind)]


def by_name(objs: Iterable[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    return {o["metadata"]["name"]: o for o in objs}


def release(r: Rendered) -> Recorded:
    found = [x for x in mine(r) if x.type == RELEASE]
    assert len(found) == 1
    return found[0]


def controller_config(r: Rendered) -> dict[str, Any]:
    return load_yaml(release(r).inputs["values"]["managerConfig"]["controllerManagerConfigYaml"])


_SUFFIX = {
    "": 1, "m": Fraction(1, 1000), "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12,
    "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40,
}


def qty(value: str | int) -> Fraction:
    """A Kubernetes quantity as an exact number (the forms the platform writes)."""
    s = str(value)
    for suffix in sorted(_SUFFIX, key=len, reverse=True):
        if suffix and s.endswith(suffix):
            return Fraction(s[: -len(suffix)]) * _SUFFIX[suffix]
    return Fraction(s)


def selects(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """metav1.LabelSelector semantics: matchLabels AND every matchExpression."""
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for e in selector.get("matchExpressions") or []:
        op, key, values = e["operator"], e["key"], e.get("values") or []
        ok = {
            "In": key in labels and labels[key] in values,
            "NotIn": key not in labels or labels[key] not in values,
            "Exists": key in labels,
            "DoesNotExist": key not in labels,
        }[op]
        if not ok:
            return False
    return True


def namespace_labels(ns: str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """What the API server puts on every namespace, plus what tenancy adds."""
    return {**(extra or {}), cv.NAMESPACE_NAME_LABEL: ns}


def key_paths(tree: Any, prefix: tuple[str, ...] = ()) -> Iterable[tuple[tuple[str, ...], Any]]:
    if isinstance(tree, dict) and tree:
        for k, v in tree.items():
            yield from key_paths(v, (*prefix, k))
    else:
        yield prefix, tree


def unknown_config_keys(value: Any, fields: Any, path: str = "") -> list[str]:
    if fields is LEAF or fields == ANY_KEYS:
        return []
    if isinstance(value, list):
        return [e for i, item in enumerate(value) for e in unknown_config_keys(item, fields, f"{path}[{i}]")]
    if not isinstance(value, dict):
        return [f"{path}: expected an object"]
    out = []
    for k, v in value.items():
        if k not in fields:
            out.append(f"{path}.{k}")
        else:
            out.extend(unknown_config_keys(v, fields[k], f"{path}.{k}"))
    return out


# The MultiKueue workers' kubeconfigs: Pulumi secret config values, each with a marker that must not reach
# the rendered inputs in plaintext.
WORKER_KUBECONFIGS = {
    "workerEastKubeconfig": "apiVersion: v1\nkind: Config\n# plaintext-marker-east-7f3a\n",
    "workerWestKubeconfig": "apiVersion: v1\nkind: Config\n# plaintext-marker-west-91c2\n",
}


@background_render()
def prod_with_multikueue() -> tuple[str, dict[str, Any]]:
    """prod with MultiKueue: two workers whose kubeconfigs are Pulumi secret config values."""
    config = copy.deepcopy(stack_doc("prod")["config"])
    platform = config["gpu-platform:platform"]
    platform["multiKueue"] = {"workers": [
        {"name": "worker-east", "kubeconfigSecret": "workerEastKubeconfig"},
        {"name": "worker-west", "kubeconfigSecret": "workerWestKubeconfig"},
    ]}
    for key, value in WORKER_KUBECONFIGS.items():
        config[f"gpu-platform:{key}"] = value
    return "prod", config


def multikueue_render() -> tuple[Rendered, dict[str, Any], dict[str, str]]:
    """The render (by the render worker), its platform config and the workers' kubeconfigs."""
    return prod_with_multikueue(), prod_with_multikueue.config()[1]["gpu-platform:platform"], WORKER_KUBECONFIGS


# ---------------------------------------------------------------------------------------------------
# The Kueue release


def test_release_pins_the_chart_version_and_namespace() -> None:
    rel = release(rendered("prod")).inputs
    assert rel["chart"] == "oci://registry.k8s.io/kueue/charts/kueue"
    assert rel["version"] == spec_of("prod").addons.kueue.version
    assert rel["name"] == cv.KUEUE_RELEASE_NAME
    assert rel["namespace"] == cv.KUEUE_NAMESPACE
    # The namespace exists before the release: made here (labelled) or by Helm.
    namespaces = [x for x in mine(rendered("prod")) if x.type == NAMESPACE]
    assert rel.get("createNamespace") or [n.inputs["metadata"]["name"] for n in namespaces] == [cv.KUEUE_NAMESPACE]
    dependencies = release(rendered("prod")).options["dependencies"]
    assert all(n.name in dependencies for n in namespaces)
    # The controller image is the same release as the chart (the source values point at a staging tag).
    image = rel["values"]["controllerManager"]["manager"]["image"]
    assert image["tag"].lstrip("v") == spec_of("prod").addons.kueue.version.lstrip("v")


def test_kueue_namespace_is_labelled_and_enforces_restricted() -> None:
    ns = [x.inputs for x in mine(rendered("prod")) if x.type == NAMESPACE]
    for n in ns:
        labels = n["metadata"]["labels"]
        assert labels[cv.MANAGED_BY] == cv.MANAGED_BY_VALUE
        assert labels[cv.PSA_ENFORCE] == "restricted"


def test_every_values_key_exists_in_the_chart_defaults() -> None:
    defaults = chart_defaults()
    values = release(rendered("prod")).inputs["values"]
    missing = []

    def walk(ours: Any, theirs: Any, path: str) -> None:
        for key, value in ours.items():
            here = f"{path}.{key}" if path else key
            if not isinstance(theirs, dict) or key not in theirs:
                missing.append(here)
                continue
            default = theirs[key]
            if isinstance(value, dict) and isinstance(default, dict) and default:
                walk(value, default, here)
            elif default is not None and not isinstance(value, type(default)):
                missing.append(f"{here}: {type(value).__name__} where the chart has {type(default).__name__}")

    walk(values, defaults, "")
    assert missing == [], f"values not in kueue-v0.19.2-chart-values.yaml: {missing}"


def test_controller_config_has_only_known_fields() -> None:
    config = controller_config(rendered("prod"))
    assert config["apiVersion"] == "config.kueue.x-k8s.io/v1beta2" and config["kind"] == "Configuration"
    assert unknown_config_keys(config, CONFIG_FIELDS) == []
    # The field table accepts the chart's own default config (it is not stricter than Kueue).
    chart_config = load_yaml(chart_defaults()["managerConfig"]["controllerManagerConfigYaml"])
    assert unknown_config_keys(chart_config, CONFIG_FIELDS) == []


def test_controller_config_keeps_every_chart_default_setting() -> None:
    """Replacing the config string replaces all of it: the ports and lease the chart's manifests use stay."""
    ours = dict(key_paths(controller_config(rendered("prod"))))
    chart_config = load_yaml(chart_defaults()["managerConfig"]["controllerManagerConfigYaml"])
    for path, value in key_paths(chart_config):
        if path in CONFIG_OVERRIDES:
            continue
        assert ours.get(path) == value, f"{'.'.join(path)}: chart default {value!r}, ours {ours.get(path)!r}"


def test_controller_config_turns_on_fair_sharing_wait_for_pods_ready_and_metrics() -> None:
    config = controller_config(rendered("prod"))
    assert config["fairSharing"]["preemptionStrategies"] in FAIR_SHARING_STRATEGY_SETS
    wfpr = config["waitForPodsReady"]
    assert wfpr["timeout"] and wfpr["requeuingStrategy"]["timestamp"] in ("Eviction", "Creation")
    assert wfpr["requeuingStrategy"]["backoffLimitCount"] >= 0
    assert config["metrics"]["enableClusterQueueResources"] is True
    assert config["integrations"]["frameworks"] == list(spec_of("prod").addons.kueue.integrations)
    assert set(config["integrations"]["frameworks"]) <= KUEUE_FRAMEWORKS
    # EFA pods request vpc.amazonaws.com/efa, which no ClusterQueue covers: Kueue must not count it.
    assert any(cv.EFA_RESOURCE.startswith(p) for p in config["resources"]["excludeResourcePrefixes"])
    # Kueue is scraped through the monitoring component's ServiceMonitor only, never twice.
    assert release(rendered("prod")).inputs["values"]["enablePrometheus"] is False


def test_kueue_manages_jobs_only_in_tenant_namespaces() -> None:
    selector = controller_config(rendered("prod"))["managedJobsNamespaceSelector"]
    for team in plan_of("prod").teams:
        for ns in team.namespaces:
            assert selects(selector, namespace_labels(ns, team.namespace_labels)), ns
    # Kueue refuses a selector that matches kube-system or its own namespace (validateManagedJobsNamespaceSelector).
    for ns in (*cv.RESERVED_NAMESPACES, cv.KUEUE_NAMESPACE):
        assert not selects(selector, namespace_labels(ns)), ns


def test_local_stack_has_no_release_but_all_kueue_objects() -> None:
    plan = plan_of("local")
    r = rendered("local")
    assert not spec_of("local").addons.kueue.install
    assert [x for x in mine(r) if x.type in (RELEASE, NAMESPACE)] == []
    assert set(by_name(kueue_objects(r, "ResourceFlavor"))) == {cv.CPU_FLAVOR, *(p.flavor for p in plan.pools)}
    assert set(by_name(kueue_objects(r, "ClusterQueue"))) == {t.cluster_queue for t in plan.teams}
    assert set(by_name(kueue_objects(r, "Cohort"))) == {c.name for c in plan.cohorts}
    assert set(by_name(kueue_objects(r, "WorkloadPriorityClass"))) == {p.class_name for p in plan.priorities}


@pytest.mark.parametrize("stack", ["local", "staging", "prod"])
def test_every_kueue_object_waits_for_the_controller(stack: str) -> None:
    r = rendered(stack)
    releases = [x.name for x in mine(r) if x.type == RELEASE]
    assert len(releases) == (1 if spec_of(stack).addons.kueue.install else 0)
    for x in mine(r):
        if x.type.startswith(KUEUE):
            assert set(releases) <= set(x.options["dependencies"]), x.name


# ---------------------------------------------------------------------------------------------------
# Every object


@pytest.mark.parametrize("stack", ["local", "staging", "prod"])
def test_objects_are_valid_against_the_kueue_crds(stack: str) -> None:
    objs = kueue_objects(rendered(stack))
    assert objs
    for obj in objs:
        assert obj["apiVersion"] == cv.KUEUE_API_VERSION
        assert validate_kueue(obj) == [], f"{obj['kind']} {obj['metadata']['name']}"


@pytest.mark.parametrize("stack", ["local", "prod"])
def test_objects_have_explicit_names_managed_by_and_unique_logical_names(stack: str) -> None:
    r = rendered(stack)
    for x in mine(r):
        if "metadata" in x.inputs:
            meta = x.inputs["metadata"]
            assert meta.get("name"), x.name
            assert meta["labels"][cv.MANAGED_BY] == cv.MANAGED_BY_VALUE, x.name
    everywhere = [(x.type, x.name) for x in r.resources]
    for x in mine(r):
        assert everywhere.count((x.type, x.name)) == 1, x.name


# ---------------------------------------------------------------------------------------------------
# Flavors and topology


def test_one_flavor_per_pool_with_its_labels_taints_and_topology() -> None:
    plan = plan_of("prod")
    flavors = by_name(kueue_objects(rendered("prod"), "ResourceFlavor"))
    assert set(flavors) == {cv.CPU_FLAVOR, *(p.flavor for p in plan.pools)}
    for pool in plan.pools:
        spec = flavors[pool.flavor]["spec"]
        assert spec["nodeLabels"] == dict(pool.labels)
        assert set(spec["nodeLabels"]) == set(cv.POOL_LABEL_KEYS)
        workload = {"key": "gpu-platform.io/workload", "operator": "Equal", "value": pool.labels[cv.WORKLOAD],
                    "effect": "NoSchedule"}
        gpu = {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}
        if pool.topology is None:
            # The nodes' two taints; Kueue adds the workload toleration, the pod template brings the GPU one.
            assert spec["nodeTaints"] == [
                {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
                {"key": "gpu-platform.io/workload", "value": pool.labels[cv.WORKLOAD], "effect": "NoSchedule"},
            ]
            assert spec["tolerations"] == [workload]
        else:
            # Topology-aware: tolerations are immutable (Kueue's CRD), and only pod sets asking for a topology
            # are given the flavor.
            assert "nodeTaints" not in spec and spec["tolerations"] == [gpu, workload]
        assert spec.get("topologyName") == pool.topology
    assert {p.topology is None for p in plan.pools} == {True, False}, "prod has pools of both kinds"


def _tolerates(toleration: dict[str, str], taint: dict[str, str]) -> bool:
    """Kubernetes toleration matching (kubernetes.io/docs/concepts/scheduling-eviction/taint-and-toleration)."""
    if toleration.get("effect") and toleration["effect"] != taint["effect"]:
        return False
    if toleration.get("operator") == "Exists":
        return not toleration.get("key") or toleration["key"] == taint["key"]
    return toleration.get("key") == taint["key"] and toleration.get("value", "") == taint.get("value", "")


def flavors_kueue_may_give(flavor_specs: dict[str, dict], pod_tolerations: list[dict[str, str]],
                           topology: bool = False) -> set[str]:
    """The flavors a pod set passes before quota, as Kueue checks them (kueue v0.19.2 flavorassigner.go
    checkFlavorForPodSets): topology first (tas_flavorassigner.go: a pod set asking for a topology only gets
    topology-aware flavors, since every flavor here covers cpu; one that does not ask, never them), then every
    NoSchedule/NoExecute nodeTaint tolerated by the pod's tolerations or the flavor's own."""
    out = set()
    for name, spec in flavor_specs.items():
        if ("topologyName" in spec) != topology:
            continue
        tolerations = [*pod_tolerations, *spec.get("tolerations", [])]
        blocking = [t for t in spec.get("nodeTaints", []) if t["effect"] in ("NoSchedule", "NoExecute")]
        if all(any(_tolerates(tol, t) for tol in tolerations) for t in blocking):
            out.add(name)
    return out


@pytest.mark.parametrize("stack", ["local", "staging", "prod"])
def test_a_pod_set_without_gpus_can_be_given_only_the_cpu_only_flavor(stack: str) -> None:
    """Where work without GPUs runs: a pod set without GPUs (which admission keeps from tolerating the GPU taint) is
    never given a pool's flavor, whether the CPU-only allowance is full or too small: it waits for the allowance (or
    was refused at creation) instead of holding a pool's quota on nodes it may not run on. A GPU pod set that carries
    the GPU toleration may be given any pool's flavor (then quota and node labels decide)."""
    plan = plan_of(stack)
    specs = {f["metadata"]["name"]: f["spec"] for f in kueue_objects(rendered(stack), "ResourceFlavor")}
    assert flavors_kueue_may_give(specs, []) == {cv.CPU_FLAVOR}
    tas = {p.flavor for p in plan.pools if p.topology}
    assert flavors_kueue_may_give(specs, [dict(cv.GPU_TOLERATION)]) == set(specs) - tas
    assert flavors_kueue_may_give(specs, [dict(cv.GPU_TOLERATION)], topology=True) == tas
    # And no flavor such a pod set could be given hands it the GPU toleration (admission would refuse it on a
    # pod set without GPUs, and so Kueue's update with it).
    gpu_taint = {"key": cv.GPU_TAINT_KEY, "value": cv.GPU_TAINT_VALUE, "effect": cv.TAINT_EFFECT}
    assert not any(_tolerates(t, gpu_taint) for name, s in specs.items() if name not in tas
                   for t in s.get("tolerations", []))
    assert len(specs) == len(plan.pools) + 1


@pytest.mark.parametrize("stack", ["local", "staging", "prod"])
def test_topology_exists_when_a_pool_uses_it(stack: str) -> None:
    plan = plan_of(stack)
    topologies = by_name(kueue_objects(rendered(stack), "Topology"))
    used = {p.topology for p in plan.pools if p.topology}
    assert set(topologies) == used
    for name in used:
        levels = [lv["nodeLabel"] for lv in topologies[name]["spec"]["levels"]]
        assert levels == list(cv.TOPOLOGY_LEVELS)
        # CEL rules of the Topology CRD: unique levels, kubernetes.io/hostname only as the lowest.
        assert len(set(levels)) == len(levels)
        assert "kubernetes.io/hostname" not in levels[:-1]
    for flavor in kueue_objects(rendered(stack), "ResourceFlavor"):
        if "topologyName" in flavor["spec"]:
            assert flavor["spec"]["topologyName"] in topologies
            assert flavor["spec"]["nodeLabels"]  # CEL: a topology flavor needs a node label


# ---------------------------------------------------------------------------------------------------
# Cohorts and ClusterQueues


def test_cohorts_form_the_configured_tree() -> None:
    plan = plan_of("prod")
    cohorts = by_name(kueue_objects(rendered("prod"), "Cohort"))
    assert set(cohorts) == {c.name for c in plan.cohorts}
    for c in plan.cohorts:
        spec = cohorts[c.name]["spec"]
        assert spec.get("parentName") == c.parent
        if c.fair_sharing_weight is None:
            assert "fairSharing" not in spec
        else:
            assert qty(spec["fairSharing"]["weight"]) == Fraction(c.fair_sharing_weight)


def test_one_cluster_queue_per_team_in_its_cohort() -> None:
    plan = plan_of("prod")
    cqs = by_name(kueue_objects(rendered("prod"), "ClusterQueue"))
    assert set(cqs) == {t.cluster_queue for t in plan.teams}
    cohorts = set(by_name(kueue_objects(rendered("prod"), "Cohort")))
    for team in plan.teams:
        spec = cqs[team.cluster_queue]["spec"]
        assert spec.get("cohortName") == team.cohort
        assert team.cohort is None or team.cohort in cohorts
        assert spec["preemption"] == {
            "reclaimWithinCohort": team.preemption.reclaim_within_cohort,
            "borrowWithinCohort": {"policy": team.preemption.borrow_within_cohort},
            "withinClusterQueue": team.preemption.within_cluster_queue,
        }
        assert qty(spec["fairSharing"]["weight"]) == Fraction(team.fair_sharing_weight)
        assert spec["queueingStrategy"] == "BestEffortFIFO"
        assert spec["flavorFungibility"]["whenCanPreempt"] in ("MayStopSearch", "TryNextFlavor")
        # No MultiKueue in prod; the ProvisioningRequest check on the team's elastic pools only (never on the
        # reserved h100-train and h200-train, nor on the CPU-only flavor).
        elastic = [f for f in ("l40s-infer", "a100-mig", "l4-interactive") if f in {q.flavor for q in team.quotas}]
        assert spec.get("admissionChecksStrategy") == ({
            "admissionChecks": [{"name": "provisioning-request", "onFlavors": elastic}]} if elastic else None)
    # llm-pretrain holds only the reserved training pools: no check at all.
    assert "admissionChecksStrategy" not in cqs["llm-pretrain"]["spec"]


def test_namespace_selectors_select_only_their_team() -> None:
    plan = plan_of("prod")
    r = rendered("prod")
    cqs = by_name(kueue_objects(r, "ClusterQueue"))
    for team in plan.teams:
        selector = cqs[team.cluster_queue]["spec"]["namespaceSelector"]
        assert selector, "an empty selector would select every namespace"
        for other in plan.teams:
            for ns in other.namespaces:
                assert selects(selector, namespace_labels(ns, other.namespace_labels)) == (other is team), (team.name, ns)
        for ns in cv.RESERVED_NAMESPACES:
            assert not selects(selector, namespace_labels(ns))
        # And against every Namespace the program actually makes (tenancy's and Kueue's own).
        for obj in r.kubernetes_objects():
            if obj["kind"] == "Namespace":
                labels = namespace_labels(obj["metadata"]["name"], obj["metadata"].get("labels"))
                if selects(selector, labels):
                    assert labels.get(cv.TEAM) == team.name, obj["metadata"]["name"]


def test_cluster_queue_resource_groups_follow_kueue_rules() -> None:
    """The ClusterQueue webhook's rules (pkg/webhooks/clusterqueue_webhook.go validateResourceGroups,
    validateFlavorQuotas, validateLimit, validateLendingLimit, validatePreemption) and the CRD's CEL."""
    for stack in ("local", "staging", "prod"):
        for cq in kueue_objects(rendered(stack), "ClusterQueue"):
            spec, name = cq["spec"], cq["metadata"]["name"]
            seen_resources: set[str] = set()
            seen_flavors: set[str] = set()
            for group in spec.get("resourceGroups", []):
                covered = group["coveredResources"]
                assert not seen_resources & set(covered), f"{name}: a resource in two groups"
                assert len(set(covered)) == len(covered)
                seen_resources |= set(covered)
                for flavor in group["flavors"]:
                    assert flavor["name"] not in seen_flavors, f"{name}: flavor {flavor['name']} twice"
                    seen_flavors.add(flavor["name"])
                    assert [r["name"] for r in flavor["resources"]] == covered, f"{name}/{flavor['name']}"
                    for r in flavor["resources"]:
                        assert qty(r["nominalQuota"]) >= 0
                        if "lendingLimit" in r:
                            assert qty(r["lendingLimit"]) <= qty(r["nominalQuota"]), f"{name}/{flavor['name']}/{r['name']}"
                        if "borrowingLimit" in r or "lendingLimit" in r:
                            assert "cohortName" in spec, f"{name}: limits without a cohort"
            pre = spec["preemption"]
            assert not (pre["reclaimWithinCohort"] == "Never" and pre["borrowWithinCohort"]["policy"] != "Never")


@pytest.mark.parametrize("stack", ["local", "staging", "prod"])
def test_cpu_only_work_is_admitted_on_its_own_flavor_never_a_gpu_pool(stack: str) -> None:
    """Kueue defaults CPU-only Jobs and Pods into the namespace's `default` LocalQueue and assigns the first
    flavor they fit: the CPU-only flavor comes first, holds the team's CPU allowance and no GPU, and sends
    its pods to no pool (no node labels, no tolerations: GPU nodes are tainted). The allowance is the
    team's limits.cpu / memoryGiB, 8 CPU and 32 GiB unless set (a Ray head at Ray's starting size)."""
    plan = plan_of(stack)
    flavor = by_name(kueue_objects(rendered(stack), "ResourceFlavor"))[cv.CPU_FLAVOR]
    assert flavor["spec"].get("nodeLabels") in (None, {}) and flavor["spec"].get("tolerations") in (None, [])
    cqs = by_name(kueue_objects(rendered(stack), "ClusterQueue"))
    for team in plan.teams:
        (group,) = cqs[team.cluster_queue]["spec"]["resourceGroups"]
        first = group["flavors"][0]
        assert first["name"] == cv.CPU_FLAVOR
        res = {r["name"]: r for r in first["resources"]}
        assert [r["name"] for r in first["resources"]] == group["coveredResources"]
        assert qty(res["cpu"]["nominalQuota"]) == team.cpu_only_cpu_millis / 1000
        assert qty(res["memory"]["nominalQuota"]) == team.cpu_only_memory_mib * 2**20
        for name, r in res.items():
            if cv.is_gpu_resource(name):
                assert qty(r["nominalQuota"]) == 0, (team.name, name)
            if team.cohort is not None:
                assert qty(r["borrowingLimit"]) == 0, "CPU-only work never borrows a sibling's CPU"


def test_the_default_cpu_only_allowance_holds_a_ray_head() -> None:
    """prod sets no teams[].limits: every team's CPU-only flavor holds 8 CPU and 32 GiB, Ray's starting size
    for a head node (the old 4 CPU / 16 GiB refused such a head, and spilled it onto GPU pools before)."""
    for cq in kueue_objects(rendered("prod"), "ClusterQueue"):
        cpu_only = cq["spec"]["resourceGroups"][0]["flavors"][0]
        res = {r["name"]: r["nominalQuota"] for r in cpu_only["resources"]}
        assert (cpu_only["name"], res["cpu"], res["memory"]) == (cv.CPU_FLAVOR, "8", "32Gi"), cq["metadata"]["name"]


def test_quotas_per_flavor_are_the_plan() -> None:
    plan = plan_of("prod")
    cqs = by_name(kueue_objects(rendered("prod"), "ClusterQueue"))
    flavors = set(by_name(kueue_objects(rendered("prod"), "ResourceFlavor")))
    for team in plan.teams:
        groups = cqs[team.cluster_queue]["spec"]["resourceGroups"]
        assert len(groups) == 1
        (group,) = groups
        gpu_names = {q.resource_name for q in team.quotas}
        assert set(group["coveredResources"]) == {"cpu", "memory", *gpu_names}
        listed = {f["name"]: {r["name"]: r for r in f["resources"]} for f in group["flavors"]}
        assert set(listed) == {cv.CPU_FLAVOR, *(q.flavor for q in team.quotas)}
        assert set(listed) <= flavors, "a ClusterQueue flavor with no ResourceFlavor"
        for q in team.quotas:
            res = listed[q.flavor]
            expected = {
                q.resource_name: (q.nominal, q.borrowing, q.lending),
                "cpu": tuple(None if u is None else Fraction(u * q.cpu_millis_per_unit, 1000)
                             for u in (q.nominal, q.borrowing, q.lending)),
                "memory": tuple(None if u is None else u * q.memory_mib_per_unit * 2**20
                                for u in (q.nominal, q.borrowing, q.lending)),
            }
            for resource, (nominal, borrowing, lending) in expected.items():
                got = res[resource]
                assert qty(got["nominalQuota"]) == nominal, (team.name, q.flavor, resource)
                assert (qty(got["borrowingLimit"]) if "borrowingLimit" in got else None) == borrowing
                assert (qty(got["lendingLimit"]) if "lendingLimit" in got else None) == lending
            # The pool does not advertise the team's other GPU resource names: nothing to hand out there.
            for other in gpu_names - {q.resource_name}:
                assert qty(res[other]["nominalQuota"]) == 0


@pytest.mark.parametrize("stack", ["local", "staging", "prod"])
def test_nominal_sums_per_flavor_equal_the_plan_and_fit_the_pool(stack: str) -> None:
    plan = plan_of(stack)
    cqs = kueue_objects(rendered(stack), "ClusterQueue")
    for pool in plan.pools:
        total = {"gpu": Fraction(0), "cpu": Fraction(0), "memory": Fraction(0)}
        for cq in cqs:
            for group in cq["spec"].get("resourceGroups", []):
                for flavor in group["flavors"]:
                    if flavor["name"] != pool.flavor:
                        continue
                    for r in flavor["resources"]:
                        if r["name"] == pool.resource_name:
                            total["gpu"] += qty(r["nominalQuota"])
                        elif r["name"] in ("cpu", "memory"):
                            total[r["name"]] += qty(r["nominalQuota"])
                        else:
                            assert qty(r["nominalQuota"]) == 0, (pool.name, r["name"])
        units = plan.allocated_units(pool.name)
        assert total["gpu"] == units
        assert total["gpu"] <= pool.capacity_units
        assert total["cpu"] == Fraction(units * pool.cpu_millis_per_unit, 1000)
        assert total["memory"] == units * pool.memory_mib_per_unit * 2**20
        # Kueue never hands out more CPU or memory than the pool's nodes have.
        assert total["cpu"] <= Fraction(pool.capacity_units * pool.cpu_millis_per_unit, 1000)


# ---------------------------------------------------------------------------------------------------
# Priorities


def test_priority_classes_and_workload_priority_classes_share_names_and_values() -> None:
    plan = plan_of("prod")
    r = rendered("prod")
    pcs = by_name(x.inputs for x in mine(r) if x.type == PRIORITY_CLASS)
    wpcs = by_name(kueue_objects(r, "WorkloadPriorityClass"))
    assert set(pcs) == set(wpcs) == {p.class_name for p in plan.priorities}
    for p in plan.priorities:
        assert pcs[p.class_name]["value"] == wpcs[p.class_name]["value"] == p.value
        assert pcs[p.class_name]["description"] == wpcs[p.class_name]["description"] == p.description
        assert pcs[p.class_name].get("globalDefault") in (None, False)


def test_priority_class_names_and_values_are_allowed_for_users() -> None:
    plan = plan_of("prod")
    pcs = [x.inputs for x in mine(rendered("prod")) if x.type == PRIORITY_CLASS]
    assert len(pcs) == len(plan.priorities)
    for pc in pcs:
        assert not pc["metadata"]["name"].startswith(SYSTEM_PRIORITY_PREFIX), pc["metadata"]["name"]
        assert pc["value"] <= HIGHEST_USER_PRIORITY
        assert len(pc["metadata"]["name"]) <= cv.MAX_LABEL_LENGTH  # it is also a label value
    # The default ladder starts at system-critical (Kubernetes reserves `system-`): that one is renamed, the others
    # are not.
    assert cv.priority_class_name("system-critical") != "system-critical"
    assert cv.priority_class_name("training") == "training"


def test_priority_classes_do_not_wait_for_kueue() -> None:
    """PriorityClasses are core Kubernetes objects: a stack without Kueue still gets them."""
    r = rendered("prod")
    for x in mine(r):
        if x.type == PRIORITY_CLASS:
            assert cv.KUEUE_RELEASE_NAME not in x.options["dependencies"]


# ---------------------------------------------------------------------------------------------------
# MultiKueue


def test_multikueue_objects_and_cluster_queue_admission_checks() -> None:
    r, platform, _ = multikueue_render()
    workers = [w["name"] for w in platform["multiKueue"]["workers"]]
    checks = by_name(kueue_objects(r, "AdmissionCheck"))
    configs = by_name(kueue_objects(r, "MultiKueueConfig"))
    clusters = by_name(kueue_objects(r, "MultiKueueCluster"))
    assert list(checks) == [cv.MULTIKUEUE_NAME]
    check = checks[cv.MULTIKUEUE_NAME]["spec"]
    assert check["controllerName"] == "kueue.x-k8s.io/multikueue"  # the controller name Kueue answers to
    assert check["parameters"] == {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": cv.MULTIKUEUE_NAME}
    assert set(configs) == {cv.MULTIKUEUE_NAME}
    assert configs[cv.MULTIKUEUE_NAME]["spec"]["clusters"] == [cv.multikueue_cluster_name(w) for w in workers]
    assert set(clusters) == {cv.multikueue_cluster_name(w) for w in workers}
    secrets = {x.inputs["metadata"]["name"]: x for x in mine(r) if x.type == SECRET}
    for w in workers:
        source = clusters[cv.multikueue_cluster_name(w)]["spec"]["clusterSource"]["kubeConfig"]
        assert source["locationType"] == "Secret"
        # Kueue reads the Secret from its own namespace.
        assert secrets[source["location"]].inputs["metadata"]["namespace"] == cv.KUEUE_NAMESPACE
    for cq in kueue_objects(r, "ClusterQueue"):
        names = [c["name"] for c in cq["spec"]["admissionChecksStrategy"]["admissionChecks"]]
        assert names == [cv.MULTIKUEUE_NAME]
    for obj in kueue_objects(r):
        assert validate_kueue(obj) == [], f"{obj['kind']} {obj['metadata']['name']}"
    # And the dispatch objects wait for Kueue like the rest.
    for x in mine(r):
        if x.type.startswith(KUEUE) or x.type == SECRET:
            assert cv.KUEUE_RELEASE_NAME in x.options["dependencies"], x.name


def test_worker_kubeconfigs_stay_secret() -> None:
    r, platform, kubeconfigs = multikueue_render()
    secrets = [x for x in mine(r) if x.type == SECRET]
    assert len(secrets) == len(platform["multiKueue"]["workers"])
    for s in secrets:
        # render masks a Pulumi secret as "[secret]": the value reaches the provider as a secret Output
        # (the SDK marks the whole map that holds it secret, so the key is masked with it).
        assert "data" not in s.inputs
        assert s.inputs["stringData"] in (SECRET_PLACEHOLDER, {cv.MULTIKUEUE_KUBECONFIG_KEY: SECRET_PLACEHOLDER})
        assert s.inputs["metadata"]["name"] != SECRET_PLACEHOLDER
    dump = json.dumps([x.inputs for x in r.resources])
    for value in kubeconfigs.values():
        assert value.splitlines()[-1] not in dump, "a kubeconfig reached the inputs in plaintext"


def test_a_missing_worker_kubeconfig_fails_with_the_config_key() -> None:
    config = copy.deepcopy(stack_doc("local")["config"])
    config["gpu-platform:platform"]["multiKueue"] = {"workers": [{"name": "w1", "kubeconfigSecret": "absentKubeconfig"}]}
    with pytest.raises(Exception, match="absentKubeconfig"):
        render_config(config, stack="local")


# The MultiKueue worker's role: Kueue v0.19.2 site/static/examples/multikueue/create-multikueue-kubeconfig.sh,
# read rule by rule. A job kind is mirrored (create, delete, get, list, watch) and its status read; the
# manager also updates and patches the worker's Workloads and RayClusters (elastic scale-down) and reads its
# ClusterQueues and LocalQueues.
MK_MIRROR = frozenset({"create", "delete", "get", "list", "watch"})
MK_MIRROR_AND_EDIT = MK_MIRROR | {"update", "patch"}
MK_KUEUE_RULES = {
    ("kueue.x-k8s.io", "workloads"): MK_MIRROR_AND_EDIT,
    ("kueue.x-k8s.io", "workloads/status"): frozenset({"get", "patch", "update"}),
    ("kueue.x-k8s.io", "clusterqueues"): frozenset({"get", "list", "watch"}),
    ("kueue.x-k8s.io", "localqueues"): frozenset({"get", "list", "watch"}),
}


def _grants(rules: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], frozenset[str]]:
    out: dict[tuple[str, str], frozenset[str]] = {}
    for rule in rules:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                assert (group, resource) not in out, f"{group}/{resource} granted twice"
                out[(group, resource)] = frozenset(rule["verbs"])
    return out


@background_render()
def local_as_a_multikueue_worker() -> tuple[str, dict[str, Any]]:
    config = copy.deepcopy(stack_doc("local")["config"])
    config[f"{cv.CONFIG_NAMESPACE}:{cv.MULTIKUEUE_ROLE_CONFIG}"] = "worker"
    return "local", config


def test_multikueue_worker_role_is_kueues_reference_role_for_the_enabled_integrations() -> None:
    """The default integrations (the local stack's: a small render) on a worker: exactly the script's rules for
    batch Jobs, JobSets, LeaderWorkerSets, RayJobs, RayClusters and pods (TrainJobs and Deployments have no rule
    of the script's). Before, Workloads and
    RayClusters lacked update and patch (the manager's scale-down of an elastic RayCluster was forbidden on
    the worker) and the queues were unreadable; CronJobs and Deployments, which MultiKueue never dispatches
    (their Jobs and pods it does), were granted."""
    roles = [o for o in local_as_a_multikueue_worker().kubernetes_objects()
             if o["kind"] == "ClusterRole" and o["metadata"]["name"] == cv.MULTIKUEUE_WORKER_CLUSTER_ROLE]
    assert len(roles) == 1
    assert _grants(roles[0]["rules"]) == {
        ("batch", "jobs"): MK_MIRROR, ("batch", "jobs/status"): frozenset({"get"}),
        ("jobset.x-k8s.io", "jobsets"): MK_MIRROR, ("jobset.x-k8s.io", "jobsets/status"): frozenset({"get"}),
        ("leaderworkerset.x-k8s.io", "leaderworkersets"): MK_MIRROR,
        ("leaderworkerset.x-k8s.io", "leaderworkersets/status"): frozenset({"get"}),
        ("ray.io", "rayjobs"): MK_MIRROR, ("ray.io", "rayjobs/status"): frozenset({"get"}),
        ("ray.io", "rayclusters"): MK_MIRROR_AND_EDIT, ("ray.io", "rayclusters/status"): frozenset({"get"}),
        ("", "pods"): MK_MIRROR,
        **MK_KUEUE_RULES,
    }


def test_multikueue_worker_role_covers_every_kind_the_script_grants() -> None:
    """Every framework the script has a rule for, enabled at once, gets that rule and no other."""
    from components.queues.multikueue import multikueue_worker_rules
    from gpu_platform.plan import build_plan
    from gpu_platform.spec import load_stack_config

    doc = copy.deepcopy(stack_doc("prod"))
    doc["config"]["gpu-platform:platform"].setdefault("addons", {}).setdefault("kueue", {})["integrations"] = [
        "batch/job", "pod", "statefulset", "leaderworkerset.x-k8s.io/leaderworkerset", "jobset.x-k8s.io/jobset",
        "kubeflow.org/tfjob", "kubeflow.org/paddlejob", "kubeflow.org/pytorchjob", "kubeflow.org/xgboostjob",
        "kubeflow.org/mpijob", "ray.io/rayjob", "ray.io/raycluster", "ray.io/rayservice",
        "workload.codeflare.dev/appwrapper", "deployment",
    ]
    spec, region = load_stack_config(doc)
    got = _grants(multikueue_worker_rules(build_plan(spec, region, "worker")))
    status = frozenset({"get"})
    assert got == {
        ("batch", "jobs"): MK_MIRROR, ("batch", "jobs/status"): status,
        ("", "pods"): MK_MIRROR,
        ("apps", "statefulsets"): MK_MIRROR, ("apps", "statefulsets/status"): status,
        ("leaderworkerset.x-k8s.io", "leaderworkersets"): MK_MIRROR,
        ("leaderworkerset.x-k8s.io", "leaderworkersets/status"): status,
        ("jobset.x-k8s.io", "jobsets"): MK_MIRROR, ("jobset.x-k8s.io", "jobsets/status"): status,
        **{("kubeflow.org", k): MK_MIRROR for k in ("tfjobs", "paddlejobs", "pytorchjobs", "xgboostjobs", "mpijobs")},
        **{("kubeflow.org", f"{k}/status"): status
           for k in ("tfjobs", "paddlejobs", "pytorchjobs", "xgboostjobs", "mpijobs")},
        ("ray.io", "rayjobs"): MK_MIRROR, ("ray.io", "rayjobs/status"): status,
        ("ray.io", "rayclusters"): MK_MIRROR_AND_EDIT, ("ray.io", "rayclusters/status"): status,
        ("ray.io", "rayservices"): MK_MIRROR, ("ray.io", "rayservices/status"): status,
        ("workload.codeflare.dev", "appwrappers"): MK_MIRROR, ("workload.codeflare.dev", "appwrappers/status"): status,
        **MK_KUEUE_RULES,
    }


@pytest.mark.parametrize("weight", [0, 0.25, 1, 1.5, 2, 0.0001])
def test_fair_sharing_weights_are_exact_quantity_strings(weight: float) -> None:
    """Weights are int-or-string quantities: a JSON float is rejected, so fractions go out as strings
    (canonical where Kubernetes has a suffix for them, so the API server hands back what was sent)."""
    from components.queues import canonical_quantity

    text = canonical_quantity(weight)
    assert isinstance(text, str)
    assert qty(text) == Fraction(str(weight))
    if float(weight * 1000).is_integer():
        assert "." not in text
