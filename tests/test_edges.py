"""Issue 25's rough edges: text written as it is, encodings, scripts without sentence marks, the rules
commands, and the CLI's small promises."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
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
