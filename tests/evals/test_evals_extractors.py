"""The independent value check finds the obvious numbers, dates and money (en and zh),
and its cache returns the same values."""

from __future__ import annotations

import pytest

from evals import extractors

pytestmark = pytest.mark.skipif(extractors.available() is not None, reason=str(extractors.available()))


def found(text, lang, **kw):
    return {(v.type, text[v.start:v.end]) for v in extractors.extract_values(text, lang, **kw)}


def test_english_values():
    text = "The Buyer shall pay $250,000 on March 5, 2020. It may renew; thirty (30) days notice."
    values = found(text, "en")
    assert ("money", "$250,000") in values
    assert any(t == "date" and "March 5, 2020" in s for t, s in values)
    assert ("number", "30") in values
    assert not any(s.lower() in ("may", "thirty") for _, s in values)  # no digit, not counted


def test_chinese_values():
    text = "被告应于2019年3月5日前向原告支付货款120000元，另付利息3.5%。"
    values = found(text, "zh")
    assert any(t == "date" and "2019年3月5日" in s for t, s in values)  # JioNLP: "2019年3月5日前"
    assert ("money", "120000元") in values
    assert ("number", "3.5") in values or ("number", "3.5%") in values


def test_cache_round_trip(tmp_path):
    text = "Revenue was $1.2 million in 2019."
    first = extractors.extract_values(text, "en", cache_dir=tmp_path)
    assert len(list(tmp_path.iterdir())) == 1
    assert extractors.extract_values(text, "en", cache_dir=tmp_path) == first
    assert "Recognizers-Text" in extractors.describe() and "JioNLP" in extractors.describe()
