"""catp.rules.pos.cut_detail (a faster Viterbi over jieba.posseg's HMM tables) yields exactly what
jieba.posseg's own POSTokenizer.__cut_detail yields: on every Han run and on random pieces of real
Chinese documents, and on made-up edge cases. (No timing here: speed is measured in benchmarks/.)"""

from __future__ import annotations

import random

import pytest
from _samples import real_texts

from catp.rules import pos


def jieba_cut(text: str) -> list[tuple[str, str]]:
    return [(p.word, p.flag) for p in pos.jieba_posseg().dt._POSTokenizer__cut_detail(text)]


def test_the_fast_viterbi_is_in_use():
    assert pos.hmm_tables() is not None


@pytest.mark.parametrize("text", [
    "", "一", "的", "甲", "患者", "給予", "龘靐齉", "abc", "123.5", "３４", "x1y2", "一二三四五六七八九十",
    "原告张三与被告李四于2010年登记结婚", "给予抗感染治疗后好转出院", "中文English混合123文本", "。，；",
    "乙方应向甲方支付违约金人民币叁佰万元整", "淋巴结肿大未见明显异常" * 5,
])
def test_edge_cases(text):
    assert pos.cut_detail(text) == jieba_cut(text)


def test_real_chinese_pieces():
    posseg = pos.jieba_posseg()
    rng = random.Random(7)
    pieces = []
    for text in real_texts("cail2019_cjrc", 3, 6000) + real_texts("ccks2017_cner", 3, 6000):
        pieces.extend(blk for blk in posseg.re_han_detail.split(text) if blk)
        for _ in range(30):
            a = rng.randrange(len(text))
            pieces.append(text[a : a + rng.randint(1, 60)])
    assert len(pieces) > 500
    for piece in pieces:
        assert pos.cut_detail(piece) == jieba_cut(piece), piece
