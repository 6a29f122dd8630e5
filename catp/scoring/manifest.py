"""sha256 manifests of model folders (sha256sum's format): read one, check a folder against it. A leaf of
catp.scoring: model_source and gguf both use it."""

from __future__ import annotations

import re
from pathlib import Path

from catp.errors import ModelError
from catp.tokens import sha256_file

LOADED_SUFFIXES = (".safetensors", ".json", ".model", ".tiktoken", ".txt", ".jinja")
MANIFEST_LINE = re.compile(r"^([0-9a-fA-F]{64}) [ *](.+)$")


def read_manifest(manifest: str | Path) -> dict[str, str]:
    """`relative path -> sha256` from a sha256sum-style file."""
    mpath = Path(manifest).expanduser()
    try:
        text = mpath.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ModelError(f"cannot read sha256 manifest {mpath}: {first_line(err)}") from None
    out: dict[str, str] = {}
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = MANIFEST_LINE.match(line)
        if not m:
            raise ModelError(f"{mpath}:{n}: not a '<sha256>  <relative path>' line")
        rel = m.group(2).strip()
        if rel.startswith("./"):
            rel = rel[2:]
        if Path(rel).is_absolute() or ".." in Path(rel).parts:
            raise ModelError(f"{mpath}:{n}: path {rel!r} must be relative to the model folder")
        out[rel] = m.group(1).lower()
    if not out:
        raise ModelError(f"sha256 manifest {mpath} lists no files")
    return out


def verify_manifest(folder: Path, manifest: str | Path) -> list[str]:
    """Check every listed file's sha256; every file a loader reads must be listed. Returns the names."""
    listed = read_manifest(manifest)
    root = folder.resolve()
    for rel, digest in listed.items():
        path = folder / rel
        if not path.is_file():
            raise ModelError(f"sha256 manifest {manifest}: {rel} is missing from {folder}")
        if not path.resolve().is_relative_to(root) and not path.is_symlink():
            raise ModelError(f"sha256 manifest {manifest}: {rel} lies outside {folder}")
        got = sha256_file(path)
        if got != digest:
            raise ModelError(f"sha256 mismatch for {rel} in {folder}: expected {digest[:12]}…, got {got[:12]}…")
    unlisted = sorted(
        p.name for p in folder.iterdir()
        if p.is_file() and p.suffix in LOADED_SUFFIXES and p.name not in listed
    )
    if unlisted:
        raise ModelError(f"sha256 manifest {manifest} does not list {', '.join(unlisted[:3])} in {folder}")
    return sorted(listed)


def first_line(err: BaseException) -> str:
    text = str(err).strip() or type(err).__name__
    return text.splitlines()[0]
