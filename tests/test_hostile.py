"""Hostile inputs of issue 25: each reproduction, and variants of its mechanism (docs/reliability.md)."""

from __future__ import annotations

import pytest

from catp.errors import CatpError


# -- 1. spaCy's max_length: English text past 1,000,000 characters -------------------------------


def _pos_rule(rule_id: str):
    from catp.rules.loader import builtin_path, load_file

    rules = {r.id: r for r in load_file(builtin_path("common")).ruleset.rules}
    return rules[rule_id]


@pytest.mark.parametrize("shape", ["many sentences", "one sentence"])
def test_pos_rules_match_text_past_spacys_max_length(shape):
    """spaCy's make_doc refuses text over nlp.max_length (E088, a bare ValueError that crashed prune);
    the POS matcher tokenizes in pieces, and finds every match, the first and the last."""
    from catp.rules.pos import match_each

    rule = _pos_rule("fact.verb_object_en")
    sentence = "The Licensee shall pay the fee to the Licensor. "
    text = sentence * 25_000  # 1.2M characters
    if shape == "many sentences":
        spans = [(i, i + len(sentence)) for i in range(0, len(text), len(sentence))]
    else:
        spans = [(0, len(text))]
    found = match_each(rule, text, spans, "en")
    matched = [m for per in found for m in per]
    assert len(matched) == 25_000
    assert text[matched[0][0]:matched[0][1]] .startswith("pay the")
    assert text[matched[-1][0]:matched[-1][1]] .startswith("pay the")
