"""Placeholders refused at deploy (gpu_platform/spec/placeholders.py): `validate --deploy` and the program at
`pulumi up` name every field that still holds the documentation's stand-ins; previews, `plan` and the renders under
mocks keep working on the committed stacks. Worlds: the spec alone, the CLI in-process, and the program under mocks
with `deploying` forced on (what the real engine's `up` sees)."""

from __future__ import annotations

import copy

import pytest

from components import program
from gpu_platform.spec import SpecError
from gpu_platform.spec.placeholders import deploy_problems
from platform_cli.cli import main
from tests.conftest import platform_raw, stack_doc
from tests.unit.foundation.sandbox import SANDBOX_FILE, sandbox_raw


def paths(raw) -> list[str]:
    return [p.path for p in deploy_problems(raw)]


def test_every_placeholder_of_prod_is_named_by_its_field() -> None:
    assert paths(platform_raw("prod")) == [
        "cluster.subnetIds[0]", "cluster.subnetIds[1]", "cluster.identity.oidc.issuerUrl",
        "cluster.identity.platformAdminRoles[0]", "pools[0].capacity.reservationId", "pools[1].capacity.reservationId",
        "teams[0].accessEntries[0].principalArn", "data.bucketPrefix",
    ]


def test_the_message_says_which_pattern_matched() -> None:
    found = {p.path: p.message for p in deploy_problems(platform_raw("staging"))}
    assert found["cluster.subnetIds[0]"].startswith(
        "'subnet-0staging1a' is a placeholder (not an EC2 id (<prefix>- and 8 or 17 hex digits)")
    assert "the AWS documentation account 123456789012" in found["cluster.identity.platformAdminRoles[0]"]
    assert "an example name (example, example.com, acme)" in found["cluster.identity.oidc.issuerUrl"]


def test_the_example_needs_only_its_repository_and_state_bucket() -> None:
    assert paths(sandbox_raw()) == ["cluster.ci.github.repository", "cluster.ci.github.stateBucket"]


def test_real_looking_values_pass() -> None:
    raw = copy.deepcopy(platform_raw("staging"))
    raw["cluster"]["subnetIds"] = ["subnet-0f3a9c2e41b7d6a85", "subnet-1a2b3c4d"]
    raw["cluster"]["identity"] = {"oidc": {"issuerUrl": "https://login.corp.internal", "clientId": "ml"},
                                  "platformAdminRoles": ["arn:aws:iam::210987654321:role/platform-admins"]}
    assert paths(raw) == []


def test_existing_clusters_are_not_checked() -> None:
    """The live tests' stack allows registry.example.com and deploys only Kubernetes objects (a real `up`)."""
    import yaml

    from tests.conftest import ROOT

    live = yaml.safe_load((ROOT / "tests" / "live" / "stack.yaml").read_text())["config"]["gpu-platform:platform"]
    assert live["cluster"]["provider"] == "existing" and "registry.example.com/alpha" in str(live)
    assert paths(live) == [] and paths(platform_raw("local")) == []


def test_validate_deploy_exits_2_naming_each_field(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "--deploy", str(SANDBOX_FILE)]) == 2
    err = capsys.readouterr().err
    assert "cluster.ci.github.repository: 'example-org/gpu-platform' is a placeholder" in err
    assert "cluster.ci.github.stateBucket: 'example-org-pulumi-state' is a placeholder" in err
    assert main(["validate", str(SANDBOX_FILE)]) == 0  # without --deploy: a preview's view


def test_the_program_refuses_them_at_up_before_registering_anything(monkeypatch: pytest.MonkeyPatch) -> None:
    """Mocks with `deploying` forced on, as on the real engine's `up`."""
    from harness.render import run_program

    monkeypatch.setattr(program, "deploying", lambda: True)
    with pytest.raises(Exception) as err:
        run_program(program.run, "staging", copy.deepcopy(stack_doc("staging")["config"]))
    assert "cluster.subnetIds[0]: 'subnet-0staging1a' is a placeholder" in str(err.value)
    assert "cluster.identity.oidc.issuerUrl: 'https://idp.example.com' is a placeholder" in str(err.value)


def test_under_mocks_the_program_is_not_deploying() -> None:
    """What `render`, `check` and the tests run the committed stacks under (preview False, as in `up`)."""
    from harness.render import run_program

    seen: list[bool] = []
    run_program(lambda: seen.append(program.deploying()), "staging", {})
    assert seen == [False]
    with pytest.raises(SpecError):
        program.refuse_placeholders(platform_raw("staging"))
