"""`python -m catp prune` in a subprocess: exit 0 on success; on bad input exit 2 with one line on
stderr and no traceback."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from catp.result import PruneResult

ROOT = Path(__file__).resolve().parents[3]
DOC = ("第五条 违约责任\n甲方应于2024年3月5日前向乙方支付违约金三百万元。但是，如果乙方未按期交付，甲方有权解除本合同。\n"
       "Article 6 Payment\nThe Licensee shall pay the Licensor a fee of $5,000 within thirty (30) days. "
       "The weather in the city was pleasant and nobody minded the long meeting at all.\n") * 4


def catp(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "catp", *args], input=stdin, capture_output=True, cwd=ROOT,
                          timeout=120)


def assert_user_error(proc: subprocess.CompletedProcess, *needles: str) -> str:
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 2, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("catp: error: "), err
    for needle in needles:
        assert needle in lines[0]
    assert proc.stdout == b""
    return lines[0]


@pytest.fixture(scope="module")
def doc(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("cli") / "doc.txt"
    path.write_text(DOC, encoding="utf-8")
    return path


def test_text_output(doc):
    proc = catp("prune", str(doc), "--budget", "60")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.decode("utf-8")
    assert out.endswith("\n") and " … " in out
    assert all(piece in DOC for piece in out.rstrip("\n").split(" … "))
    assert "-> " in proc.stderr.decode() and "Traceback" not in proc.stderr.decode()


def test_json_output_parses_and_matches_the_schema(doc):
    proc = catp("prune", str(doc), "--ratio", "1/4", "--format", "json", "--quiet")
    assert proc.returncode == 0 and proc.stderr == b""
    data = json.loads(proc.stdout)
    result = PruneResult.model_validate(data)  # the published schema
    assert set(data) == set(PruneResult.model_json_schema()["properties"])
    assert result.text == result.gap_marker.join(DOC[s.start : s.end] for s in result.kept)
    assert result.stats.output_tokens <= result.stats.budget and result.stats.encoding == "utf-8"


def test_html_written(doc, tmp_path):
    out = tmp_path / "report.html"
    proc = catp("prune", str(doc), "--budget", "60", "--format", "html", "--output", str(out), "--quiet")
    assert proc.returncode == 0 and proc.stdout == b""
    page = out.read_text(encoding="utf-8")
    assert page.startswith("<!doctype html>") and "class='kept'" in page and "违约金三百万元" in page


def test_stdin(doc):
    proc = catp("prune", "-", "--budget", "60", "--quiet", stdin=DOC.encode("gb18030"))
    assert proc.returncode == 0
    assert "违约金" in proc.stdout.decode("utf-8")


def test_protected_dropped_warns_on_stderr(doc):
    proc = catp("prune", str(doc), "--budget", "8")
    assert proc.returncode == 0
    assert "catp: warning: the budget of 8 tokens forced out" in proc.stderr.decode()


@pytest.fixture(scope="module")
def bad_files(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("bad")
    files = {
        "binary": (d / "blob.bin", b"\x7fELF\x02\x01\x01\x00\x00\x00" + bytes(range(256)) * 8),
        "empty": (d / "empty.txt", b""),
        "blank": (d / "blank.txt", b" \n\t\r\n  "),
        "rules": (d / "bad.yaml", b"name: t\nrules:\n  - id: x\n   kind: regex\n"),
        "regex": (d / "re.yaml", textwrap.dedent("""\
            name: t
            rules:
              - id: my.rule
                kind: regex
                category: number
                priority: 50
                pattern: '(unclosed'
            """).encode()),
    }
    for path, data in files.values():
        path.write_bytes(data)
    return {k: p for k, (p, _) in files.items()}


@pytest.mark.parametrize("case, args, needles", [
    ("missing", ["prune", "{d}/no-such-file.txt", "--budget", "10"], ["no such file"]),
    ("binary", ["prune", "{binary}", "--budget", "10"], ["binary"]),
    ("empty", ["prune", "{empty}", "--budget", "10"], ["empty"]),
    ("blank", ["prune", "{blank}", "--budget", "10"], ["empty"]),
    ("ratio>1", ["prune", "{doc}", "--ratio", "2"], ["ratio"]),
    ("ratio text", ["prune", "{doc}", "--ratio", "half"], ["invalid ratio"]),
    ("no budget", ["prune", "{doc}"], ["--budget"]),
    ("budget and ratio", ["prune", "{doc}", "--budget", "5", "--ratio", "1/2"], ["not both"]),
    ("negative budget", ["prune", "{doc}", "--budget", "-3"], ["budget"]),
    ("budget not a number", ["prune", "{doc}", "--budget", "ten"], ["--budget"]),
    ("bad yaml", ["prune", "{doc}", "--budget", "10", "--rules", "{rules}"], ["bad.yaml:4", "invalid YAML"]),
    ("bad regex", ["prune", "{doc}", "--budget", "10", "--rules", "{regex}"], ["re.yaml:3", "my.rule", "regex"]),
    ("missing rules", ["prune", "{doc}", "--budget", "10", "--rules", "{d}/none.yaml"], ["no such rule file"]),
    ("unknown option", ["prune", "{doc}", "--budget", "10", "--frobnicate"], ["--frobnicate"]),
    ("unknown domain", ["prune", "{doc}", "--budget", "10", "--domain", "astrology"], ["astrology"]),
    ("unknown command", ["frobnicate"], ["frobnicate"]),
    ("too big", ["prune", "{doc}", "--budget", "10", "--max-bytes", "100"], ["--max-bytes"]),
    # a folder is many documents (test_prune_many); one with no file to read is a mistake
    ("empty directory", ["prune", "{emptydir}", "--budget", "10"], ["no files to read"]),
    ("bad encoding", ["prune", "{doc}", "--budget", "10", "--encoding", "klingon"], ["klingon"]),
    ("bad tokenizer", ["prune", "{doc}", "--budget", "10", "--tokenizer", "{rules}.json"], ["tokenizer"]),
    ("unknown scorer", ["prune", "{doc}", "--budget", "10", "--scorer", "oracle"], ["oracle"]),
    ("bad cue window", ["prune", "{doc}", "--budget", "10", "--cue-window", "0"], ["cue window"]),
    ("unwritable output", ["prune", "{doc}", "--budget", "10", "-o", "{d}/no/such/dir/out.txt"], ["out.txt"]),
])
def test_user_errors_exit_2_with_one_line(case, args, needles, doc, bad_files):
    empty = doc.parent / "empty-folder"
    empty.mkdir(exist_ok=True)
    fill = {"doc": doc, "d": doc.parent, "emptydir": empty, **bad_files}
    proc = catp(*(a.format(**fill) for a in args))
    assert_user_error(proc, *needles)


def test_empty_stdin():
    assert_user_error(catp("prune", "-", "--budget", "5", stdin=b""), "<stdin>", "empty")


def test_binary_stdin():
    assert_user_error(catp("prune", "-", "--budget", "5", stdin=b"\x00\x01\x02binary\x00" * 10), "binary")


def test_help_exits_0():
    proc = catp("prune", "--help")
    assert proc.returncode == 0 and b"--budget" in proc.stdout


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full here")
def test_stdout_write_failure_is_one_line(doc):
    """Writing the result to a full disk (here /dev/full as stdout) is one line, exit 2."""
    with open("/dev/full", "wb") as full:
        proc = subprocess.run([sys.executable, "-m", "catp", "prune", str(doc), "--budget", "60", "--quiet"],
                              stdout=full, stderr=subprocess.PIPE, cwd=ROOT, timeout=120)
    err = proc.stderr.decode()
    assert proc.returncode == 2 and "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("catp: error: ")


def test_lm_scorer_from_the_cli_with_compile_option(doc, tiny_model_dir):
    """The real tiny Qwen2 model (from the session fixture) scores through `--scorer lm`; the
    `--scorer-compile` value reaches the scorer (a bad one is a one-line user error)."""
    proc = catp("prune", str(doc), "--budget", "40", "--scorer", "lm", "--scorer-model", str(tiny_model_dir),
                "--device", "cpu", "--scorer-compile", "false", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    result = PruneResult.model_validate_json(proc.stdout)
    assert result.stats.scorer == "lm" and 0 < result.stats.output_tokens <= 40
    bad = catp("prune", str(doc), "--budget", "40", "--scorer", "lm", "--scorer-model", str(tiny_model_dir),
               "--device", "cpu", "--scorer-compile", "sometimes")
    assert_user_error(bad, "compile", "sometimes")


def test_rules_policy_shows_the_merged_selection_policy(tmp_path):
    mine = tmp_path / "mine.yaml"
    mine.write_text("name: mine\nselection:\n  en: {lead_weight: 3.5}\nrules: []\n", encoding="utf-8")
    builtin = json.loads(catp("rules", "policy", "--domain", "legal").stdout)
    assert builtin["en"]["whole_span_chars"] == 60 and builtin["zh"]["lead_weight"] == 8.0  # rules/legal.yaml
    proc = catp("rules", "policy", "--domain", "legal", "--rules", str(mine))
    assert proc.returncode == 0, proc.stderr
    merged = json.loads(proc.stdout)
    assert merged["en"]["lead_weight"] == 3.5  # the user's file overrides that one field ...
    assert merged["en"]["information_weight"] == builtin["en"]["information_weight"]  # ... and no other
    assert merged["zh"] == builtin["zh"]


def test_rules_lint_warns_on_a_category_weight_no_rule_has(tmp_path):
    mine = tmp_path / "mine.yaml"
    mine.write_text("name: mine\nselection:\n  en: {category_weights: {numbr: 0, number: 0.5}}\nrules: []\n",
                    encoding="utf-8")
    proc = catp("rules", "lint", "--strict", str(mine))
    assert proc.returncode == 1
    stderr = proc.stderr.decode()
    assert "category_weights names 'numbr', a category no rule has" in stderr
    assert "'number'" not in stderr.split("(known:")[0]  # a built-in rule's category is known
    builtin = catp("rules", "lint")
    assert builtin.returncode == 0 and b"category_weights" not in builtin.stderr


def test_version_matches_the_package_metadata():
    from importlib.metadata import version

    proc = catp("--version")
    assert proc.returncode == 0 and proc.stdout.decode().strip() == f"catp {version('catp')}"


@pytest.mark.skipif(shutil.which("script") is None, reason="needs util-linux's script for a terminal")
def test_a_model_scorer_shows_a_spinner_on_a_terminal_only(tmp_path, tiny_model_dir):
    """`catp prune --scorer lm` on a terminal (util-linux's `script` gives it one) shows what it is doing while
    the model works; with stderr piped, stderr holds the result's lines alone. The lexical scorer shows none."""
    import shlex

    long_doc = tmp_path / "long.txt"
    long_doc.write_text(DOC * 60, encoding="utf-8")
    lm = ["prune", str(long_doc), "--ratio", "1/4", "--scorer", "lm", "--scorer-model", str(tiny_model_dir),
          "--device", "cpu", "-o", str(tmp_path / "out.txt")]
    spinner = "the lm scorer ranking the text the rules left undecided"

    def on_terminal(args: list[str]) -> str:
        command = shlex.join([sys.executable, "-m", "catp", *args])
        proc = subprocess.run(["script", "-qec", command, "/dev/null"], capture_output=True, cwd=ROOT, timeout=300,
                              env={**os.environ, "COLUMNS": "200", "TERM": "xterm"})
        assert proc.returncode == 0, proc.stdout.decode("utf-8", "replace")
        return proc.stdout.decode("utf-8", "replace")

    shown = on_terminal(lm)
    assert spinner in shown and "tokens (budget" in shown
    lexical = on_terminal(["prune", str(long_doc), "--ratio", "1/4", "-o", str(tmp_path / "out.txt")])
    assert "ranking the text" not in lexical and "tokens (budget" in lexical
    piped = catp(*lm)
    assert piped.returncode == 0 and spinner not in piped.stderr.decode()
    assert piped.stderr.decode().strip().splitlines()[-1].startswith("catp: ")
