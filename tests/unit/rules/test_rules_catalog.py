"""catp/rules/catalog.py: built-in rule sets parsed once, composed in one place, detection keywords without
validating unused sets, and rule kinds added from outside the package (register_kind)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Literal

import pytest
from pydantic import Field

from catp.errors import CatpError, RuleError
from catp.rules import loader
from catp.rules.catalog import CATALOG, RuleCatalog, resolve, read_detect_keywords, register_kind, unregister_kind
from catp.rules.loader import BUILTIN_DOMAINS, builtin_path, load_file, load_text
from catp.rules.matchers import Matcher
from catp.rules.schema import RuleBase

ROOT = Path(__file__).resolve().parents[3]
CONTRACT = (ROOT / "examples" / "contract_en.txt").read_text(encoding="utf-8")


def count_builtin_parses(monkeypatch) -> dict[str, int]:
    """YAML parses (each followed by validation) of each built-in file, by name."""
    texts = {builtin_path(n).read_text(encoding="utf-8"): n for n in ("common", *BUILTIN_DOMAINS)}
    real, counts = loader.parse_yaml, dict.fromkeys(("common", *BUILTIN_DOMAINS), 0)

    def counting(text: str):
        if text in texts:
            counts[texts[text]] += 1
        return real(text)

    monkeypatch.setattr(loader, "parse_yaml", counting)
    return counts


def test_each_builtin_set_is_parsed_once_however_often_it_is_composed(monkeypatch):
    counts = count_builtin_parses(monkeypatch)
    catalog = RuleCatalog()
    for _ in range(3):
        for domain in (*BUILTIN_DOMAINS, None, "general"):
            composed = catalog.compose(domain)
            assert [item.ruleset.name for item in composed] == ["common", *([domain] if domain in BUILTIN_DOMAINS
                                                                            else [])]
    assert counts == dict.fromkeys(("common", *BUILTIN_DOMAINS), 1)
    assert catalog.compose("legal")[1] is catalog.compose("legal")[1]


def test_detection_keywords_validate_no_rule_set(monkeypatch):
    """`--domain auto` reads each domain's `detect` section alone; the same keywords as the full parse."""
    counts = count_builtin_parses(monkeypatch)
    keywords = RuleCatalog().detection_keywords()
    assert counts == dict.fromkeys(("common", *BUILTIN_DOMAINS), 0)
    monkeypatch.undo()
    assert keywords == {d: load_file(builtin_path(d)).ruleset.detect.keywords for d in BUILTIN_DOMAINS}
    assert all(keywords.values())


def test_detect_section_read_alone_falls_back_on_anything_odd(tmp_path):
    flow = tmp_path / "flow.yaml"
    flow.write_text("{name: x, detect: {keywords: [a]}, rules: []}\n", encoding="utf-8")
    assert read_detect_keywords(flow) is None  # not a block at the top level: the full load reads it
    blank = tmp_path / "blank.yaml"
    blank.write_text("name: x\ndetect:\n  keywords: ['  ']\nrules: []\n", encoding="utf-8")
    assert read_detect_keywords(blank) is None  # invalid: the full load names the file and line
    plain = tmp_path / "plain.yaml"
    plain.write_text("name: x\n# a comment\ndetect:\n  # keywords\n\n  keywords: [a, 'b c']\nrules: []\n",
                     encoding="utf-8")
    assert read_detect_keywords(plain) == ["a", "b c"]


def test_an_edited_builtin_file_is_read_again(tmp_path):
    for name in ("common", *BUILTIN_DOMAINS):
        shutil.copy(builtin_path(name), tmp_path / f"{name}.yaml")
    catalog = RuleCatalog(tmp_path)
    first = catalog.builtin("finance")
    assert catalog.builtin("finance") is first
    (tmp_path / "finance.yaml").write_text("name: finance\ndescription: edited\nrules: []\n", encoding="utf-8")
    assert catalog.builtin("finance").ruleset.description == "edited"


def test_compose_checks_user_ids_and_unknown_domains(tmp_path):
    clash = tmp_path / "clash.yaml"
    common_id = CATALOG.builtin("common").ruleset.rules[0].id
    clash.write_text(f"name: mine\nrules:\n  - id: {common_id}\n    kind: phrases\n    category: fact\n"
                     "    priority: 9\n    phrases: [weather]\n", encoding="utf-8")
    with pytest.raises(RuleError, match="duplicate rule id") as info:
        CATALOG.compose("legal", [clash])
    assert info.value.path == str(clash) and info.value.line == 3 and info.value.rule_id == common_id
    with pytest.raises(CatpError, match="unknown domain 'astrology'"):
        CATALOG.compose("astrology")
    assert CATALOG.compose("general") == resolve("general", ())  # the front: the same


def test_register_kind_refuses_a_model_or_matcher_that_does_not_fit():
    class NoKind(RuleBase):
        pass

    with pytest.raises(CatpError, match="Literal"):
        register_kind("shout", NoKind, Matcher)
    with pytest.raises(CatpError, match="lower-case"):
        register_kind("Shout!", NoKind, Matcher)
    class OtherRegex(RuleBase):
        kind: Literal["regex"]

    with pytest.raises(CatpError, match="another model"):
        register_kind("regex", OtherRegex, ShoutMatcher)


# A rule kind defined here, outside the package, as a user's code defines one.
class ShoutRule(RuleBase):
    """A word in capitals followed by an exclamation mark."""

    kind: Literal["shout"]
    min_letters: int = Field(3, ge=2, le=20)


class ShoutMatcher(Matcher):
    def spans(self, ctx):
        import re

        for match in re.finditer(rf"\b[A-Z]{{{self.rule.min_letters},}}!", ctx.text):
            yield self.span(match.start(), match.end())


SHOUT_RULES = textwrap.dedent("""\
    name: shouts
    rules:
      - id: mine.shout
        kind: shout
        category: entity
        priority: 95
        lang: [en]
        min_letters: 4
    """)


@pytest.fixture
def shout_kind():
    """Registered by the test, removed after it: the other tests see the built-in kinds only."""
    yield
    unregister_kind("shout")
    with pytest.raises(RuleError):
        load_text(SHOUT_RULES)


def test_a_kind_registered_from_outside_is_validated_and_runs(tmp_path, shout_kind):
    from catp.pipeline import Pruner

    rule_file = tmp_path / "shouts.yaml"
    rule_file.write_text(SHOUT_RULES, encoding="utf-8")
    with pytest.raises(RuleError) as info:  # not registered yet: the schema refuses the kind
        load_file(rule_file)
    assert (info.value.path, info.value.line, info.value.rule_id) == (str(rule_file), 3, "mine.shout")

    register_kind("shout", ShoutRule, ShoutMatcher)
    register_kind("shout", ShoutRule, ShoutMatcher)  # the same again: no change

    (loaded,) = loader.load_rule_files([rule_file])
    assert isinstance(loaded.ruleset.rules[0], ShoutRule) and loaded.ruleset.rules[0].min_letters == 4
    with pytest.raises(RuleError, match="min_letters") as bad:  # the given model validates its fields
        load_text(SHOUT_RULES.replace("min_letters: 4", "min_letters: 1"), "bad.yaml")
    assert (bad.value.path, bad.value.line, bad.value.rule_id) == ("bad.yaml", 3, "mine.shout")

    text = "The weather was fine. WAIT! The payment is late. " + CONTRACT
    kept = Pruner(rules=[rule_file]).prune(text, ratio="1/8").kept
    assert any("mine.shout" in span.reasons and "WAIT!" in text[span.start:span.end] for span in kept)
    assert not any("mine.shout" in s.reasons for s in Pruner().prune(text, ratio="1/8").kept)


@pytest.mark.slow
def test_catp_batch_loads_a_rule_kind_through_its_setup_hook(tmp_path):
    """The CLI's plugin hook (`catp batch --setup MODULE:FUNCTION`) registers the kind in the main process before
    the --rules files are read, and in each worker (-j 2: the loaded rules travel to spawned processes)."""
    rule_file = tmp_path / "acronyms.yaml"
    rule_file.write_text(textwrap.dedent("""\
        name: acronyms
        rules:
          - id: mine.acronym
            kind: acronym
            category: entity
            priority: 95
            lang: [en]
            min_letters: 4
            expand: sentence
        """), encoding="utf-8")
    docs = tmp_path / "in.jsonl"
    with open(docs, "w", encoding="utf-8") as fh:
        for k in range(2):
            fh.write(json.dumps({"id": f"d{k}", "text": f"NASDAQ closed {k} points higher.\n" + CONTRACT}) + "\n")
    env = {"PYTHONPATH": f"{ROOT}:{ROOT / 'tests'}", "PATH": "/usr/bin:/bin"}
    args = [sys.executable, "-m", "catp", "batch", str(docs), "--rules", str(rule_file), "--ratio", "1/8",
            "--quiet", "-j", "2", "-o", str(tmp_path / "out.jsonl")]
    refused = subprocess.run(args, capture_output=True, text=True, cwd=tmp_path, env=env)
    assert refused.returncode != 0 and f"{rule_file}:3" in refused.stderr and "mine.acronym" in refused.stderr
    assert "Traceback" not in refused.stderr
    done = subprocess.run([*args, "--setup", "_rule_kind_plugin:setup"], capture_output=True, text=True,
                          cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 2 and all(row["error"] is None for row in rows)
    for row in rows:
        assert row["text"].startswith("NASDAQ closed")
        assert any("mine.acronym" in span["reasons"] for span in row["kept"])
