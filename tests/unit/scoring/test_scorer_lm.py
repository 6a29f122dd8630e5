"""LMScorer (catp/scoring/lm.py), model_source and the shared windowing logic, on the tiny Qwen2.

The tiny model (tests/tiny_qwen.py) has random weights: these tests check arithmetic and
bookkeeping (windows, offsets, candidates, budget, fallback, integrity), never quality.
Two variants of it are derived here by editing its config or weights (no new builder):
* a sliding-window copy, whose receptive field is bounded, so windowed scoring must equal
  one full pass exactly when the overlap covers that field;
* a "cache LM" copy for the question-aware test (see `cache_lm_dir`).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from catp.document import Analysis, Document  # noqa: E402
from catp.errors import CatpError, ModelError  # noqa: E402
from catp.scoring.logprobs import merge_ranges, plan_windows, question_suffix, unit_token_ranges  # noqa: E402
from catp.scoring.lm import LMScorer  # noqa: E402
from catp.scoring.manifest import verify_manifest  # noqa: E402
from catp.tokens import sha256_file  # noqa: E402
from catp.segment.splitter import segment  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]

LEGAL = [
    "Revenue increased 12% year over year to USD 3.4 billion in Q3 2024.",
    "The patient denies chest pain and reports no fever.",
    "The Licensee shall pay the Licensor a fee of $5,000 within thirty (30) days.",
    "Either party may terminate this Agreement upon ninety (90) days written notice.",
    "The Company shall not be liable for any indirect damages.",
    "The governing law of this Agreement is the law of the State of New York.",
    "Net profit was 1.2 billion yuan in the same period.",
    "No evidence of infection was found on examination.",
]
ZH = "甲方应于2024年3月5日前向乙方支付违约金三百万元。但是，如果乙方未按期交付，甲方有权解除本合同。"


def make_doc(text: str, tokenizer=None) -> Document:
    """A Document cut into units by catp's own segmenter; unit costs in `tokenizer` if given."""
    doc = Document.of(segment(Analysis(text=text, lang="en")))
    n = len(doc.units)
    doc.columns.priority, doc.columns.deleted, doc.columns.rules = [0] * n, [False] * n, [[] for _ in range(n)]
    if tokenizer is not None:
        for u in doc.units:
            u.tokens = len(tokenizer.encode(doc.unit_text(u), add_special_tokens=False).ids)
    return doc


def long_text(repeats: int) -> str:
    return " ".join((LEGAL + [ZH]) * repeats)


def full_pass_nll(model, ids) -> list[float]:
    """Reference: one forward over the whole sequence, float32 full-vocabulary log_softmax."""
    with torch.inference_mode():
        lp = torch.log_softmax(model(torch.tensor([ids])).logits[0].float(), -1)
    return [math.nan] + [-lp[i - 1, ids[i]].item() for i in range(1, len(ids))]


class FedCounter:
    """Counts the tokens the model's forward pass is fed (a hook on the input embeddings)."""

    def __init__(self, scorer: LMScorer) -> None:
        self.tokens = 0
        self.calls = 0
        scorer.model.get_input_embeddings().register_forward_hook(self._hook)

    def _hook(self, _module, args, _out) -> None:
        self.tokens += args[0].numel()
        self.calls += 1


@pytest.fixture(scope="module")
def sliding(sliding_model_dir: Path) -> LMScorer:
    return LMScorer(str(sliding_model_dir), device="cpu", window=256, overlap=64, batch_tokens=512,
                    max_tokens=10**6)


@pytest.fixture(scope="module")
def tiny(tiny_model_dir: Path) -> LMScorer:
    return LMScorer(str(tiny_model_dir), device="cpu", window=256, overlap=64, max_tokens=10**6)


# --- windows -----------------------------------------------------------------------------------

@pytest.mark.parametrize("n,window,overlap", [(1000, 256, 64), (257, 256, 64), (100, 256, 64),
                                              (5000, 512, 0), (999, 100, 99)])
def test_plan_scores_every_needed_token_once_with_context(n, window, overlap):
    import random

    rng = random.Random(n)
    cuts = sorted(rng.sample(range(1, n), 20))
    needed = merge_ranges([(a, min(n, a + rng.randint(1, 40))) for a in cuts[::2]])
    wins = plan_windows(n, needed, window, overlap)
    scored: list[int] = []
    for w in wins:
        assert w.end - w.start == min(window, n)  # one length: batches need no padding
        assert w.start < w.score_from < w.end or (w.start == 0 and w.score_from >= 1)
        for a, b in needed:
            for p in range(max(a, w.score_from), min(b, w.end)):
                assert p - w.start >= min(overlap, p), "a scored token lacks left context"
                scored.append(p)
    want = [p for a, b in needed for p in range(a, b)]
    assert sorted(scored) == want  # each needed token exactly once, nothing else
    # windows run only where needed: none would be planned for an empty request
    assert plan_windows(n, [], window, overlap) == []


def test_overlap_must_be_below_window():
    with pytest.raises(ModelError, match="overlap"):
        plan_windows(100, [(1, 100)], 64, 64)


def test_windowed_scores_equal_one_full_pass(sliding: LMScorer):
    """Text 4x longer than the window; overlap 64 >= the 62-token receptive field."""
    ids = sliding.tokenizer.encode(long_text(8), add_special_tokens=False).ids
    assert len(ids) > 4 * sliding.window
    windows = sliding.plan(len(ids), [(1, len(ids))])
    assert len(windows) > 4
    got = sliding.token_nll(ids)
    ref = full_pass_nll(sliding.model, ids)
    assert math.isnan(got[0])
    assert max(abs(a - b) for a, b in zip(got[1:], ref[1:])) < 1e-4


def test_too_little_overlap_changes_scores(sliding_model_dir: Path, sliding: LMScorer):
    """Control for the test above: with 8 tokens of overlap the windows differ from the full pass."""
    short = LMScorer(str(sliding_model_dir), device="cpu", window=256, overlap=8)
    ids = short.tokenizer.encode(long_text(4), add_special_tokens=False).ids
    ref = full_pass_nll(short.model, ids)
    got = short.token_nll(ids)
    assert max(abs(a - b) for a, b in zip(got[1:], ref[1:])) > 1e-2


def test_full_attention_windows_match_the_first_window_exactly(tiny: LMScorer):
    """On the plain (full-attention) tiny model the first window is a full pass of its prefix;
    later tokens see `overlap` or more tokens, so they differ from the full pass, but stay finite."""
    ids = tiny.tokenizer.encode(long_text(2), add_special_tokens=False).ids
    got = tiny.token_nll(ids)
    ref = full_pass_nll(tiny.model, ids)
    first = tiny.plan(len(ids), [(1, len(ids))])[0]
    assert max(abs(a - b) for a, b in zip(got[1:first.end], ref[1:first.end])) < 1e-4
    assert all(math.isfinite(x) and x > 0 for x in got[1:])


def test_unit_scores_are_the_aggregate_of_their_tokens(sliding: LMScorer):
    """Units map to scorer tokens through character offsets; mean and max of those tokens."""
    doc = make_doc(long_text(2))
    cands = list(range(len(doc.units)))
    enc = sliding.tokenizer.encode(doc.text, add_special_tokens=False)
    ref = full_pass_nll(sliding.model, enc.ids)
    spans = [(u.start, u.end) for u in doc.units]
    ranges = unit_token_ranges(enc.offsets, spans)
    mean = sliding.score(doc, cands)
    mx = LMScorer(sliding.model_source, device="cpu", window=256, overlap=64, aggregate="max",
                  max_tokens=10**6).score(doc, cands)
    for c, (a, b) in zip(cands, ranges):
        vals = ref[max(1, a):b]
        # every token of the unit overlaps the unit's characters
        assert all(enc.offsets[t][0] < doc.units[c].end and enc.offsets[t][1] > doc.units[c].start
                   for t in range(a, b))
        assert mean[c] == pytest.approx(sum(vals) / len(vals), abs=1e-4)
        assert mx[c] == pytest.approx(max(vals), abs=1e-4)
        assert mx[c] >= mean[c] - 1e-6


def test_scores_are_deterministic(tiny: LMScorer):
    doc = make_doc(" ".join(LEGAL))
    cands = list(range(len(doc.units)))
    assert tiny.score(doc, cands) == tiny.score(doc, cands)


# --- cost control --------------------------------------------------------------------------------

def test_only_candidate_windows_run(sliding: LMScorer):
    """Decided units are not scored: the model is fed only windows around the candidates, and
    (bounded receptive field) their scores equal those of scoring every unit."""
    doc = make_doc(long_text(12))
    n_tokens = len(sliding.tokenizer.encode(doc.text, add_special_tokens=False).ids)
    all_units = list(range(len(doc.units)))
    fed = FedCounter(sliding)
    everything = sliding.score(doc, all_units)
    fed_all = fed.tokens
    assert fed_all >= n_tokens - 1
    picked = [3, len(doc.units) // 2, len(doc.units) // 2 + 1]
    fed.tokens = 0
    some = sliding.score(doc, picked)
    assert set(some) == set(picked)
    assert fed.tokens == sliding.last_stats.tokens_fed
    assert fed.tokens <= 2 * sliding.window < fed_all / 3  # two windows, not the document
    for c in picked:
        assert some[c] == pytest.approx(everything[c], abs=1e-4)


def test_settled_budget_runs_no_model(tiny: LMScorer):
    doc = make_doc(" ".join(LEGAL), tiny.tokenizer)
    cands = list(range(len(doc.units)))
    total = sum(u.tokens for u in doc.units)
    fed = FedCounter(tiny)
    fits = tiny.score(doc, cands, budget_tokens=total)
    assert fed.calls == 0 and tiny.last_stats.settled == "all units fit the budget"
    assert set(fits) == set(cands)
    assert not doc.warnings


def test_decided_units_filling_the_budget_settle_nothing(tiny: LMScorer):
    """Selection ranks protected units by value per token too, so an undecided unit can be kept while protected
    ones are left out: its score matters however much the rules protect. (Before, the model did not run when the
    protected units alone filled the budget, and `--scorer lm` gave the lexical scorer's ranking.)"""
    doc = make_doc(" ".join(LEGAL), tiny.tokenizer)
    cands = list(range(len(doc.units)))
    doc.columns.priority = [1] + [0] * (len(cands) - 1)  # the first unit is decided (protected) ...
    budget = doc.units[0].tokens  # ... and fills the budget
    fed = FedCounter(tiny)
    scores = tiny.score(doc, cands[1:], budget_tokens=budget)
    fitting = [c for c in cands[1:] if doc.units[c].tokens <= budget]
    assert fitting and fed.calls > 0 and tiny.last_stats.settled is None
    assert tiny.last_stats.units_scored == len(fitting) and set(scores) == set(cands[1:])


def test_a_pruner_ranks_the_undecided_units_by_the_model_on_the_lexical_scale(tiny: LMScorer):
    """Through Pruner, on a contract whose protected text is over the budget: the model scores the units the
    rules left undecided, and their scores keep the model's order but take the lexical scorer's values (by
    rank), the scale of the protected units' scores and of the selection policy's weights."""
    from catp.pipeline import Pruner
    from catp.scoring.lexical import LexicalScorer

    text = (ROOT / "examples" / "contract_en.txt").read_text(encoding="utf-8")
    with_lm, lexical = Pruner(domain="legal", scorer=tiny), Pruner(domain="legal")
    doc = with_lm.analyse(text, ratio="1/4")
    live = [i for i in range(len(doc.units)) if not doc.columns.deleted[i]]
    undecided = [i for i in live if doc.columns.priority[i] == 0]
    protected_tokens = sum(doc.units[i].tokens for i in live if doc.columns.priority[i] > 0)
    assert undecided and protected_tokens > doc.budget  # the case the model used to skip
    model = tiny.score(doc, undecided, budget_tokens=doc.budget)
    assert tiny.last_stats.units_scored > 0
    lex = LexicalScorer().score(doc, live)
    assert sorted(doc.scores[i] for i in undecided) == sorted(lex[i] for i in undecided)  # lexical values ...
    by_model = sorted(undecided, key=lambda i: (model[i], -i))
    assert [doc.scores[i] for i in by_model] == sorted(doc.scores[i] for i in undecided)  # ... in the model's order
    assert all(doc.scores[i] == lex[i] for i in live if doc.columns.priority[i] > 0)
    assert doc.scores != lexical.analyse(text, ratio="1/4").scores  # the random model's order is not lexical's
    result = with_lm.finish(doc)
    assert result.stats.output_tokens <= doc.budget
    assert [(k.start, k.end) for k in result.kept] == sorted((k.start, k.end) for k in result.kept)


def test_units_too_long_for_the_budget_are_not_scored(tiny: LMScorer):
    doc = make_doc(" ".join(LEGAL), tiny.tokenizer)
    cands = list(range(len(doc.units)))
    budget = sorted(u.tokens for u in doc.units)[len(cands) // 2]
    tiny.score(doc, cands, budget_tokens=budget)
    too_long = sum(1 for u in doc.units if u.tokens > budget)
    assert too_long > 0
    assert tiny.last_stats.units_scored == len(cands) - too_long
    assert tiny.last_stats.units_fallback == too_long
    assert not doc.warnings  # their score cannot matter: no warning


def test_max_tokens_bounds_the_work_and_falls_back_with_a_warning(tiny_model_dir: Path):
    bounded = LMScorer(str(tiny_model_dir), device="cpu", window=256, overlap=64, max_tokens=600)
    doc = make_doc(long_text(4))
    cands = list(range(len(doc.units)))
    fed = FedCounter(bounded)
    scores = bounded.score(doc, cands)
    assert set(scores) == set(cands) and all(math.isfinite(v) for v in scores.values())
    assert 0 < fed.tokens <= 600
    stats = bounded.last_stats
    assert stats.units_scored > 0 and stats.units_fallback > 0
    assert stats.units_scored + stats.units_fallback == len(cands)
    assert any("max_tokens=600" in w and "fallback" in w for w in doc.warnings)
    # fallback scores are placed on the model scores' scale (quantile matching)
    model_scores = LMScorer(str(tiny_model_dir), device="cpu", window=256, overlap=64).score(doc, cands)
    lo, hi = min(model_scores.values()), max(model_scores.values())
    assert all(lo - 1e-6 <= v <= hi + 1e-6 for v in scores.values())


def test_cpu_default_bounds_work(tiny_model_dir: Path):
    from catp.scoring.lm import CPU_MAX_TOKENS

    assert LMScorer(str(tiny_model_dir), device="cpu").max_tokens == CPU_MAX_TOKENS


# --- question-aware -------------------------------------------------------------------------------

QUESTION_TEMPLATE = "\n\n{question}"
Q_LAW = "What is the governing law of this Agreement?"
Q_PATIENT = "the patient chest pain fever"


@pytest.fixture(scope="module")
def cache_lm_dir(tiny_model_dir: Path, tmp_path_factory) -> Path:
    """The tiny model turned into a "cache LM" by editing its weights.

    A random-weight model has no notion of relevance, so the question-aware test needs a
    model with a known mechanism. Here: layer 0 attends uniformly to every earlier token
    (zero query/key weights) and copies a one-hot code of each token of the two questions
    (others: zero) into the residual stream; the output layer reads that code back, so the
    logit of a question token grows with how often it occurred in the context; everything
    else is zeroed. This is the copy/repetition effect a trained LM shows: a unit that
    repeats the question's words makes the question less surprising. The scorer must turn
    that into the highest relevance for the unit that shares the question's words.
    """
    from safetensors.torch import load_file, save_file
    from tokenizers import Tokenizer

    out = tmp_path_factory.mktemp("cache-lm")
    for f in tiny_model_dir.iterdir():
        if f.name != "model.safetensors":
            shutil.copy(f, out / f.name)
    tok = Tokenizer.from_file(str(tiny_model_dir / "tokenizer.json"))
    code_ids = sorted({t for q in (Q_LAW, Q_PATIENT)
                       for t in tok.encode(question_suffix(q, QUESTION_TEMPLATE), add_special_tokens=False).ids})
    sd = load_file(str(tiny_model_dir / "model.safetensors"))
    vocab, hidden = sd["model.embed_tokens.weight"].shape
    half = hidden // 2
    assert len(code_ids) <= half
    gen = torch.Generator().manual_seed(0)
    emb = torch.zeros(vocab, hidden)
    # a fixed-norm identity part (keeps RMSNorm scales constant) and the one-hot code
    emb[:, half:] = torch.nn.functional.normalize(torch.randn(vocab, half, generator=gen), dim=1) * 8.0
    for j, t in enumerate(code_ids):
        emb[t, j] = 1.0
    for k in sd:
        if ".layers." in k and not k.endswith("layernorm.weight"):
            sd[k] = torch.zeros_like(sd[k])
    sd["model.embed_tokens.weight"] = emb
    v = torch.zeros_like(sd["model.layers.0.self_attn.v_proj.weight"])
    v[:, :half] = torch.eye(half)
    sd["model.layers.0.self_attn.v_proj.weight"] = v
    o = torch.zeros_like(sd["model.layers.0.self_attn.o_proj.weight"])
    o[:half, :half] = 2.0 * torch.eye(half)
    sd["model.layers.0.self_attn.o_proj.weight"] = o
    head = torch.zeros(vocab, hidden)
    head[:, :half] = 2.0 * emb[:, :half]
    sd["lm_head.weight"] = head
    save_file(sd, str(out / "model.safetensors"), metadata={"format": "pt"})
    return out


def test_question_moves_the_relevant_unit_up(cache_lm_dir: Path):
    scorer = LMScorer(str(cache_lm_dir), device="cpu", window=256, overlap=64,
                      question_template=QUESTION_TEMPLATE)
    doc = make_doc(" ".join(LEGAL))
    cands = list(range(len(doc.units)))
    law = next(i for i in cands if doc.unit_text(doc.units[i]).startswith("The governing law"))
    patient = next(i for i in cands if doc.unit_text(doc.units[i]).startswith("The patient"))

    def rank(scores, unit):
        return sorted(cands, key=lambda i: (-scores[i], i)).index(unit)

    plain = scorer.score(doc, cands)
    law_q = scorer.score(doc, cands, question=Q_LAW)
    assert scorer.last_stats.sequences == len(cands) + 1  # one per unit, plus the bare question
    assert rank(plain, law) > 0  # not already first on self-information ...
    assert rank(law_q, law) == 0  # ... first once the question is asked
    assert law_q[law] - sorted(law_q.values())[-2] > 0.1
    patient_q = scorer.score(doc, cands, question=Q_PATIENT)
    assert rank(patient_q, patient) == 0  # another question, another unit on top
    assert rank(patient_q, law) > 0


def test_question_score_is_the_drop_in_question_surprisal(tiny: LMScorer):
    """relevance(u) = S(q) - S(q | u), recomputed here from full passes."""
    doc = make_doc(" ".join(LEGAL[:3]))
    cands = list(range(len(doc.units)))
    q = "What is the fee?"
    got = tiny.score(doc, cands, question=q)
    enc = tiny.tokenizer.encode(doc.text, add_special_tokens=False)
    q_ids = tiny.tokenizer.encode(question_suffix(q), add_special_tokens=False).ids

    def s_q(prefix):
        nll = full_pass_nll(tiny.model, prefix + q_ids)
        part = nll[len(prefix) + 1:]
        return sum(part) / len(part)

    base = s_q([])
    for c, (a, b) in zip(cands, unit_token_ranges(enc.offsets, [(u.start, u.end) for u in doc.units])):
        assert got[c] == pytest.approx(base - s_q(enc.ids[a:b]), abs=1e-4)


# --- options, device, errors -------------------------------------------------------------------

def test_from_options(tiny_model_dir: Path):
    s = LMScorer.from_options(model=str(tiny_model_dir), device="cpu", window=128, stride=96, aggregate="max",
                              max_tokens=1000, url=None, sha256=None, allow_download=None)
    assert (s.window, s.overlap, s.aggregate, s.max_tokens) == (128, 32, "max", 1000)
    with pytest.raises(ModelError, match="url"):
        LMScorer.from_options(model=str(tiny_model_dir), url="http://x")
    with pytest.raises(ModelError, match="aggregate"):
        LMScorer.from_options(model=str(tiny_model_dir), aggregate="median")
    with pytest.raises(ModelError, match="window"):
        LMScorer.from_options(model=str(tiny_model_dir), window=0)
    with pytest.raises(ModelError, match="device"):
        LMScorer.from_options(model=str(tiny_model_dir), device="tpu:7")
    with pytest.raises(ModelError, match="compile"):
        LMScorer.from_options(model=str(tiny_model_dir), device="cpu", compile="sometimes")
    assert LMScorer.from_options(model=str(tiny_model_dir), device="cpu", window="512").window == 512
    if not torch.cuda.is_available():
        with pytest.raises(ModelError, match="no CUDA GPU"):
            LMScorer.from_options(model=str(tiny_model_dir), device="cuda")


def test_registry_builds_it(tiny_model_dir: Path):
    from catp.scoring.registry import build_scorer

    s = build_scorer("lm", model=str(tiny_model_dir), device="cpu", window=128)
    assert isinstance(s, LMScorer) and s.name == "lm"


# --- model source and integrity -----------------------------------------------------------------

def copy_model(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def write_manifest(folder: Path, path: Path) -> Path:
    lines = [f"{sha256_file(f)}  {f.name}" for f in sorted(folder.iterdir()) if f.is_file()]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_manifest_accepts_the_model(tiny_model_dir: Path, tmp_path: Path):
    model = copy_model(tiny_model_dir, tmp_path / "m")
    manifest = write_manifest(model, tmp_path / "SHA256SUMS")
    s = LMScorer(str(model), sha256=str(manifest), device="cpu")
    assert s.name == "lm"
    # the manifest format is sha256sum's: check it against the real tool where there is one
    if shutil.which("sha256sum"):
        subprocess.run(["sha256sum", "--check", "--quiet", str(manifest)], cwd=model, check=True)


def tampered_model(tiny_model_dir: Path, tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the tiny model and its manifest, then one bit of one weight flipped."""
    model = copy_model(tiny_model_dir, tmp_path / "m")
    manifest = write_manifest(model, tmp_path / "SHA256SUMS")
    weights = model / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0x01
    weights.write_bytes(bytes(data))
    return model, manifest


def test_manifest_refuses_a_tampered_file(tiny_model_dir: Path, tmp_path: Path):
    model, manifest = tampered_model(tiny_model_dir, tmp_path)
    with pytest.raises(ModelError, match="sha256 mismatch for model.safetensors"):
        LMScorer(str(model), sha256=str(manifest), device="cpu")


def test_cli_prune_and_batch_check_the_manifest(tiny_model_dir: Path, tmp_path: Path):
    """`--scorer-sha256` is one option shared by `catp prune` and `catp batch`: both refuse a
    tampered model (prune: exit 2 and one line; batch: an error row and exit 1), no traceback."""
    model, manifest = tampered_model(tiny_model_dir, tmp_path)
    doc = tmp_path / "doc.txt"
    doc.write_text("The fee is $5,000, payable on March 1, 2024. The weather was fine.\n", encoding="utf-8")
    root = Path(__file__).resolve().parents[3]
    scorer = ["--scorer", "lm", "--scorer-model", str(model), "--scorer-sha256", str(manifest),
              "--scorer-max-tokens", "64", "--device", "cpu", "--budget", "20"]
    prune = subprocess.run([sys.executable, "-m", "catp", "prune", str(doc), *scorer], capture_output=True,
                           text=True, cwd=root, timeout=300)
    assert prune.returncode == 2 and prune.stdout == ""
    assert prune.stderr.startswith("catp: error: sha256 mismatch for model.safetensors"), prune.stderr
    batch = subprocess.run([sys.executable, "-m", "catp", "batch", str(doc), "--no-progress", *scorer],
                           capture_output=True, text=True, cwd=root, timeout=300)
    assert batch.returncode == 1 and "Traceback" not in batch.stderr
    assert json.loads(batch.stdout)["error"].startswith("sha256 mismatch for model.safetensors")


def test_manifest_must_cover_the_weights(tiny_model_dir: Path, tmp_path: Path):
    model = copy_model(tiny_model_dir, tmp_path / "m")
    manifest = tmp_path / "SHA256SUMS"
    manifest.write_text(f"{sha256_file(model / 'config.json')}  config.json\n")
    with pytest.raises(ModelError, match="does not list .*model.safetensors"):
        verify_manifest(model, manifest)
    manifest.write_text("not a manifest line\n")
    with pytest.raises(ModelError, match="SHA256SUMS:1"):
        verify_manifest(model, manifest)
    manifest.write_text(f"{'0' * 64}  ../outside.json\n")
    with pytest.raises(ModelError, match="relative to the model folder"):
        verify_manifest(model, manifest)
    manifest.write_text(f"{'0' * 64}  gone.safetensors\n")
    with pytest.raises(ModelError, match="gone.safetensors is missing"):
        verify_manifest(model, manifest)


def test_pickle_weights_are_refused(tiny_model_dir: Path, tmp_path: Path):
    model = copy_model(tiny_model_dir, tmp_path / "m")
    (model / "model.safetensors").rename(model / "pytorch_model.bin")
    with pytest.raises(ModelError, match=r"refusing pickle weights .*pytorch_model\.bin"):
        LMScorer(str(model), device="cpu")


def test_remote_code_is_never_trusted(tiny_model_dir: Path, tmp_path: Path):
    """A config that asks for custom code is refused, not executed."""
    model = copy_model(tiny_model_dir, tmp_path / "m")
    marker = tmp_path / "code-ran"
    (model / "evil.py").write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    cfg = json.loads((model / "config.json").read_text())
    cfg.update(model_type="evil", auto_map={"AutoConfig": "evil.EvilConfig",
                                            "AutoModelForCausalLM": "evil.EvilModel"})
    (model / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ModelError, match="cannot load scorer model"):
        LMScorer(str(model), device="cpu")
    assert not marker.exists()


def test_missing_model_messages(tmp_path: Path, monkeypatch):
    with pytest.raises(ModelError, match="does not exist"):
        LMScorer(str(tmp_path / "no-such-model"), device="cpu")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelError, match="no config.json"):
        LMScorer(str(tmp_path / "empty"), device="cpu")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-home" / "hub"))
    with pytest.raises(ModelError, match="not in the local Hugging Face cache and HF_HUB_OFFLINE is set"):
        LMScorer("Qwen/Qwen1.5-0.5B", device="cpu")


def test_hub_cache_is_used_offline(tiny_model_dir: Path, tmp_path: Path):
    """An HF id resolves from the local cache with HF_HUB_OFFLINE=1 (cache laid out by hand,
    as huggingface_hub lays it out; the hub itself is unreachable here)."""
    cache = tmp_path / "hub"
    repo = cache / "models--catp--tiny-qwen"
    snap = repo / "snapshots" / ("0" * 40)
    shutil.copytree(tiny_model_dir, snap)
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("0" * 40)
    code = ("from catp.scoring.lm import LMScorer; "
            "s = LMScorer('catp/tiny-qwen', device='cpu'); print(s.model_source)")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(cache), "HF_HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "catp/tiny-qwen"


def test_errors_are_catp_errors():
    assert issubclass(ModelError, CatpError)
