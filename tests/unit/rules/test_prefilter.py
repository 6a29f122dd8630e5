"""The anchor prefilter is exact: a regex rule scanned only around its anchors (catp/rules/prefilter.py)
gives the very spans of a scan of the whole text.

- on real documents of every evals set, for every rule of every built-in domain that uses anchors
  (pos rules too: their anchor scan, an IGNORECASE alternation, is the same Aho-Corasick pass);
- on made-up texts full of barriers, anchors and case oddities (ſ, K, İ, ı, µ), and without any
  punctuation (windows);
- each way forced: stretches between barriers, windows around anchors;
- the pattern analysis (barriers, anchors that cover every match) on small cases;
- `catp rules lint` on anchors.
(No timing here: speed is measured in benchmarks/.)
"""

from __future__ import annotations

import json
import random

import pytest
import regex
from _samples import evals_data

from catp.detect import detect_langs
from catp.document import Analysis
from catp.rules.check import anchor_problems
from catp.rules.context import MatchContext
from catp.rules.loader import BUILTIN_DOMAINS, load_text
from catp.rules.catalog import resolve
from catp.rules.prefilter import AnchorIndex, anchors_cover, barriers, fold_anchor, window_widths, windows
from catp.rules.registry import RuleRegistry
from catp.segment import segment

SETS = ("cuad", "cail2019_cjrc", "ccks2017_cner", "tatqa", "e3c_en")
DOCS_PER_SET = 15


def registries() -> list[RuleRegistry]:
    return [RuleRegistry(resolve(d)) for d in BUILTIN_DOMAINS]


def anchored(registry: RuleRegistry):
    """The regex rules that use the prefilter and the pos rules (whose anchor scan uses the same pass)."""
    return [c for c in registry.rules if getattr(c.matcher, "prefiltered", False) or getattr(c.matcher, "ac_anchors", False)]


MODES = ("always", "auto", "stretches", "windows")


def spans_both_ways(registry: RuleRegistry, text: str):
    """{rule id: (spans scanning the whole text, [spans through the prefilter, for each of MODES])}
    for the anchored rules ("stretches"/"windows" force a way; without it the rule scans whole)."""
    lang, langs = detect_langs(text)
    doc = segment(Analysis(text=text, lang=lang))
    whole = MatchContext(doc, [], prefilter="never")
    index = registry.anchor_index({"en", "zh"})
    contexts = [MatchContext(doc, [], prefilter=mode, anchor_index=index) for mode in MODES]
    out = {}
    for c in anchored(registry):
        out[c.rule.id] = (list(c.matcher.spans(whole)), [list(c.matcher.spans(ctx)) for ctx in contexts])
    return out


def test_the_built_in_rules_use_anchors():
    used = {c.rule.id for r in registries() for c in anchored(r)}
    assert {"date.period_en", "entity.org_zh", "legal.clause.license_grant", "medical.diagnosis",
            "fact.verb_object_en", "fact.verb_object_zh"} <= used
    windowed = {c.rule.id for r in registries() for c in anchored(r) if getattr(c.matcher, "widths", None)}
    assert {"entity.org_zh", "entity.defined_term_zh"} <= windowed


def _eval_texts():
    folder = evals_data()
    if folder is None:
        pytest.skip("the shared evals data is missing (set CATP_EVALS_DATA)")
    for name in SETS:
        with open(folder / f"{name}.dev.jsonl", encoding="utf-8") as fh:
            for n, line in enumerate(fh):
                if n == DOCS_PER_SET:
                    break
                rec = json.loads(line)
                yield f"{name}/{rec['id']}", rec["text"]


@pytest.mark.slow
def test_prefiltered_spans_equal_whole_scans_on_real_documents():
    regs = registries()
    checked = spans = 0
    for key, text in _eval_texts():
        for registry in regs:
            for rule_id, (whole, filtered) in spans_both_ways(registry, text).items():
                for mode, spans_ in zip(MODES, filtered):
                    assert spans_ == whole, f"{key}: {rule_id} ({mode})"
                checked += 1
                spans += len(whole)
    assert checked > 500 and spans > 10_000


PIECES = ["shall", "SHALL", "ſhall", "not", "may not", "Licensor hereby grants", "a license", "licence",
          "thirty (30) days", "12 months", "YEAR", "\n", "\n\n", ". ", "; ", "! ", "?", "。", "；",
          "北京星河科技有限公司", "（以下简称\"甲方\"）", "人民法院", "三百万元", "百分之五", "15%", "Ｋ",
          "K", "İ", "ı", "µg/L", "5 mmol/L", "诊断为高血压", "allergic to", "governed by", "GOVERNED\nBY",
          "royalty", "Effective Date", "dated 5", "March 5, 2024", "$5,000", "competition", "(", ")", " ",
          "word", "the", "and", "Inc.", "ten", "often", "\u2029", "\r\n", "x10^9/L", "×10^9/L",
          "repay", "repays", "REPAID", "terminate", "paid", "renews", "乙方应向甲方支付违约金", "给予抗感染治疗", "支付",
          "preterminated", "licensee", "grant", "Pay", "，", ", ", ":", "：", "、", "（以下简称：乙方）", "甲方,"]


def test_prefiltered_spans_equal_whole_scans_on_made_up_texts():
    rng = random.Random(6)
    regs = registries()
    no_punct = [p for p in PIECES if not any(ch in p for ch in "\n.;!?。；，,、：:\u2029\r")]
    for n in range(400):
        pieces = PIECES if n % 2 else no_punct
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 80))).strip() or "x"
        for registry in regs:
            for rule_id, (whole, filtered) in spans_both_ways(registry, text).items():
                for mode, spans_ in zip(MODES, filtered):
                    assert spans_ == whole, f"{rule_id} ({mode}): {text!r}"


def test_case_folding_finds_what_ignorecase_matches():
    """'ſ' matches 's', 'K' (Kelvin) 'k', 'İ' and 'ı' 'i' under IGNORECASE; the anchor pass sees them."""
    rules = load_text("""
name: t
rules:
  - id: t.shall
    kind: regex
    category: obligation
    priority: 50
    flags: [IGNORECASE]
    pattern: 'shall|kick|is'
    anchors: [shall, kick, is]
    examples: {match: [shall]}
""")
    (compiled,) = RuleRegistry([rules]).rules
    assert compiled.matcher.barriers
    text = "ſhall\nKİcK\nıs\nSHALL\nnothing"
    doc = segment(Analysis(text=text, lang="en"))
    whole = [text[s.start:s.end] for s in compiled.matcher.spans(MatchContext(doc, [], prefilter="never"))]
    for mode in MODES:
        filtered = [text[s.start:s.end] for s in compiled.matcher.spans(MatchContext(doc, [], prefilter=mode))]
        assert whole == filtered, mode
    assert "ſhall" in whole and "SHALL" in whole


def test_folding_covers_every_character_that_ignorecase_matches():
    """For each character of every built-in anchor, every code point that `regex` matches to it
    (IGNORECASE) folds to the anchor's folded character in the anchor pass."""
    anchor_chars = sorted({ch for r in registries() for c in r.rules for a in getattr(c.rule, "anchors", [])
                           for ch in a} | set("abcdefghijklmnopqrstuvwxyz"))
    any_of = regex.compile("[" + "".join(regex.escape(ch) for ch in anchor_chars) + "]", regex.IGNORECASE)
    index = AnchorIndex({"all": anchor_chars})
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        ch = chr(cp)
        if not any_of.fullmatch(ch):
            continue
        for a in anchor_chars:
            if regex.fullmatch(regex.escape(a), ch, regex.IGNORECASE):
                low = ch.lower() if len(ch.lower()) == 1 else ch
                seen = low.translate(index.exceptions)
                assert seen == fold_anchor(a), (hex(cp), a, seen)


ALL = "\n\r\u2029\u3002\uff1b;.!?\uff01\uff1f\uff0c,\u3001\uff1a:"  # prefilter.BARRIER_CANDIDATES
NOT_SPACE = ALL.replace("\n", "").replace("\r", "").replace("\u2029", "")


@pytest.mark.parametrize("pattern, flags, expected", [
    (r"shall", 0, ALL),
    (r"shall\s+pay", 0, NOT_SPACE),
    (r"shall[^.]{0,9}pay", 0, "."),
    (r"shall(?!\s)", 0, NOT_SPACE),  # a lookahead may not peek at a barrier
    (r"(?<=\s)shall", 0, ALL),  # lookbehind: pos does not cut
    (r"shall.pay", 0, "\n"),  # . takes anything but a newline
    (r"shall.pay", regex.DOTALL, ""),
    (r"shall[,:]?pay", 0, ALL.replace(",", "").replace(":", "")),
    (r"shall$", regex.MULTILINE, ""),  # $ would match at endpos
    (r"shall\Z", 0, ""),
    (r"(?:shall)?", 0, ""),  # can match the empty string
    (r"[\p{Han}]+公司", 0, ALL),
    (r"\p{L}+公司", 0, ""),  # a property the analysis does not know
])
def test_barriers(pattern, flags, expected):
    assert barriers(pattern, flags) == expected


@pytest.mark.parametrize("pattern, flags, expected", [
    (r"[\p{Han}A-Z]{2,16}?(?:有限公司|公司)", 0, (20, 0)),
    (r"shall(?=\s+pay)", 0, None),  # an unbounded lookahead
    (r"shall(?=\s{1,3}pay)", 0, (5, 6)),
    (r"(?<=\s+)shall", 0, (5, 0)),  # lookbehinds need no room
    (r"shall\s+pay", 0, None),
    (r"shall.{0,9}", regex.DOTALL, (14, 0)),
    (r"shall$", 0, None),
    (r"(?m)shall$", 0, None),
    (r"(?:shall)?", 0, None),
])
def test_window_widths(pattern, flags, expected):
    assert window_widths(pattern, flags) == expected


def test_windows_merge_and_clip():
    assert windows(100, [0, 10, 50, 98], 5, 6) == [(0, 16), (45, 56), (93, 100)]
    assert windows(100, [], 5, 6) == []
    assert windows(100, [0, 10, 50, 98], 5, 6, join=30) == [(0, 56), (93, 100)]  # 45 - 16 < 30 <= 93 - 56


@pytest.mark.parametrize("pattern, anchors, expected", [
    ("governed by|governing law", ["governed by", "governing law"], None),  # re factors 'govern' out
    ("hereby grants?|sublicens", ["grant", "licen"], True),
    ("hereby grants?|exclusive[^.]{0,9}licen[cs]e", ["grant", "licen"], True),
    ("hereby grants?|exclusive", ["grant", "licen"], False),
    ("[$€£]\\d", ["$", "€", "£"], True),
    ("[$€]\\d", ["$"], False),
    ("(?:a|b)?shall", ["shall"], True),
    ("(?:shall)?pay", ["shall"], False),
    ("(?:shall){1,3}", ["shall"], True),
    ("SHALL", ["shall"], True),
])
def test_anchors_cover(pattern, anchors, expected):
    got = anchors_cover(pattern, regex.IGNORECASE, anchors)
    if expected is None:  # the check is conservative: it may not see that the anchors cover
        assert got in (True, False)
    else:
        assert got is expected


def _rule(anchors: str, pattern: str = "hereby grants?|sublicens", match: str = "Licensor hereby grants") -> object:
    loaded = load_text(f"""
name: t
rules:
  - id: t.r
    kind: regex
    category: clause
    priority: 50
    flags: [IGNORECASE]
    pattern: '{pattern}'
    anchors: {anchors}
    examples: {{match: ["{match}"]}}
""")
    return loaded.ruleset.rules[0]


def test_lint_anchors():
    assert anchor_problems(_rule("[grant, licen]")) == []
    assert "holds none of the anchors" in anchor_problems(_rule("[grant, licen]", match="sublet"))[0]
    assert "may hold none of the anchors" in anchor_problems(_rule("[grant]"))[0]
    assert "not used" in anchor_problems(_rule("[grant, licen]", pattern="hereby grants?$|sublicens"))[0]


def test_anchors_that_do_not_cover_are_not_used():
    rule = _rule("[grant]")
    (compiled,) = RuleRegistry([load_text(f"name: t\nrules: [{json.dumps(rule.model_dump())}]")]).rules
    assert compiled.matcher.barriers == "" and not compiled.matcher.prefiltered
    doc = segment(Analysis(text="Licensor sublicenses it.", lang="en"))
    assert list(compiled.matcher.spans(MatchContext(doc, [], prefilter="always")))


def test_built_in_rules_lint_clean_on_anchors():
    problems = [f"{c.rule.id}: {p}" for r in registries() for c in r.rules for p in anchor_problems(c.rule)]
    assert not problems


def test_rule_examples_give_the_same_spans_both_ways():
    """`catp rules test` runs the examples through the prefilter; a whole scan finds the same."""
    from catp.tokens import load_token_counter

    tokens = load_token_counter()
    for registry in registries():
        for c in anchored(registry):
            for text in c.rule.examples.match + c.rule.examples.no_match:
                doc = segment(Analysis(text=text, lang=detect_langs(text)[0]))
                starts = tokens.token_starts(text)
                whole = list(c.matcher.spans(MatchContext(doc, starts, prefilter="never")))
                assert list(c.matcher.spans(MatchContext(doc, starts, prefilter="always"))) == whole, (c.rule.id, text)


def test_windows_find_a_longest_match_that_ends_with_its_anchor():
    """A match of the longest width W whose anchor is its last character starts W - 1 before the hit:
    the first start a window must hold."""
    from catp.rules.matchers import build_matcher
    from catp.rules.schema import RegexRule

    rule = RegexRule(id="t.tail", kind="regex", category="t", priority=60, pattern=r"\d{4}-?K", anchors=["k"])
    matcher = build_matcher(rule, {})
    assert matcher.widths == (6, 0)
    text = "x 1234-K, 5678K and 12-K; 99999-K.\n" * 40
    doc = segment(Analysis(text=text, lang="en"))
    whole = [(s.start, s.end) for s in matcher.spans(MatchContext(doc, [], prefilter="never"))]
    windowed = [(s.start, s.end) for s in matcher.spans(MatchContext(doc, [], prefilter="windows"))]
    assert windowed == whole and len(whole) == 120
