"""`python -m platform_cli deployer-policy --stack S`: the IAM policy whoever runs `pulumi up` for S needs, derived
from what the stack makes rather than written by hand.

The stack is rendered under Pulumi's mocks (the same program `pulumi up` runs, harness/render.py); every AWS
resource type it registers and every data source it reads is looked up in platform_cli/iam_actions.py, and the
actions are printed as one policy document, a statement per AWS service. A type missing from that table is
refused by name (exit 2): a new resource in the program fails here, and in its test, until its actions are
written down, instead of failing a deploy with AccessDenied.

The document covers AWS only: the Kubernetes side is authorized by the deployer's EKS access entry (the cluster
creator on a created cluster, `cluster.ci`'s deploy role, or one you add), and the state backend and secrets
provider by their own statements (docs/tasks/deploy-fresh-aws-account.md).
"""

from __future__ import annotations

import argparse
import json
from typing import Any, Iterable

from gpu_platform.errors import InputError

from .iam_actions import INVOKE_ACTIONS, NOT_AWS_PREFIXES, RESOURCE_ACTIONS, SERVICE_PAGES

POLICY_VERSION = "2012-10-17"
# A customer managed policy holds at most 6,144 characters, whitespace not counted (IAM user guide,
# reference_iam-quotas.html, "IAM and AWS STS character limits").
MANAGED_POLICY_MAX_CHARS = 6144
AWS_PROVIDER = "pulumi:providers:aws"


def _is_aws(type_: str) -> bool:
    return not type_.startswith(NOT_AWS_PREFIXES)


def unmapped(types: Iterable[str], invokes: Iterable[str]) -> list[str]:
    """The AWS resource types and data sources the table has no entry for."""
    missing = [t for t in set(types) if _is_aws(t) and t not in RESOURCE_ACTIONS]
    missing += [f"{t} (data source)" for t in set(invokes) if _is_aws(t) and t not in INVOKE_ACTIONS]
    return sorted(missing)


def actions_for(types: Iterable[str], invokes: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """Each AWS type and data source the stack uses -> its actions; refuses any the table lacks."""
    types, invokes = set(types), set(invokes)
    missing = unmapped(types, invokes)
    if missing:
        raise InputError(
            "no IAM actions known for " + ", ".join(missing) + ": add each to platform_cli/iam_actions.py "
            "(RESOURCE_ACTIONS or INVOKE_ACTIONS) with the calls its provider implementation makes")
    out = {t: RESOURCE_ACTIONS[t].actions for t in types if t in RESOURCE_ACTIONS}
    out.update({t: INVOKE_ACTIONS[t].actions for t in invokes if t in INVOKE_ACTIONS})
    return dict(sorted(out.items()))


def policy_document(types: Iterable[str], invokes: Iterable[str]) -> dict[str, Any]:
    """One Allow statement per service (Sid: the service), actions sorted, on every resource: the stack names
    its resources at deploy time (generated suffixes, ids), so the statements scope by action, not by ARN."""
    by_service: dict[str, set[str]] = {}
    for actions in actions_for(types, invokes).values():
        for action in actions:
            by_service.setdefault(action.split(":", 1)[0], set()).add(action)
    unknown = sorted(set(by_service) - set(SERVICE_PAGES))
    if unknown:
        raise InputError(f"iam_actions.py uses services without a Service Authorization Reference page: {unknown}")
    return {"Version": POLICY_VERSION, "Statement": [
        {"Sid": service.capitalize(), "Effect": "Allow", "Action": sorted(actions), "Resource": "*"}
        for service, actions in sorted(by_service.items())
    ]}


def policy_size(doc: dict[str, Any]) -> int:
    """The characters IAM counts against a managed policy's limit (whitespace excluded)."""
    return len(json.dumps(doc, separators=(",", ":")))


def of_render(rendered: Any) -> tuple[set[str], set[str]]:
    """The resource types (custom resources and providers) and data sources of a render."""
    types = {r.type for r in rendered.resources if r.custom}
    invokes = set(getattr(rendered, "invokes", ()))
    # The default AWS provider is not registered as a resource, but it starts with a call of its own.
    if any(t.startswith("aws:") for t in (*types, *invokes)):
        types.add(AWS_PROVIDER)
    return types, invokes


def run(args: argparse.Namespace) -> int:
    from .stack_render import render_stack

    types, invokes = of_render(render_stack(args.stack))
    if args.explain:
        for type_, actions in actions_for(types, invokes).items():
            entry = RESOURCE_ACTIONS.get(type_) or INVOKE_ACTIONS[type_]
            print(f"{type_}: {', '.join(actions) or '(no AWS call)'}  [{entry.cite}]")
        return 0
    doc = policy_document(types, invokes)
    print(json.dumps(doc, indent=2))
    size = policy_size(doc)
    if size > MANAGED_POLICY_MAX_CHARS:
        import sys

        print(f"warning: {size} characters, over the {MANAGED_POLICY_MAX_CHARS} a managed policy holds: split the "
              "statements over two policies", file=sys.stderr)
    return 0
