"""Assemble GGUF models from their parts in STORE/parts once all are there (sha256 checked)."""
import hashlib
import json
import shutil
import sys
from pathlib import Path

store = Path(sys.argv[1])
manifest = json.loads((Path(__file__).parent / "manifest.json").read_text())
for name, m in manifest.items():
    target = store / m["file"]
    if target.exists():
        print(f"{name}: ready")
        continue
    parts = [store / "parts" / p for p in m["parts"]]
    missing = [p.name for p in parts if not p.exists()]
    if missing:
        print(f"{name}: waiting for {missing}")
        continue
    tmp, h = store / f"{name}.tmp", hashlib.sha256()
    with open(tmp, "wb") as dst:
        for p in parts:
            data = p.read_bytes()
            h.update(data)
            dst.write(data)
    if h.hexdigest() != m["sha256"]:
        print(f"{name}: sha256 MISMATCH {h.hexdigest()}")
        tmp.unlink()
        continue
    tmp.rename(target)
    for p in parts:
        p.unlink()
    print(f"{name}: assembled, sha256 ok")
