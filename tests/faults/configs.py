"""The platform configs the fault tests and bench/faults.py switch a stack between, and the stacks made of them.

Two stacks, one at a time on one cluster (they would share the platform's cluster-scoped objects):
  local  the `local` stack's config (Pulumi.local.yaml), run as the throwaway stack is run
         (PULUMI_SKIP_CHECKPOINTS=true, scripts/pulumi-env); about 80 objects
  ckpt   a synthetic platform (bench/synth.py) with checkpoints, as staging and prod run: N teams (20 teams
         is 300+ objects), and a MultiKueue worker whose kubeconfig is a secret config value
Each comes as A, B (A plus three teams, some quotas changed: an `up` between them creates, updates and
deletes) and B2 (B with the added teams' quotas changed: a later change of objects adopted after a kill).
"""

from __future__ import annotations

import copy
import subprocess
from pathlib import Path
from typing import Any

import yaml

from bench.synth import platform
from platform_cli.inventory import declared_objects
from tests.conftest import platform_raw
from tests.faults import scenarios as F
from tests.realtools import BIN, Cluster, Engine

SECRET_KEY = "gpu-platform:worker1Kubeconfig"
NO_ADDONS = {"gpuOperator": {"install": False}, "kueue": {"install": False, "integrations": ["batch/job"]},
             "monitoring": {"install": False}, "efaDevicePlugin": {"install": False}}


def local_configs() -> dict[str, dict[str, Any]]:
    a = platform_raw("local")
    b = copy.deepcopy(a)
    # The notebooks pool has 56 units: vision 28 + nlp 28 in A; 14 + 21 + three new teams of 7 in B.
    b["teams"][0]["quotas"]["notebooks"]["units"] = 14
    b["teams"][1]["quotas"]["notebooks"]["units"] = 21
    for i in range(3):
        b["teams"].append({"name": f"extra-{i}", "costCenter": f"cc-90{i}",
                           "groups": {"admin": [f"extra-{i}-leads"], "member": [f"extra-{i}-engineers"], "viewer": []},
                           "quotas": {"notebooks": {"units": 7}}})
    b2 = copy.deepcopy(b)
    b2["teams"][-3]["quotas"]["notebooks"]["units"] = 5
    b2["teams"][-2]["quotas"]["notebooks"]["units"] = 9
    return {"A": a, "B": b, "B2": b2}


def ckpt_configs(teams: int) -> dict[str, dict[str, Any]]:
    def synth(n: int) -> dict[str, Any]:
        p = platform(n)
        p["addons"] = copy.deepcopy(NO_ADDONS)
        p["multiKueue"] = {"workers": [{"name": "worker-1", "kubeconfigSecret": SECRET_KEY.split(":", 1)[1]}]}
        return p

    a = synth(teams)
    b = synth(teams + 3)
    for t in b["teams"][: teams // 2]:   # updates besides the creates
        for q in t["quotas"].values():
            q["borrowingLimit"] = 4
    b2 = copy.deepcopy(b)
    for t in b2["teams"][-3:]:
        for q in t["quotas"].values():
            q["borrowingLimit"] = 2
    return {"A": a, "B": b, "B2": b2}


def kubectl_of(c: Cluster):
    """kubectl as the cluster's admin, for the scenarios and the inventory."""

    def kubectl(*args: str) -> subprocess.CompletedProcess:
        return c.kubectl(*args)
    return kubectl


def make_stack(engine: Engine, cluster: Cluster, tmp: Path, name: str, configs: dict, skip_checkpoints: bool,
           secret_config: dict | None = None) -> F.StackRig:
    """Stack NAME in ENGINE's backend, its config file in TMP (config A first), targeting CLUSTER."""
    config_file = tmp / f"Pulumi.{name}.yaml"
    config_file.write_text(yaml.safe_dump({"config": {"gpu-platform:platform": configs["A"]}}, sort_keys=False))
    engine.ensure_stack(name, config_file)
    env = {**engine.env, "KUBECONFIG": str(cluster.kubeconfig)}
    if skip_checkpoints:
        env["PULUMI_SKIP_CHECKPOINTS"] = "true"   # as scripts/pulumi-env runs the throwaway local stack
    extra = secret_config or {}
    declared = {label: declared_objects({"gpu-platform:platform": p, **extra}) for label, p in configs.items()}
    return F.StackRig(name, config_file, str(BIN / "pulumi"), env, kubectl_of(cluster), configs, declared)
