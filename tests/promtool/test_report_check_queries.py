"""`report --check`'s queries through the real promtool: each one, written as a recording rule, parses as PromQL
(a typo would make an input read as missing on every cluster). promtool as in test_promtool.py."""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

from platform_cli import report_check as rc
from tests.conftest import plan_of, require_tools


def test_every_check_query_is_valid_promql(tmp_path: Path) -> None:
    (promtool,) = require_tools("promtool")
    rules = [{"record": f"check:{name}", "expr": expr} for name, expr in rc.queries(plan_of("prod")).items()]
    path = tmp_path / "check.rules.yaml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "report-check", "rules": rules}]}))
    out = subprocess.run([str(promtool), "check", "rules", str(path)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"SUCCESS: {len(rules)} rules found" in out.stdout
