""".ci/setup-vllm.sh installs catp's runtime dependencies into the vLLM venv: the list comes from pyproject.toml
through an inline Python snippet. The snippet is run here against pyproject.toml (the script itself takes
minutes), and every extra the script names must exist in pyproject.toml."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = (ROOT / ".ci" / "setup-vllm.sh").read_text(encoding="utf-8")
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _deps_snippet() -> str:
    """The heredoc that `mapfile -t deps` reads."""
    match = re.search(r"mapfile -t deps < <\(\"\$PY\" - \"\$REPO/pyproject.toml\" <<'EOF'\n(.*?)\nEOF\n", SCRIPT, re.S)
    assert match, "setup-vllm.sh: the snippet that reads catp's dependencies from pyproject.toml is not found"
    return match.group(1)


def test_setup_vllm_installs_exactly_catps_runtime_dependencies():
    done = subprocess.run([sys.executable, "-", str(ROOT / "pyproject.toml")], input=_deps_snippet(),
                          capture_output=True, text=True, check=True)
    assert done.stdout.splitlines() == PROJECT["dependencies"]
    # the script's check imports spacy next to catp: spaCy must be among what it installs
    assert "import spacy" in SCRIPT and any(d.startswith("spacy") for d in PROJECT["dependencies"])


def test_setup_vllm_names_no_extra_that_pyproject_lacks():
    extras = set(PROJECT["optional-dependencies"])
    named = set(re.findall(r"`(\w+)` extra|catp\[(\w+)\]|\.get\(\"(\w+)\"", SCRIPT))
    named = {name for groups in named for name in groups if name}
    assert not named - extras, f"setup-vllm.sh names extras that pyproject.toml does not have: {named - extras}"
