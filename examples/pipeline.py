"""A pipeline example: prune every example document with one Pruner (the domain of each is detected),
print what was kept and why, then ask for the context of one question. Run: python examples/pipeline.py"""

from __future__ import annotations

from pathlib import Path

from catp import Pruner

HERE = Path(__file__).parent
DOCUMENTS = {  # file -> the domain and language catp should detect
    "contract_zh.txt": ("legal", "zh"),
    "contract_en.txt": ("legal", "en"),
    "announcement_zh.txt": ("finance", "zh"),
    "report_en.txt": ("finance", "en"),
    "medical_zh.txt": ("medical", "zh"),
}


def main() -> None:
    pruner = Pruner()  # domain auto: rules and tokenizer load once, each domain's rules on first use
    for name in DOCUMENTS:
        text = (HERE / name).read_text(encoding="utf-8")
        result = pruner.prune(text, ratio="1/6")
        s = result.stats
        print(f"{name}: {s.input_tokens} -> {s.output_tokens} tokens ({s.lang}, {s.domain}), "
              f"{len(result.kept)} kept spans, {len(result.dropped_protected)} protected spans dropped")
        first = result.kept[0]
        print(f"  first kept span [{first.start}:{first.end}] because {', '.join(first.reasons[:4])}:")
        print("  " + text[first.start : first.end][:120].replace("\n", " "))
    question = "What is the liability cap?"
    context = pruner.prune((HERE / "contract_en.txt").read_text(encoding="utf-8"), budget=400, question=question)
    print(f"\nWith the question {question!r}, in 400 tokens:\n{context.text}")


if __name__ == "__main__":
    main()
