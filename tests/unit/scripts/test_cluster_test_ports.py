"""Every cluster test module starts its clusters on ports of its own: the lanes of scripts/run-tests run them side by
side, and two modules naming one port fail each other (fresh-clone CI at dc71de2: the real node's etcd on the start
tests' 21890). World: the test sources only."""

from __future__ import annotations

import re
from collections import defaultdict

from tests.conftest import ROOT

PORT_LINE = re.compile(r"PORTS?\b.*=")
LITERAL = re.compile(r"\"(\d{5})\"")


def test_no_two_cluster_test_modules_name_the_same_port() -> None:
    files = defaultdict(set)
    for path in sorted((ROOT / "tests").rglob("*.py")):
        if "unit" in path.relative_to(ROOT / "tests").parts[:1]:
            continue
        for line in path.read_text().splitlines():
            if PORT_LINE.search(line):
                for port in LITERAL.findall(line):
                    files[port].add(path.relative_to(ROOT).as_posix())
    assert len(files) >= 20, sorted(files)   # every suite's apiserver and etcd ports were found
    assert {port: sorted(f) for port, f in files.items() if len(f) > 1} == {}
