"""The conventions are one package of modules by purpose (gpu_platform/conventions/), and callers still write
`from gpu_platform import conventions as cv` and `cv.NAME`: every name of every module is the package's, and
each is defined in exactly one module (spelled once, the point of the conventions)."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

from gpu_platform import conventions as cv


def submodules() -> dict[str, object]:
    return {info.name: importlib.import_module(f"{cv.__name__}.{info.name}")
            for info in pkgutil.iter_modules(cv.__path__)}


def defined_names(module: object) -> set[str]:
    """The public names a module's own top-level statements bind (not what it imports from a sibling)."""
    tree = ast.parse(Path(module.__file__).read_text())  # type: ignore[attr-defined]
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return {n for n in names if not n.startswith("_")}


def test_the_package_reexports_every_name_of_every_module() -> None:
    missing = sorted(f"{name}.{n}" for name, m in submodules().items() for n in defined_names(m)
                     if getattr(cv, n, None) is not getattr(m, n))
    assert missing == []


def test_each_name_is_defined_in_one_module_only() -> None:
    seen: dict[str, str] = {}
    twice = []
    for name, m in sorted(submodules().items()):
        for n in sorted(defined_names(m)):
            if n in seen:
                twice.append(f"{n} in {seen[n]} and {name}")
            seen.setdefault(n, name)
    assert twice == []


def test_names_read_as_before_through_the_package() -> None:
    """One name from each purpose, read as every caller reads it."""
    assert cv.CONFIG_KEY == "gpu-platform:platform"
    assert cv.EXACT_VERSION.match("v0.19.2") and not cv.EXACT_VERSION.match("0.19")
    assert cv.POOL == "gpu-platform.io/pool"
    assert cv.sharing_value("mig", "1g.10gb") == "mig-1g.10gb"
    assert cv.FLAVOR_CAPACITY_ANNOTATION == "gpu-platform.io/capacity-units"
    assert cv.GPU_TOLERATION == {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    assert cv.psa_labels("baseline", "restricted", "v1.33")["pod-security.kubernetes.io/enforce"] == "baseline"
    assert "kube-system" in cv.RESERVED_NAMESPACES and cv.KUBE_SYSTEM_NAMESPACE == "kube-system"
    assert cv.KUEUE_API_VERSION == "kueue.x-k8s.io/v1beta2"
    assert cv.priority_class_name("system-critical") == "gpu-platform-system-critical"
    assert cv.KUEUE_INTEGRATION_APIS[cv.FRAMEWORK_JOBSET] == (("jobset.x-k8s.io", "v1alpha2", "jobsets", "JobSet"),)
    assert cv.TENANT_ADMIN_CLUSTER_ROLE == "gpu-platform:tenant-admin"
    assert cv.uses_kuberay(["batch/job", "ray.io/rayjob"]) and cv.RAY_DASHBOARD_PORT == 8265
    assert cv.mig_config_name("1g.10gb") == "all-1g.10gb" and cv.EFA_DEVICE_PLUGIN_NAMESPACE == "kube-system"
    assert cv.node_group_name("prod", "train") == "prod-train" and cv.TAG_ENVIRONMENT == "gpu-platform.io/environment"
    assert cv.RESERVED_CAPACITY_TYPES == ("capacity-block", "capacity-reservation")
    assert cv.karpenter_rule_name("prod", "spot") == "prod-karpenter-spot"
    assert cv.cluster_autoscaler_cluster_tag("prod") == "k8s.io/cluster-autoscaler/prod"
    assert cv.team_bucket_name("acme-ml", "alpha") == "acme-ml-alpha"
    assert cv.SIM_JOB_LABEL == "sim.gpu-platform.io/job"
