"""Issue 25's rough edges: text written as it is, encodings, scripts without sentence marks, the rules
commands, and the CLI's small promises."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
ANSI = "Clause 1. The A\x1b[31mred\x1b[0m fee is $5,000 and is due on 5 March 2024.\n"


def catp(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "catp", *args], input=stdin, capture_output=True, cwd=ROOT,
                          timeout=120)


def test_decode_and_prune_write_ansi_escapes_as_they_are(tmp_path):
    """typer.echo removed ANSI escapes when stdout was a pipe: decode's text must be what the offsets index
    and prune's the library's result."""
    path = tmp_path / "a.txt"
    path.write_bytes(ANSI.encode())
    decoded = catp("decode", str(path))
    assert decoded.returncode == 0, decoded.stderr
    assert decoded.stdout == ANSI.encode()
    pruned = catp("prune", str(path), "--budget", "500", "--quiet")
    assert pruned.returncode == 0, pruned.stderr
    from catp import prune

    assert pruned.stdout == (prune(ANSI, budget=500).text + "\n").encode()
    assert b"\x1b[31m" in pruned.stdout



def _words_text(words: str, seed: int, size: int) -> str:
    import random

    rng, vocab, out = random.Random(seed), words.split(), []
    while sum(map(len, out)) < size:
        sentence = " ".join(rng.choice(vocab) for _ in range(rng.randint(6, 20)))
        out.append(sentence[0].upper() + sentence[1:] + ". " + ("\n" if rng.random() < 0.2 else ""))
    return "".join(out)


FRENCH = ("le la les un une des du de et à où été être licencié concédant redevance résiliation préavis durée prix "
          "garanties présent contrat entraîne paiement sommes dues parties déclarent intégralité clauses énoncées "
          "ci-après notamment obligations céder droits accord écrit société siège social française exécution délai "
          "réception lettre recommandée élève père mère garçon façon reçu déjà très après même où là créance "
          "intérêts légaux taux annuel échéance tribunal compétent litige règlement amiable")
RUSSIAN = ("договор стороны обязуются оплатить сумму рублей в течение дней после подписания настоящего соглашения "
           "арендатор арендодатель")
GREEK = "η σύμβαση τα μέρη υποχρεούνται να καταβάλουν το ποσό ευρώ εντός ημερών από την υπογραφή της παρούσας"


def test_latin1_french_is_read_as_cp1252_and_says_so():
    """charset-normalizer read these 17-44 KB French Latin-1 texts as cp1257 ('garēon', 'intérźts'); the
    same holds of cp775. Other scripts' code pages keep their guess."""
    from catp.decode import decode_input

    said = []
    for seed, size in enumerate((17_000, 25_000, 33_000, 44_000, 17_000, 25_000)):
        text = _words_text(FRENCH, seed, size)
        decoded = decode_input(text.encode("latin-1"), source="fr.txt")
        assert (decoded.text == text, decoded.encoding) == (True, "cp1252"), seed
        said += [w for w in decoded.warnings if "read as cp1252" in w]
    assert said  # where detection had guessed another code page
    for words, encoding in ((RUSSIAN, "cp1251"), (GREEK, "cp1253")):
        text = _words_text(words, 0, 20_000)
        decoded = decode_input(text.encode(encoding), source="x.txt")
        assert (decoded.text, decoded.encoding, decoded.warnings) == (text, encoding, ())


KOREAN = ("계약 당사자는 2024년 3월 5일까지 대금을 지급한다. 다만 공급자가 납품을 지연하는 경우 구매자는 계약을 해지할 수 있다. "
          "이 계약은 서울중앙지방법원을 관할 법원으로 한다. ") * 12
HINDI = ("किरायेदार हर महीने की पांच तारीख तक किराया देगा। यदि किरायेदार भुगतान में देरी करता है तो मकान मालिक अनुबंध "
         "समाप्त कर सकता है। यह अनुबंध दो वर्ष के लिए मान्य है। ") * 12


def test_korean_and_hindi_split_into_sentences_and_fit_small_budgets():
    """Korean ('다. ' before Hangul) and Hindi (the danda ।) were one 400-character unit per cap, so a budget under
    about 260 tokens kept nothing."""
    from catp import prune
    from catp.document import Analysis
    from catp.segment import segment

    for text in (KOREAN, HINDI):
        units = segment(Analysis(text=text, lang="en", domain="general")).units
        assert len(units) >= 30
        result = prune(text, budget=60)
        assert result.text and result.stats.output_tokens <= 60


def test_empty_output_says_why():
    from catp import prune

    emoji = "😀🎉👍🔥❤️🙏😂🚀✨🌟" * 60
    result = prune(emoji, budget=100)
    assert result.text == ""
    assert any(w.startswith("the output is empty: no piece of the text fits the budget of 100") for w in result.warnings)
    marks = "…… —— ！？ 、、 ** " * 60
    assert any("hold no letter, digit or emoji" in w for w in prune(marks, budget=100).warnings)


def test_emoji_lines_are_content():
    """An emoji-only text is split at its line ends and its lines are kept like sentences; before,
    every run without a letter or digit was dropped and the output was empty at any budget."""
    from catp import prune

    lines = ["😀🎉👍🏽🔥❤️🙏😂🚀✨🌟🇨🇳" * 2 + f" {'🔥' * (i % 5)}" for i in range(40)]
    text = "\n".join(lines) + "\n"
    result = prune(text, budget=100)
    assert result.text and result.stats.output_tokens <= 100
    assert all(text[s.start:s.end] in lines or text[s.start:s.end].rstrip("\n") in text for s in result.kept)
    assert not any(w.startswith("the output is empty") for w in result.warnings)


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    from catp.cli import main

    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_rules_test_of_a_builtin_file_by_path_is_not_a_duplicate_of_itself(capsys):
    code, out, err = run_cli(capsys, "rules", "test", str(ROOT / "rules" / "legal.yaml"))
    assert code == 0 and "duplicate" not in err, err
    assert out.endswith(" passed, 0 failed\n")


def test_rules_list_names_each_rule_with_its_file(capsys):
    code, out, _ = run_cli(capsys, "rules", "list", "--domain", "legal")
    assert code == 0
    header, *rows = out.splitlines()
    assert header.split() == ["id", "kind", "category", "priority", "action", "file"]
    date = next(r.split() for r in rows if r.startswith("date.zh "))
    line = 1 + (ROOT / "rules" / "common.yaml").read_text(encoding="utf-8").splitlines().index("  - id: date.zh")
    assert date[1:5] == ["regex", "date", "82", "protect"] and date[5].endswith(f"common.yaml:{line}")
    assert any(r.split()[-1].split(":")[0].endswith("legal.yaml") for r in rows)


def test_rules_explain_is_readable_not_json(capsys):
    code, out, _ = run_cli(capsys, "rules", "explain", "date.zh")
    assert code == 0 and not out.lstrip().startswith("{") and '"pattern":' not in out
    assert "defined in" in out and "example (match)" in out and "2024年3月5日" in out
    code, out, _ = run_cli(capsys, "rules", "explain", "date.zh", "--json")
    assert code == 0 and '"pattern":' in out


def test_rules_lint_warns_when_a_user_file_replaces_a_tuned_selection_field(tmp_path, capsys):
    path = tmp_path / "mine.yaml"
    path.write_text("name: mine\nselection:\n  en: {information_weight: 0.5, table_tail_weight: 1.0}\nrules: []\n",
                    encoding="utf-8")
    code, _, err = run_cli(capsys, "rules", "lint", str(path))
    assert code == 0
    assert "selection.en.information_weight replaces the value the built-in rule sets tuned" in err
    code, _, err = run_cli(capsys, "rules", "lint")  # the built-in files themselves: no such warning
    assert "replaces the value" not in err


def test_readme_rule_file_changes_no_tuned_selection_field(tmp_path, capsys):
    import re

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Rule sets are data"):]
    example = re.search(r"```yaml\n(.*?)```", section, re.S).group(1)
    assert "\nselection:" not in example
    (tmp_path / "mine.yaml").write_text(example, encoding="utf-8")
    code, _, err = run_cli(capsys, "rules", "lint", str(tmp_path / "mine.yaml"))
    assert code == 0 and "selection" not in err, err


def test_prune_help_names_html_and_files_end_with_a_newline(tmp_path, capsys):
    from typer.testing import CliRunner

    from catp.cli import app

    help_text = CliRunner().invoke(app, ["prune", "--help"]).output
    arguments = " ".join(help_text.split("Arguments")[1].split("Options")[0].replace("│", " ").split())
    assert "PDF, DOCX or HTML" in arguments
    doc = tmp_path / "a.txt"
    doc.write_text(ANSI * 3, encoding="utf-8")
    for fmt in ("text", "json", "html"):
        code, _, _ = run_cli(capsys, "prune", str(doc), "--budget", "40", "-f", fmt, "-o", str(tmp_path / fmt), "--quiet")
        assert code == 0 and (tmp_path / fmt).read_text(encoding="utf-8").endswith("\n"), fmt


def test_pytest_prints_the_slowest_tests():
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "--durations=15" in config["tool"]["pytest"]["ini_options"]["addopts"].split()


def test_developers_md_gives_the_suites_real_time():
    text = (ROOT / "DEVELOPERS.md").read_text(encoding="utf-8")
    assert "about 7 minutes" not in text and "24–38 minutes" in text
