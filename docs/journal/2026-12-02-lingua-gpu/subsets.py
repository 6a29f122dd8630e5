"""The per-document files of issue 24 point 5 (fixed before any result): the first 20 documents (file order)
of tatqa, cail2019_cjrc and cuad, all 13 of ccks2017_cner and all 8 of e3c_en, one file each; and for
LongLLMLingua the first 3 questions with a non-empty gold_index of each of the first 20 documents of tatqa, cail and
cuad (the CPU runs used the first 8 of these). python subsets.py DATA_DIR OUT_DIR"""
import json
import sys
from pathlib import Path

data, out = Path(sys.argv[1]), Path(sys.argv[2])
out.mkdir(parents=True, exist_ok=True)
for name, n in [("ccks2017_cner", 13), ("e3c_en", 8), ("tatqa", 20), ("cail2019_cjrc", 20), ("cuad", 20)]:
    lines = (data / f"{name}.dev.jsonl").read_text(encoding="utf-8").splitlines()[:n]
    for i, line in enumerate(lines, 1):
        (out / f"{name}.dev.{i:02d}.jsonl").write_text(line + "\n", encoding="utf-8")
        if name in ("tatqa", "cail2019_cjrc", "cuad"):
            row = json.loads(line)
            row["questions"] = [q for q in row["questions"] if q.get("gold_index")][:3]
            (out / f"q3.{name}.dev.{i:02d}.jsonl").write_text(json.dumps(row, ensure_ascii=False) + "\n",
                                                              encoding="utf-8")
