"""Long documents for the pruning benchmarks, built in memory (never written into the repo).

Real: documents of one evals set joined in file order (cycling when the set is too small) until the
text holds at least N Qwen tokens, then cut back to about N tokens at a line end. Synthetic worst cases
are generated from a fixed seed. Data is read by path from shared/evals-data.
"""

from __future__ import annotations

import json
import os
import random
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EVALS_DATA = Path(os.environ.get("CATP_EVALS_DATA", ROOT.parent / "shared" / "evals-data"))
if not EVALS_DATA.is_dir():
    EVALS_DATA = Path("/work/shared/evals-data")

SETS = {
    "cuad": ["cuad.dev.jsonl"],
    "zh": ["cail2019_cjrc.dev.jsonl", "ccks2017_cner.dev.jsonl"],
}
DOMAIN = {"cuad": "legal", "zh": "legal", "huge_line": "legal", "no_punct_en": "legal", "no_punct_zh": "legal",
          "dense_numbers": "finance", "many_cues": "legal"}


@lru_cache(maxsize=None)
def _texts(name: str) -> tuple[str, ...]:
    """The set's documents; the zh set interleaves its files so both kinds appear early."""
    per_file = []
    for fname in SETS[name]:
        with open(EVALS_DATA / fname, encoding="utf-8") as fh:
            per_file.append([json.loads(line)["text"] for line in fh if line.strip()])
    out: list[str] = []
    for i in range(max(len(f) for f in per_file)):
        out.extend(f[i] for f in per_file if i < len(f))
    return tuple(out)


def _counter():
    from catp.tokens import load_token_counter

    return load_token_counter()


def fit(text_parts, tokens: int, sep: str = "\n\n") -> str:
    """Join parts until the text has >= `tokens` tokens, then trim to about `tokens` at a line end."""
    counter = _counter()
    chosen, n = [], 0
    for part in text_parts:
        chosen.append(part)
        n += counter.count(part) + 1
        if n >= tokens:
            break
    text = sep.join(chosen)
    starts = counter.token_starts(text)
    if len(starts) > tokens:
        cut = starts[tokens]
        nl = text.rfind("\n", 0, cut)
        text = text[: nl if nl > cut * 0.9 else cut]
    return text


def _cycle(items):
    while True:
        yield from items


def real(name: str, tokens: int) -> str:
    return fit(_cycle(_texts(name)), tokens)


def _en_words(rng: random.Random, n: int) -> list[str]:
    base = " ".join(_texts("cuad")[:20]).split()
    return [rng.choice(base) for _ in range(n)]


def huge_line(tokens: int, seed: int = 1) -> str:
    """English prose with every newline removed: one line, sentences still punctuated."""
    parts, size = [], 0
    for t in _cycle(_texts("cuad")):
        parts.append(" ".join(t.split()))
        size += len(parts[-1])
        if size > tokens * 5:
            break
    return fit([" ".join(parts)], tokens, sep=" ")


def no_punct_en(tokens: int, seed: int = 2) -> str:
    """One line of English words, no punctuation and no newline at all."""
    rng = random.Random(seed)
    words = [w.strip(".,;:()\"'[]") for w in _en_words(rng, 20_000)]
    words = [w for w in words if w]
    return fit(_cycle([" ".join(words)]), tokens, sep=" ")


def no_punct_zh(tokens: int, seed: int = 3) -> str:
    """One line of Chinese with every punctuation mark and space removed."""
    import regex

    han = regex.sub(r"[^\p{Han}\p{N}]", "", "".join(_texts("zh")[:10]))
    return fit(_cycle([han]), tokens, sep="")


def dense_numbers(tokens: int, seed: int = 4) -> str:
    """Table rows and sentences packed with amounts, dates, percents and plain numbers."""
    rng = random.Random(seed)
    lines = []
    for i in range(40_000):
        kind = i % 3
        if kind == 0:
            lines.append(" | ".join(f"{rng.randint(0, 10**6):,}.{rng.randint(0, 99):02d}" for _ in range(8)))
        elif kind == 1:
            lines.append(f"Revenue rose {rng.randint(1, 99)}.{rng.randint(0, 9)}% to ${rng.randint(1, 10**5):,} million "
                         f"on {rng.choice(['March', 'June', 'July'])} {rng.randint(1, 28)}, {rng.randint(1990, 2030)}; "
                         f"{rng.randint(1, 10**4)} units, {rng.randint(1, 999)} mg, 第{rng.randint(1, 99)}条 "
                         f"{rng.randint(1, 9999)}万元 {rng.randint(2000, 2030)}年{rng.randint(1, 12)}月{rng.randint(1, 28)}日.")
        else:
            lines.append(" ".join(str(rng.randint(0, 10**rng.randint(1, 9))) for _ in range(25)))
    return fit(_cycle(lines), tokens, sep="\n")


def many_cues(tokens: int, seed: int = 5) -> str:
    """Every clause opens with a negation or adversative cue (en and zh)."""
    rng = random.Random(seed)
    en = ["however", "but", "unless", "provided that", "notwithstanding", "subject to", "if", "not", "never",
          "except", "without"]
    zh = ["但是", "然而", "除非", "如果", "不得", "未", "无", "否则", "倘若"]
    words = _en_words(rng, 50_000)
    lines = []
    for i in range(20_000):
        if i % 2:
            lines.append(", ".join(f"{rng.choice(en)} {' '.join(rng.sample(words, 6))}" for _ in range(4)) + ".")
        else:
            lines.append("，".join(f"{rng.choice(zh)}乙方支付违约金{rng.randint(1, 99)}元" for _ in range(4)) + "。")
    return fit(_cycle(lines), tokens, sep="\n")


SYNTHETIC = {"huge_line": huge_line, "no_punct_en": no_punct_en, "no_punct_zh": no_punct_zh,
             "dense_numbers": dense_numbers, "many_cues": many_cues}


def build(kind: str, tokens: int) -> str:
    if kind in SETS:
        return real(kind, tokens)
    return SYNTHETIC[kind](tokens)
