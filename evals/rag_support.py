"""Retriever-style runs through catp's LangChain integration against `prune(question=...)`, same budget.

For each question of a data set: the document is split into chunks (LangChain's RecursiveCharacterTextSplitter,
no overlap, each chunk's `start_index` kept), a keyword retriever returns the chunks ranked by the question's
words (character bigrams for zh) — all of them, or the top share `--top` — in document order, and
`CatpCompressor(budget=B, shared=True)` compresses them with the question. B is `--ratio` of the whole document's tokens. The kept spans,
mapped back to the document through `start_index`, decide whether the question's support survives (as
`--question-aware` does in evals/runner.py: any / all of its gold items kept). The reference is
`Pruner.prune(document, budget=B, question=...)` on the whole document.

    python -m evals.rag_support --data ../shared/evals-data/tatqa.dev.jsonl --ratio 1/6 --per-doc 8

Prints one row per set and writes the rows as JSON with `--out`.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
import time
from pathlib import Path

from evals.loaders import load_paths
from evals.metrics import KeptIndex
from evals.sizing import nonws_prefix

_WORD = re.compile(r"[a-z0-9]{3,}")
_HAN = re.compile(r"[\u4e00-\u9fff]")


def terms(text: str) -> set[str]:
    """Lower-case words of 3+ letters, and each pair of adjacent Chinese characters."""
    text = text.lower()
    han = "".join(c if _HAN.match(c) else " " for c in text)
    bigrams = {a + b for word in han.split() for a, b in zip(word, word[1:])}
    return set(_WORD.findall(text)) | bigrams


def retrieve(chunks, question: str, top: float):
    """The top share of the chunks, ranked by how many of the question's terms each holds (ties: document order),
    handed on in document order (a reordering step: with all chunks, the compressor's join is the same for every
    question of a document, and catp analyses it once)."""
    wanted = terms(question)
    ranked = sorted(range(len(chunks)), key=lambda i: (-len(wanted & terms(chunks[i].page_content)), i))
    return [chunks[i] for i in sorted(ranked[:max(1, round(top * len(chunks)))])]


def supported(kept: KeptIndex, doc, question) -> bool:
    flags = [kept.is_kept(doc.gold[i].start, doc.gold[i].end, doc.gold[i].quote) for i in question.gold_index]
    return all(flags) if question.support == "all" else any(flags)


def spread(items: list, n: int) -> list:
    """n items spread evenly over the list (all of them when n is 0 or more than there are)."""
    if n <= 0 or n >= len(items):
        return items
    return [items[i * len(items) // n] for i in range(n)]


SENTENCE_SEPARATORS = ["\n\n", "\n", "。", "；", ". ", "; ", " ", ""]  # --sentences: cut between sentences first


def run_set(data_set, *, ratio: float, chunk_chars: int, top: float, per_doc: int, max_docs: int,
            sentences: bool = False) -> dict:
    from langchain_core.documents import Document
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    from catp.integrations.langchain import CatpCompressor
    from catp.pipeline import Pruner

    splitter = RecursiveCharacterTextSplitter(chunk_size=chunk_chars, chunk_overlap=0, add_start_index=True,
                                              **({"separators": SENTENCE_SEPARATORS, "keep_separator": "end"}
                                                 if sentences else {}))
    pruner = Pruner()  # one Pruner for every domain, given per call
    row = {"set": data_set.name, "docs": 0, "questions": 0, "prune_question": 0, "retriever": 0,
           "retriever_over_budget": 0, "retrieved_share": 0.0, "seconds": 0.0}
    started = time.perf_counter()
    for doc in spread(data_set.docs, max_docs):
        questions = spread([q for q in doc.questions if q.gold_index], per_doc)
        if not questions:
            continue
        pruner.call_domain(doc.domain)  # fails fast on a domain no rule set names
        budget = int(ratio * pruner.tokens.count(doc.text))
        compressor = CatpCompressor(budget=budget, shared=True, pruner=pruner, domain=doc.domain)  # the same Pruner and settings
        chunks = splitter.split_documents([Document(page_content=doc.text, metadata={"id": doc.id})])
        prefix = nonws_prefix(doc.text)
        row["docs"] += 1
        for question in questions:
            whole = pruner.prune(doc.text, budget=budget, question=question.question, domain=doc.domain)
            retrieved = retrieve(chunks, question.question, top)
            compressed = compressor.compress_documents(retrieved, question.question)
            spans = [(d.metadata["start_index"] + s["start"], d.metadata["start_index"] + s["end"])
                     for d in compressed for s in d.metadata["catp"]["kept"]]
            out_tokens = sum(d.metadata["catp"]["output_tokens"] for d in compressed)
            row["questions"] += 1
            row["prune_question"] += supported(KeptIndex(prefix, [(s.start, s.end) for s in whole.kept], whole.text),
                                               doc, question)
            row["retriever"] += supported(KeptIndex(prefix, spans, "\n".join(d.page_content for d in compressed)),
                                          doc, question)
            row["retriever_over_budget"] += out_tokens > budget
            row["retrieved_share"] += sum(len(d.page_content) for d in retrieved) / len(doc.text)
        print(f"  {doc.id}: {row['questions']} questions so far; supported: prune(question=) {row['prune_question']},"
              f" retriever {row['retriever']} ({time.perf_counter() - started:.0f} s)", file=sys.stderr, flush=True)
    n = max(row["questions"], 1)
    row["retrieved_share"] = round(row["retrieved_share"] / n, 3)
    row["prune_question_share"] = round(row["prune_question"] / n, 3)
    row["retriever_share"] = round(row["retriever"] / n, 3)
    row["seconds"] = round(time.perf_counter() - started, 1)
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evals.rag_support", description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, nargs="+", required=True, help="JSONL files with questions")
    parser.add_argument("--ratio", default="1/6", help="budget: this share of the whole document's tokens")
    parser.add_argument("--chunk-chars", type=int, default=2000, help="chunk size in characters (no overlap)")
    parser.add_argument("--sentences", action="store_true",
                        help="split chunks between sentences before spaces (default: LangChain's separators)")
    parser.add_argument("--top", default="1", help="share of the chunks the retriever returns (1: all, ranked)")
    parser.add_argument("--per-doc", type=int, default=8, help="questions per document, spread (0: all)")
    parser.add_argument("--max-docs", type=int, default=0, help="documents per set, spread (0: all)")
    parser.add_argument("--out", type=Path, help="write the rows as JSON here")
    args = parser.parse_args(argv)
    logging.getLogger("catp.integrations").setLevel(logging.ERROR)  # chunks left out are counted, not logged
    from catp.pipeline import parse_ratio

    ratio, top = parse_ratio(args.ratio), parse_ratio(args.top)
    rows = []
    for data_set in load_paths(args.data):
        row = run_set(data_set, ratio=ratio, chunk_chars=args.chunk_chars, top=top, per_doc=args.per_doc,
                      max_docs=args.max_docs, sentences=args.sentences)
        rows.append(row)
        print(f"{row['set']}: {row['questions']} questions in {row['docs']} documents; supported: "
              f"prune(question=) {row['prune_question_share']}, retriever + CatpCompressor {row['retriever_share']} "
              f"(retrieved {row['retrieved_share']} of the text; over budget {row['retriever_over_budget']}; "
              f"{row['seconds']} s)", flush=True)
    if args.out:
        args.out.write_text(json.dumps({"argv": sys.argv[1:], "rows": rows}, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
