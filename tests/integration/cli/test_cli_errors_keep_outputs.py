"""A user's audit of the CLI: error messages stay one line, and a failing run never loses or half-writes
an existing `-o` file."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
CONTRACT = ROOT / "examples" / "contract_en.txt"


def catp(*args: str, **kwargs) -> subprocess.CompletedProcess:
    kwargs.setdefault("cwd", ROOT)
    return subprocess.run([sys.executable, "-m", "catp", *args], capture_output=True, timeout=300, **kwargs)


def one_error_line(proc: subprocess.CompletedProcess) -> str:
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 2 and "Traceback" not in err, err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("catp: error: "), err
    return lines[0]


@pytest.mark.parametrize("command", [["prune", str(CONTRACT), "--ratio", "1/6", "--rules"], ["rules", "lint"]])
def test_a_yaml_error_spanning_lines_is_one_line(command, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_bytes(b"\x00\x01name: x\n")  # PyYAML's message for it has a second, indented line
    line = one_error_line(catp(*command, str(bad)))
    assert "bad.yaml" in line and "invalid YAML" in line


def _small_file_limit(limit: int):
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_a_write_that_fails_midway_keeps_the_existing_output(fmt, tmp_path):
    out = tmp_path / "pruned.txt"
    out.write_text("the previous result\n", encoding="utf-8")
    proc = catp("prune", str(CONTRACT), "--ratio", "1/6", "--format", fmt, "-o", str(out),
                preexec_fn=_small_file_limit(4096))
    line = one_error_line(proc)
    assert "pruned.txt: cannot write the output" in line
    assert out.read_text(encoding="utf-8") == "the previous result\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pruned.txt"]  # no temporary file left behind


def test_the_output_replaces_the_file_and_keeps_its_mode(tmp_path):
    out = tmp_path / "pruned.txt"
    out.write_text("old\n", encoding="utf-8")
    os.chmod(out, 0o640)
    link = tmp_path / "link.txt"
    link.symlink_to(out)
    proc = catp("prune", str(CONTRACT), "--budget", "200", "-o", str(link))
    assert proc.returncode == 0, proc.stderr
    assert link.is_symlink() and "Agreement" in out.read_text(encoding="utf-8")
    assert oct(out.stat().st_mode & 0o777) == oct(0o640)
    new = tmp_path / "new.txt"
    assert catp("prune", str(CONTRACT), "--budget", "50", "-o", str(new)).returncode == 0
    umask = os.umask(0)
    os.umask(umask)
    assert oct(new.stat().st_mode & 0o777) == oct(0o666 & ~umask)


def test_rules_schema_to_an_unwritable_path_is_one_line(tmp_path):
    line = one_error_line(catp("rules", "schema", "-o", str(tmp_path / "missing" / "schema.json")))
    assert "schema.json: cannot write the output" in line


@pytest.mark.parametrize("args, needle", [
    (["--scorer", "nope"], "unknown scorer 'nope'"),
    (["--tokenizer", "/nonexistent/tokenizer.json"], "tokenizer"),
    (["--cue-window", "0"], "cue window"),
    (["--max-bytes", "-1"], "'--max-bytes'"),
    (["--setup", "no_such_module:setup"], "batch setup 'no_such_module:setup' cannot be loaded"),
])
def test_batch_checks_settings_shared_by_every_row_once(args, needle, tmp_path):
    out = tmp_path / "rows.jsonl"
    out.write_text('{"id": "kept"}\n', encoding="utf-8")
    line = one_error_line(catp("batch", str(CONTRACT), "--ratio", "1/6", "-o", str(out), "--quiet", *args))
    assert needle in line
    assert out.read_text(encoding="utf-8") == '{"id": "kept"}\n'  # not replaced by an error row


def test_prune_refuses_a_max_bytes_below_one():
    assert "'--max-bytes'" in one_error_line(catp("prune", str(CONTRACT), "--ratio", "1/6", "--max-bytes", "0"))


def without(module: str, *args: str) -> subprocess.CompletedProcess:
    """catp as installed without an optional dependency (`module` cannot be imported)."""
    script = (f"import sys; sys.modules[{module!r}] = None; from catp.cli import main; "
              f"sys.exit(main(sys.argv[1:]))")
    return subprocess.run([sys.executable, "-c", script, *args], capture_output=True, cwd=ROOT, timeout=300)


def test_eval_without_the_eval_extra_says_what_to_install_before_it_runs(tmp_path):
    data = tmp_path / "one.jsonl"
    data.write_text('{"id": "a", "lang": "en", "domain": "legal", "text": "The fee is $5. It is due on 1 May.", '
                    '"annotations": []}\n', encoding="utf-8")
    proc = without("matplotlib", "eval", "--data", str(data), "--ratios", "1/2", "--out", str(tmp_path / "report"))
    assert "pip install 'catp[eval]'" in one_error_line(proc)
    assert not (tmp_path / "report").exists()


def test_a_missing_optional_package_is_one_line_naming_the_extra(tmp_path):
    data = tmp_path / "one.jsonl"
    data.write_text('{"id": "a", "lang": "en", "domain": "legal", "text": "The fee of $5 is due on May 1, 2024.", '
                    '"annotations": []}\n', encoding="utf-8")
    proc = without("datefinder", "eval", "--data", str(data), "--ratios", "1/2", "--baselines", "", "--jobs", "1",
                   "--out", str(tmp_path / "report"), "--cache", str(tmp_path / "cache"))
    err = proc.stderr.decode()  # after eval's progress bar
    assert proc.returncode == 2 and "Traceback" not in err, err
    assert err.splitlines()[-1] == "catp: error: the 'datefinder' package is not installed: pip install 'catp[eval]'"
    assert without("matplotlib", "rules", "lint").returncode == 0  # a command that does not need it runs


def test_the_lm_scorer_fallback_is_a_catp_warning_and_quiet_hides_it():
    script = ("import sys; sys.modules['torch'] = sys.modules['transformers'] = None; from catp.cli import main; "
              "sys.exit(main(sys.argv[1:]))")
    args = [sys.executable, "-c", script, "prune", str(CONTRACT), "--budget", "100", "--scorer", "auto"]
    proc = subprocess.run(args, capture_output=True, cwd=ROOT, timeout=300)
    err = proc.stderr.decode()
    assert proc.returncode == 0, err
    fallback = [line for line in err.splitlines() if "LM scorer unavailable" in line]
    assert len(fallback) == 1 and fallback[0].startswith("catp: warning: "), err
    assert "UserWarning" not in err and "build_scorer" not in err
    quiet = subprocess.run([*args, "--quiet"], capture_output=True, cwd=ROOT, timeout=300)
    assert quiet.returncode == 0 and quiet.stderr == b"", quiet.stderr


@pytest.mark.parametrize("command", [["budget"], ["ask", str(CONTRACT), "Who are the parties?"]])
@pytest.mark.parametrize("option, value", [("--connect-timeout", "-1"), ("--read-timeout", "0"), ("--retries", "-1"),
                                           ("--max-tokens", "-5"), ("--concurrency", "0")])
def test_server_commands_refuse_bad_values_before_connecting(command, option, value):
    # port 9 (discard) has no server: a value that got through would end in a connection error, exit 3
    line = one_error_line(catp(*command, "--server", "http://127.0.0.1:9/v1", option, value))
    assert option in line


RULE = ("  - id: {id}\n    kind: phrases\n    category: fact\n    priority: 50\n    action: protect\n    lang: [en]\n"
        "    phrases: [royalty]\n    examples: {{match: [a royalty]}}\n")


@pytest.mark.parametrize("ids", [["date.en"], ["mine.a", "mine.a"]])
def test_rules_lint_refuses_ids_that_prune_would_refuse(ids, tmp_path):
    files = []
    for n, rule_id in enumerate(ids):
        path = tmp_path / f"mine{n}.yaml"
        path.write_text(f"name: mine{n}\nversion: 1\nrules:\n" + RULE.format(id=rule_id), encoding="utf-8")
        files.append(str(path))
    prune = catp("prune", str(CONTRACT), "--ratio", "1/6", *[a for f in files for a in ("--rules", f)])
    assert "duplicate rule id" in one_error_line(prune)
    assert "duplicate rule id" in one_error_line(catp("rules", "lint", *files))


def test_rules_lint_passes_a_good_rule_file(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text("name: mine\nversion: 1\nrules:\n" + RULE.format(id="mine.royalty"), encoding="utf-8")
    proc = catp("rules", "lint", str(path))
    assert proc.returncode == 0 and b"1 rules in 1 files: OK" in proc.stdout, proc.stderr


def test_batch_refuses_a_folder_with_nothing_to_read(tmp_path):
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "notes.md").write_text("The fee is $5.", encoding="utf-8")
    out = tmp_path / "rows.jsonl"
    out.write_text('{"id": "kept"}\n', encoding="utf-8")
    line = one_error_line(catp("batch", str(folder), "--glob", "*.txt", "--ratio", "1/2", "-o", str(out), "--quiet"))
    assert "corpus: no files to read" in line and "*.txt" in line
    assert out.read_text(encoding="utf-8") == '{"id": "kept"}\n'
    proc = catp("batch", str(folder), "--glob", "*.md", "--ratio", "1/2", "-o", str(out), "--quiet")
    assert proc.returncode == 0 and out.read_text(encoding="utf-8").count("\n") == 1, proc.stderr


def test_html_escapes_the_tokenizer_name(tmp_path):
    from catp import Pruner
    from catp.render import to_html

    pruner = Pruner(domain="legal")
    doc = pruner.analyse("The fee is $5. The weather was fine. " * 10, budget=20)
    result = pruner.finish(doc)
    result.stats.tokenizer = "/models/<script>alert(1)</script>/tokenizer.json"
    page = to_html(doc, result)
    assert "<script>" not in page and "&lt;script&gt;" in page


@pytest.mark.parametrize("command", [["batch", str(ROOT / "examples"), "--glob", "*.txt"], ["prune", str(CONTRACT)]])
def test_a_reader_that_stops_early_is_not_a_failure(command):
    # `catp ... | head -c 10`: the pipe breaks; batch used to exit 1, its code for "some rows are errors"
    proc = subprocess.Popen([sys.executable, "-m", "catp", *command, "--ratio", "1/2", "--quiet"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.read(10)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=300) == 0 and err == "", err


def test_eval_refuses_a_report_folder_it_cannot_write_before_it_runs(tmp_path):
    data = tmp_path / "one.jsonl"
    data.write_text('{"id": "a", "lang": "en", "domain": "legal", "text": "The fee of $5 is due on May 1, 2024.", '
                    '"annotations": []}\n', encoding="utf-8")
    blocker = tmp_path / "file"
    blocker.write_text("", encoding="utf-8")
    proc = catp("eval", "--data", str(data), "--ratios", "1/2", "--baselines", "", "--no-values",
                "--out", str(blocker / "report"))
    assert "cannot write the report there" in one_error_line(proc)  # no progress bar: nothing ran


def test_prune_output_dash_is_stdout_as_for_batch(tmp_path):
    proc = catp("prune", str(CONTRACT), "--budget", "50", "-o", "-", "--quiet", cwd=tmp_path,
                env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0 and proc.stdout.strip(), proc.stderr
    assert list(tmp_path.iterdir()) == []  # no file named '-'


@pytest.mark.parametrize("command", [["prune"], ["batch", "--quiet"]])
def test_scorer_options_without_a_scorer_that_takes_them_are_refused(command):
    # --device cuda with the default lexical scorer used to be ignored without a word
    line = one_error_line(catp(*command, str(CONTRACT), "--ratio", "1/6", "--device", "cuda", "--scorer-max-tokens", "9"))
    assert "--scorer-max-tokens, --device: for --scorer lm, vllm or auto" in line


def test_a_writable_file_in_a_read_only_folder_is_written_in_place(tmp_path, monkeypatch):
    import tempfile

    from catp.commands import output

    out = tmp_path / "pruned.txt"
    out.write_text("old\n", encoding="utf-8")

    def no_new_files(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    # the tests run as root, who may write anywhere: the folder's refusal is simulated
    monkeypatch.setattr(output.os, "access", lambda p, mode: Path(p) != tmp_path)
    monkeypatch.setattr(tempfile, "mkstemp", no_new_files)
    output.write_output(out, "new\n")
    assert out.read_text(encoding="utf-8") == "new\n"
