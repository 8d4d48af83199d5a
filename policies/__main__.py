"""Entry point the policy analyzer runs (`python -m pulumi.policy <engine> policies`): build the pack, nothing else.

The analyzer runs this directory with the project's virtualenv (PulumiPolicy.yaml) but only this directory
on sys.path, so the repository root goes first to make `gpu_platform` and `policies` importable.
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from policies.gpu_policies.pack import build_pack  # noqa: E402

build_pack()
