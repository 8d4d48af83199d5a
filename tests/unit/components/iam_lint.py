"""IAM documents linted by parliament (PyPI, duo-labs): actions that exist, resource ARNs of the format their
actions take, condition keys that apply; shared by the data path's and the autoscaler's IAM tests."""

from __future__ import annotations

import json
from typing import Any


def parliament_findings(document: dict[str, Any]) -> list[tuple[str, Any]]:
    """parliament's findings on `document` as (issue, detail); [] for a clean document."""
    from parliament import analyze_policy_string

    policy = analyze_policy_string(json.dumps(document), ignore_private_auditors=True)
    return [(f.issue, f.detail) for f in policy.findings]
