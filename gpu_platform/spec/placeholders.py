"""Placeholders a stack must not be deployed with: the documentation values the committed stacks carry.

The committed stacks (Pulumi.staging.yaml, Pulumi.prod.yaml) are examples as much as configs: their subnets,
reservations, account and IdP are the documentation's stand-ins, so that previews, `plan`, the policy check and
the tests can run them. Deploying one as it stands would fail late (an EKS call on subnet-0a1) or, worse, point
access at an account that is not yours. `deploy_problems` finds every such value, with its config path and the
pattern it matched; `validate --deploy` and the program at `pulumi up` refuse them (docs/architecture.md,
"Placeholders are refused at deploy, not at preview").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterator

from ..errors import Problem


@dataclass(frozen=True)
class Placeholder:
    name: str
    pattern: re.Pattern[str]


PLACEHOLDERS: tuple[Placeholder, ...] = (
    # The account id AWS's own documentation uses in example ARNs.
    Placeholder("the AWS documentation account 123456789012", re.compile(r"(?<!\d)123456789012(?!\d)")),
    # Names reserved for documentation (RFC 2606: example.com, .org, .net) and the words examples are made of.
    Placeholder("an example name (example, example.com, acme)",
                re.compile(r"(?<![a-z0-9])(?:example|acme)(?![a-z0-9])", re.IGNORECASE)),
    # EC2 ids are a prefix and 8 or 17 lowercase hex digits (EC2 user guide, resource-ids.html); subnet-0a1 and
    # subnet-0staging1a are not ids.
    Placeholder("not an EC2 id (<prefix>- and 8 or 17 hex digits)",
                re.compile(r"^(?:subnet|sg|vpc|cr|lt)-(?![0-9a-f]{8}$|[0-9a-f]{17}$)")),
    # The hex digits counted up or down: cr-0123456789abcdef0, cr-0fedcba9876543210.
    Placeholder("a counting sequence (0123456789abcdef)", re.compile(r"0123456789abcdef|fedcba9876543210")),
)


def _strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _strings(item, f"{path}[{i}]")


def deploy_problems(raw: Any) -> list[Problem]:
    """Every string of an `eks` stack's `gpu-platform:platform` value that matches a placeholder, by config path.

    Only `cluster.provider: eks` stacks: the stand-ins name AWS things (subnets, reservations, accounts, buckets, the
    IdP) that only an eks stack's `up` reaches. An `existing` stack (the local cluster, the live and fault test
    stacks) deploys Kubernetes objects only, where an example registry in an allowlist is harmless."""
    cluster = raw.get("cluster") if isinstance(raw, dict) else None
    if not isinstance(cluster, dict) or cluster.get("provider") != "eks":
        return []
    out: list[Problem] = []
    for path, value in _strings(raw, ""):
        for p in PLACEHOLDERS:
            if p.pattern.search(value):
                out.append(Problem(path, f"{value!r} is a placeholder ({p.name}, /{p.pattern.pattern}/): put your "
                                         "own value here before deploying"))
                break
    return out
