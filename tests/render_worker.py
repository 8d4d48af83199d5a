"""`python -m tests.render_worker DIR STACK...`: render each stack under mocks, in order, into DIR/<stack>.pickle.

tests/conftest.py starts it when a session will read the shared renders (rendered()), so the four stacks'
renders run on the other core while the test process collects and tests; rendered() loads each pickle
(or renders in-process when the worker is off or failed). Each file appears complete (written, then renamed).
"""

from __future__ import annotations

import copy
import gc
import os
import pickle
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    from components.program import run
    from harness.render import run_program
    from tests.conftest import stack_doc

    out = Path(argv[0])
    for stack in argv[1:]:
        rendered = run_program(run, stack, copy.deepcopy(stack_doc(stack)["config"]))
        tmp = out / f".{stack}.pickle"
        gc.disable()
        tmp.write_bytes(pickle.dumps(rendered, protocol=pickle.HIGHEST_PROTOCOL))
        gc.enable()
        os.replace(tmp, out / f"{stack}.pickle")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
