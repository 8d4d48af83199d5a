"""The pack served for real: `python -m pulumi.policy <engine> policies` (what the engine's
pulumi-analyzer-policy-python runs) starts the analyzer's gRPC server from policies/__main__.py, and this
test talks to it over the analyzer protocol the engine uses, with properties as the engine encodes them
(protobuf Structs, unknowns as sentinels). What it reports must be what the offline check reports.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any, Iterator

import grpc
import pytest
from google.protobuf import empty_pb2, json_format, struct_pb2
from pulumi.runtime.proto import analyzer_pb2 as pb, analyzer_pb2_grpc as pb_grpc
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE

from gpu_platform import conventions as cv
from policies.gpu_policies.offline import check_resources
from policies.gpu_policies.pack import PACK_NAME, POLICIES

from tests.conftest import ROOT
from tests.policy.helpers import NAMESPACE, urn, world

MANDATORY = pb.EnforcementLevel.Value("MANDATORY")


@pytest.fixture(scope="module")
def analyzer() -> Iterator[pb_grpc.AnalyzerStub]:
    # The engine address is only used to report logs; nothing here logs.
    proc = subprocess.Popen([sys.executable, "-u", "-m", "pulumi.policy", "127.0.0.1:1", "policies"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        port = proc.stdout.readline().strip()
        assert port.isdigit(), f"the pack did not start: {port!r} {proc.stderr.read() if proc.poll() is not None else ''}"
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        grpc.channel_ready_future(channel).result(timeout=30)
        yield pb_grpc.AnalyzerStub(channel)
        channel.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def struct(value: dict[str, Any]) -> struct_pb2.Struct:
    s = struct_pb2.Struct()
    s.update(value)
    return s


def test_info_lists_every_policy_with_its_level_and_config(analyzer) -> None:
    info = analyzer.GetAnalyzerInfo(empty_pb2.Empty())
    assert info.name == PACK_NAME and info.supportsConfig
    served = {p.name: p for p in info.policies}
    assert set(served) == {p.name for p in POLICIES}
    for p in POLICIES:
        assert served[p.name].enforcementLevel == pb.EnforcementLevel.Value(p.enforcement_level.name)
        if p.config_schema is not None:
            schema = json_format.MessageToDict(served[p.name].configSchema)
            assert schema["properties"].keys() == p.config_schema.properties.keys()
            assert all("default" in v for v in schema["properties"].values())


def test_unknown_value_is_a_mandatory_diagnostic(analyzer) -> None:
    """During preview a value the rule needs is unknown: a mandatory diagnostic, not an advisory skip."""
    props = {"apiVersion": "v1", "kind": "Namespace",
             "metadata": {"name": "team-x", "labels": {cv.TEAM: UNKNOWN_STRING_VALUE}}}
    response = analyzer.Analyze(pb.AnalyzeRequest(type=NAMESPACE, name="ns", urn=urn(NAMESPACE, "ns"),
                                                  properties=struct(props)))
    ours = [d for d in response.diagnostics if d.policyName == "tenant-namespace-labels"]
    assert ours and all(d.enforcementLevel == MANDATORY for d in ours)
    assert any("cannot be verified" in d.message for d in ours)


def test_served_pack_reports_what_the_offline_check_reports(analyzer) -> None:
    """A world with seeded violations, analyzed resource by resource and as a stack over gRPC, gives the
    same (rule, resource) pairs as check_resources."""
    resources = world()
    ns = next(r for r in resources if r["name"] == "ns-alpha")["inputs"]["metadata"]["labels"]
    del ns[cv.COST_CENTER]
    resources = [r for r in resources if r["name"] != "deny-beta"]
    served = set()
    for r in resources:
        response = analyzer.Analyze(pb.AnalyzeRequest(type=r["type"], name=r["name"], urn=urn(r["type"], r["name"]),
                                                      properties=struct(json.loads(json.dumps(r["inputs"])))))
        served |= {(d.policyName, urn(r["type"], r["name"])) for d in response.diagnostics}
    stack = analyzer.AnalyzeStack(pb.AnalyzeStackRequest(resources=[
        pb.AnalyzerResource(type=r["type"], name=r["name"], urn=urn(r["type"], r["name"]), properties=struct(r["inputs"]))
        for r in resources]))
    served |= {(d.policyName, d.urn) for d in stack.diagnostics}
    offline = {(v.rule, v.urn) for v in check_resources(resources, stack="test")}
    assert served == offline
    assert ("tenant-namespace-labels", urn(NAMESPACE, "ns-alpha")) in served
    assert ("namespace-default-deny", urn(NAMESPACE, "ns-beta")) in served


def test_configure_sets_levels_and_properties(analyzer) -> None:
    """The engine's Configure call: per-policy enforcement level and properties reach the rules."""
    config = {p.name: pb.PolicyConfig(enforcementLevel=pb.EnforcementLevel.Value(p.enforcement_level.name))
              for p in POLICIES}
    config["tenant-namespace-labels"] = pb.PolicyConfig(
        enforcementLevel=pb.EnforcementLevel.Value("ADVISORY"),
        properties=struct({"requiredLabels": [f"{cv.PREFIX}/owner"], "systemNamespaces": []}))
    analyzer.Configure(pb.ConfigureAnalyzerRequest(policyConfig=config))
    try:
        props = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-x", "labels": {}}}
        response = analyzer.Analyze(pb.AnalyzeRequest(type=NAMESPACE, name="ns", urn=urn(NAMESPACE, "ns"),
                                                      properties=struct(props)))
        ours = [d for d in response.diagnostics if d.policyName == "tenant-namespace-labels"]
        assert len(ours) == 1 and ours[0].enforcementLevel == pb.EnforcementLevel.Value("ADVISORY")
        assert f"{cv.PREFIX}/owner" in ours[0].message and cv.TEAM not in ours[0].message
    finally:
        analyzer.Configure(pb.ConfigureAnalyzerRequest(policyConfig={}))
