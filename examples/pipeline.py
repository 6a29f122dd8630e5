"""A pipeline example: prune every example document once, reuse one Pruner per domain,
and print what was kept and why. Run: python examples/pipeline.py"""

from __future__ import annotations

from pathlib import Path

from catp import Pruner

HERE = Path(__file__).parent
DOCUMENTS = {
    "contract_zh.txt": "legal",
    "contract_en.txt": "legal",
    "announcement_zh.txt": "finance",
    "report_en.txt": "finance",
    "medical_zh.txt": "medical",
}


def main() -> None:
    pruners: dict[str, Pruner] = {}  # rules and tokenizer load once per domain
    for name, domain in DOCUMENTS.items():
        pruner = pruners.setdefault(domain, Pruner(domain=domain))
        text = (HERE / name).read_text(encoding="utf-8")
        result = pruner.prune(text, ratio="1/6")
        s = result.stats
        print(f"{name}: {s.input_tokens} -> {s.output_tokens} tokens ({s.lang}, {s.domain}), "
              f"{len(result.kept)} kept spans, {len(result.dropped_protected)} protected spans dropped")
        first = result.kept[0]
        print(f"  first kept span [{first.start}:{first.end}] because {', '.join(first.reasons[:4])}:")
        print("  " + text[first.start : first.end][:120].replace("\n", " "))
    question = "What is the liability cap?"
    answer_context = pruners["legal"].prune((HERE / "contract_en.txt").read_text(encoding="utf-8"),
                                            budget=400, question=question)
    print(f"\nWith the question {question!r}, 400 tokens:\n{answer_context.text[:600]}")


if __name__ == "__main__":
    main()
