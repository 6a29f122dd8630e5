"""rules/loader.py + schema.py: rule files load, or fail naming file, line and rule id."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from catp.errors import CatpError, RuleError
from catp.rules import schema as schema_module
from catp.rules.loader import BUILTIN_DOMAINS, builtin_rules_dir, load_file, load_text
from catp.rules.catalog import resolve
from catp.rules.registry import RuleRegistry
from catp.rules.schema import RuleSet, json_schema

ROOT = Path(__file__).resolve().parents[3]
GOOD = textwrap.dedent("""\
    name: test
    rules:
      - id: num.digits
        kind: regex
        category: number
        priority: 50
        pattern: '\\d+'
    """)


def rule(rule_id: str | None = "r.two", extra: str = "", pattern: str = "x", kind: str = "regex",
         priority: int = 50) -> str:
    """A second rule appended to GOOD, starting on line 8."""
    head = f"  - id: {rule_id}\n    kind: {kind}\n" if rule_id else f"  - kind: {kind}\n"
    return GOOD + head + f"    category: number\n    priority: {priority}\n    pattern: '{pattern}'\n" + extra


def error_of(raw: str, path: str = "mine.yaml") -> RuleError:
    with pytest.raises(RuleError) as info:
        RuleRegistry([load_text(raw, path)])  # compiling is part of loading: regexes are checked there
    return info.value


def test_good_file_loads_with_rule_lines():
    loaded = load_text(rule("r.two"), "mine.yaml")
    assert [r.id for r in loaded.ruleset.rules] == ["num.digits", "r.two"]
    assert loaded.lines == {"num.digits": 3, "r.two": 8}
    assert loaded.path == "mine.yaml"


@pytest.mark.parametrize("tail, line", [("  - id: broken\n   kind: regex\n", 9),  # bad indent
                                        ("  - id: broken\n    kind: [regex\n", 10)])  # unclosed list
def test_malformed_yaml_names_file_and_line(tail, line):
    err = error_of(GOOD + tail)
    assert str(err).startswith(f"mine.yaml:{line}: invalid YAML")
    assert (err.path, err.line) == ("mine.yaml", line)


def test_tab_indentation_names_the_line():
    err = error_of("name: t\nrules:\n\t- id: x\n")
    assert (err.path, err.line) == ("mine.yaml", 3)


def test_unknown_field_names_file_line_rule_and_field():
    err = error_of(rule("r.colour", extra="    colour: red\n"))
    assert (err.path, err.line, err.rule_id) == ("mine.yaml", 8, "r.colour")
    assert "colour" in str(err) and str(err).startswith("mine.yaml:8 (rule 'r.colour')")


def test_unknown_top_level_field():
    err = error_of("name: t\nlanguage: zh\nrules: []\n")
    assert "language" in str(err) and err.path == "mine.yaml" and err.line == 2


@pytest.mark.parametrize("raw, line, field", [
    ("name: t\nselection:\n  en:\n    lead_weight: 2.0\n    lead_wieght: 3\nrules: []\n", 5, "lead_wieght"),
    ("name: t\nselection:\n  zh:\n    lead_weight: -1\n", 4, "lead_weight"),
    ("name: t\nselection:\n  fr: {}\n", 3, "fr"),
    ("name: t\ndetect:\n  keywords: 5\n", 3, "keywords"),
])
def test_errors_outside_rules_name_their_line(raw, line, field):
    err = error_of(raw)
    assert (err.path, err.line) == ("mine.yaml", line) and field in str(err)


def test_missing_id_names_the_rule_by_position():
    err = error_of(rule(None))
    assert err.line == 8 and "#2" in str(err) and "id" in str(err)


def test_duplicate_id_in_one_file():
    err = error_of(rule("num.digits"))
    assert (err.line, err.rule_id) == (8, "num.digits")
    assert "duplicate" in str(err) and "line 3" in str(err)


def test_duplicate_id_across_files(tmp_path):
    first, second = tmp_path / "a.yaml", tmp_path / "b.yaml"
    first.write_text(GOOD, encoding="utf-8")
    second.write_text(GOOD.replace("name: test", "name: other"), encoding="utf-8")
    with pytest.raises(RuleError) as info:
        resolve(None, [first, second])
    err = info.value
    assert err.path == str(second) and err.rule_id == "num.digits" and str(first) in str(err)


def test_id_clash_with_builtin_rules(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text(GOOD.replace("num.digits", "amount.percent"), encoding="utf-8")
    with pytest.raises(RuleError, match=r"amount\.percent.*duplicate rule id, also defined in .*common\.yaml"):
        resolve(None, [path])


@pytest.mark.parametrize("kind, pattern", [("regex", "(unclosed"), ("heading", "[abc"), ("cue_window", "a{2,1}")])
def test_invalid_regex_names_file_line_and_rule(kind, pattern):
    err = error_of(rule("r.bad", pattern=pattern, kind=kind))
    assert (err.path, err.line, err.rule_id) == ("mine.yaml", 8, "r.bad")
    assert "invalid regex" in str(err)


def test_priority_out_of_range():
    err = error_of(rule("r.bad", priority=500))
    assert (err.rule_id, err.line) == ("r.bad", 8) and "priority" in str(err)


@pytest.mark.parametrize("extra, match", [
    ("    flags: [UNICODE_PLEASE]\n", "flags"),
    ("    lang: [fr]\n", "lang"),
    ("    validate_with: no_such_validator\n", "no_such_validator"),
    ("    group: 3\n", "group 3"),
])
def test_invalid_values_name_the_rule(extra, match):
    err = error_of(rule("r.bad") + extra)
    assert err.rule_id == "r.bad" and err.line == 8 and match in str(err)


def test_unknown_kind():
    err = error_of(rule("r.kind", kind="fuzzy"))
    assert err.rule_id == "r.kind" and "fuzzy" in str(err)


@pytest.mark.parametrize("raw", ["- just\n- a list\n", "42\n", "", "name: t\nrules: 5\n"])
def test_wrong_shapes(raw):
    err = error_of(raw)
    assert str(err).startswith("mine.yaml")


def test_load_file_errors(tmp_path):
    with pytest.raises(RuleError, match="no such rule file"):
        load_file(tmp_path / "missing.yaml")
    bad = tmp_path / "latin1.yaml"
    bad.write_bytes("name: caf\xe9\nrules: []\n".encode("latin-1"))
    with pytest.raises(RuleError, match=r"latin1\.yaml: cannot read rule file"):
        load_file(bad)
    with pytest.raises(RuleError, match="cannot read rule file"):
        load_file(tmp_path)


def test_unknown_domain():
    with pytest.raises(CatpError) as err:
        resolve("astrology")
    assert str(err.value) == "unknown domain 'astrology'; choose one of legal, finance, medical, general or auto"


@pytest.mark.parametrize("domain", [None, "general", *BUILTIN_DOMAINS])
def test_builtin_rule_sets_compile(domain):
    loaded = resolve(domain)
    registry = RuleRegistry(loaded)
    assert registry.names[0] == "common"
    assert len(registry.rules) == sum(len(item.ruleset.rules) for item in loaded)


def test_every_builtin_file_is_valid():
    files = sorted(builtin_rules_dir().glob("*.yaml"))
    assert {f.stem for f in files} >= {"common", *BUILTIN_DOMAINS}
    for path in files:
        RuleRegistry([load_file(path)])


def test_cue_window_override_applies_to_cue_rules_only():
    loaded = resolve(None)
    original = {r.id: r for item in loaded for r in item.ruleset.rules}
    registry = RuleRegistry(loaded, cue_window_tokens=7)
    windows = [c.rule for c in registry.rules if c.rule.kind == "cue_window"]
    assert {r.category == "cue" for r in windows} == {True, False}  # both sorts exist in common.yaml
    for r in windows:
        assert r.window_tokens == (7 if r.category == "cue" else original[r.id].window_tokens)


# ---------------------------------------------------------------- JSON schema export

def test_json_schema_export_is_json_and_covers_every_kind():
    schema = json.loads(json.dumps(json_schema()))
    assert schema["title"] == "RuleSet" and set(schema["required"]) >= {"name"}
    kinds = schema["properties"]["rules"]["items"]["discriminator"]["mapping"]
    assert set(kinds) == {"regex", "phrases", "cue_window", "pos", "heading"}
    for ref in kinds.values():
        model = schema["$defs"][ref.rsplit("/", 1)[-1]]
        assert model["additionalProperties"] is False  # editors flag unknown fields
        assert {"id", "kind", "category", "priority"} <= set(model["required"])


def test_json_schema_fields_match_the_models():
    schema = json_schema()
    for name in ("RegexRule", "PhraseRule", "CueWindowRule", "PosRule", "HeadingRule"):
        model = getattr(schema_module, name)
        assert set(schema["$defs"][name]["properties"]) == set(model.model_fields)


def test_builtin_files_satisfy_the_exported_schema_required_fields():
    """Cheap structural check of the real files against the exported schema (no jsonschema dependency)."""
    import yaml

    schema = json_schema()
    mapping = schema["properties"]["rules"]["items"]["discriminator"]["mapping"]
    for path in sorted(builtin_rules_dir().glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        assert set(data) <= set(schema["properties"]), path
        for item in data.get("rules") or []:
            model = schema["$defs"][mapping[item["kind"]].rsplit("/", 1)[-1]]
            assert set(model["required"]) <= set(item) <= set(model["properties"]), (path, item["id"])
        RuleSet.model_validate(data)


def test_the_published_schema_file_is_current():
    """docs/rules.schema.json (for editors) is what `catp rules schema` exports now."""
    published = ROOT / "docs" / "rules.schema.json"
    if not published.is_file():
        pytest.skip("docs/rules.schema.json is not in this checkout")
    assert json.loads(published.read_text(encoding="utf-8")) == json_schema()


def test_rules_schema_command(tmp_path):
    out = tmp_path / "schema.json"
    proc = subprocess.run([sys.executable, "-m", "catp", "rules", "schema", "-o", str(out)], capture_output=True,
                          cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(out.read_text(encoding="utf-8")) == json_schema()


def test_selection_policy_merges_field_by_field():
    from catp.rules.schema import merged_policy

    base = load_text("name: a\nselection:\n  en: {information_weight: 0.5, lead_weight: 1}\nrules: []\n", "a.yaml")
    domain = load_text("name: b\nselection:\n  en: {lead_weight: 0}\n  zh: {information_weight: 6}\nrules: []\n",
                       "b.yaml")
    en = merged_policy([base.ruleset, domain.ruleset], "en")
    assert (en.information_weight, en.lead_weight) == (0.5, 0.0)  # the later file overrides only what it gives
    zh = merged_policy([base.ruleset, domain.ruleset], "zh")
    assert (zh.information_weight, zh.lead_weight) == (6.0, 2.0)  # lead_weight: the default
    assert merged_policy([], "en") == merged_policy([base.ruleset], "zh")  # nothing given: defaults


@pytest.mark.parametrize("policy, word", [("en: {lead_weight: -1}", "lead_weight"),
                                          ("en: {lead_wieght: 1}", "lead_wieght"),
                                          ("fr: {lead_weight: 1}", "fr")])
def test_bad_selection_policy_names_the_file_and_field(policy, word):
    err = error_of(f"name: t\nselection:\n  {policy}\nrules: []\n")
    assert err.path == "mine.yaml" and word in str(err)


USER_RULES = ("name: mine\nrules:\n  - id: mine.weather\n    kind: phrases\n    category: fact\n    priority: 90\n"
              "    action: protect\n    lang: [en]\n    phrases: [weather]\n")


def count_parses(monkeypatch, rule_file: Path) -> list[int]:
    """A one-item list counting the YAML parses (each followed by validation) of `rule_file`'s text."""
    from catp.rules import loader

    raw, real, count = rule_file.read_text(encoding="utf-8"), loader.parse_yaml, [0]

    def counting(text: str):
        count[0] += text == raw
        return real(text)

    monkeypatch.setattr(loader, "parse_yaml", counting)
    return count


def test_a_pruner_parses_each_user_rule_file_once(tmp_path, monkeypatch):
    """Detection keywords (--domain auto) and every domain's rule set come from one parse of the file, however
    many domains the documents turn out to be."""
    from catp.pipeline import Pruner

    rule_file = tmp_path / "mine.yaml"
    rule_file.write_text(USER_RULES, encoding="utf-8")
    count = count_parses(monkeypatch, rule_file)
    pruner = Pruner(rules=[rule_file])
    for name, domain in (("contract_en", "legal"), ("report_en", "finance")):
        text = (ROOT / "examples" / f"{name}.txt").read_text(encoding="utf-8")
        assert pruner.prune(text, ratio="1/4").stats.domain == domain
    assert count[0] == 1
    count[0] = 0
    Pruner(domain="legal", rules=str(rule_file)).prune("The weather was fine.", ratio="1/2")
    assert count[0] == 1


def test_catp_prune_parses_each_rules_file_once(tmp_path, monkeypatch, capsys):
    from catp.cli import main

    rule_file = tmp_path / "mine.yaml"
    rule_file.write_text(USER_RULES, encoding="utf-8")
    count = count_parses(monkeypatch, rule_file)
    assert main(["prune", str(ROOT / "examples" / "contract_en.txt"), "--rules", str(rule_file),
                 "--ratio", "1/4", "--quiet"]) == 0
    assert capsys.readouterr().out.strip()
    assert count[0] == 1


def test_a_changed_rule_file_is_read_again_by_the_next_pruner(tmp_path):
    """No cache outlives a Pruner: a rule file edited on disk counts from the next Pruner on."""
    from catp.pipeline import Pruner

    rule_file = tmp_path / "mine.yaml"
    rule_file.write_text(USER_RULES, encoding="utf-8")
    text = "The weather was fine. " + (ROOT / "examples" / "contract_en.txt").read_text(encoding="utf-8")
    assert "mine.weather" in {r for s in Pruner(rules=[rule_file]).prune(text, ratio="1/4").kept for r in s.reasons}
    rule_file.write_text(USER_RULES.replace("mine.weather", "mine.climate"), encoding="utf-8")
    reasons = {r for s in Pruner(rules=[rule_file]).prune(text, ratio="1/4").kept for r in s.reasons}
    assert "mine.climate" in reasons and "mine.weather" not in reasons


def test_ask_parses_each_rules_file_once(tmp_path, monkeypatch):
    """ask checks the rule files before any request and builds its Pruner from that same parse."""
    from catp.backends.ask import ask

    class Stop(Exception):
        pass

    class Backend:  # no tokenizer here; the first request after the Pruner is built stops the ask
        def tokenizer_path(self):
            return None

        def __getattr__(self, name):
            raise Stop(name)

    rule_file = tmp_path / "mine.yaml"
    rule_file.write_text(USER_RULES, encoding="utf-8")
    count = count_parses(monkeypatch, rule_file)
    with pytest.raises(Stop):
        ask("The weather was fine.", "How was the weather?", backend=Backend(), rules=rule_file)
    assert count[0] == 1


def test_prune_uses_a_rule_file_edited_on_disk(tmp_path):
    """catp.prune() caches its Pruner; the cache key holds each rule file's identity on disk (path, mtime, size),
    so an edit counts from the next call (a notebook, a server), where it used to keep the first version."""
    import os

    from catp import prune

    rule_file = tmp_path / "mine.yaml"
    rule_file.write_text(USER_RULES, encoding="utf-8")
    text = "The weather was fine. " + (ROOT / "examples" / "contract_en.txt").read_text(encoding="utf-8")

    def reasons():
        return {r for s in prune(text, ratio="1/4", rules=str(rule_file)).kept for r in s.reasons}

    assert "mine.weather" in reasons()
    before = rule_file.stat()
    rule_file.write_text(USER_RULES.replace("mine.weather", "mine.climate"), encoding="utf-8")  # the same size
    os.utime(rule_file, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000_000))
    assert rule_file.stat().st_size == before.st_size
    after = reasons()
    assert "mine.climate" in after and "mine.weather" not in after
    assert "mine.climate" in reasons()  # unchanged since: the cached Pruner, same answer


def test_prune_with_a_missing_rule_file_gives_the_same_error(tmp_path):
    from catp import prune

    missing = tmp_path / "nothere.yaml"
    with pytest.raises(RuleError, match="no such rule file") as err:
        prune("The weather was fine.", ratio="1/2", rules=str(missing))
    assert err.value.path == str(missing)


def test_prune_takes_loaded_rule_files(tmp_path):
    """rules= may hold files already loaded (load_file), as Pruner's does; prune() used to turn them into strings."""
    from catp import prune

    rule_file = tmp_path / "mine.yaml"
    rule_file.write_text(USER_RULES, encoding="utf-8")
    text = "The weather was fine. " + (ROOT / "examples" / "contract_en.txt").read_text(encoding="utf-8")
    result = prune(text, ratio="1/4", rules=[load_file(rule_file)])
    assert "mine.weather" in {r for s in result.kept for r in s.reasons}


class _StubPruner:
    """Stands in for Pruner in the tests of prune()'s cache: counts constructions, prunes nothing."""

    built: list = []

    def __init__(self, domain=None, rules=(), tokenizer=None, scorer=None):
        import time

        time.sleep(0.05)  # long enough for concurrent first calls to overlap
        self.tokenizer = tokenizer
        _StubPruner.built.append(tokenizer)

    def prune(self, text, **kwargs):
        return self


def test_prune_keeps_a_bounded_number_of_pruners(monkeypatch):
    from catp import pipeline

    monkeypatch.setattr(pipeline, "Pruner", _StubPruner)
    monkeypatch.setattr(_StubPruner, "built", [])
    pipeline.clear_prune_cache()
    try:
        for n in range(20):
            assert pipeline.prune("text", tokenizer=f"t{n}", ratio="1/2").tokenizer == f"t{n}"
        assert pipeline.prune_cache_size() == 8  # the last 8
        pipeline.prune("text", tokenizer="t19", ratio="1/2")  # the newest: still cached
        assert len(_StubPruner.built) == 20
        pipeline.prune("text", tokenizer="t0", ratio="1/2")  # the oldest went: built again
        assert len(_StubPruner.built) == 21
        for domain in ("legal", "finance", "medical", None):  # one Pruner serves every domain
            pipeline.prune("text", tokenizer="t0", domain=domain, ratio="1/2")
        assert len(_StubPruner.built) == 21
    finally:
        pipeline.clear_prune_cache()


def test_concurrent_first_prune_calls_build_one_pruner(monkeypatch):
    """Threads calling prune() with the same arguments share one Pruner; a server's first requests do not each
    load the rules, tokenizer and scorer (an LM scorer: a model each)."""
    from concurrent.futures import ThreadPoolExecutor

    from catp import pipeline

    monkeypatch.setattr(pipeline, "Pruner", _StubPruner)
    monkeypatch.setattr(_StubPruner, "built", [])
    pipeline.clear_prune_cache()
    try:
        with ThreadPoolExecutor(4) as pool:
            results = list(pool.map(lambda _: pipeline.prune("text", domain="legal", ratio="1/2"), range(8)))
        assert len(_StubPruner.built) == 1 and len({id(r) for r in results}) == 1
    finally:
        pipeline.clear_prune_cache()


def two_domain_jsonl(path: Path) -> Path:
    """A JSONL input of a contract and a financial report (--domain auto: legal, then finance)."""
    with open(path, "w", encoding="utf-8") as fh:
        for name in ("contract_en", "report_en"):
            text = "The weather was fine. " + (ROOT / "examples" / f"{name}.txt").read_text(encoding="utf-8")
            fh.write(json.dumps({"id": name, "text": text}) + "\n")
    return path


def test_catp_batch_parses_each_rules_file_once(tmp_path, monkeypatch, capsys):
    """The settings check's parse is the one the worker's Pruners get (--jobs 1: this process); before, the
    worker's Pruner parsed the file again (and one more Pruner per domain a row names)."""
    from catp.cli import main

    rule_file = tmp_path / "mine.yaml"
    rule_file.write_text(USER_RULES, encoding="utf-8")
    count = count_parses(monkeypatch, rule_file)
    assert main(["batch", str(two_domain_jsonl(tmp_path / "in.jsonl")), "--rules", str(rule_file),
                 "--ratio", "1/4", "--quiet"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["stats"]["domain"] for r in rows] == ["legal", "finance"]
    assert all("mine.weather" in {x for s in r["kept"] for x in s["reasons"]} for r in rows)
    assert count[0] == 1


def test_run_batch_parses_each_rules_file_once_before_writing(tmp_path, monkeypatch):
    from catp.batch import BatchOptions, run_batch

    rule_file = tmp_path / "mine.yaml"
    rule_file.write_text(USER_RULES, encoding="utf-8")
    count = count_parses(monkeypatch, rule_file)
    summary = run_batch([two_domain_jsonl(tmp_path / "in.jsonl")], tmp_path / "out.jsonl",
                        BatchOptions(ratio="1/4", rules=[str(rule_file)]), progress=False)
    assert (summary.rows, summary.errors, count[0]) == (2, 0, 1)
    # a bad rule file is one error, before the output is opened (it used to become an error row per document)
    out = tmp_path / "kept.jsonl"
    out.write_text("earlier rows\n", encoding="utf-8")
    with pytest.raises(RuleError, match="no such rule file"):
        run_batch([two_domain_jsonl(tmp_path / "in.jsonl")], out,
                  BatchOptions(ratio="1/4", rules=[str(tmp_path / "missing.yaml")]), progress=False)
    assert out.read_text(encoding="utf-8") == "earlier rows\n"


def test_a_loaded_rule_file_pickles():
    """What the process pool's and Ray's workers are handed: equal after a round trip, and a Pruner built on it."""
    import pickle

    from catp.pipeline import Pruner

    loaded = load_text(USER_RULES, "mine.yaml")
    back = pickle.loads(pickle.dumps(loaded))
    assert back == loaded and back.path == "mine.yaml" and back.lines == loaded.lines
    result = Pruner(domain="legal", rules=[back]).prune("The weather was fine. The fee is $5.", ratio="1/2")
    assert "mine.weather" in {r for s in result.kept for r in s.reasons}


def test_batch_process_pool_workers_parse_no_rules_file(tmp_path, monkeypatch):
    """With --jobs 2 the parent parses the file once and the spawned workers get it loaded (counted in the workers
    by a setup hook); before, each worker parsed it again for each domain."""
    from catp.batch import BatchOptions, run_batch

    rule_file = tmp_path / "mine.yaml"
    rule_file.write_text(USER_RULES, encoding="utf-8")
    log = tmp_path / "parses.log"
    monkeypatch.setenv("CATP_TEST_PARSE_MARK", "mine.weather")
    monkeypatch.setenv("CATP_TEST_PARSE_LOG", str(log))
    count = count_parses(monkeypatch, rule_file)
    out = tmp_path / "out.jsonl"
    options = BatchOptions(ratio="1/4", rules=[str(rule_file)], setup="_batch_plugin:count_rule_parses")
    summary = run_batch([two_domain_jsonl(tmp_path / "in.jsonl")], out, options, jobs=2, progress=False)
    assert (summary.rows, summary.errors) == (2, 0)
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert all("mine.weather" in {x for s in r["kept"] for x in s["reasons"]} for r in rows)
    assert (log.read_text(encoding="utf-8").split() if log.exists() else []) == []  # in the workers: none
    assert count[0] == 1  # in this process


def test_a_batch_worker_parses_each_rules_file_once_for_all_domains(tmp_path, monkeypatch):
    """A Worker used without run_batch (prune_rows, a Ray actor built by hand) given paths: one parse for the
    Pruners of every domain its rows name (before: one per domain)."""
    from catp.batch import BatchOptions, Item, Worker

    rule_file = tmp_path / "mine.yaml"
    rule_file.write_text(USER_RULES, encoding="utf-8")
    count = count_parses(monkeypatch, rule_file)
    worker = Worker(BatchOptions(ratio="1/2", rules=[str(rule_file)]))
    for n, domain in enumerate(("legal", "finance", "medical")):
        row = worker.prune(Item(n, n, text="The weather was fine. The fee is $5.", overrides={"domain": domain}))
        assert row["error"] is None and row["stats"]["domain"] == domain
    assert count[0] == 1


def test_a_rule_path_with_a_nul_is_a_rule_error():
    """os and pathlib refuse a path holding NUL with a bare ValueError; the user gets a RuleError naming it."""
    from catp import prune
    from catp.rules.loader import load_file

    with pytest.raises(RuleError, match="cannot read rule file"):
        load_file("a\x00b.yaml")
    with pytest.raises(RuleError, match="cannot read rule file"):
        prune("The Licensee shall pay USD 5,000.", rules="a\x00b.yaml", budget=5)
