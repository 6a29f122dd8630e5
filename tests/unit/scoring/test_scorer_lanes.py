"""The LM scorer's own decoder (catp/scoring/fastlm.py): engines `fused` and `lanes`.

Both are checked on the CPU in float32 against transformers' own forward of the tiny Qwen2
(tests/tiny_qwen.py: 2 heads, 1 key/value head, so grouped-query attention is covered):

* `fused` (fused q/k/v and gate/up GEMMs, own RMSNorm/RoPE/attention) runs the same
  windows as `hf` and must give the same numbers;
* `lanes` reuses the keys/values of a window's first `overlap` tokens from the previous
  window of its lane. That is one transformers forward over the lane with a mask that lets
  each chunk of new tokens see its lane from `overlap` tokens before the chunk on
  (`lane_reference`): the scores must equal that, for every attention path (the CPU's
  masked SDPA, and the split "cache part + own part, merged by log-sum-exp" path that the
  GPU runs with cuDNN, here with plain math).
"""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from catp.errors import ModelError  # noqa: E402
from catp.scoring.logprobs import Window, plan_lanes, plan_windows  # noqa: E402
from catp.scoring.lm import LMScorer  # noqa: E402

TOL = 2e-5  # float32 on the CPU


def random_ids(n: int, vocab: int, seed: int = 0) -> list[int]:
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(3, vocab, (n,), generator=gen).tolist()


def windowed_reference(model, ids, windows) -> list[float]:
    """transformers' forward of each window alone, float32 full-vocabulary log_softmax."""
    out = [math.nan] * len(ids)
    for w in windows:
        with torch.inference_mode():
            lp = torch.log_softmax(model(torch.tensor([ids[w.start:w.end]])).logits[0].float(), -1)
        for p in range(w.score_from, w.end):
            out[p] = -lp[p - w.start - 1, ids[p]].item()
    return out


def lane_reference(model, ids, pieces, context: int) -> list[float]:
    """transformers' forward of each lane with a mask: a chunk's tokens see their lane from
    `context` tokens before the chunk on (the first window: from the lane's start), causally."""
    out = [math.nan] * len(ids)
    for p in pieces:
        s0, e = p[0].start, p[-1].end
        t = e - s0
        lo = torch.zeros(t, dtype=torch.long)
        for w in p[1:]:
            lo[w.start + context - s0:w.end - s0] = w.start - s0
        q, k = torch.arange(t)[:, None], torch.arange(t)[None, :]
        allowed = (k <= q) & (k >= lo[:, None])
        mask = torch.zeros(t, t).masked_fill(~allowed, float("-inf"))[None, None]
        with torch.inference_mode():
            lp = torch.log_softmax(model(torch.tensor([ids[s0:e]]), attention_mask=mask).logits[0].float(), -1)
        for pos in range(max(p[0].score_from, s0 + 1), e):
            out[pos] = -lp[pos - s0 - 1, ids[pos]].item()
    return out


def max_diff(a, b) -> float:
    assert len(a) == len(b)
    assert all(math.isnan(x) == math.isnan(y) for x, y in zip(a, b))
    return max(abs(x - y) for x, y in zip(a, b) if not math.isnan(x))


@pytest.fixture(scope="module")
def hf(tiny_model_dir: Path) -> LMScorer:
    return LMScorer(str(tiny_model_dir), device="cpu", engine="hf", window=256, overlap=64, max_tokens=10**6)


@pytest.fixture(scope="module")
def vocab(hf: LMScorer) -> int:
    return hf.model.config.vocab_size


# --- fused projections ---------------------------------------------------------------------------

def test_fused_engine_equals_the_transformers_forward(tiny_model_dir: Path, hf: LMScorer, vocab: int):
    fused = LMScorer(str(tiny_model_dir), device="cpu", engine="fused", window=256, overlap=64,
                     max_tokens=10**6, batch_tokens=768)
    assert fused.engine == "fused" and fused.decoder is not None and hf.decoder is None
    ids = random_ids(1500, vocab)
    windows = fused.plan(len(ids), [(1, len(ids))])
    assert len(windows) > 4
    ref = windowed_reference(fused.model, ids, windows)  # the HF modules, after fusing
    assert max_diff(fused.token_nll(ids), ref) < TOL
    assert max_diff(hf.token_nll(ids), ref) < TOL
    assert fused.fed_tokens(windows) == sum(w.end - w.start for w in windows)


def test_fused_weights_are_shared_with_the_model(tiny_model_dir: Path, vocab: int):
    """The HF projections become views of the fused weights: no second copy, and the model's
    own forward is unchanged by fusing."""
    s = LMScorer(str(tiny_model_dir), device="cpu", engine="hf", window=256, overlap=64)
    ids = random_ids(300, vocab, seed=3)
    before = s.token_nll(ids)
    from catp.scoring.fastlm import FusedDecoder

    dec = FusedDecoder(s.model)
    layer = s.model.model.layers[0]
    fused = dec.layers[0]
    assert layer.self_attn.q_proj.weight.data_ptr() == fused.w_qkv.data_ptr()
    assert layer.self_attn.k_proj.weight.untyped_storage().data_ptr() == fused.w_qkv.untyped_storage().data_ptr()
    assert layer.mlp.up_proj.weight.untyped_storage().data_ptr() == fused.w_gu.untyped_storage().data_ptr()
    assert s.token_nll(ids)[1:] == before[1:]


# --- lanes ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("window,overlap,lanes", [(256, 64, 3), (256, 64, 1), (96, 64, 4), (200, 0, 2)])
@pytest.mark.parametrize("attention", [("sdpa", "sdpa"), ("math", "split-math")])
def test_lanes_equal_the_masked_transformers_forward(tiny_model_dir: Path, vocab: int, window, overlap, lanes,
                                                      attention):
    """(96, 64): chunks of 32 new tokens are shorter than the 64-token cache; (200, 0): the
    cache is the one token before each chunk; lanes=1: one lane, the whole document."""
    s = LMScorer(str(tiny_model_dir), device="cpu", engine="lanes", lanes=lanes, window=window, overlap=overlap,
                 max_tokens=10**6, batch_tokens=1024)
    s.decoder.square, s.decoder.cached = attention
    ids = random_ids(1900, vocab, seed=window + lanes)
    windows = s.plan(len(ids), [(1, len(ids))])
    pieces = s.lane_pieces(windows)
    assert sum(len(p) for p in pieces) == len(windows)
    assert any(len(p) > 1 for p in pieces)  # the cache path runs
    got = s.token_nll(ids)
    assert math.isnan(got[0]) and not any(math.isnan(x) for x in got[1:])
    assert max_diff(got, lane_reference(s.model, ids, pieces, max(overlap, 1))) < TOL


def test_lanes_differ_from_windows_only_through_longer_context(tiny_model_dir: Path, hf: LMScorer, vocab: int):
    """Lanes score the same windows; the first window of the document is computed the same
    way by both (a plain causal pass), later ones see more context (their cached keys carry
    the lane's history), so they differ on the full-attention model but stay finite."""
    s = LMScorer(str(tiny_model_dir), device="cpu", engine="lanes", lanes=2, window=256, overlap=64,
                 max_tokens=10**6)
    ids = random_ids(1200, vocab, seed=5)
    got, ref = s.token_nll(ids), hf.token_nll(ids)
    first = s.plan(len(ids), [(1, len(ids))])[0]
    assert max_diff(got[:first.end], ref[:first.end]) < TOL
    assert max(abs(a - b) for a, b in zip(got[first.end:], ref[first.end:])) > 1e-3
    assert all(math.isfinite(x) and x > 0 for x in got[1:])


def test_lanes_feed_fewer_tokens_and_count_them(tiny_model_dir: Path, vocab: int):
    from test_scorer_lm import FedCounter, long_text, make_doc

    s = LMScorer(str(tiny_model_dir), device="cpu", engine="lanes", lanes=2, window=256, overlap=64,
                 max_tokens=10**6)
    doc = make_doc(long_text(6))
    fed = FedCounter(s)
    scores = s.score(doc, list(range(len(doc.units))))
    assert all(math.isfinite(v) for v in scores.values())
    stats = s.last_stats
    windows = stats.windows
    assert fed.tokens == stats.tokens_fed
    # 2 lanes: every token once, plus one 64-token warm-up for the second lane (and the
    # end-aligned last window, fed whole)
    assert stats.doc_tokens <= stats.tokens_fed < windows * 256
    # candidates only: a single unit is scored by one window, fed whole
    fed.tokens = 0
    s.score(doc, [len(doc.units) // 2])
    assert fed.tokens == s.last_stats.tokens_fed <= 2 * 256


def test_candidate_scores_do_not_depend_on_the_other_candidates_in_a_lane(tiny_model_dir: Path):
    """Scoring a subset plans other windows and lanes, but a unit scored alone (one window,
    fed whole) equals its score from the hf engine on the same window."""
    from test_scorer_lm import long_text, make_doc

    lanes = LMScorer(str(tiny_model_dir), device="cpu", engine="lanes", window=256, overlap=64, max_tokens=10**6)
    hf = LMScorer(str(tiny_model_dir), device="cpu", engine="hf", window=256, overlap=64, max_tokens=10**6)
    doc = make_doc(long_text(6))
    pick = [len(doc.units) // 3]
    assert lanes.score(doc, pick)[pick[0]] == pytest.approx(hf.score(doc, pick)[pick[0]], abs=1e-4)


# --- planning -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("n,window,overlap,lanes", [(5000, 256, 64, 4), (5000, 256, 64, 1), (999, 100, 99, 3),
                                                    (5000, 512, 0, 8), (300, 256, 64, 4)])
def test_plan_lanes_keeps_every_window_once_in_order(n, window, overlap, lanes):
    rng = random.Random(n + lanes)
    needed = [(1, n)] if lanes != 4 else [(1, n // 3), (n // 2, n)]
    wins = plan_windows(n, needed, window, overlap)
    context = max(overlap, 1)
    pieces = plan_lanes(wins, context, lanes, max_len=rng.choice([None, 4 * window]))
    assert [w for p in pieces for w in p] == wins
    for p in pieces:
        for prev, w in zip(p, p[1:]):
            assert w.score_from == prev.end == w.start + context  # a continuation
    multi = [p for p in pieces if len(p) > 1]
    if multi:
        # one chain is cut into pieces of near-equal length
        assert max(len(p) for p in multi) - min(len(p) for p in multi) <= max(len(p) for p in multi) // 2 + 1


def test_plan_lanes_bounds_the_span_by_max_len():
    wins = plan_windows(10000, [(1, 10000)], 256, 64)
    for p in plan_lanes(wins, 64, 1, max_len=1000):
        assert p[-1].end - p[0].start <= 1000
    assert plan_lanes([], 64, 4) == []
    single = [Window(0, 256, 1)]
    assert plan_lanes(single, 64, 4) == [single]


# --- options ------------------------------------------------------------------------------------------

def test_engine_options(tiny_model_dir: Path):
    s = LMScorer.from_options(model=str(tiny_model_dir), device="cpu", engine="lanes", lanes="3")
    assert s.engine == "lanes" and s.lanes == 3
    assert (s.window, s.overlap) == (2048, 1024)  # the lanes defaults
    assert LMScorer(str(tiny_model_dir), device="cpu").engine == "hf"  # auto: hf on the CPU
    assert LMScorer(str(tiny_model_dir), device="cpu", engine="lanes", window=512).overlap == 128
    with pytest.raises(ModelError, match="engine"):
        LMScorer(str(tiny_model_dir), device="cpu", engine="turbo")
    with pytest.raises(ModelError, match="lanes"):
        LMScorer(str(tiny_model_dir), device="cpu", engine="lanes", lanes=0)


def test_unsupported_models_use_transformers(sliding_model_dir: Path):
    """A sliding-window model is not one the own decoder runs: `lanes` is refused with the
    reason, `auto` stays on transformers."""
    with pytest.raises(ModelError, match="sliding"):
        LMScorer(str(sliding_model_dir), device="cpu", engine="lanes")
    assert LMScorer(str(sliding_model_dir), device="cpu", engine="auto").engine == "hf"
