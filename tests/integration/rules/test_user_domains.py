"""A user's own rule set (a new domain): its `detect` keywords count in --domain auto, its name is a domain
(--domain NAME), and `catp rules policy`, `catp batch` and evals take it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from catp import Pruner
from catp.errors import CatpError

ROOT = Path(__file__).resolve().parents[3]

INSURANCE = """\
name: insurance
version: 1
detect: {keywords: [policyholder, premium, deductible, insurer, 投保人, 保险费, 免赔额]}
selection:
  en: {lead_weight: 0.5, information_weight: 0.7}
rules:
  - id: ins.deductible
    kind: regex
    category: amount
    priority: 90
    pattern: 'deductible of \\$[\\d,]+'
    expand: sentence
    examples:
      match: ["a deductible of $500 per claim"]
      no_match: ["no deductible applies"]
"""

POLICY_DOC = ("Homeowner Policy\n\nThe insurer issues this policy to the policyholder named in the schedule. "
              "The policyholder pays the annual premium on the first day of each policy year. "
              + "Routine upkeep of the home remains with the owner and is not covered. " * 30
              + "Each claim for water damage carries a deductible of $2,500 before the insurer pays. "
              + "Notices go to the address in the schedule. " * 20
              + "The premium may be revised at renewal, and the insurer shall give 30 days' notice.\n")


@pytest.fixture
def insurance(tmp_path) -> Path:
    path = tmp_path / "insurance.yaml"
    path.write_text(INSURANCE, encoding="utf-8")
    return path


def test_a_user_rule_sets_detect_keywords_pick_its_domain(insurance):
    result = Pruner(rules=[insurance]).prune(POLICY_DOC, budget=80)
    assert result.stats.domain == "insurance"
    assert any("ins.deductible" in k.reasons for k in result.kept)
    contract = (ROOT / "examples" / "contract_en.txt").read_text(encoding="utf-8")
    assert Pruner(rules=[insurance]).prune(contract, ratio="1/6").stats.domain == "legal"  # no insurance words


def test_a_user_rule_sets_name_is_a_domain(insurance):
    pruner = Pruner(domain="insurance", rules=[insurance])
    assert pruner.prune(POLICY_DOC, budget=80).stats.domain == "insurance"
    policy = pruner.policy("insurance", "en")
    assert (policy.lead_weight, policy.information_weight) == (0.5, 0.7)
    assert [item.ruleset.name for item in pruner.registry("insurance").loaded] == ["common", "insurance"]
    with pytest.raises(CatpError, match=r"unknown domain 'travel'.*--rules file's name \(insurance\)"):
        Pruner(domain="travel", rules=[insurance])


def _catp(*args, cwd):
    return subprocess.run([sys.executable, "-m", "catp", *args], cwd=cwd, capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=300)


def test_rules_policy_and_batch_take_the_users_domain(insurance, tmp_path):
    shown = _catp("rules", "policy", "--domain", "insurance", "--rules", str(insurance), cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "0.5" in shown.stdout and "0.7" in shown.stdout
    (tmp_path / "in.jsonl").write_text(json.dumps({"id": "p1", "text": POLICY_DOC}) + "\n", encoding="utf-8")
    for domain in ("insurance", "auto"):
        done = _catp("batch", "in.jsonl", "-o", "out.jsonl", "--budget", "80", "--domain", domain,
                     "--rules", str(insurance), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        row = json.loads((tmp_path / "out.jsonl").read_text(encoding="utf-8"))
        assert row["stats"]["domain"] == "insurance"


def test_catp_prune_takes_the_users_domain(insurance, tmp_path):
    (tmp_path / "policy.txt").write_text(POLICY_DOC, encoding="utf-8")
    done = _catp("prune", "policy.txt", "--budget", "80", "--domain", "insurance", "--rules", str(insurance),
                 cwd=tmp_path)
    assert done.returncode == 0 and "insurance/en" in done.stderr, done.stderr
    bad = _catp("prune", "policy.txt", "--budget", "80", "--domain", "travel", "--rules", str(insurance), cwd=tmp_path)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "unknown domain 'travel'" in bad.stderr


def test_evals_measure_a_users_rule_set_on_their_own_annotated_jsonl(insurance, tmp_path):
    quote = "deductible of $2,500"
    start = POLICY_DOC.index(quote)
    gold = [{"start": start, "end": start + len(quote), "quote": quote, "kind": "amount", "label": "deductible"}]
    with open(tmp_path / "mine.dev.jsonl", "w", encoding="utf-8") as fh:
        for n in range(2):
            fh.write(json.dumps({"id": f"p{n}", "domain": "insurance", "lang": "en", "text": POLICY_DOC,
                                 "gold": gold}) + "\n")
    done = subprocess.run([sys.executable, "-m", "evals", "--data", "mine.dev.jsonl", "--rules", str(insurance),
                           "--ratios", "1/6", "--no-values", "--baselines", "head", "--out", "report", "--jobs", "1"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    results = json.loads((tmp_path / "report" / "results.json").read_text(encoding="utf-8"))
    assert results["config"]["rules"] == [str(insurance)] and "mine" in json.dumps(results["sets"])


@pytest.mark.parametrize("text,line,words", [
    ("name: x\ndetect: {keywords: [royalty, '']}\n", 2, "keywords must not be blank"),
    ("name: x\nrules:\n  - {id: a.p, kind: pos, category: x, priority: 5, tokens: [{pos: [v]}], anchors: [' ']}\n",
     3, "anchors must not be blank"),
    ("name: x\nrules:\n  - {id: a.b, kind: regex, category: x, priority: 5, pattern: \"a\x07\"}\n", 3,
     "control characters are not allowed (U+0007)"),
])
def test_a_bad_rule_file_is_refused_with_its_line(tmp_path, text, line, words):
    """A blank detect keyword occurs in every text (it would pick the file's domain for every document);
    a blank pos anchor runs the tagger everywhere; a control character: the line, not only a position."""
    from catp.errors import RuleError

    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(RuleError) as caught:
        Pruner(rules=[path])
    assert f"bad.yaml:{line}" in str(caught.value) and words in str(caught.value), str(caught.value)


def test_a_user_file_named_after_a_built_in_domain_adds_detect_keywords_to_it(tmp_path):
    path = tmp_path / "more_finance.yaml"
    path.write_text("name: finance\ndetect: {keywords: [policyholder, premium, deductible, insurer]}\n", encoding="utf-8")
    pruner = Pruner(rules=[path])
    assert pruner.prune(POLICY_DOC, budget=80).stats.domain == "finance"
    assert [item.ruleset.name for item in pruner.registry("finance").loaded] == ["common", "finance", "finance"]
