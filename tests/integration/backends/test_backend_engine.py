"""The in-process engine (`vllm.LLM`) behind the same interface, on the tiny model.

vllm is not in the dev venv, so this runs a script with the vLLM venv's Python
(CATP_VLLM_PYTHON) and catp on its PYTHONPATH; .ci/setup-vllm.sh installs catp's runtime
dependencies there. The script writes a JSON report that the test checks.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from _samples import evals_data
from transformers import AutoTokenizer

from conftest import VLLM_PYTHON

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[3]

SCRIPT = r'''
import json
import sys
from pathlib import Path


def main():  # vLLM starts its engine in a spawned process: keep the work under __main__
    from catp.backends.ask import ask
    from catp.backends.client import ContextLengthError
    from catp.backends.engine import LocalEngine, vllm_available

    model_dir, doc_path, question, out = sys.argv[1:5]
    report = {"vllm_available": vllm_available()}
    engine = LocalEngine(model_dir, max_model_len=2048, enforce_eager=True)
    report["max_model_len"] = engine.max_model_len()
    kv = engine.kv_cache()
    report["kv"] = kv.model_dump() if kv else None
    msgs = [{"role": "user", "content": "What is the fee?"}, {"role": "system", "content": "Be brief."}]
    report["count"] = engine.count_chat_tokens(msgs)
    report["chat"] = engine.chat(msgs, max_tokens=4, extra={"ignore_eos": True}).model_dump()
    batch = engine.chat_batch([msgs, [{"role": "user", "content": "Second question"}]], max_tokens=3)
    report["batch"] = [g.model_dump() for g in batch]
    try:
        engine.chat([{"role": "user", "content": "hello world " * 2000}], max_tokens=4)
    except ContextLengthError as exc:
        report["too_long"] = str(exc)
    result = ask(Path(doc_path), question, backend=engine, domain="legal", max_tokens=16)
    report["ask"] = result.model_dump(mode="json")
    Path(out).write_text(json.dumps(report), encoding="utf-8")


if __name__ == "__main__":
    main()
'''


def test_in_process_engine_runs_ask(tiny_model_dir, tmp_path):
    folder = evals_data()
    if folder is None:
        pytest.skip("the shared evals data is missing (set CATP_EVALS_DATA)")
    with open(folder / "cuad.dev.jsonl", encoding="utf-8") as fh:
        doc = next(d for d in map(json.loads, fh) if d.get("questions"))
    doc_path, script, out = tmp_path / "doc.txt", tmp_path / "engine_script.py", tmp_path / "report.json"
    doc_path.write_text(doc["text"], encoding="utf-8")
    script.write_text(SCRIPT, encoding="utf-8")
    question = doc["questions"][0]["question"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "VLLM_HOST_IP": "127.0.0.1", "VLLM_CPU_KVCACHE_SPACE": "1",
           "HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1"}
    proc = subprocess.run([VLLM_PYTHON, str(script), str(tiny_model_dir), str(doc_path), question, str(out)],
                          capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(out.read_text(encoding="utf-8"))

    assert report["vllm_available"] is True
    assert report["max_model_len"] == 2048
    assert report["kv"]["num_blocks"] > 0 and report["kv"]["block_size"] > 0
    # the engine counts with the model's chat template, as transformers does in the dev venv
    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    fixed = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is the fee?"}]
    rendered = tok.apply_chat_template(fixed, add_generation_prompt=True, tokenize=False)
    assert report["count"] == len(tok(rendered, add_special_tokens=False)["input_ids"])
    chat = report["chat"]
    assert chat["prompt_tokens"] == report["count"] and chat["completion_tokens"] == 4
    assert chat["warnings"] == ["moved system message(s) at position 1 to the front"]
    assert len(report["batch"]) == 2 and all(g["completion_tokens"] <= 3 for g in report["batch"])
    assert "maximum context length is 2048" in report["too_long"]

    result = report["ask"]
    assert result["backend"].startswith("in-process vllm.LLM(")
    assert "model_config.max_model_len" in result["budget"]["max_model_len"]["source"]
    assert result["prune"]["stats"]["input_tokens"] > result["document_budget"]
    assert result["prompt_tokens"] <= result["budget"]["prompt_limit"]["value"]
    assert result["completion_tokens"] <= 16
