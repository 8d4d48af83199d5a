"""The real Pulumi engine, language host, Kubernetes provider and policy analyzer, without a cluster.

Render mode (`renderYamlToDirectory`) needs no API server: what GitOps users hand to Argo CD or Flux.
"""

from __future__ import annotations

import copy
from pathlib import Path

import yaml

from tests.conftest import plan_of, rendered, stack_doc
from tests.realtools import Engine, resources_in_state


def _local_config_without_salt() -> str:
    doc = copy.deepcopy(stack_doc("local"))
    doc.pop("encryptionsalt", None)
    return yaml.safe_dump(doc)


def test_render_mode_up_writes_every_manifest_and_destroy_removes_them(engine: Engine, tmp_path: Path) -> None:
    out = tmp_path / "manifests"
    env = {"GPU_PLATFORM_RENDER_DIR": str(out)}
    # The local stack's config under another stack name: copy it so the repo's file stays untouched.
    config = tmp_path / "Pulumi.render.yaml"
    config.write_text(_local_config_without_salt())
    engine.ensure_stack("render", config)
    first = engine.timed("render-mode up", "up", "--yes", "--stack", "render", "--config-file", str(config), extra_env=env)
    expected = len(rendered("local").kubernetes_objects())
    written = [p for p in out.rglob("*.yaml")]
    docs = [d for p in written for d in yaml.safe_load_all(p.read_text()) if d]
    assert len(docs) == expected, first.stdout[-2000:]
    kinds = {d["kind"] for d in docs}
    assert {"Namespace", "ResourceQuota", "NetworkPolicy", "ClusterQueue", "LocalQueue", "ResourceFlavor"} <= kinds
    again = engine.pulumi("preview", "--expect-no-changes", "--stack", "render", "--config-file", str(config), extra_env=env)
    assert again.returncode == 0
    engine.pulumi("destroy", "--yes", "--stack", "render", "--config-file", str(config), extra_env=env)
    assert resources_in_state(engine, "render") == []
    assert not [p for p in out.rglob("*.yaml")]


def test_broken_config_fails_preview_with_the_spec_error_and_registers_nothing(engine: Engine, tmp_path: Path) -> None:
    doc = copy.deepcopy(stack_doc("local"))
    doc["config"]["gpu-platform:platform"]["teams"][0]["podSecurity"] = "privileged"
    doc["config"]["gpu-platform:platform"]["pools"][1]["sharing"]["replicas"] = 1
    doc.pop("encryptionsalt", None)
    config = tmp_path / "Pulumi.broken.yaml"
    config.write_text(yaml.safe_dump(doc))
    engine.ensure_stack("broken", config)
    result = engine.pulumi("preview", "--stack", "broken", "--config-file", str(config),
                           extra_env={"GPU_PLATFORM_RENDER_DIR": str(tmp_path / "out")}, check=False)
    text = result.stdout + result.stderr
    assert result.returncode != 0
    assert "invalid gpu-platform:platform" in text
    assert "teams[0].podSecurity" in text and "pools[1].sharing" in text
    assert "Traceback" not in text
    # Only the stack itself is in the plan: the program stopped before registering any resource.
    assert "kubernetes:" not in text and "gpu-platform:index" not in text
    assert resources_in_state(engine, "broken") == []


def test_policy_pack_runs_in_the_real_analyzer_and_bites(engine: Engine, tmp_path: Path) -> None:
    """The same pack `check` runs offline: clean on the local stack; a seeded violation fails the preview."""
    env = {"GPU_PLATFORM_RENDER_DIR": str(tmp_path / "out")}
    config = tmp_path / "Pulumi.policy.yaml"
    config.write_text(_local_config_without_salt())
    engine.ensure_stack("policy", config)
    clean = engine.timed("preview --policy-pack", "preview", "--stack", "policy", "--config-file", str(config),
                         "--policy-pack", "policies", extra_env=env)
    assert "mandatory" not in clean.stdout.lower()
    # Seed a violation the spec allows but the pack forbids: require a label no namespace carries.
    pack_config = tmp_path / "policy-config.json"
    pack_config.write_text('{"tenant-namespace-labels": {"requiredLabels": ["gpu-platform.io/data-classification"]}}')
    bitten = engine.pulumi("preview", "--stack", "policy", "--config-file", str(config), "--policy-pack", "policies",
                           "--policy-pack-config", str(pack_config), extra_env=env, check=False)
    text = bitten.stdout + bitten.stderr
    assert bitten.returncode != 0, text[-3000:]
    assert "tenant-namespace-labels" in text and "mandatory" in text.lower()
    assert plan_of("local").teams[0].namespaces[0] in text


def test_the_checkout_stays_clean() -> None:
    """Stacks made by these tests keep their config (and passphrase salt) in temporary files."""
    root = Path(__file__).resolve().parents[2]
    assert sorted(p.name for p in root.glob("Pulumi.*.yaml")) == ["Pulumi.local.yaml", "Pulumi.prod.yaml", "Pulumi.staging.yaml"]
