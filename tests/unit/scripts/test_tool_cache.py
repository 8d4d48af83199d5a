"""The tool cache's location is spelled once per language and both spellings agree.

The shell's is scripts/tools/lib.sh (`TC_CACHE`, sourced by every script), Python's localcluster/toolcache.py;
GitHub Actions cannot source either, so the workflows' cache paths are held to the same default here.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from localcluster import toolcache

ROOT = Path(__file__).resolve().parents[3]
LIB = ROOT / "scripts" / "tools" / "lib.sh"
# Where the default may be written: the two definitions, the workflows (which cannot source them) and prose.
ALLOWED = {Path("scripts/tools/lib.sh"), Path("localcluster/toolcache.py"), Path("tests/unit/scripts/test_tool_cache.py")}
SPELLING = re.compile(r"\.cache/gpu-platform|\"\.cache\"\s*/\s*\"gpu-platform\"|GPU_PLATFORM_CACHE:-")


def _environment(home: Path, cache: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != toolcache.CACHE_ENV}
    env["HOME"] = str(home)
    if cache is not None:
        env[toolcache.CACHE_ENV] = cache
    return env


def _shell_cache(env: dict[str, str]) -> str:
    return subprocess.run(["bash", "-c", f'. "{LIB}"; echo "$TC_CACHE"'], env=env, check=True,
                          capture_output=True, text=True).stdout.strip()


def _python_cache(env: dict[str, str]) -> str:
    return subprocess.run([sys.executable, "-c", "from localcluster.toolcache import CACHE; print(CACHE)"],
                          env=env, cwd=ROOT, check=True, capture_output=True, text=True).stdout.strip()


@pytest.mark.parametrize("cache", [None, "/somewhere/else"], ids=["default", "from-the-environment"])
def test_the_shell_and_python_find_the_same_cache(tmp_path: Path, cache: str | None) -> None:
    env = _environment(tmp_path, cache)
    assert _shell_cache(env) == _python_cache(env) == (cache or str(tmp_path / ".cache" / "gpu-platform"))


def test_the_workflows_cache_the_default_location() -> None:
    default = "~/" + toolcache.DEFAULT_CACHE.relative_to(Path.home()).as_posix()
    paths = [m for wf in (ROOT / ".github" / "workflows").glob("*.yml")
             for m in re.findall(r"^\s*path:\s*(~/\.cache/\S+)\s*$", wf.read_text(), re.M)]
    assert paths and set(paths) == {default}


def test_no_other_file_spells_the_cache_location() -> None:
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, check=True, capture_output=True, text=True).stdout
    spelled = []
    for name in tracked.split():
        path = Path(name)
        if path in ALLOWED or path.suffix == ".md" or path.parts[:2] == (".github", "workflows"):
            continue
        try:
            text = (ROOT / path).read_text()
        except (UnicodeDecodeError, OSError):
            continue
        if SPELLING.search(text):
            spelled.append(name)
    assert spelled == [], "read the tool cache from scripts/tools/lib.sh or localcluster/toolcache.py"
