"""Coverage-guided fuzzing of HTML input (atheris / libFuzzer).

Half the inputs are raw fuzzed bytes behind an HTML doctype, through `decode_input` (encoding detection,
sometimes an --encoding override, lxml, inscriptis); half are documents built from fuzzed choices: tags
(inline, block, table, list, comments, unclosed), nesting up to thousands deep, entities and text holding
marker words. A `CatpError` is an expected outcome; any other exception, or a failed check, is a crash.
Checks: the text has no NUL or lone surrogate (tokenizers take neither), has no more characters than the
input has bytes (layout adds no bulk: the input's size bounds the text), and, for
built documents read whole, every marker word outside script, style and comments is in the text (no text
lost silently: libxml2 used to drop all below depth 255).

    PYTHONPATH=. python fuzz/fuzz_html.py -atheris_runs=100000 -max_len=2048 -artifact_prefix=/tmp/fz/ /tmp/fz/html
"""

from __future__ import annotations

import sys

import atheris

with atheris.instrument_imports(include=["catp"]):
    from catp.decode import decode_input, has_lone_surrogates
    from catp.errors import CatpError

TAGS = ["div", "p", "font", "b", "i", "span", "td", "tr", "table", "li", "ul", "h1", "blockquote", "a", "pre",
        "center", "section", "em", "sup", "br", "hr", "th", "tbody", "ol", "dl", "dd", "dt", "nobr", "form"]
SKIP = ["script", "style", "title", "textarea", "head", "template", "noscript", "select", "option", "iframe"]
ENCODINGS = [None, None, "utf-8", "latin-1", "gb18030", "utf-16", "utf-7", "no-such-codec"]
ENTITIES = ["&amp;", "&lt;", "&#0;", "&#xD800;", "&nbsp;", "&#x10FFFF;", "&bogus;", "&"]


def built(fdp: atheris.FuzzedDataProvider) -> tuple[str, list[str]]:
    parts, words, open_tags = ["<!DOCTYPE html><html><body>"], [], []
    for n in range(fdp.ConsumeIntInRange(0, 400)):
        op = fdp.ConsumeIntInRange(0, 9)
        if op <= 2:  # open a tag, maybe left unclosed
            tag = TAGS[fdp.ConsumeIntInRange(0, len(TAGS) - 1)]
            attrs = ' class="x"' if fdp.ConsumeBool() else ""
            parts.append(f"<{tag}{attrs}>")
            open_tags.append(tag)
        elif op == 3 and open_tags:
            parts.append(f"</{open_tags.pop()}>")
        elif op == 4:  # a run of the same tag, deep
            tag = TAGS[fdp.ConsumeIntInRange(0, len(TAGS) - 1)]
            parts.append(f"<{tag}>" * fdp.ConsumeIntInRange(1, 3000))
        elif op == 5:
            parts.append("<!-- " + fdp.ConsumeUnicodeNoSurrogates(8).replace("-", "") + " -->")
        elif op == 6:
            parts.append(ENTITIES[fdp.ConsumeIntInRange(0, len(ENTITIES) - 1)])
        elif op == 7:  # text that must not be read
            tag = SKIP[fdp.ConsumeIntInRange(0, len(SKIP) - 1)]
            parts.append(f"<{tag}>hidden</{tag}>")
        else:  # a marker word, then fuzzed text
            word = f"qz{n}x"
            words.append(word)
            parts.append(f" {word} ")
            parts.append(fdp.ConsumeUnicodeNoSurrogates(6).replace("<", " ").replace("&", " "))
    parts.append("</body></html>")
    return "".join(parts), words


def one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    max_bytes = fdp.ConsumeIntInRange(1, 1 << 20)
    words: list[str] = []
    if fdp.ConsumeBool():
        encoding = ENCODINGS[fdp.ConsumeIntInRange(0, len(ENCODINGS) - 1)]
        raw = b"<!DOCTYPE html><html>" + fdp.ConsumeBytes(fdp.remaining_bytes())
        max_bytes = max(max_bytes, len(raw))
    else:
        encoding = None
        html, words = built(fdp)
        raw = html.encode("utf-8")
        max_bytes = len(raw) + 1
    try:
        decoded = decode_input(raw, encoding=encoding, max_bytes=max_bytes, source="fuzz.html")
    except CatpError:
        return
    text = decoded.text
    assert decoded.format == "html"
    assert "\x00" not in text and not has_lone_surrogates(text), "untokenizable text"
    assert len(text) <= len(raw), "more characters than the input has bytes"
    missing = [w for w in words if w not in text]
    assert not missing, f"text lost silently: {missing[:5]}"


def main() -> None:
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
