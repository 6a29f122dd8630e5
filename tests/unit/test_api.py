"""The public API (`from catp import prune, Pruner, PruneResult`): wrong arguments raise catp's own errors,
and what it returns is documented field by field."""

from __future__ import annotations

import inspect

import pytest

import catp
from catp import Pruner, PruneResult, prune
from catp.errors import CatpError, InputError, RuleError

TEXT = "The Licensee shall pay USD 5,000 by March 5, 2024. The weather was fine that day. " * 20


def test_a_single_rule_path_is_one_file_not_its_characters(tmp_path):
    missing = str(tmp_path / "mine.yaml")
    for call in (lambda: prune(TEXT, budget=40, rules=missing), lambda: Pruner(domain="legal", rules=missing)):
        with pytest.raises(RuleError, match="mine.yaml: no such rule file"):
            call()
    rules = tmp_path / "ok.yaml"
    rules.write_text("name: mine\nversion: 1\nrules:\n  - id: mine.weather\n    kind: phrases\n    category: fact\n"
                     "    priority: 90\n    action: protect\n    lang: [en]\n    phrases: [weather]\n", encoding="utf-8")
    result = prune(TEXT, budget=40, rules=rules)
    assert any("mine.weather" in span.reasons for span in result.kept)


@pytest.mark.parametrize("call, error", [
    (lambda: prune(TEXT, budget=40, question=5), InputError),
    (lambda: Pruner().prune_bytes(TEXT, budget=40), InputError),
    (lambda: Pruner(gap_marker=None), CatpError),
])
def test_wrong_arguments_raise_catp_errors(call, error):
    with pytest.raises(error):
        call()


def test_prune_bytes_takes_a_bytearray():
    assert Pruner().prune_bytes(bytearray(TEXT.encode()), budget=40).stats.output_tokens <= 40


def test_a_bad_tokenizer_raises_the_error_catp_errors_names(tmp_path):
    from catp.errors import TokenizerError

    assert issubclass(TokenizerError, CatpError)
    with pytest.raises(TokenizerError):
        prune(TEXT, budget=40, tokenizer=str(tmp_path / "missing.json"))


def test_the_public_api_is_documented():
    for name in ("prune", "Pruner", "PruneResult"):
        assert inspect.getdoc(getattr(catp, name)), name
    for method in (Pruner.prune, Pruner.prune_bytes, Pruner.analyse, Pruner.finish):
        assert inspect.getdoc(method), method.__name__
    assert "Raises" in inspect.getdoc(prune) and "Raises" in inspect.getdoc(Pruner.prune)
    schema = PruneResult.model_json_schema()
    for model in [schema, *schema["$defs"].values()]:
        undocumented = [f for f, spec in model["properties"].items() if "description" not in spec and "$ref" not in spec]
        assert not undocumented, (model["title"], undocumented)


def test_ask_takes_a_single_rule_path_too(tmp_path):
    missing = str(tmp_path / "mine.yaml")
    with pytest.raises(RuleError, match="mine.yaml: no such rule file"):  # before any request is made
        catp.ask(TEXT, "What is due?", server="http://127.0.0.1:9/v1", rules=missing, retries=0)
