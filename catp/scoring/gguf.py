"""GGUF checkpoints (llama.cpp, Ollama) as scorer models: verified, converted once, cached.

A `.gguf` file given as the scorer model is

1. verified first: its sha256 against `sha256=` (a 64-digit hex digest, or a
   sha256sum-style manifest that lists the file by name);
2. converted once by transformers (`gguf_file=`: dequantized to float32, the
   tokenizer rebuilt) into a plain model folder: `model.safetensors` (each
   tensor once, under its first name: a tied output layer is stored as the input
   embedding, as `save_pretrained` does, so vLLM can serve the folder),
   `config.json` without `quantization_config`,
   `tokenizer.json` and `SHA256SUMS`, a manifest of those files;
3. cached under `<user cache>/catp/gguf/<sha256 of the GGUF>/` (CATP_CACHE_DIR,
   else XDG_CACHE_HOME, else ~/.cache). Later loads check the folder against its
   manifest and load it like any safetensors model folder: seconds, not minutes.

No pickle is read (GGUF holds raw tensors) and no remote code is run. Needs
`gguf` and `accelerate` (in the `lm` extra).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from pathlib import Path

from catp.errors import ModelError
from catp.scoring.manifest import read_manifest, verify_manifest
from catp.tokens import sha256_file

MANIFEST = "SHA256SUMS"
_HEX = re.compile(r"^[0-9a-fA-F]{64}$")


def cache_root() -> Path:
    """Where converted GGUF models are kept: CATP_CACHE_DIR, else the user cache directory."""
    base = os.environ.get("CATP_CACHE_DIR")
    if base:
        return Path(base).expanduser() / "gguf"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "catp" / "gguf"


def expected_digest(path: Path, sha256: str | Path) -> str:
    """The sha256 the GGUF must have: a hex digest, or the manifest line naming the file."""
    text = str(sha256).strip()
    if _HEX.match(text) and not Path(text).expanduser().is_file():
        return text.lower()
    listed = read_manifest(sha256)
    for rel, digest in listed.items():
        if Path(rel).name == path.name:
            return digest
    raise ModelError(f"sha256 manifest {sha256} does not list {path.name}")


def gguf_folder(model: str | Path, *, sha256: str | Path | None = None) -> Path:
    """The cached, verified model folder converted from the GGUF file `model` (converting it once)."""
    path = Path(model).expanduser()
    digest = sha256_file(path)
    if sha256:
        want = expected_digest(path, sha256)
        if digest != want:
            raise ModelError(f"sha256 mismatch for {path}: expected {want[:12]}…, got {digest[:12]}…")
    folder = cache_root() / digest
    manifest = folder / MANIFEST
    if manifest.is_file():
        try:
            verify_manifest(folder, manifest)
        except ModelError as err:
            raise ModelError(f"the cached conversion of {path.name} fails its check ({err}); "
                             f"delete {folder} to convert again") from None
        if not _stored_without_embedding(folder):
            return folder
        shutil.rmtree(folder, ignore_errors=True)  # an older conversion (no input embedding): convert again
    convert(path, folder)
    return folder


def _stored_without_embedding(folder: Path) -> bool:
    """A conversion by catp before 2 December 2026 kept a tied output layer as `lm_head.weight` only: transformers
    reloads it, but vLLM finds no input embedding. Such a folder is converted again."""
    try:
        from safetensors import safe_open

        tied = json.loads((folder / "config.json").read_text(encoding="utf-8")).get("tie_word_embeddings")
        with safe_open(str(folder / "model.safetensors"), "pt") as f:
            return bool(tied) and "lm_head.weight" in f.keys()
    except (OSError, ValueError):
        return False


def _save_tensors(model, target: Path) -> None:
    """The model's tensors, each once under its first name in the state dict (a tied output layer is
    the input embedding's tensor, named after it)."""
    from safetensors.torch import save_file

    tensors, seen = {}, set()
    for name, tensor in model.state_dict().items():
        key = (tensor.untyped_storage().data_ptr(), tensor.storage_offset(), tuple(tensor.shape))
        if key in seen:
            continue
        seen.add(key)
        tensors[name] = tensor.contiguous()
    save_file(tensors, str(target), metadata={"format": "pt"})


def convert(path: Path, folder: Path) -> None:
    """Dequantize `path` into `folder` (written beside it, then renamed: never half there)."""
    try:
        import torch
        from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer
    except ImportError:
        raise ModelError("a GGUF scorer model needs torch, transformers and safetensors: "
                         "pip install 'catp[lm]'") from None
    for module in ("gguf", "accelerate"):
        try:
            __import__(module)
        except ImportError:
            raise ModelError(f"a GGUF scorer model needs the {module!r} package: pip install 'catp[lm]'") from None
    check_architecture(path)
    from transformers.utils import logging as hf_logging

    folder.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{folder.name[:12]}-", dir=folder.parent))
    bar = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        kwargs = dict(gguf_file=path.name, trust_remote_code=False, local_files_only=True)
        try:
            config = AutoConfig.from_pretrained(path.parent, **kwargs)
            model = AutoModelForCausalLM.from_pretrained(path.parent, dtype=torch.float32, **kwargs)
            tokenizer = AutoTokenizer.from_pretrained(path.parent, **kwargs)
        except (OSError, ValueError, KeyError, RuntimeError, TypeError, NotImplementedError) as err:
            msg = (str(err).strip() or type(err).__name__).splitlines()[0]
            raise ModelError(f"cannot convert GGUF scorer model {path}: {msg}") from None
        _save_tensors(model, work / "model.safetensors")
        settings = config.to_dict()
        settings.pop("quantization_config", None)
        settings["architectures"] = [type(model).__name__]
        settings["torch_dtype"] = settings["dtype"] = "float32"
        (work / "config.json").write_text(json.dumps(settings, indent=2, sort_keys=True), encoding="utf-8")
        tokenizer.backend_tokenizer.save(str(work / "tokenizer.json"))
        if getattr(model, "generation_config", None) is not None:
            model.generation_config.save_pretrained(work)
        lines = [f"{sha256_file(p)}  {p.name}" for p in sorted(work.iterdir()) if p.is_file()]
        (work / MANIFEST).write_text("\n".join(lines) + "\n", encoding="utf-8")
        try:
            work.rename(folder)
        except OSError:  # another process converted it meanwhile
            if not (folder / MANIFEST).is_file():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if bar:
            hf_logging.enable_progress_bar()


def check_architecture(path: Path) -> str:
    """The GGUF's architecture; a one-line ModelError when transformers cannot read it."""
    from transformers.modeling_gguf_pytorch_utils import GGUF_SUPPORTED_ARCHITECTURES, load_gguf_checkpoint

    try:
        parsed = load_gguf_checkpoint(str(path), return_tensors=False)  # metadata only
    except ValueError as err:
        if "not supported" not in str(err):
            raise ModelError(f"cannot read GGUF scorer model {path}: {str(err).splitlines()[0]}") from None
        arch = _architecture(path)
        raise ModelError(f"GGUF scorer model {path.name}: transformers cannot read architecture {arch!r} from "
                         f"GGUF; it reads {', '.join(sorted(GGUF_SUPPORTED_ARCHITECTURES))}") from None
    except Exception as err:  # a truncated or foreign file: gguf raises assorted errors
        raise ModelError(f"cannot read GGUF scorer model {path}: {(str(err) or type(err).__name__).splitlines()[0]}") \
            from None
    return str(parsed["config"].get("model_type", "?"))


def _architecture(path: Path) -> str:
    try:
        from gguf import GGUFReader

        field = GGUFReader(str(path)).fields["general.architecture"]
        return bytes(field.parts[field.data[0]]).decode("utf-8", "replace")
    except Exception:
        return "?"
