"""`catp prune` over many documents (issue #6, batch mode): several files, a folder or a JSONL file give one
JSONL row per document, the same rows as `catp batch`, and each row's text is what `catp prune FILE` prints."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from test_cli import ROOT, assert_user_error, catp

EXAMPLES = ["contract_en.txt", "contract_zh.txt", "report_en.txt"]


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("docs")
    for name in EXAMPLES:
        shutil.copy(ROOT / "examples" / name, out / name)
    return out


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_several_files_give_a_row_each_with_the_single_prune_text(folder, tmp_path):
    files = [str(folder / name) for name in EXAMPLES]
    out = tmp_path / "out.jsonl"
    done = catp("prune", *files, "--ratio", "1/6", "-o", str(out), "--quiet")
    assert done.returncode == 0, done.stderr.decode()
    got = rows(out)
    assert len(got) == len(files)
    for path, row in zip(files, got):
        single = catp("prune", path, "--ratio", "1/6", "--quiet")
        assert single.returncode == 0
        assert row["error"] is None
        assert row["text"] + "\n" == single.stdout.decode("utf-8")


def test_a_folder_gives_the_rows_of_catp_batch(folder, tmp_path):
    a, b = tmp_path / "prune.jsonl", tmp_path / "batch.jsonl"
    assert catp("prune", str(folder), "--ratio", "1/6", "-o", str(a), "--quiet").returncode == 0
    assert catp("batch", str(folder), "--ratio", "1/6", "-o", str(b), "--quiet").returncode == 0
    strip = lambda r: {k: v for k, v in r.items() if k != "stats"} | {"tokens": r["stats"]["output_tokens"]}  # noqa: E731
    assert [strip(r) for r in rows(a)] == [strip(r) for r in rows(b)]
    assert len(rows(a)) == len(EXAMPLES)


def test_a_jsonl_file_is_one_document_per_line(tmp_path):
    src = tmp_path / "docs.jsonl"
    texts = [(ROOT / "examples" / name).read_text(encoding="utf-8") for name in EXAMPLES[:2]]
    src.write_text("".join(json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(texts)),
                   encoding="utf-8")
    done = catp("prune", str(src), "--budget", "300", "--quiet")
    assert done.returncode == 0, done.stderr.decode()
    got = [json.loads(line) for line in done.stdout.decode("utf-8").splitlines()]
    assert [r["id"] for r in got] == ["d0", "d1"]
    assert all(0 < r["stats"]["output_tokens"] <= 300 for r in got)


def test_html_is_for_one_document(folder, tmp_path):
    assert_user_error(catp("prune", str(folder), "--ratio", "1/6", "-f", "html", "-o", str(tmp_path / "x.html")),
                      "--format html")
    assert not (tmp_path / "x.html").exists()


def test_jobs_is_for_many_documents():
    assert_user_error(catp("prune", str(ROOT / "examples" / "contract_en.txt"), "--ratio", "1/6", "--jobs", "2"),
                      "--jobs")
