"""Rebuild the labelled training texts from the fetched repository snapshots.

    python -m train.fetch                       # every train/labels/*.jsonl -> train/data/texts.jsonl
    python -m train.fetch --manifest            # rewrite train/manifest.jsonl from the labels (no snapshots read)
    python -m train.fetch --list REPO PATH EXTRACTOR     # keys, chars, sha256 and opening of each document
    python -m train.fetch --show REPO PATH EXTRACTOR KEY # one document's text

Snapshots are read with git from --mirror (default /work/.mirror/OWNER+NAME/repo), at the commit each record
names; every rebuilt text must have the sha256 its record gives.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from train.corpus import MANIFEST, MIRROR, TEXTS, extract, head_commit, read_labels, rebuild, sha256, write_manifest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m train.fetch", description=__doc__.splitlines()[0])
    parser.add_argument("labels", nargs="*", type=Path, help="label files (default: train/labels/*.jsonl)")
    parser.add_argument("--mirror", type=Path, default=MIRROR)
    parser.add_argument("--out", type=Path, default=TEXTS)
    parser.add_argument("--list", nargs=3, metavar=("REPO", "PATH", "EXTRACTOR"))
    parser.add_argument("--show", nargs=4, metavar=("REPO", "PATH", "EXTRACTOR", "KEY"))
    parser.add_argument("--commit", help="for --list/--show (default: the snapshot's HEAD)")
    parser.add_argument("--manifest", action="store_true", help="write train/manifest.jsonl and stop")
    args = parser.parse_args(argv)
    if args.list or args.show:
        repo, path, name = (args.list or args.show)[:3]
        commit = args.commit or head_commit(repo, args.mirror)
        texts = extract(repo, commit, path, name, args.mirror)
        if args.show:
            sys.stdout.write(texts[args.show[3]] + "\n")
            return 0
        print(f"# {repo} {commit} {path} ({name}): {len(texts)} documents")
        for key, text in texts.items():
            opening = " ".join(text[:60].split())
            print(f"{key}\t{len(text)}\t{sha256(text)}\t{opening}")
        return 0
    records = read_labels(args.labels or None)
    if args.manifest:
        write_manifest(records)
        print(f"{len(records)} documents -> {MANIFEST}")
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", encoding="utf-8") as out:
        for record, text in rebuild(records, args.mirror):
            out.write(json.dumps({"id": record.id, "text": text}, ensure_ascii=False) + "\n")
    print(f"{len(records)} texts -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
