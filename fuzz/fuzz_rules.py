"""Coverage-guided fuzzing of rule files (atheris / libFuzzer): YAML -> schema -> compiled matchers -> spans.

Half the inputs are raw fuzzed text parsed as a rule file (the YAML parser, safe_load, error line
numbers); the other half fill a valid rule skeleton with fuzzed values (kind, pattern, flags, group,
phrases, window, anchors, tokens...) so that compilation and matching are reached. Rule sets that load
run over a small zh/en document with a short regex timeout. A `CatpError` (a RuleError naming file,
line and rule) is an expected outcome; any other exception is a crash.

    python fuzz/fuzz_rules.py -atheris_runs=100000 -max_len=512 -artifact_prefix=/tmp/fz/ /tmp/fz/rules

docs/reliability.md records the runs.
"""

from __future__ import annotations

import json
import sys

import atheris

with atheris.instrument_imports(include=["catp"]):
    from catp.annotate import annotate
    from catp.document import Document
    from catp.errors import CatpError
    from catp.rules import pos, validators  # noqa: F401  (imported lazily by matchers; instrument them too)
    from catp.rules.loader import load_text
    from catp.rules.registry import RuleRegistry
    from catp.segment import segment
    from catp.tokens import load_token_counter

TEXT = ("第五条 违约责任\n甲方应于2024年3月5日前支付违约金三百万元。但是，乙方不得转让本合同，否则赔偿。\n"
        "ARTICLE 7 TERMINATION\nThe Licensee shall not pay $5,000 unless notified. Mr. Smith agreed on Jan. 5, 2024.\n"
        "项目 | 2024年 | 2023年\n- an item; aaaaaaaaaaaaaaaaaaaaaaaab\n")
TOKEN_STARTS = load_token_counter().token_starts(TEXT)
KINDS = ["regex", "phrases", "cue_window", "pos", "heading", "nonsense"]
FLAGS = ["IGNORECASE", "MULTILINE", "DOTALL", "VERBOSE", "ASCII"]
FIELDS = ["group", "validate_with", "window_tokens", "until", "include_cue", "case_sensitive", "extend",
          "action", "lang", "examples", "colour"]


def fuzzed_rule(fdp: atheris.FuzzedDataProvider) -> str:
    """A rule file from a valid skeleton with fuzzed values, written as JSON (valid YAML). Mostly valid
    (so compilation and matching are reached), sometimes broken on purpose (so are the error paths)."""
    short = lambda n=24: fdp.ConsumeUnicodeNoSurrogates(fdp.ConsumeIntInRange(0, n))  # noqa: E731
    odd = lambda: fdp.ConsumeIntInRange(0, 9) == 0  # noqa: E731  (one time in ten)
    kind = KINDS[fdp.ConsumeIntInRange(0, 5)] if odd() else KINDS[fdp.ConsumeIntInRange(0, 4)]
    rule: dict = {"id": short(12) if odd() else "fz.rule", "kind": kind, "category": short(8) or "x",
                  "priority": fdp.ConsumeIntInRange(-5, 105) if odd() else fdp.ConsumeIntInRange(0, 100)}
    if kind in ("regex", "cue_window", "heading") or odd():
        rule["pattern"] = short(40)
        if fdp.ConsumeBool():
            rule["flags"] = [FLAGS[fdp.ConsumeIntInRange(0, 4)] for _ in range(fdp.ConsumeIntInRange(0, 3))]
    if kind == "phrases":
        rule["phrases"] = [short(10) for _ in range(fdp.ConsumeIntInRange(0, 4))]
    if kind == "pos":
        rule["anchors"] = [short(6) for _ in range(fdp.ConsumeIntInRange(0, 3))]
        rule["tokens"] = [{"pos": [short(3)], "words": [short(4)] if fdp.ConsumeBool() else [],
                           "shape": ["alpha", "capitalized", "digit", "any", None][fdp.ConsumeIntInRange(0, 4)],
                           "optional": fdp.ConsumeBool()} for _ in range(fdp.ConsumeIntInRange(0, 3))]
    if fdp.ConsumeBool():
        rule["lang"] = [["zh"], ["en"], ["en", "zh"]][fdp.ConsumeIntInRange(0, 2)]
    for _ in range(fdp.ConsumeIntInRange(0, 2)):  # kind-specific knobs, and sometimes junk
        field = FIELDS[fdp.ConsumeIntInRange(0, len(FIELDS) - 1)]
        choice = fdp.ConsumeIntInRange(0, 3)
        rule[field] = [fdp.ConsumeIntInRange(-3, 5000), short(8), fdp.ConsumeBool(), [short(5)]][choice]
    return json.dumps({"name": "fz", "rules": [rule]}, ensure_ascii=not odd())


def one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    raw = fuzzed_rule(fdp) if fdp.ConsumeBool() else fdp.ConsumeUnicodeNoSurrogates(fdp.remaining_bytes())
    try:
        registry = RuleRegistry([load_text(raw, "fuzz.yaml")],
                                cue_window_tokens=fdp.ConsumeIntInRange(1, 60) if fdp.ConsumeBool() else None)
    except CatpError as exc:
        assert str(exc).startswith("fuzz.yaml"), f"a rule error must name the file: {exc}"
        return
    for lang in ("zh", "en"):
        doc = segment(Document(text=TEXT, lang=lang))
        annotate(doc, registry, TOKEN_STARTS, langs={lang}, regex_timeout=0.02)
        for span in doc.spans:
            assert 0 <= span.start <= span.end <= len(TEXT), "span outside the text"
        assert len(doc.unit_priority) == len(doc.units)


def main() -> None:
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
