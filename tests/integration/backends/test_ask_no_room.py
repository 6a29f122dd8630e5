"""`catp ask` against the real vLLM server (conftest's tiny model, max_model_len 2048) where a user's
settings leave the answer or the prompt no room: nothing is cut without saying so."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from catp.backends.ask import ask
from catp.backends.client import VLLMClient

pytestmark = pytest.mark.vllm
ROOT = Path(__file__).resolve().parents[3]
TEXT = (ROOT / "examples" / "contract_en.txt").read_text(encoding="utf-8")
QUESTION = "What is the cap on liability?"


def catp(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "catp", *args], capture_output=True, text=True, timeout=300,
                          cwd=ROOT)


@pytest.fixture(scope="module")
def client(vllm_server):
    with VLLMClient(vllm_server, read_timeout=120) as c:
        yield c


def test_an_answer_cut_at_max_tokens_says_so(client):
    result = ask(TEXT, QUESTION, backend=client, domain="legal", max_tokens=8, extra={"ignore_eos": True})
    assert result.finish_reason == "length" and result.completion_tokens == 8
    assert any("max_tokens" in w and "cut" in w for w in result.warnings), result.warnings


def test_a_prompt_that_leaves_the_answer_less_than_max_tokens_says_so(client, vllm_server):
    # precheck off and a budget above the engine's: the prompt fits max_model_len but not with the answer,
    # and vLLM shortens max_tokens without a word
    first = ask(TEXT, QUESTION, backend=client, domain="legal", max_tokens=200, extra={"ignore_eos": True})
    budget = first.document_budget + 150
    result = ask(TEXT, QUESTION, backend=client, domain="legal", max_tokens=200, budget=budget, precheck=False,
                 extra={"ignore_eos": True})
    assert result.prompt_tokens + 200 > vllm_server.max_model_len >= result.prompt_tokens
    assert result.completion_tokens < 200
    assert any("max_tokens" in w and "cut" in w for w in result.warnings), result.warnings


def test_cli_budget_above_max_model_len_is_kept_within_it(vllm_server, tmp_path):
    doc = tmp_path / "contract.txt"
    doc.write_text(TEXT, encoding="utf-8")
    proc = catp("ask", str(doc), QUESTION, "--server", vllm_server, "--budget", "100000", "--max-tokens", "16",
                "--format", "json")
    assert proc.returncode == 0, proc.stderr
    import json

    out = json.loads(proc.stdout)
    assert out["prompt_tokens"] <= out["budget"]["prompt_limit"]["value"] == 2048 - 16
    assert "over the engine's document budget" in proc.stderr


@pytest.mark.parametrize("args, needle", [
    (["--max-tokens", "2048"], "leaves no room for a prompt"),
    (["--max-tokens", "2040"], "the template and question already take"),
    (["--model", "no-such-model"], "is not served"),
])
def test_cli_settings_that_leave_no_room_are_one_line(vllm_server, tmp_path, args, needle):
    doc = tmp_path / "contract.txt"
    doc.write_text(TEXT, encoding="utf-8")
    proc = catp("ask", str(doc), QUESTION, "--server", vllm_server, *args)
    lines = proc.stderr.splitlines()
    assert proc.returncode in (2, 3) and proc.stdout == "" and "Traceback" not in proc.stderr, proc.stderr
    assert len(lines) == 1 and needle in lines[0], proc.stderr


def test_cli_a_question_longer_than_the_prompt_limit_is_one_line(vllm_server, tmp_path):
    doc = tmp_path / "contract.txt"
    doc.write_text(TEXT, encoding="utf-8")
    proc = catp("ask", str(doc), "why " * 3000, "--server", vllm_server)
    assert proc.returncode == 2 and proc.stdout == "", proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("catp: error: the template and question already take"), lines


def test_a_max_model_len_over_the_servers_is_not_used(client, vllm_server):
    result = ask(TEXT, QUESTION, backend=client, domain="legal", max_tokens=16, max_model_len=100_000)
    assert result.budget.max_model_len.value == vllm_server.max_model_len
    assert result.reprunes == 0 and result.prompt_tokens + 16 <= vllm_server.max_model_len
    assert any("over the engine's 2048" in w for w in result.warnings), result.warnings
    proc = catp("budget", "--server", vllm_server, "--max-model-len", "100000")
    assert proc.returncode == 0 and "over the engine's 2048" in proc.stderr, proc.stderr
