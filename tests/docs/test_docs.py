"""The README's worked example is what catp prints: its input, command, output and warning are read from
README.md and run. When selection changes on purpose, update the README's "Before and after" with the new
output (and this test passes again)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def before_and_after() -> tuple[list[str], str, str, str]:
    section = (ROOT / "README.md").read_text(encoding="utf-8").split("## Before and after", 1)[1].split("\n## ", 1)[0]
    command = shlex.split(re.search(r"`(catp prune [^`]+)`", section).group(1))
    blocks = re.findall(r"```\n(.*?)\n```", section, re.S)
    warning = re.search(r"`(the budget of [^`]+)`", section).group(1)
    after_tokens, before_tokens = re.search(r"in (\d+) Qwen tokens \((\d+) before\)", section).groups()
    return command, blocks[0], blocks[1], f"catp: warning: {warning}\ncatp: {before_tokens} -> {after_tokens} tokens "


def test_the_readme_example_prints_what_the_readme_shows(tmp_path):
    command, before, after, stderr = before_and_after()
    assert command[:2] == ["catp", "prune"] and command[2] == "contract.txt"
    (tmp_path / "contract.txt").write_text(before + "\n", encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "catp", *command[1:]], capture_output=True, cwd=tmp_path,
                          timeout=300, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode("utf-8").rstrip("\n") == after
    assert stderr in proc.stderr.decode("utf-8")


# Every command line the docs show parses with the current CLI: its command exists, its options exist and
# their values are accepted (a documented `catp ask FILE` may leave out required arguments; nothing runs).
DOCS = ["README.md", "DEVELOPERS.md", "examples/README.md", "docs/architecture.md", "docs/backend.md",
        "docs/scale.md", "docs/scorer.md", "docs/reliability.md", "docs/evals.md", "docs/integrations.md",
        "docs/gateway.md", "docs/benchmarks.md"]
PREFIXES = {"catp": [], ".venv/bin/catp": [], "python -m catp": [], "python -m evals": ["eval"]}


def doc_commands(text: str) -> list[list[str]]:
    """The commands of code blocks (fenced or indented; one per line, or per `&&` part) and of inline code,
    without synopses (`[--opt]`, `a|b`, `...`, a placeholder value `N`)."""
    text = re.sub(r"\\\n\s*", " ", text)  # continued lines
    lines = [line for block in re.findall(r"```[a-z]*\n(.*?)```", text, re.S) for line in block.splitlines()]
    lines += re.findall(r"^ {4,}(\S.*)$", text, re.M)  # indented code blocks
    lines += re.findall(r"`((?:catp|python -m (?:catp|evals)) [^`]+)`", text.replace("\n", " "))
    commands = []
    for line in lines:
        for part in line.removeprefix("$ ").split("&&"):
            part = part.strip()
            prefix = next((p for p in PREFIXES if part.startswith(p + " ")), None)
            if prefix is None or re.search(r"\[|\.\.\.|\w\|\w|\(--", part.split("#")[0]):
                continue
            args = shlex.split(part[len(prefix):], comments=True)
            if not any(re.fullmatch(r"[A-Z]", arg) for arg in args):
                commands.append(PREFIXES[prefix] + args)
    return commands


def parse_command(args: list[str]) -> None:
    import typer

    from catp.cli import app

    command, name = typer.main.get_command(app), "catp"
    while hasattr(command, "get_command"):  # a group: catp, catp rules
        sub = command.get_command(command.make_context(name, args[:1], resilient_parsing=True), args[0])
        assert sub is not None, f"no command {args[0]!r} under {name}"
        command, name, args = sub, args[0], args[1:]
    try:
        command.make_context(name, list(args))
    except Exception as exc:
        if type(exc).__name__ != "MissingParameter":
            raise


def test_every_command_line_in_the_docs_parses_with_the_cli():
    checked = {}
    for doc in DOCS:
        commands = doc_commands((ROOT / doc).read_text(encoding="utf-8"))
        for args in commands:
            try:
                parse_command(args)
            except Exception as exc:
                raise AssertionError(f"{doc}: catp {shlex.join(args)}: {exc}") from None
        checked[doc] = len(commands)
    assert checked["README.md"] >= 20 and checked["docs/evals.md"] >= 5 and checked["docs/scorer.md"] >= 5, checked


def test_the_docs_command_check_catches_a_wrong_option():
    parse_command(["prune", "contract.txt", "--ratio", "1/6"])
    for bad in (["prune", "x", "--bogus"], ["prune", "x", "--format", "jsn"], ["rules", "polic"]):
        try:
            parse_command(bad)
        except Exception:
            continue
        raise AssertionError(f"accepted {bad}")


WHEEL_ONLY = {"catp/_rules"}  # where a wheel carries rules/ (DEVELOPERS.md says so)


def test_every_path_and_catp_name_in_the_docs_exists():
    import importlib

    paths, names = set(), set()
    for doc in DOCS + ["CHANGELOG.md"]:
        text = (ROOT / doc).read_text(encoding="utf-8")
        paths |= set(re.findall(r"`((?:catp|rules|evals|benchmarks|tests|fuzz|docs|examples|\.ci)/[\w/.*-]*)`", text))
        names |= set(re.findall(r"`(catp(?:\.\w+)+)`", text))
    architecture = (ROOT / "docs/architecture.md").read_text(encoding="utf-8")
    modules = set(re.findall(r"`(\w+\.py)`", architecture))  # the selection table names catp/select/'s modules
    missing = [p for p in sorted(paths - WHEEL_ONLY) if not list(ROOT.glob(p.rstrip("/")))]
    missing += [m for m in sorted(modules) if not list((ROOT / "catp").rglob(m))]
    for name in sorted(names):
        parts = name.split(".")
        obj = importlib.import_module(parts[0])
        for i, part in enumerate(parts[1:], 2):
            if not hasattr(obj, part):
                try:
                    importlib.import_module(".".join(parts[:i]))  # a submodule not imported yet
                except ImportError:
                    pass
            obj = getattr(obj, part, None)
        if obj is None:
            missing.append(name)
    assert not missing, missing
    assert len(paths) >= 30 and len(names) >= 5 and len(modules) >= 7, (len(paths), len(names), len(modules))


def test_ci_runs_exactly_the_readmes_test_command():
    readme = (ROOT / "README.md").read_text(encoding="utf-8").split("run the whole suite", 1)[1]
    command = re.search(r"```bash\n(.+?)\n```", readme, re.S).group(1)
    assert "pytest" in command and command in (ROOT / ".ci/run").read_text(encoding="utf-8").splitlines()


def test_every_extra_the_docs_name_is_in_pyproject():
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    named = {name for doc in DOCS + ["CHANGELOG.md"]
             for name in re.findall(r"catp\[(\w+)\]", (ROOT / doc).read_text(encoding="utf-8"))}
    assert len(named) >= 5 and not named - set(extras), named - set(extras)


def test_every_option_of_a_synopsis_in_the_docs_exists():
    """Synopses (`catp prune FILE|- [--domain ...]`) do not parse; each of their options must still exist."""
    import typer

    from catp.cli import app

    checked = 0
    for doc in DOCS:
        text = re.sub(r"\\\n\s*", " ", (ROOT / doc).read_text(encoding="utf-8"))
        lines = []
        for line in (line for block in re.findall(r"```[a-z]*\n(.*?)```", text, re.S) for line in block.splitlines()):
            if line[:1].isspace() and lines and lines[-1].startswith("catp "):  # a synopsis's next line
                lines[-1] += " " + line.strip()
            else:
                lines.append(line.strip().removeprefix("$ "))
        for line in lines:
            words = line.split("#")[0].split()
            path = words[1:3] if words[1:2] == ["rules"] else words[1:2]
            if words[:1] != ["catp"] or not path or "|" in " ".join(path):
                continue
            command, name = typer.main.get_command(app), "catp"
            for word in path:
                context = command.make_context(name, [word], resilient_parsing=True)
                command, name = command.get_command(context, word), word
                assert command is not None, f"{doc}: {line}"
            options = {opt for param in command.params for opt in (*param.opts, *param.secondary_opts)}
            for option in re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", " ".join(words)):
                assert option in options, f"{doc}: {option} is not an option of catp {' '.join(path)}"
                checked += 1
    assert checked >= 80, checked


def test_every_rule_id_the_docs_name_is_a_rule():
    import yaml

    ids = {rule["id"] for path in (ROOT / "rules").glob("*.yaml")
           for rule in yaml.safe_load(path.read_text(encoding="utf-8"))["rules"]}
    families = {rule_id.split(".")[0] for rule_id in ids}  # legal, date, cue, ...
    named = {name for doc in DOCS + ["CHANGELOG.md"]
             for name in re.findall(r"`([a-z_]+\.[a-z_.0-9]+)`", (ROOT / doc).read_text(encoding="utf-8"))
             if name.split(".")[0] in families and not name.endswith((".py", ".yaml", ".json", ".jsonl", ".md"))}
    assert len(named) >= 8 and not named - ids, named - ids


def test_the_policy_fields_in_architecture_md_are_selection_policy_fields():
    from catp.rules.schema import SelectionPolicy

    text = (ROOT / "docs/architecture.md").read_text(encoding="utf-8").split("| module | does | policy fields |", 1)[1]
    rows = [line for line in text.split("\n\n", 1)[0].splitlines() if line.startswith("| `")]
    named = {name for row in rows for name in re.findall(r"`([a-z_*]+)`", row.rstrip(" |").rsplit("|", 1)[1])}
    unknown = [name for name in named
               if not any(re.fullmatch(name.replace("*", r"\w*"), field) for field in SelectionPolicy.model_fields)]
    assert len(rows) == 8 and len(named) >= 10 and not unknown, (len(rows), named, unknown)
