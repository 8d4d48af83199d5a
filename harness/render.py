"""Run the real program under Pulumi's mocks and record what it registers.

This is how `python -m platform_cli render`, the component tests, the policy `check` and the
benchmarks see the program's resources without an engine or a cloud: the same `program.run()` that
`pulumi up` executes, with a monitor that records every registration (type, name, parent, inputs,
options) instead of sending it anywhere.
"""

from __future__ import annotations

import gc
import hashlib
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pulumi
from pulumi.runtime import mocks as pmocks, resource as sdk_resource, rpc
from pulumi.runtime.proto import source_pb2
from pulumi.runtime.stack import run_pulumi_func, wait_for_rpcs
from pulumi.runtime.sync_await import _sync_await

from gpu_platform.audit import REQUIRED_EKS_LOG_TYPES

SECRET_PLACEHOLDER = "[secret]"


@dataclass
class Recorded:
    type: str
    name: str
    parent: str | None
    custom: bool
    inputs: dict[str, Any]
    options: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "name": self.name, "parent": self.parent, "inputs": self.inputs}


def _integral(value: Any) -> Any:
    """Mocks hand numbers back through protobuf as floats; render writes integral ones as ints."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _integral(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_integral(v) for v in value]
    return value


def _mask_secrets(value: Any) -> Any:
    if isinstance(value, dict):
        if value.get(rpc._special_sig_key) == rpc._special_secret_sig:
            return SECRET_PLACEHOLDER
        return {k: _mask_secrets(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask_secrets(v) for v in value]
    return value


# Offline, no subnet has a zone: each stack's cluster.subnetIds are taken to be in its region's zones
# a, b, c... in the order listed (prod and staging name theirs that way), unless a subnet is in this table
# (tests set it to put subnets elsewhere). A zone-filtered lookup answers as EC2 does: only the subnets in
# that zone, possibly none.
SUBNET_ZONES: dict[str, str] = {}


def _subnet_zone(subnet: str, candidates: list[str], region: str) -> str:
    if subnet in SUBNET_ZONES:
        return SUBNET_ZONES[subnet]
    return f"{region}{'abcdefghij'[candidates.index(subnet) % 10]}"


# What a StackReference reads under the mocks, by the referenced stack's name (organization/project/stack):
# a split environment's tenant stacks read their platform stack's exports (tests set it).
STACK_OUTPUTS: dict[str, dict[str, Any]] = {}


# The VPC of the subnets a stack is given by id (cluster.subnetIds) and of the cluster it looks up: offline there
# is one such VPC. A subnet made here is in the VPC its inputs name.
EXISTING_VPC_ID = "vpc-00000000"


class _Mocks(pmocks.Mocks):
    def __init__(self) -> None:
        # The subnets made in this render (their mock ids) and their VPCs, for a created cluster's vpcConfig.
        self.subnet_vpcs: dict[str, str] = {}

    def new_resource(self, args: pmocks.MockResourceArgs):
        state = dict(args.inputs)
        if args.typ == "pulumi:pulumi:StackReference":
            name = str(args.inputs.get("name") or args.resource_id)
            return f"{args.name}_id", {"name": name, "outputs": STACK_OUTPUTS.get(name, {}), "secretOutputNames": []}
        if args.typ == "aws:ec2/launchTemplate:LaunchTemplate":
            # What the AWS provider returns for a new template: its first version (an integer).
            state.setdefault("latestVersion", 1)
            state.setdefault("defaultVersion", 1)
        if args.typ == "aws:eks/nodeGroup:NodeGroup":
            # EKS names a managed node group's Auto Scaling group eks-<node group>-<uuid>.
            uid = hashlib.sha256(args.name.encode()).hexdigest()
            state.setdefault("resources", [{"autoscalingGroups": [
                {"name": f"eks-{state.get('nodeGroupName', args.name)}-{uid[:8]}-{uid[8:12]}-{uid[12:16]}-"
                         f"{uid[16:20]}-{uid[20:32]}"}], "remoteAccessSecurityGroupId": ""}])
        if args.typ == "aws:ec2/subnet:Subnet":
            self.subnet_vpcs[f"{args.name}-id"] = state.get("vpcId") or EXISTING_VPC_ID
        if args.typ == "aws:eks/cluster:Cluster":
            state["vpcConfig"] = self._created_cluster_vpc_config(state.get("vpcConfig") or {},
                                                                  state.get("name") or args.name)
        if args.typ == "aws:ec2/securityGroup:SecurityGroup":
            # EC2's form (sg- and hex digits), which the EC2NodeClass CRD's securityGroupSelectorTerms[].id checks.
            return f"sg-{hashlib.sha256(args.name.encode()).hexdigest()[:17]}", state
        # The Kubernetes provider's ids are namespace/name; give outputs an id the program can use.
        return f"{args.name}-id", state

    def _created_cluster_vpc_config(self, given: dict[str, Any], name: str) -> dict[str, Any]:
        """A created cluster's vpcConfig as EKS answers it: the inputs, the VPC its subnets are in and the cluster
        security group EKS makes (pulumi/pulumi-aws v7.51.1, sdk/python/pulumi_aws/eks/outputs.py, ClusterVpcConfig:
        vpc_id "ID of the VPC associated with your cluster", cluster_security_group_id "Cluster security group
        that is created by Amazon EKS for the cluster"). A cluster has one VPC (EKS user guide, network-reqs.html:
        "When you create a cluster, you specify a VPC and at least two subnets"), so subnets of two are refused."""
        vpcs = {self.subnet_vpcs.get(s, EXISTING_VPC_ID) for s in given.get("subnetIds") or []}
        if len(vpcs) > 1:
            raise ValueError(f"EKS cluster {name}: subnets in more than one VPC ({', '.join(sorted(vpcs))})")
        uid = hashlib.sha256(f"eks-cluster-sg-{name}".encode()).hexdigest()
        return {**given, "vpcId": vpcs.pop() if vpcs else EXISTING_VPC_ID, "clusterSecurityGroupId": f"sg-{uid[:17]}"}

    def call(self, args: pmocks.MockCallArgs):
        # A plain dict is a result without failures (MockMonitor.Invoke iterates a tuple's failures).
        if args.token == "aws:eks/getCluster:getCluster":
            name = args.args.get("name", "cluster")
            return {
                "name": name,
                "arn": f"arn:aws:eks:us-east-1:000000000000:cluster/{name}",
                "endpoint": "https://example.eks.amazonaws.com",
                "certificateAuthority": {"data": "Q0E="},
                # The data source's real shape: a list of certificate authorities (pulumi_aws GetClusterResult).
                "certificateAuthorities": [{"data": "Q0E="}],
                "version": "1.33",
                "vpcConfig": {
                    "clusterSecurityGroupId": "sg-00000000",
                    "controlPlaneEgressMode": "AWS_MANAGED",
                    "endpointPrivateAccess": True,
                    "endpointPublicAccess": True,
                    "publicAccessCidrs": ["0.0.0.0/0"],
                    "securityGroupIds": [],
                    "subnetIds": [],
                    "vpcId": EXISTING_VPC_ID,
                },
                "roleArn": "arn:aws:iam::000000000000:role/eks-cluster",
                # An attached cluster whose owner keeps the audit trail on (node_pools.warn_missing_logs).
                "enabledClusterLogTypes": list(REQUIRED_EKS_LOG_TYPES),
            }
        if args.token == "aws:index/getCallerIdentity:getCallerIdentity":
            return {"accountId": "000000000000", "arn": "arn:aws:iam::000000000000:user/render", "userId": "render",
                    "id": "000000000000"}
        if args.token == "aws:iam/getPolicyDocument:getPolicyDocument":
            return {"json": json.dumps({"Version": "2012-10-17", "Statement": []})}
        if args.token == "aws:ec2/getSubnets:getSubnets":
            filters = {f.get("name"): list(f.get("values") or []) for f in args.args.get("filters") or []}
            region = pulumi.Config("aws").get("region") or "us-east-1"
            candidates = filters.get("subnet-id", ["subnet-00000000"])
            zones = filters.get("availability-zone")
            ids = [s for s in candidates if zones is None or _subnet_zone(s, candidates, region) in zones]
            return {"id": region, "ids": ids, "filters": args.args.get("filters") or []}
        return {}


class _RecordingMonitor(pmocks.MockMonitor):
    def __init__(self, mocks: pmocks.Mocks):
        super().__init__(mocks)
        self.recorded: list[Recorded] = []
        # The data sources the program read (deployer-policy maps them to the IAM actions they call).
        self.invoked: set[str] = set()

    def Invoke(self, request):
        self.invoked.add(request.tok)
        return super().Invoke(request)

    def RegisterResource(self, request):
        response = super().RegisterResource(request)
        if request.type != "pulumi:pulumi:Stack":
            raw = rpc.deserialize_properties(request.object, keep_internal=True)
            parent = request.parent.split("::")[-1] if request.parent else None
            if parent and request.parent.split("::")[2].endswith("pulumi:pulumi:Stack"):
                parent = None
            self.recorded.append(Recorded(
                type=request.type,
                name=request.name,
                parent=parent,
                custom=bool(request.custom),
                inputs=_integral(_mask_secrets(raw)),
                options={
                    "protect": bool(request.protect),
                    "retainOnDelete": bool(request.retainOnDelete),
                    "ignoreChanges": list(request.ignoreChanges),
                    "replaceOnChanges": list(request.replaceOnChanges),
                    "deleteBeforeReplace": bool(request.deleteBeforeReplace),
                    "dependencies": sorted(u.split("::")[-1] for u in request.dependencies),
                    "provider": request.provider.split("::")[-1] if request.provider else None,
                    "additionalSecretOutputs": list(request.additionalSecretOutputs),
                },
            ))
        return response


@dataclass
class Rendered:
    resources: list[Recorded]
    invokes: frozenset[str] = frozenset()

    @property
    def custom(self) -> list[Recorded]:
        return sorted((r for r in self.resources if r.custom), key=lambda r: (r.type, r.name))

    def by_type(self, type_: str) -> list[Recorded]:
        return [r for r in self.custom if r.type == type_]

    def one(self, type_: str, name: str) -> Recorded:
        found = [r for r in self.resources if r.type == type_ and r.name == name]
        if len(found) != 1:
            raise KeyError(f"{len(found)} resources of type {type_} named {name}")
        return found[0]

    def kubernetes_objects(self) -> list[dict[str, Any]]:
        """The Kubernetes objects (apiVersion, kind, metadata, ...) among the custom resources."""
        out = []
        for r in self.custom:
            if r.type.startswith("kubernetes:") and "apiVersion" in r.inputs and "kind" in r.inputs:
                obj = {k: v for k, v in r.inputs.items() if not k.startswith("__")}
                out.append(obj)
        return out


def run_program(
    program: Callable[[], None],
    stack: str,
    config: dict[str, Any],
    project: str = "gpu-platform",
) -> Rendered:
    """Run `program` under mocks with the given stack config (keys like `gpu-platform:platform`).

    The cyclic garbage collector is paused meanwhile: the SDK keeps every resource (and its outputs)
    alive until the program ends, so a collection frees next to nothing, while each full pass walks
    the whole, growing heap. With it on, collection was ~70% of a render's time and made the time grow
    faster than the stack (100 teams 6.8 s, 1000 teams 80 s; paused: 2.8 s and 29 s, peak memory ~15%
    higher at 1000 teams; bench/program_cost.py, docs/performance.md)."""
    monitor = _RecordingMonitor(_Mocks())
    pmocks.set_mocks(_Mocks(), project=project, stack=stack, preview=False, monitor=monitor)
    pulumi.runtime.set_all_config(
        {k: v if isinstance(v, str) else json.dumps(v) for k, v in config.items()},
        secret_keys=[],
    )
    collecting = gc.isenabled()
    gc.disable()
    stack_trace = sdk_resource._get_stack_trace
    sdk_resource._get_stack_trace = _no_stack_trace
    try:
        _sync_await(run_pulumi_func(program))
        _sync_await(wait_for_rpcs())
    finally:
        sdk_resource._get_stack_trace = stack_trace
        if collecting:
            gc.enable()
        pulumi.runtime.set_all_config({}, secret_keys=[])
    return Rendered(resources=monitor.recorded, invokes=frozenset(monitor.invoked))


def _no_stack_trace() -> source_pb2.StackTrace:
    """What run_program registers each resource with in place of the SDK's stack trace: none.

    The SDK walks the whole Python stack for every resource (traceback.extract_stack, a stat of each frame's
    file) to send the engine the resource's source position (pulumi 3.260.0, constraints.txt:
    pulumi/runtime/resource.py, register_resource and read_resource fill RegisterResourceRequest's
    sourcePosition and stackTrace from _get_stack_trace()). The mock monitor reads neither
    (pulumi/runtime/mocks.py, MockMonitor.RegisterResource) and nor does _RecordingMonitor, so a render
    without them records the same resources; it took a fifth of a render's time (prod: 1.43 s -> 1.16 s CPU)."""
    return source_pb2.StackTrace()


def write(rendered: Rendered, out: Path) -> tuple[Path, int]:
    """resources.json (sorted custom resources) and manifests/<kind>-<namespace>-<name>.yaml."""
    import yaml

    out.mkdir(parents=True, exist_ok=True)
    resources = [r.to_json() for r in rendered.custom]
    path = out / "resources.json"
    path.write_text(json.dumps(resources, indent=2, sort_keys=True) + "\n")
    manifests = out / "manifests"
    if manifests.exists():
        for old in manifests.glob("*.yaml"):
            old.unlink()
    manifests.mkdir(exist_ok=True)
    for obj in rendered.kubernetes_objects():
        meta = obj.get("metadata") or {}
        parts = [obj["kind"].lower(), meta.get("namespace") or "cluster", meta.get("name") or "unnamed"]
        safe = "_".join(parts).replace(":", "-").replace("/", "-")
        (manifests / (safe + ".yaml")).write_text(
            yaml.safe_dump(obj, sort_keys=True, default_flow_style=False)
        )
    return path, len(resources)


def stack_config(stack: str, root: Path | None = None) -> dict[str, Any]:
    import yaml

    root = root or Path(os.environ.get("GPU_PLATFORM_ROOT", Path(__file__).resolve().parent.parent))
    path = Path(stack) if stack.endswith((".yaml", ".yml")) else root / f"Pulumi.{stack}.yaml"  # a stack file by path
    doc = yaml.safe_load(path.read_text()) or {}
    return dict(doc.get("config") or {})
