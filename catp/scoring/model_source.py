"""Where a scorer's model comes from, and whether it may be loaded.

* `model` is a local folder, a Hugging Face id or a .gguf file (converted once
  and cached by `catp.scoring.gguf`). Offline first: the local
  cache is tried before the network, and with HF_HUB_OFFLINE set (or
  allow_download=False) only local files are used.
* Weights must be safetensors; pickle formats (.bin, .pt, .pth, .ckpt, .pkl)
  are refused, because loading them can run code. `trust_remote_code` is never
  enabled by catp.
* An optional sha256 manifest (lines `<sha256>  <relative path>`, as written by
  `sha256sum`) is checked before anything is loaded; paths are relative to the
  model folder, and every weight, config and tokenizer file there must be listed.

No torch import here: the remote scorer uses this module too.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from catp.errors import ModelError
from catp.scoring.gguf import gguf_folder
from catp.scoring.manifest import first_line, verify_manifest

DEFAULT_MODEL = "Qwen/Qwen1.5-0.5B"
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl", ".pickle")
# files a loader reads; a manifest must cover each of these found in the folder
DOWNLOAD_PATTERNS = ["*.json", "*.safetensors", "*.txt", "*.model", "*.tiktoken", "*.jinja"]
TOKENIZER_PATTERNS = ["*.json", "*.txt", "*.model", "*.tiktoken", "*.jinja"]
_TRUE = {"1", "on", "yes", "true"}
_HUB_ID = re.compile(r"^[A-Za-z0-9_-][\w.-]*(/[A-Za-z0-9_-][\w.-]*)?$")


def is_gguf(model: object) -> bool:
    """True when `model` names a .gguf file (catp.scoring.gguf converts it)."""
    text = str(model)
    return text.lower().endswith(".gguf") and Path(text).expanduser().is_file()


def hub_offline() -> bool:
    """HF_HUB_OFFLINE read now (huggingface_hub reads it once, at import)."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in _TRUE


def resolve_model(model: str, *, allow_download: bool | None = None, tokenizer_only: bool = False) -> Path:
    """The local folder holding `model`; download it only when allowed.

    allow_download=None means: download if HF_HUB_OFFLINE is not set.
    tokenizer_only: the remote scorer needs the tokenizer files, not the weights.
    """
    patterns = TOKENIZER_PATTERNS if tokenizer_only else DOWNLOAD_PATTERNS
    if not model or not str(model).strip():
        raise ModelError("no scorer model given")
    model = str(model)
    path = Path(model).expanduser()
    if path.is_dir():
        return path
    if is_gguf(path):  # converted once, cached: a model folder
        return gguf_folder(path)
    if path.exists():
        raise ModelError(f"scorer model {model} is a file, not a model folder")
    if not _HUB_ID.match(model):
        raise ModelError(f"scorer model folder {model} does not exist")
    try:
        from huggingface_hub import snapshot_download
        from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError
    except ImportError:  # pragma: no cover - huggingface_hub comes with transformers
        raise ModelError(f"scorer model {model} is not a folder, and huggingface_hub is not installed") from None
    try:
        folder = Path(snapshot_download(model, allow_patterns=patterns, local_files_only=True))
        wanted = ["tokenizer.json"] if tokenizer_only else ["*.safetensors", "*.bin"]
        if any(any(folder.glob(w)) for w in wanted):
            return folder
    except (LocalEntryNotFoundError, FileNotFoundError, ValueError, OSError):
        pass
    offline = hub_offline()
    if offline or allow_download is False:
        why = "HF_HUB_OFFLINE is set" if offline else "downloads are off"
        raise ModelError(
            f"scorer model {model} is not in the local Hugging Face cache and {why}; "
            f"download it first (huggingface-cli download {model}) or give a local folder"
        )
    try:
        return Path(snapshot_download(model, allow_patterns=patterns))
    except HfHubHTTPError as err:
        raise ModelError(f"cannot download scorer model {model}: {first_line(err)}") from None
    except (OSError, ValueError) as err:  # network down, bad id
        raise ModelError(f"cannot download scorer model {model} ({first_line(err)}); without network, "
                         "set HF_HUB_OFFLINE=1 and give a local model folder") from None


def check_weights(folder: Path) -> list[Path]:
    """The safetensors weight files in `folder`; refuse pickle-only models."""
    if not (folder / "config.json").is_file():
        raise ModelError(f"{folder} is not a model folder (no config.json)")
    weights = sorted(folder.glob("*.safetensors"))
    if not weights:
        pickles = sorted(p.name for p in folder.iterdir() if p.suffix in PICKLE_SUFFIXES)
        if pickles:
            raise ModelError(
                f"refusing pickle weights in {folder} ({', '.join(pickles[:3])}): "
                "only safetensors are loaded; convert the model to safetensors"
            )
        raise ModelError(f"no safetensors weights in {folder}")
    return weights


def prepare_model(model: str, *, sha256: str | Path | None = None,
                  allow_download: bool | None = None) -> Path:
    """Resolve, refuse pickles, check the manifest: the folder that may now be loaded.
    A .gguf file is checked against `sha256` (a digest or a manifest naming it) before its
    conversion is used (catp.scoring.gguf)."""
    if is_gguf(model):
        folder = gguf_folder(model, sha256=sha256)
        check_weights(folder)
        return folder
    folder = resolve_model(model, allow_download=allow_download)
    check_weights(folder)
    if sha256:
        verify_manifest(folder, sha256)
    return folder


def load_tokenizer(folder: Path):
    """The model's fast tokenizer (`tokenizers.Tokenizer`), from tokenizer.json."""
    from tokenizers import Tokenizer

    path = folder / "tokenizer.json"
    if not path.is_file():
        raise ModelError(f"no tokenizer.json in {folder}: the scorer needs the model's fast tokenizer")
    try:
        tok = Tokenizer.from_file(str(path))
    except Exception as err:  # tokenizers raises a bare Exception on bad files
        raise ModelError(f"cannot read {path}: {first_line(err)}") from None
    tok.no_truncation()
    tok.no_padding()
    return tok
