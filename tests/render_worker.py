"""`python -m tests.render_worker DIR STACK...`: render each stack under mocks, in order, into DIR/<stack>.pickle;
then each stack variant on standard input, one JSON object a line ({"name", "stack", "config", "parts"}: a
tests/conftest.py background_render), into DIR/<name>.pickle, until standard input ends. A variant with "parts"
true is a split environment: its pickle holds harness.split.render_parts' dict of the parts' renders.

tests/conftest.py starts it when a session will read the shared renders (rendered()), so the four stacks'
renders run on the other core while the test process collects and tests; once collection has found the
variants the collected modules declare, it writes their configs and closes standard input. rendered() and the
variants load each pickle (or render in-process when the worker is off, or when a render failed: then
DIR/<name>.pickle.failed appears instead). Each file appears complete (written, then renamed).
"""

from __future__ import annotations

import copy
import gc
import itertools
import json
import os
import pickle
import sys
from pathlib import Path
from typing import Any


def pickle_name(name: str) -> str:
    """The file of a stack's or variant's render (a variant's name holds ':' and '[')."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name) + ".pickle"


def failed_name(name: str) -> str:
    """The file that says the render of a stack or variant failed."""
    return pickle_name(name) + ".failed"


def _write(out: Path, name: str, rendered: Any) -> None:
    tmp = out / f".{pickle_name(name)}"
    gc.disable()
    tmp.write_bytes(pickle.dumps(rendered, protocol=pickle.HIGHEST_PROTOCOL))
    gc.enable()
    os.replace(tmp, out / pickle_name(name))


def main(argv: list[str]) -> int:
    from tests.conftest import render_variant, stack_doc

    out = Path(argv[0])
    jobs = ((stack, stack, copy.deepcopy(stack_doc(stack)["config"]), False) for stack in argv[1:])
    variants = (json.loads(line) for line in sys.stdin if line.strip())
    failed = 0
    for name, stack, config, split in itertools.chain(
            jobs, ((v["name"], v["stack"], v["config"], v.get("parts", False)) for v in variants)):
        try:
            rendered = render_variant(stack, config, split)
        except Exception:  # the test process renders it again, and its test reports the error
            (out / failed_name(name)).touch()
            failed += 1
            continue
        _write(out, name, rendered)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
