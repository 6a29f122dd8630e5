"""annotate.py: rules -> spans -> per-unit priority / rules / deleted / boost / value."""

from __future__ import annotations

import textwrap

import pytest

from catp.annotate import annotate
from catp.select.policy import fact_weight
from catp.document import Action, Analysis
from catp.rules.loader import load_text
from catp.rules.catalog import resolve
from catp.rules.registry import RuleRegistry
from catp.segment import segment
from catp.tokens import load_token_counter

RULES = textwrap.dedent("""\
    name: t
    rules:
      - id: t.money
        kind: regex
        category: amount
        priority: 80
        pattern: '\\$\\d+'
      - id: t.digit
        kind: regex
        category: number
        priority: 60
        pattern: '\\d+'
      - id: t.boiler
        kind: phrases
        category: boilerplate
        priority: 50
        action: delete
        phrases: ["for the avoidance of doubt"]
      - id: t.boost
        kind: regex
        category: term
        priority: 40
        action: boost
        pattern: 'Licensee'
      - id: t.zh_only
        kind: regex
        category: number
        priority: 90
        lang: [zh]
        pattern: '\\d+'
    """)


def run(text: str, rules: str = RULES, langs=frozenset({"en"}), timeout: float = 2.0) -> Analysis:
    doc = Analysis(text=text, lang=sorted(langs)[0])
    segment(doc)
    registry = RuleRegistry([load_text(rules, "t.yaml")])
    return annotate(doc, registry, load_token_counter().token_starts(text), langs=set(langs), regex_timeout=timeout)


def unit_index(doc: Analysis, needle: str) -> int:
    return next(i for i, u in enumerate(doc.units) if needle in doc.unit_text(u))


def test_spans_are_sorted_and_labelled():
    doc = run("The Licensee pays $500 in 3 parts. Nothing else happens here.")
    keys = [(s.start, s.end, s.rule_id) for s in doc.spans]
    assert keys == sorted(keys)
    by_rule = {s.rule_id: doc.text[s.start : s.end] for s in doc.spans}
    assert by_rule["t.money"] == "$500" and by_rule["t.boost"] == "Licensee"
    assert {doc.text[s.start : s.end] for s in doc.spans if s.rule_id == "t.digit"} == {"500", "3"}
    assert all(s.action is Action.PROTECT for s in doc.spans if s.category in ("amount", "number"))


def test_unit_priority_is_the_strongest_protecting_rule():
    doc = run("The Licensee pays $500 in 3 parts. Nothing else happens here.")
    i, j = unit_index(doc, "$500"), unit_index(doc, "Nothing")
    assert doc.columns.priority[i] == 80
    assert set(doc.columns.rules[i]) == {"t.money", "t.digit", "t.boost"}
    assert doc.columns.value[i] == pytest.approx(fact_weight(80) + 2 * fact_weight(60))
    assert doc.columns.boost[i] == 40
    assert (doc.columns.priority[j], doc.columns.rules[j], doc.columns.value[j]) == (0, [], 0.0)


def test_category_weights_scale_a_category_s_facts():
    text = "The Licensee pays $500 in 3 parts. Nothing else happens here."
    doc = Analysis(text=text, lang="en")
    segment(doc)
    registry = RuleRegistry([load_text(RULES, "t.yaml")])
    annotate(doc, registry, load_token_counter().token_starts(text), langs={"en"},
             category_weights={"number": 0.0, "amount": 0.5})
    i = unit_index(doc, "$500")
    assert doc.columns.value[i] == pytest.approx(0.5 * fact_weight(80))  # the digits count nothing, the amount half
    assert doc.columns.priority[i] == 80 and "t.digit" in doc.columns.rules[i]  # the rules still protect and are named


def test_category_weights_must_be_finite_and_not_negative():
    from pydantic import ValidationError

    from catp.rules.schema import SelectionPolicy
    assert SelectionPolicy(category_weights={"number": 0}).category_weights == {"number": 0}
    for bad in (-1.0, float("nan"), float("inf")):
        with pytest.raises(ValidationError, match="category weights"):
            SelectionPolicy(category_weights={"number": bad})


def test_boost_alone_does_not_protect():
    doc = run("The Licensee is happy with it. Nothing else happens here.")
    i = unit_index(doc, "Licensee")
    assert doc.columns.priority[i] == 0 and doc.columns.boost[i] == 40 and doc.columns.rules[i] == ["t.boost"]


def test_rules_for_other_languages_do_not_run():
    assert all(s.rule_id != "t.zh_only" for s in run("Pay 5 now, and 6 later.").spans)
    assert any(s.rule_id == "t.zh_only" for s in run("支付5元，然后6元。", langs={"zh"}).spans)


def test_boilerplate_becomes_its_own_deleted_unit():
    text = "The fee is 5, for the avoidance of doubt, payable monthly. Next sentence here."
    doc = run(text)
    deleted = [doc.unit_text(u) for u, d in zip(doc.units, doc.columns.deleted) if d]
    assert deleted == ["for the avoidance of doubt"]
    i = unit_index(doc, "for the avoidance")
    assert doc.columns.priority[i] == 0 and doc.columns.rules[i] == []
    # the rest of the sentence survives as other units, nothing lost
    kept_text = "".join(doc.unit_text(u) for u, d in zip(doc.units, doc.columns.deleted) if not d)
    assert "The fee is 5," in kept_text and "payable monthly." in kept_text


def test_units_stay_a_partition_after_deletion_splits():
    text = "IN WITNESS WHEREOF the parties sign. For the avoidance of doubt, for the avoidance of doubt again."
    doc = run(text)
    covered = [0] * len(text)
    for u in doc.units:
        assert u.start < u.end and not text[u.start].isspace() and not text[u.end - 1].isspace()
        for k in range(u.start, u.end):
            covered[k] += 1
    assert all(c == 1 for k, c in enumerate(covered) if not text[k].isspace())
    assert [u.index for u in doc.units] == list(range(len(doc.units)))
    assert len(doc.columns.priority) == len(doc.columns.deleted) == len(doc.units)


def test_regex_timeout_is_reported_and_the_rule_skipped():
    slow = RULES + "  - id: t.slow\n    kind: regex\n    category: x\n    priority: 10\n    pattern: '(a|a)+$'\n"
    doc = run("a" * 60 + "b costs $5.", rules=slow, timeout=0.05)
    assert any("t.slow" in w and "timeout" in w and "t.yaml:" in w for w in doc.warnings)
    assert all(s.rule_id != "t.slow" for s in doc.spans)
    assert any(s.rule_id == "t.money" for s in doc.spans)  # the other rules still ran


def test_common_rules_on_real_mixed_text():
    text = ("第五条 违约责任\n甲方应于2024年3月5日前支付违约金三百万元。根据相关规定，经双方协商一致，签订本协议。\n"
            "The Licensee shall not assign this Agreement. Revenue increased 12% to USD 3.4 billion.\n")
    doc = Analysis(text=text, lang="zh")
    segment(doc)
    annotate(doc, RuleRegistry(resolve(None)), load_token_counter().token_starts(text), langs={"zh", "en"})
    categories = {s.category for s in doc.spans}
    assert {"heading", "date", "amount", "negation", "boilerplate"} <= categories
    assert doc.columns.priority[0] > 0  # the heading
    assert any(doc.columns.deleted) and not all(doc.columns.deleted)


WHOLE_RULES = textwrap.dedent("""\
    name: w
    rules:
      - id: w.fee
        kind: regex
        category: clause
        priority: 80
        pattern: 'royalty'
        expand: sentence
    """)


def test_whole_span_chars_makes_a_long_kept_sentence_worth_more():
    text = "The Licensee shall pay a royalty of five percent on all net sales, payable each quarter, " \
           "with statements, in arrears. Nothing else happens here."
    registry = RuleRegistry([load_text(WHOLE_RULES, "w.yaml")])

    def values(chars: int) -> list[float]:
        doc = Analysis(text=text, lang="en")
        segment(doc)
        annotate(doc, registry, load_token_counter().token_starts(text), langs={"en"}, whole_span_chars=chars)
        return [v for v, g in zip(doc.columns.value, doc.columns.group) if g != -1]

    span = text.index(" Nothing")  # the expanded sentence
    assert sum(values(0)) == pytest.approx(fact_weight(80), rel=0.05)  # one fact, shared by overlap (not spaces)
    assert len(values(0)) > 1  # the sentence spans several clause units, kept as one group
    assert sum(values(30)) == pytest.approx(fact_weight(80) * span / 30, rel=0.05)  # one fact per 30 chars


DETACH_RULES = RULES + textwrap.indent(textwrap.dedent("""\
      - id: t.preamble
        kind: regex
        category: entity
        priority: 90
        expand: sentence
        pattern: 'entered into'
      - id: t.address
        kind: regex
        category: address
        priority: 50
        action: detach
        pattern: 'with offices at [^,(]+, [A-Z][a-z]+'
    """), "  ")


def test_a_detach_span_is_left_out_of_the_span_kept_whole():
    text = "This is entered into by Acme Inc., with offices at 12 Main Street, Springfield (Acme), and Bob. Next."
    doc = run(text, rules=DETACH_RULES)
    lo, hi = text.index("with offices"), text.index(" (Acme)")
    detached = [i for i, u in enumerate(doc.units) if lo <= u.start and u.end <= hi]
    assert " ".join(doc.unit_text(doc.units[i]) for i in detached) == "with offices at 12 Main Street, Springfield"
    assert not any(doc.columns.deleted[i] for i in detached)  # not boilerplate: still kept on its own merit
    sentence = [i for i, u in enumerate(doc.units) if u.start < text.index("Next")]
    grouped = [i for i in sentence if doc.columns.group[i] != -1]
    assert set(grouped) == set(sentence) - set(detached)  # the rest of the sentence is kept whole, as one
    assert len({doc.columns.group[i] for i in grouped}) == 1
    assert all("t.preamble" not in doc.columns.rules[i] for i in detached)
    digits = unit_index(doc, "12 Main")
    assert doc.columns.rules[digits] == ["t.digit"] and doc.columns.value[digits] == pytest.approx(fact_weight(60))
    without = run(text.replace("with offices", "with office"), rules=DETACH_RULES)  # no detach: one group
    assert len({without.columns.group[i] for i, u in enumerate(without.units) if u.start < text.index("Next")}) == 1


DISCOUNT_RULES = RULES + textwrap.indent(textwrap.dedent("""\
      - id: t.definition
        kind: regex
        category: definition
        priority: 50
        action: discount
        expand: sentence
        pattern: '"[A-Z][a-z]+" means'
    """), "  ")


def test_a_discount_span_scales_its_units_facts_by_its_category_weight():
    text = '"Fee" means $500 in 3 parts. The Licensee pays $500 in 3 parts.'

    def values(weights: dict) -> tuple[list[float], list[float]]:
        doc = Analysis(text=text, lang="en")
        segment(doc)
        annotate(doc, RuleRegistry([load_text(DISCOUNT_RULES, "t.yaml")]),
                 load_token_counter().token_starts(text), langs={"en"}, category_weights=weights)
        cut = text.index(" The Licensee")
        return ([v for u, v in zip(doc.units, doc.columns.value) if u.start < cut],
                [v for u, v in zip(doc.units, doc.columns.value) if u.start > cut])

    (defined, plain), (defined_q, plain_q) = values({}), values({"definition": 0.25})
    assert sum(plain) > 0 and sum(defined) == pytest.approx(sum(plain))  # not listed: weight 1, no change
    assert sum(defined_q) == pytest.approx(0.25 * sum(defined))  # the definition's facts weigh a quarter
    assert plain_q == plain  # the sentence it does not cover is untouched
    doc = run(text, rules=DISCOUNT_RULES)
    assert not any(doc.columns.deleted) and all("t.definition" not in r for r in doc.columns.rules)


def test_a_rule_s_repeated_matches_on_one_range_are_one_span_counting_each_match():
    # Two matches of w.fee expand to the same sentence: listed once (reports, html), counted twice (value).
    text = "The Licensee shall pay a royalty, and a further royalty, on net sales. Nothing else happens here."
    registry = RuleRegistry([load_text(WHOLE_RULES, "w.yaml")])
    doc = Analysis(text=text, lang="en")
    segment(doc)
    annotate(doc, registry, load_token_counter().token_starts(text), langs={"en"})
    fee = [s for s in doc.spans if s.rule_id == "w.fee"]
    assert len(fee) == 1 and fee[0].matches == 2
    keys = [(s.start, s.end, s.rule_id) for s in doc.spans]
    assert len(keys) == len(set(keys))
    assert sum(v for v, g in zip(doc.columns.value, doc.columns.group) if g != -1) == pytest.approx(2 * fact_weight(80),
                                                                                              rel=0.05)
    one = "The Licensee shall pay a royalty on net sales. Nothing else happens here."
    doc1 = Analysis(text=one, lang="en")
    segment(doc1)
    annotate(doc1, registry, load_token_counter().token_starts(one), langs={"en"})
    assert [s.matches for s in doc1.spans] == [1]


def test_whole_span_max_tokens_frees_the_clauses_of_a_long_sentence_kept_whole():
    text = "The Licensee shall pay a royalty of five percent on all net sales, payable each quarter, " \
           "with statements, in arrears. Nothing else happens here."
    registry = RuleRegistry([load_text(WHOLE_RULES, "w.yaml")])
    starts = load_token_counter().token_starts(text)

    def columns(max_tokens: int):
        doc = Analysis(text=text, lang="en")
        segment(doc)
        annotate(doc, registry, starts, langs={"en"}, whole_span_max_tokens=max_tokens)
        return doc.columns

    sentence_tokens = sum(1 for s in starts if s < text.index(" Nothing"))
    bound, free = columns(sentence_tokens + 5), columns(sentence_tokens - 5)
    assert len({g for g in bound.group if g != -1}) == 1  # short enough: one group
    assert all(g == -1 for g in free.group)  # longer than the limit: each clause alone
    assert sum(free.value) == pytest.approx(sum(bound.value))  # its fact still counts, shared by overlap
    assert free.rules == bound.rules and free.priority == bound.priority
