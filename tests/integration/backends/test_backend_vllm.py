"""`ask` and `budget` against a REAL vLLM CPU server serving the tiny Qwen2 model (conftest).

The model has random weights, so answers are noise: these tests check budgets, counts,
requests, streaming and re-pruning, never what the answer says.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys

import httpx
import pytest
from _samples import evals_data
from tokenizers import Tokenizer

from catp.backends.ask import ask
from catp.backends.budget import ChatCounter, engine_budget
from catp.backends.client import VLLMClient
from catp.backends.templates import DEFAULTS
from catp.errors import BackendError
from catp.tokens import load_token_counter

pytestmark = pytest.mark.vllm


def first_doc_with_question(name: str) -> tuple[str, str]:
    folder = evals_data()
    if folder is None:
        pytest.skip("the shared evals data is missing (set CATP_EVALS_DATA)")
    with open(folder / f"{name}.dev.jsonl", encoding="utf-8") as fh:
        for line in fh:
            doc = json.loads(line)
            if doc.get("questions"):
                return doc["text"], doc["questions"][0]["question"]
    raise AssertionError(f"no document with a question in {name}")


@pytest.fixture(scope="module")
def client(vllm_server):
    with VLLMClient(vllm_server, read_timeout=120) as c:
        yield c


@pytest.fixture(scope="module")
def contract():
    return first_doc_with_question("cuad")


@pytest.fixture(scope="module")
def judgment():
    return first_doc_with_question("cail2019_cjrc")


def skeleton(question: str = "What is the fee?", lang: str = "en") -> list[dict[str, str]]:
    return DEFAULTS[lang].render("", question, gap="…")


# -- the budget comes from the engine ------------------------------------------------------------

def test_budget_figures_come_from_the_engine(client, vllm_server):
    figures = engine_budget(client, ChatCounter(client), skeleton(), max_tokens=100)
    assert figures.max_model_len.value == vllm_server.max_model_len == 2048  # we launched it so
    assert figures.max_model_len.source == f"GET {vllm_server}/models max_model_len"
    # the KV cache: num_gpu_blocks x block_size, as /metrics reports them
    metrics = httpx.get(vllm_server.root + "/metrics").text
    info = next(line for line in metrics.splitlines() if line.startswith("vllm:cache_config_info{"))
    assert f'num_gpu_blocks="{figures.num_blocks}"' in info and f'block_size="{figures.block_size}"' in info
    assert figures.kv_cache_tokens.value == figures.num_blocks * figures.block_size > 2048
    assert "/metrics vllm:cache_config_info" in figures.kv_cache_tokens.source
    # the overhead is what the server itself counts when it runs that exact prompt
    served = client.chat(skeleton(), max_tokens=1)
    assert figures.prompt_overhead.value == served.prompt_tokens
    assert "/tokenize" in figures.prompt_overhead.source
    assert figures.prompt_limit.value == 2048 - 100
    assert figures.document_budget.value == 2048 - 100 - served.prompt_tokens


def test_kv_share_binds_at_high_concurrency(client, contract):
    one = engine_budget(client, ChatCounter(client), skeleton(), max_tokens=50)
    concurrency = one.num_blocks // 4  # each request may then hold 4 blocks
    figures = engine_budget(client, ChatCounter(client), skeleton(), max_tokens=50, concurrency=concurrency)
    share = 4 * figures.block_size
    assert figures.per_request_kv_tokens.value == share < figures.max_model_len.value
    assert figures.prompt_limit.value == share - 50
    assert "KV share" in figures.prompt_limit.source
    text, question = contract
    result = ask(text, question, backend=client, domain="legal", max_tokens=50, concurrency=concurrency)
    assert result.prompt_tokens <= share - 50


def test_prompt_counts_agree_server_local_and_served(client, vllm_server, contract):
    text, _ = contract
    piece = text[:2500]  # under max_model_len in the tiny tokenizer
    messages = DEFAULTS["en"].render(piece, "What is the fee?", gap="…")
    by_tokenize = client.count_chat_tokens(messages)
    by_serving = client.chat(messages, max_tokens=1).prompt_tokens
    assert by_tokenize == by_serving
    # the pruner's local tokenizer (the served model's tokenizer.json) counts text as the server does
    assert load_token_counter(str(vllm_server.model_dir)).count(piece) == client.count_text_tokens(piece)
    assert client.tokenizer_path() == str(vllm_server.model_dir)


# -- completions -----------------------------------------------------------------------------------

def test_completions_plain_streamed_and_raw(client):
    prompt = "The Licensee shall pay the Licensor a fee of"
    plain = client.complete(prompt, max_tokens=6, extra={"ignore_eos": True})
    assert plain.completion_tokens == 6 and plain.prompt_tokens == client.count_text_tokens(prompt)
    pieces: list[str] = []
    streamed = client.complete(prompt, max_tokens=6, on_delta=pieces.append, extra={"ignore_eos": True})
    assert streamed.streamed and "".join(pieces) == streamed.text and streamed.completion_tokens == 6
    raw = client.post_json("/completions", {"model": client.model, "prompt": prompt, "max_tokens": 1,
                                            "prompt_logprobs": 0})
    logprobs = raw["choices"][0]["prompt_logprobs"]
    assert len(logprobs) == plain.prompt_tokens and logprobs[0] is None  # the first token has no context


# -- ask -------------------------------------------------------------------------------------------

def test_ask_not_streamed(client, contract):
    import catp

    text, question = contract
    result = catp.ask(text, question, backend=client, domain="legal", max_tokens=32)
    limit = result.budget.prompt_limit.value
    assert result.prune.stats.input_tokens > result.document_budget  # it really had to prune
    assert result.prompt_tokens <= limit
    assert result.prompt_tokens == client.count_chat_tokens(result.messages)  # the count is exact
    assert result.completion_tokens <= 32 and not result.streamed
    assert result.attempts[-1].outcome == "sent and answered" and result.reprunes == len(result.attempts) - 1
    user = result.messages[-1]["content"]
    assert question in user
    for span in result.prune.kept:  # extractive: every kept span is in the request, in order
        assert text[span.start:span.end] in user
    assert result.tokenizer == str(client.tokenizer_path()) + "/tokenizer.json"


def test_ask_streamed_prints_tokens_as_they_arrive(client, judgment):
    text, question = judgment
    deltas: list[str] = []
    result = ask(text, question, backend=client, domain="legal", max_tokens=24, on_delta=deltas.append,
                 extra={"ignore_eos": True})  # a random model may stop at once; make it answer
    assert result.streamed and len(deltas) >= 2 and result.completion_tokens == 24
    assert "".join(deltas) == result.answer
    assert result.lang == "zh" and result.messages[-1]["content"].startswith("文档：")
    assert result.prompt_tokens <= result.budget.prompt_limit.value


def test_reprune_when_the_server_rejects_an_over_long_prompt(client, contract, caplog):
    text, question = contract
    with caplog.at_level(logging.WARNING, logger="catp.backends.ask"):
        result = ask(text, question, backend=client, domain="legal", max_tokens=32, budget=5000, precheck=False)
    first, last = result.attempts[0], result.attempts[-1]
    assert first.document_budget == 5000 and first.prompt_tokens > 2048
    assert first.outcome.startswith("rejected as too long") and "HTTP 400" in first.outcome
    assert last.outcome == "sent and answered" and result.reprunes == 1
    assert result.document_budget < 5000 and result.prompt_tokens <= result.budget.prompt_limit.value
    assert "rejected the prompt as too long (HTTP 400" in caplog.text
    assert any("rejected the prompt as too long" in w for w in result.warnings)


def test_precheck_prunes_again_before_sending(client, contract):
    text, question = contract
    result = ask(text, question, backend=client, domain="legal", max_tokens=32, budget=5000)
    assert result.attempts[0].outcome == "over the limit before sending; pruned again"
    assert result.attempts[0].prompt_tokens > result.budget.prompt_limit.value
    assert all("HTTP 400" not in a.outcome for a in result.attempts)
    assert result.prompt_tokens <= result.budget.prompt_limit.value


# -- well-formed requests ----------------------------------------------------------------------------

def test_system_message_is_moved_first_in_the_real_request(client, vllm_server):
    messages = [{"role": "user", "content": "What is the fee?"}, {"role": "system", "content": "Be brief."}]
    gen = client.chat(messages, max_tokens=1, extra={"return_token_ids": True})
    assert gen.warnings == ["moved system message(s) at position 1 to the front"]
    fixed = [messages[1], messages[0]]
    tokenized = httpx.post(vllm_server.root + "/tokenize",
                           json={"model": client.model, "messages": fixed, "add_generation_prompt": True}).json()
    assert gen.prompt_token_ids == tokenized["tokens"]
    tok = Tokenizer.from_file(str(vllm_server.model_dir / "tokenizer.json"))
    assert tok.decode(gen.prompt_token_ids, skip_special_tokens=False).startswith("<|im_start|>system\nBe brief.")


def test_ask_merges_and_reorders_extra_system_messages(client, contract):
    text, question = contract
    history = [{"role": "user", "content": "Earlier question"}, {"role": "assistant", "content": "Earlier answer"},
               {"role": "system", "content": "Answer in one word."}]
    result = ask(text[:3000], question, backend=client, messages=history, max_tokens=8)
    roles = [m["role"] for m in result.messages]
    assert roles == ["system", "user", "assistant", "user"]
    assert result.messages[0]["content"].endswith("Answer in one word.")
    assert "moved system message(s) at position 3 to the front" in result.warnings
    assert "joined 2 system messages into one" in result.warnings


def test_unknown_model_names_the_served_ones(vllm_server):
    with VLLMClient(vllm_server, model="no-such-model") as c, pytest.raises(BackendError) as info:
        _ = c.model_card()
    assert "'no-such-model' is not served" in str(info.value) and str(vllm_server.model_dir) in str(info.value)


# -- CLI ---------------------------------------------------------------------------------------------

def catp(*args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "catp.cli", *args], capture_output=True, text=True, timeout=timeout)


def test_cli_budget_prints_figures_and_sources(vllm_server, client):
    concurrency = engine_budget(client, ChatCounter(client), skeleton(), max_tokens=100).num_blocks // 4
    proc = catp("budget", "--server", vllm_server, "--concurrency", str(concurrency), "--max-tokens", "100")
    assert proc.returncode == 0, proc.stderr
    lines = {line.split("  ")[0]: line for line in proc.stdout.splitlines()}
    assert "2,048" in lines["max_model_len"] and f"GET {vllm_server}/models" in lines["max_model_len"]
    share = lines[f"KV share per request (concurrency {concurrency})"]
    assert "/metrics vllm:cache_config_info" in share
    assert "/tokenize" in lines["template + question"]
    as_json = json.loads(catp("budget", "--server", vllm_server, "--concurrency", str(concurrency),
                              "--max-tokens", "100", "--format", "json").stdout)
    assert as_json["per_request_kv_tokens"]["value"] == 4 * as_json["block_size"]
    assert f"{as_json['document_budget']['value']:,}" in lines["document budget"]


def test_cli_ask_streams_and_shows_the_pruned_document(vllm_server, contract, tmp_path):
    text, question = contract
    doc = tmp_path / "contract.txt"
    doc.write_text(text, encoding="utf-8")
    proc = catp("ask", str(doc), question, "--domain", "legal", "--server", vllm_server, "--stream",
                "--max-tokens", "16", "--show-pruned")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip()
    assert "--- pruned document (" in proc.stderr
    summary = [line for line in proc.stderr.splitlines() if line.startswith("catp: document ")]
    assert len(summary) == 1 and "prompt " in summary[0] and "max_model_len 2048" in summary[0]


def test_cli_ask_json(vllm_server, judgment, tmp_path):
    text, question = judgment
    doc = tmp_path / "judgment.txt"
    doc.write_text(text, encoding="utf-8")
    proc = catp("ask", str(doc), question, "--server", vllm_server, "--max-tokens", "8", "--format", "json",
                "--quiet")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["lang"] == "zh" and out["prompt_tokens"] <= out["budget"]["prompt_limit"]["value"]
    assert out["prune"]["stats"]["input_tokens"] > out["document_budget"]
    assert proc.stderr == ""
