"""rules/tools/build_clinical_vocab.py (the phrase list of medical.vocab_en) on small made-up sources,
and the list it wrote into rules/medical.yaml."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
spec = importlib.util.spec_from_file_location("build_clinical_vocab", ROOT / "rules" / "tools" / "build_clinical_vocab.py")
vocab = importlib.util.module_from_spec(spec)
spec.loader.exec_module(vocab)

OBO = """format-version: 1.2
data-version: hp/releases/2000-01-01

[Term]
id: HP:0000118
name: Phenotypic abnormality

[Term]
id: HP:0000001
name: All

[Term]
id: HP:0002240
name: Hepatomegaly
synonym: "Enlarged liver" EXACT layperson []
synonym: "Large liver" RELATED []
is_a: HP:0000118

[Term]
id: HP:0012823
name: Clinical modifier
is_a: HP:0000001

[Term]
id: HP:0003577
name: Congenital onset
is_a: HP:0012823

[Term]
id: HP:0000999
name: Old name
is_obsolete: true
is_a: HP:0000118
"""

ICD = b"""<ICD10CM.tabular><version>2099</version>
<chapter><name>2</name><section><diag><name>C25</name><desc>Malignant neoplasm of pancreas</desc>
<diag><name>C25.0</name><desc>Malignant neoplasm of head of pancreas</desc></diag></diag></section></chapter>
<chapter><name>18</name><section><diag><name>R10</name><desc>Abdominal and pelvic pain</desc>
<inclusionTerm><note>Abdominal tenderness NOS</note></inclusionTerm></diag></section></chapter>
<chapter><name>21</name><section><diag><name>Z80</name><desc>Family history of malignant neoplasm</desc>
</diag></section></chapter></ICD10CM.tabular>"""


def test_hpo_keeps_phenotypes_and_exact_synonyms_only():
    version, terms = vocab.hpo_terms(OBO)
    assert version == "hp/releases/2000-01-01"
    assert sorted(terms) == ["Enlarged liver", "Hepatomegaly", "Phenotypic abnormality"]


def test_icd_titles_inclusion_terms_and_sites():
    version, terms = vocab.icd_terms(ICD)
    terms = {" ".join(t.split()) for t in terms}
    assert version == "2099"
    assert {"malignant neoplasm of head of pancreas", "head of pancreas", "pancreas", "abdominal tenderness"} <= terms
    assert not any("family history" in t for t in terms)  # chapter 21 (Z codes) is left out
    _, no_sites = vocab.icd_terms(ICD, sites=False)
    assert "head of pancreas" not in no_sites


def test_clean_filters_length_digits_and_common_words():
    pytest.importorskip("wordfreq")
    from wordfreq import zipf_frequency

    def clean(t):
        return vocab.clean(t, zipf_frequency, 4.5, 2)

    assert clean("  Hepatosplenomegaly ") == "hepatosplenomegaly"
    assert clean("Pleural effusion") == "pleural effusion"
    assert clean("Type 2 diabetes") is None
    assert clean("abnormal liver morphology") is None  # three words
    assert clean("time") is None  # common English
    assert clean("ear") is None  # too short


def test_the_rule_holds_the_built_list():
    rules = yaml.safe_load((ROOT / "rules" / "medical.yaml").read_text(encoding="utf-8"))["rules"]
    (rule,) = [r for r in rules if r["id"] == "medical.vocab_en"]
    phrases = rule["phrases"]
    assert len(phrases) > 5000
    assert phrases == sorted(set(phrases))
    assert all(p == p.lower() and 1 <= len(p.split()) <= 2 for p in phrases)
    assert {"hepatosplenomegaly", "pleural effusion"} <= set(phrases)
