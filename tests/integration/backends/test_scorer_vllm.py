"""VLLMScorer (catp/scoring/remote.py) against a real vLLM CPU server serving the tiny Qwen2.

The comparison with transformers needs the server to compute in float32 (vLLM casts a
float32 checkpoint to bfloat16 by default, which moves log-probs by ~1e-2). If the session's
`vllm_server` fixture runs another dtype, this module starts its own float32 server with
conftest's helper.
"""

from __future__ import annotations

import json
import math
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from catp.errors import BackendError, ModelError
from catp.scoring.remote import VLLMScorer

LEGAL = [
    "Revenue increased 12% year over year to USD 3.4 billion in Q3 2024.",
    "The patient denies chest pain and reports no fever.",
    "The Licensee shall pay the Licensor a fee of $5,000 within thirty (30) days.",
    "Either party may terminate this Agreement upon ninety (90) days written notice.",
    "The governing law of this Agreement is the law of the State of New York.",
    "甲方应于2024年3月5日前向乙方支付违约金三百万元。但是，如果乙方未按期交付，甲方有权解除本合同。",
]
ROOT = Path(__file__).resolve().parents[3]


def make_doc(text: str):
    from catp.document import Analysis, Document
    from catp.segment.splitter import segment

    doc = Document.of(segment(Analysis(text=text, lang="en")))
    n = len(doc.units)
    doc.columns.priority, doc.columns.deleted, doc.columns.rules = [0] * n, [False] * n, [[] for _ in range(n)]
    return doc


@pytest.fixture(scope="module")
def f32_server(vllm_server, tiny_model_dir, tmp_path_factory):
    try:
        log = Path(vllm_server.log_path).read_text(errors="replace")
    except OSError:
        log = ""
    if "dtype=torch.float32" in log:
        yield vllm_server
        return
    from conftest import start_vllm_server, stop_vllm_server

    server = start_vllm_server(tiny_model_dir, tmp_path_factory.mktemp("vllm-f32") / "server.log",
                               extra_args=("--dtype", "float32"))
    try:
        yield server
    finally:
        stop_vllm_server(server)


@pytest.fixture(scope="module")
def lm(tiny_model_dir):
    pytest.importorskip("torch")
    from catp.scoring.lm import LMScorer

    return LMScorer(str(tiny_model_dir), device="cpu", window=512, overlap=128, max_tokens=10**6)


# --- no server needed ------------------------------------------------------------------------------

def test_remote_path_imports_no_torch():
    code = ("import sys, catp.scoring.remote, catp.scoring.registry; "
            "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_unreachable_server_is_one_clear_error():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once we leave: nothing listens there
    with pytest.raises(BackendError, match=f"cannot reach vLLM server http://127.0.0.1:{port}/v1/models"):
        VLLMScorer(f"http://127.0.0.1:{port}/v1", timeout=5)


def test_options_are_checked():
    with pytest.raises(ModelError, match="scorer-url"):
        VLLMScorer.from_options(model="x")
    with pytest.raises(ModelError, match="http"):
        VLLMScorer("127.0.0.1:8000")
    with pytest.raises(ModelError, match="device"):
        VLLMScorer.from_options(url="http://127.0.0.1:9", device="cuda")


# --- the real server -------------------------------------------------------------------------------

@pytest.mark.vllm
def test_prompt_logprobs_equal_transformers(f32_server, lm):
    """Per-token self-information, windowed the same way, from vLLM and from transformers."""
    remote = VLLMScorer(f32_server, window=512, overlap=128)
    assert remote.served_model == f32_server.model
    assert remote.max_len == f32_server.max_model_len - 1
    ids = remote.tokenizer.encode(" ".join(LEGAL * 16), add_special_tokens=False).ids
    assert len(ids) > 3 * 512
    assert remote.plan(len(ids), [(1, len(ids))]) == lm.plan(len(ids), [(1, len(ids))])
    got, want = remote.token_nll(ids), lm.token_nll(ids)
    assert math.isnan(got[0]) and math.isnan(want[0])
    diff = max(abs(a - b) for a, b in zip(got[1:], want[1:]))
    assert diff < 1e-3, diff


@pytest.mark.vllm
def test_unit_and_question_scores_equal_transformers(f32_server, lm):
    remote = VLLMScorer(f32_server, window=512, overlap=128)
    doc = make_doc(" ".join(LEGAL * 4))
    cands = list(range(len(doc.units)))
    for question in (None, "What is the governing law?", "违约金是多少？"):
        a = remote.score(doc, cands, question=question)
        b = lm.score(doc, cands, question=question)
        assert set(a) == set(cands)
        assert max(abs(a[c] - b[c]) for c in cands) < 1e-3, question


@pytest.fixture(scope="module")
def bos_tokenizer_dir(tiny_model_dir, tmp_path_factory) -> Path:
    """The tiny model's tokenizer made to put a BOS token (<|endoftext|>) before every text, as Gemma's does;
    the ids of a text without special tokens are unchanged."""
    from tokenizers import Tokenizer
    from tokenizers.processors import TemplateProcessing

    tok = Tokenizer.from_file(str(tiny_model_dir / "tokenizer.json"))
    bos = tok.token_to_id("<|endoftext|>")
    tok.post_processor = TemplateProcessing(single="<|endoftext|> $A", special_tokens=[("<|endoftext|>", bos)])
    folder = tmp_path_factory.mktemp("bos-tokenizer")
    tok.save(str(folder / "tokenizer.json"))
    return folder


@pytest.mark.vllm
def test_a_bos_tokenizer_gets_its_bos_through_the_server_as_locally(f32_server, tiny_model_dir, bos_tokenizer_dir):
    """A model whose tokenizer starts every text with a BOS (Gemma) is fed one before every window and every
    question sequence by both scorers: the values agree, and a window and its BOS still fit the served length."""
    from catp.scoring.lm import LMScorer
    from catp.scoring.model_source import load_tokenizer

    lm = LMScorer(str(tiny_model_dir), tokenizer=load_tokenizer(bos_tokenizer_dir), device="cpu", window=512,
                  overlap=128, max_tokens=10**6)
    remote = VLLMScorer(f32_server, model=str(bos_tokenizer_dir), window=512, overlap=128)
    assert remote.bos_id == lm.bos_id is not None
    ids = remote.tokenizer.encode(" ".join(LEGAL * 16), add_special_tokens=False).ids
    got, want = remote.token_nll(ids), lm.token_nll(ids)
    assert max(abs(a - b) for a, b in zip(got[1:], want[1:])) < 1e-3
    plain = VLLMScorer(f32_server, window=512, overlap=128).token_nll(ids)  # the same ids, no BOS
    assert max(abs(a - b) for a, b in zip(got[1:], plain[1:])) > 1e-2  # the BOS is what the values see
    doc = make_doc(" ".join(LEGAL * 4))
    cands = list(range(len(doc.units)))
    for question in (None, "What is the governing law?"):
        a, b = remote.score(doc, cands, question=question), lm.score(doc, cands, question=question)
        assert max(abs(a[c] - b[c]) for c in cands) < 1e-3, question
    wide = VLLMScorer(f32_server, model=str(bos_tokenizer_dir), window=100_000, overlap=1024)
    assert wide.max_len == f32_server.max_model_len - 2
    long_ids = wide.tokenizer.encode(" ".join(LEGAL * 40), add_special_tokens=False).ids
    assert all(math.isfinite(x) for x in wide.token_nll(long_ids)[1:])  # the server takes every window


@pytest.mark.vllm
def test_only_candidate_windows_are_sent(f32_server):
    sent: list[int] = []
    remote = VLLMScorer(f32_server, window=256, overlap=64)

    def count(request):
        if request.url.path.endswith("/completions"):
            sent.extend(len(p) for p in json.loads(request.content)["prompt"])

    remote.client.event_hooks["request"].append(count)
    doc = make_doc(" ".join(LEGAL * 20))
    n_tokens = len(remote.tokenizer.encode(doc.text, add_special_tokens=False).ids)
    scores = remote.score(doc, [2, 3])
    assert set(scores) == {2, 3}
    assert sent == [256] and n_tokens > 4 * 256  # one window, not the document
    assert remote.last_stats.tokens_fed == 256


@pytest.mark.vllm
def test_window_is_capped_by_the_served_length(f32_server):
    remote = VLLMScorer(f32_server, window=100_000, overlap=1024)
    ids = remote.tokenizer.encode(" ".join(LEGAL * 40), add_special_tokens=False).ids
    wins = remote.plan(len(ids), [(1, len(ids))])
    assert len(ids) > f32_server.max_model_len
    assert all(w.end - w.start == f32_server.max_model_len - 1 for w in wins)
    nll = remote.token_nll(ids)  # the server accepts every window
    assert all(math.isfinite(x) for x in nll[1:])


@pytest.mark.vllm
def test_server_errors_are_backend_errors(f32_server):
    remote = VLLMScorer(f32_server)
    with pytest.raises(BackendError, match=r"/v1/completions answered 400"):
        remote.token_nll([10**7, 1, 2])  # no such token id


@pytest.mark.vllm
def test_a_different_tokenizer_is_refused(f32_server, tmp_path):
    sys.path.insert(0, str(ROOT / "tests"))
    from tiny_qwen import build_tokenizer

    other = tmp_path / "other"
    build_tokenizer(vocab_size=400).save_pretrained(other)
    (other / "config.json").write_text("{}")
    with pytest.raises(ModelError, match="does not match the server"):
        VLLMScorer(f32_server, model=str(other))


@pytest.mark.vllm
def test_scoring_through_the_server_imports_no_torch(f32_server):
    code = (
        "import sys\n"
        "from catp.document import Analysis, Document\n"
        "from catp.segment.splitter import segment\n"
        "from catp.scoring.registry import build_scorer\n"
        f"s = build_scorer('vllm', url={str(f32_server)!r}, window=256)\n"
        "doc = Document.of(segment(Analysis(text='The fee is $5,000. Either party may terminate. 甲方应付款。')))\n"
        "print(len(s.score(doc, list(range(len(doc.units))))) == len(doc.units), 'torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["True", "False"]
