"""Issue 7, hostile rule files: every mistake is one line naming file (+ line + rule id), exit 2;
a runaway regex hits its timeout, is reported and skipped while pruning goes on; YAML is loaded
with safe_load only, so tags that would run code are refused and nothing runs."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from catp.errors import RuleError
from catp.pipeline import Pruner
from catp.rules.loader import load_file, load_text

ROOT = Path(__file__).resolve().parents[3]
HEAD = "name: mine\nrules:\n"


def rule_yaml(rule_id: str = "my.rule", pattern: str = "x", **extra) -> str:
    body = f"  - id: {rule_id}\n    kind: regex\n    category: number\n    priority: 50\n    pattern: '{pattern}'\n"
    return body + "".join(f"    {k}: {v}\n" for k, v in extra.items())


def catp(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "catp", *args], capture_output=True, cwd=ROOT, timeout=120)


@pytest.fixture(scope="module")
def doc(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("doc") / "doc.txt"
    path.write_text("The Licensee shall pay $5,000 within thirty (30) days. " * 10, encoding="utf-8")
    return path


def cli_error(doc: Path, rules: Path) -> str:
    proc = catp("prune", str(doc), "--budget", "20", "--rules", str(rules))
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 2 and "Traceback" not in err and proc.stdout == b"", err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("catp: error: "), err
    return lines[0]


@pytest.mark.parametrize("name, body, needles", [
    ("malformed", HEAD + "  - id: a\n    kind: [regex\n", [":5:", "invalid YAML"]),
    ("bad indent", HEAD + "  - id: a\n   kind: regex\n", [":4:", "invalid YAML"]),
    ("unknown field", HEAD + rule_yaml("my.rule", colour="red"), [":3", "my.rule", "colour"]),
    ("missing id", HEAD + rule_yaml() + rule_yaml("x").replace("  - id: x\n    kind", "  - kind"),
     [":8", "#2 (no id)", "id"]),
    ("duplicate id", HEAD + rule_yaml("my.rule") + rule_yaml("my.rule"), [":8", "my.rule", "duplicate", "line 3"]),
    ("invalid regex", HEAD + rule_yaml("my.rule", "(?P<x>a"), [":3", "my.rule", "invalid regex"]),
    ("missing group", HEAD + rule_yaml("my.rule", "(?P<n>a)", group="nope"), [":3", "my.rule", "group"]),
    ("negative group", HEAD + rule_yaml("my.rule", "(a)", group=-1), [":3", "my.rule", "group"]),
    ("unknown kind", HEAD + "  - id: my.rule\n    kind: ml\n    category: x\n    priority: 5\n", [":3", "my.rule", "ml"]),
    ("id clashes with common.yaml", HEAD + rule_yaml("amount.percent"), ["amount.percent", "common.yaml"]),
    ("not a mapping", "- id: x\n", [":1", "mapping"]),
    ("surrogate escape in a word", HEAD + "  - id: my.pos\n    kind: pos\n    category: fact\n    priority: 5\n"
     "    anchors: [pay]\n    tokens: [{words: [\"pay\\ud800\"]}]\n", [":8:", "surrogate"]),
    ("surrogate escape in a category", HEAD + rule_yaml().replace("category: number", 'category: "\\udfff"'),
     [":5:", "surrogate"]),
    ("python tag", "name: !!python/object/apply:os.getcwd []\nrules: []\n", [":1", "python/object"]),
])
def test_bad_rule_files_are_one_line_errors(doc, tmp_path, name, body, needles):
    path = tmp_path / "mine.yaml"
    path.write_text(body, encoding="utf-8")
    line = cli_error(doc, path)
    assert str(path) in line
    for needle in needles:
        assert needle in line, line


def test_rule_file_that_is_not_utf8(doc, tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_bytes((HEAD + rule_yaml("my.rule", "caf\xe9")).encode("latin-1"))
    assert "cannot read rule file" in cli_error(doc, path)


@pytest.mark.parametrize("tag", [
    "!!python/object/apply:os.system ['touch {marker}']",
    "!!python/object/new:subprocess.Popen [['touch', '{marker}']]",
    "!!python/name:os.system",
    "!!python/module:os",
])
def test_code_running_tags_are_refused_and_nothing_runs(tmp_path, tag):
    marker = tmp_path / "pwned"
    raw = f"name: {tag.format(marker=marker)}\nrules: []\n"
    with pytest.raises(RuleError, match="invalid YAML") as info:
        load_text(raw, "evil.yaml")
    assert info.value.line == 1
    assert not marker.exists()


def test_yaml_bomb_is_bounded():
    """A billion-laughs alias bomb: safe_load builds shared references, and validation refuses it quickly."""
    lol = "a: &a ['lol','lol','lol','lol','lol','lol','lol','lol','lol']\n"
    for i in range(1, 9):
        prev = chr(ord("a") + i - 1)
        cur = chr(ord("a") + i)
        lol += f"{cur}: &{cur} [*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev}]\n"
    with pytest.raises(RuleError) as info:
        load_text(lol + "name: x\nrules: []\n", "bomb.yaml")
    assert "bomb.yaml" in str(info.value)


# ---------------------------------------------------------------- runaway regexes

CATASTROPHIC = "(a|a)+$"  # exponential backtracking in the `regex` module on "aaaa…b"


def write_rules(tmp_path: Path, pattern: str, kind: str = "regex") -> Path:
    path = tmp_path / "slow.yaml"
    extra = "    window_tokens: 5\n" if kind == "cue_window" else ""
    path.write_text(HEAD + f"  - id: slow.rule\n    kind: {kind}\n    category: test\n    priority: 90\n"
                    f"    pattern: '{pattern}'\n" + extra, encoding="utf-8")
    return path


@pytest.mark.parametrize("kind", ["regex", "cue_window", "heading"])
def test_catastrophic_regex_hits_the_timeout_and_pruning_goes_on(tmp_path, kind):
    # a heading rule only sees heading units: there, the runaway line is an ALL-CAPS heading
    pattern, line = (CATASTROPHIC.upper(), "A" * 60 + "B") if kind == "heading" else (CATASTROPHIC, "a" * 60 + "b")
    pruner = Pruner(domain="general", rules=[write_rules(tmp_path, pattern, kind)], regex_timeout=0.05)
    text = line + "\nThe Licensee shall pay $5,000 by March 5, 2024. The weather was fine today.\n"
    result = pruner.prune(text, budget=20)
    warning = next(w for w in result.warnings if "slow.rule" in w)
    assert "timeout" in warning and "slow.yaml:3" in warning
    assert all(d.rule_id != "slow.rule" for d in result.dropped_protected)
    assert result.stats.output_tokens <= 20 and result.text
    # the other rules still ran and shaped the result
    assert "amount" in result.stats.per_category and "date" in result.stats.per_category


def test_a_fast_rule_is_not_flagged(tmp_path):
    pruner = Pruner(domain="general", rules=[write_rules(tmp_path, "(a+)+$")], regex_timeout=1.0)
    result = pruner.prune("a" * 60 + "b and then a fee of $5.\n" + "a" * 30, budget=50)
    assert not any("slow.rule" in w for w in result.warnings)


def test_the_timeout_applies_per_document(tmp_path):
    """A rule skipped on one document still runs on the next."""
    pruner = Pruner(domain="general", rules=[write_rules(tmp_path, "(x|x)+y|fee")], regex_timeout=0.05)
    slow = pruner.prune("x" * 60 + "z then some fee is due.", budget=5)
    assert any("slow.rule" in w for w in slow.warnings)
    fast = pruner.prune("The fee is due on delivery. Nothing else matters.", budget=5)
    assert not fast.warnings or not any("slow.rule" in w for w in fast.warnings)
    assert "test" in fast.stats.per_category


def test_cli_reports_the_timeout_as_a_warning(tmp_path):
    """The CLI has no timeout option; its default (2 s) still catches a truly exponential pattern."""
    rules = write_rules(tmp_path, CATASTROPHIC)
    doc = tmp_path / "doc.txt"
    doc.write_text("a" * 60 + "b\nThe Licensee shall pay $5,000.\n", encoding="utf-8")
    proc = catp("prune", str(doc), "--budget", "10", "--rules", str(rules))
    err = proc.stderr.decode()
    assert proc.returncode == 0 and "Traceback" not in err
    assert "catp: warning: rule 'slow.rule'" in err and "timeout" in err


def test_builtin_rule_files_load_with_safe_yaml_only():
    """The loader builds data with pyyaml's SafeConstructor only, on libyaml's parser or the pure-Python one: the
    tags a full Loader builds (a tuple, a complex number: no code runs) are refused too (the code-running tags
    are checked above)."""
    for tag in ("!!python/tuple [1, 2]", "!!python/complex 1+2j", "!!python/str x"):
        with pytest.raises(RuleError, match="invalid YAML"):
            load_text(f"name: {tag}\nrules: []\n", "full.yaml")
    source = (ROOT / "catp" / "rules" / "loader.py").read_text(encoding="utf-8")
    assert "yaml.load(" not in source and "FullLoader" not in source and "UnsafeLoader" not in source
    load_file(ROOT / "rules" / "common.yaml")


def test_rule_file_given_twice_is_a_duplicate(doc, tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text(HEAD + rule_yaml("my.rule"), encoding="utf-8")
    proc = catp("prune", str(doc), "--budget", "20", "--rules", str(path), "--rules", str(path))
    assert proc.returncode == 2 and "duplicate rule id" in proc.stderr.decode()


def test_empty_and_whitespace_phrase_lists_are_refused():
    raw = HEAD + textwrap.dedent("""\
          - id: p.blank
            kind: phrases
            category: x
            priority: 5
            phrases: ["  "]
        """)
    with pytest.raises(RuleError, match=r"p\.blank.*blank"):
        load_text(raw, "p.yaml")


def test_heading_rules_share_one_timeout_across_headings(tmp_path):
    """A heading rule searches each heading unit on its own. Each search once got the whole timeout,
    so a pattern just under it per heading could take (headings x timeout). Here the compiled pattern
    is swapped for one that burns 20 ms of CPU per search (measured in CPU time, so the outcome does not
    depend on the machine's speed): with a 0.1 s timeout the rule stops after about 5 of 40 headings."""
    import time

    from catp.annotate import annotate
    from catp.document import Analysis
    from catp.rules.registry import RuleRegistry
    from catp.segment import segment
    from catp.tokens import load_token_counter

    calls: list[float] = []

    class BurningPattern:
        def search(self, text, start, end, timeout, concurrent=True):
            calls.append(timeout)
            until = time.process_time() + 0.02
            while time.process_time() < until:
                for _ in range(2000):  # user time, as a scan's: the main thread's timer counts user time only
                    pass
            return None

    raw = HEAD + "  - id: slow.heading\n    kind: heading\n    category: heading\n    priority: 60\n    pattern: 'X'\n"
    registry = RuleRegistry([load_text(raw, "h.yaml")])
    registry.rules[0].matcher.pattern = BurningPattern()
    text = "".join(f"第{i}条 标题\n正文内容在这里，共有若干字。\n" for i in range(1, 41))
    starts = load_token_counter().token_starts(text)

    def run() -> Analysis:
        calls.clear()
        doc = segment(Analysis(text=text, lang="zh"))
        annotate(doc, registry, starts, langs={"zh"}, regex_timeout=0.1)
        return doc

    doc = run()  # the main thread: one CPU timer around the rule's searches (they get no timeout of their own)
    assert any("slow.heading" in w and "timeout" in w for w in doc.warnings)
    assert 3 <= len(calls) <= 7 < 40 and set(calls) == {None}
    import threading

    done: list[Analysis] = []
    worker = threading.Thread(target=lambda: done.append(run()))  # elsewhere: each search gets what is left
    worker.start()
    worker.join()
    assert any("slow.heading" in w and "timeout" in w for w in done[0].warnings)
    assert 3 <= len(calls) <= 7 < 40
    assert calls == sorted(calls, reverse=True) and calls[0] <= 0.1
