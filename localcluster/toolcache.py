"""Where the Go-built tools live: the tool cache outside the repository, and its bin directory.

Python's one spelling of it (the shell's is scripts/tools/lib.sh, `TC_CACHE`); the local cluster's
sessions, the test tools and the benchmarks read it here, and tests/unit/scripts/test_tool_cache.py holds both
spellings, and the CI workflows' cache paths, to the same default.
"""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "GPU_PLATFORM_CACHE"
DEFAULT_CACHE = Path.home() / ".cache" / "gpu-platform"
CACHE = Path(os.environ.get(CACHE_ENV, DEFAULT_CACHE))
BIN = CACHE / "bin"
# The reference CRDs (scripts/tools/reference.sh --crds: the tests' upstream copies, <cache>/src/reference/crds):
# the local cluster installs them when they are there; nothing it runs needs them.
REFERENCE_CRDS = CACHE / "src" / "reference" / "crds"
