"""The LLMLingua and LongLLMLingua eval baselines (evals/lingua.py), run for real: the `llmlingua`
package's compressor on the fixture-built tiny Qwen (tests/tiny_qwen.py), through the eval's own
Worker, so the token counts checked are the ones the eval reports."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("llmlingua")

from evals.lingua import MODEL_ENV, chunks  # noqa: E402

CONTRACT = (
    "MASTER SERVICES AGREEMENT\n\n"
    "1. Fees. The Licensee shall pay the Licensor a fee of $5,000 within thirty (30) days of each invoice. "
    "Late payments bear interest at 1.5% per month.\n\n"
    "2. Term. This Agreement starts on March 5, 2024 and runs for three (3) years. "
    "Either party may terminate this Agreement upon ninety (90) days written notice.\n\n"
    "3. Liability. However, the Company shall not be liable for any indirect damages unless otherwise agreed "
    "in writing. The total liability of either party shall not exceed the fees paid in the prior twelve months.\n\n"
    "4. Law. This Agreement shall be governed by the laws of the State of New York. "
    "The parties consent to the courts of New York County.\n\n"
) * 3


def _doc():
    from evals.schema import EvalDoc, Gold, Question

    fee = CONTRACT.index("$5,000")
    law = CONTRACT.index("State of New York")
    return EvalDoc(id="msa", domain="legal", text=CONTRACT,
                   gold=[Gold(start=fee, end=fee + 6, quote="$5,000", kind="amount"),
                         Gold(start=law, end=law + 17, quote="State of New York", kind="entity")],
                   questions=[Question(question="What is the governing law?", gold_index=[1])])


@pytest.mark.slow
def test_llmlingua_baselines_run_end_to_end_within_the_budget(tiny_model_dir, monkeypatch):
    from evals.runner import BudgetSpec, RunConfig, Worker

    monkeypatch.setenv(MODEL_ENV, str(tiny_model_dir))
    config = RunConfig(budgets=[BudgetSpec("1/4", ratio=0.25)], baselines=("llmlingua", "longllmlingua"),
                       question_aware=True, values=False)
    worker = Worker(config)
    assert [b.name for b in worker.baselines] == ["llmlingua", "longllmlingua"]
    result = worker.run("fixture", 0, _doc())
    for name in ("llmlingua", "longllmlingua"):
        score = result.scores[(name, "1/4")]
        assert 0 < score.out_tokens <= score.limit < score.in_tokens, (name, score)
        assert not score.over_budget
    aware = result.scores[("longllmlingua", "1/4")].questions_aware
    assert aware is not None and len(aware) == 1  # one question-conditioned run per answerable question
    assert result.scores[("llmlingua", "1/4")].questions_aware is None
    assert result.scores[("llmlingua", "1/4")].note == "token-level (not extractive)"


@pytest.mark.slow
def test_longllmlingua_question_run_keeps_words_of_the_input_in_order(tiny_model_dir, monkeypatch):
    from catp.tokens import load_token_counter
    from evals.lingua import LongLLMLingua
    from evals.methods import Budget
    from evals.sizing import doc_size

    monkeypatch.setenv(MODEL_ENV, str(tiny_model_dir))
    size = doc_size("tokens", CONTRACT, load_token_counter())
    budget = Budget("tokens", size.total // 6)
    out = LongLLMLingua().run(CONTRACT, budget, size, question="What is the governing law?")
    assert out.kept and size.of(out.text) <= budget.limit
    assert all(a < b <= c for (a, b), (c, _) in zip(out.kept, out.kept[1:]))  # ordered, disjoint
    assert out.text == " ".join(CONTRACT[a:b] for a, b in out.kept)


def test_a_missing_model_is_a_one_line_eval_error(monkeypatch, tmp_path):
    from evals.cli import EvalError
    from evals.main import EvalOptions, build_config

    monkeypatch.setenv(MODEL_ENV, str(tmp_path / "nowhere"))
    with pytest.raises(EvalError, match=f"^{MODEL_ENV}=.*nowhere: no such file or folder$"):
        build_config(EvalOptions(paths=[], out=tmp_path, baselines="head,llmlingua"))


def test_chunks_cover_the_text_in_order_at_paragraph_ends():
    parts = chunks(CONTRACT, size=300)
    assert "".join(parts) == CONTRACT
    assert len(parts) > 3 and all(p.endswith("\n") for p in parts)


@pytest.mark.slow
def test_the_output_cache_gives_the_same_outcome_without_the_model(tiny_model_dir, monkeypatch, tmp_path):
    from catp.tokens import load_token_counter
    from evals.lingua import CACHE_ENV, LLMLingua
    from evals.methods import Budget
    from evals.sizing import doc_size

    monkeypatch.setenv(MODEL_ENV, str(tiny_model_dir))
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    size = doc_size("tokens", CONTRACT, load_token_counter())
    budget = Budget("tokens", size.total // 4)
    first = LLMLingua().run(CONTRACT, budget, size)
    (entry,) = (tmp_path / "cache").glob("*.json")

    def no_model(*_):
        raise AssertionError("the model ran although the cache held the output")

    monkeypatch.setattr(LLMLingua, "_compress", no_model)
    again = LLMLingua().run(CONTRACT, budget, size)
    assert (again.kept, again.text) == (first.kept, first.text)
    assert again.seconds >= json.loads(entry.read_text())["seconds"] > 0  # the compressor's, from the cache
    with pytest.raises(AssertionError, match="the model ran"):
        LLMLingua().run(CONTRACT, Budget("tokens", size.total // 3), size)  # another rate is another entry
