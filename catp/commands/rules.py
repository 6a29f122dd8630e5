"""`catp rules lint|test|explain|policy|schema`: work on rule files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

rules_app = typer.Typer(help="Check, test and explain rule sets.", no_args_is_help=True)


def _load(paths: list[Path], domain: Optional[str]):
    """The files given (their ids checked against the built-in sets they are used with), else the built-in sets:
    common and `domain`, or all of them."""
    from catp.rules.catalog import CATALOG
    from catp.rules.loader import load_file

    if paths:
        loaded = [load_file(p) for p in paths]
        CATALOG.check_user_files(loaded)
        return loaded
    return CATALOG.builtins(["common", domain] if domain else None)


def _compile(loaded) -> None:
    """Compile every pattern, as prune does: a bad regex names its file, line and rule id."""
    from catp.rules.registry import RuleRegistry

    for item in loaded:
        RuleRegistry([item])


@rules_app.command("lint")
def lint_command(paths: list[Path] = typer.Argument(None, help="Rule files (default: the built-in ones)."),
                 strict: bool = typer.Option(False, help="Exit 1 on warnings too.")) -> None:
    """Validate rule files: schema, regexes, duplicate ids; warn on likely mistakes."""
    from catp.rules.check import lint, tuned_fields_changed

    loaded = _load(paths or [], None)
    _compile(loaded)
    problems = lint(loaded) + (tuned_fields_changed(loaded) if paths else [])
    for p in problems:
        typer.echo(f"warning: {p}", err=True)
    n = sum(len(i.ruleset.rules) for i in loaded)
    typer.echo(f"{n} rules in {len(loaded)} files: OK" + (f", {len(problems)} warnings" if problems else ""))
    if strict and problems:
        raise typer.Exit(1)


@rules_app.command("test")
def test_command(paths: list[Path] = typer.Argument(None, help="Rule files (default: the built-in ones)."),
                 tokenizer: Optional[str] = typer.Option(None, help="Tokenizer for cue windows.")) -> None:
    """Run every rule's `examples`: each `match` text must match, each `no_match` text must not."""
    from rich.console import Console
    from rich.progress import track

    from catp.rules.check import run_examples
    from catp.tokens import load_token_counter

    loaded = _load(paths or [], None)
    _compile(loaded)
    tokens = load_token_counter(tokenizer)
    failures_all, checked_all = [], 0
    progress = Console(stderr=True)  # on stderr, and only on a terminal: stdout holds the result alone
    for item in track(loaded, description="testing rule sets", transient=True, console=progress,
                      disable=not progress.is_terminal):
        checked, failures = run_examples([item], tokens)
        checked_all += checked
        failures_all += failures
    for f in failures_all:
        typer.echo(f"FAIL {f}", err=True)
    typer.echo(f"{checked_all - len(failures_all)} passed, {len(failures_all)} failed")
    if failures_all:
        raise typer.Exit(1)


@rules_app.command("list")
def list_command(paths: list[Path] = typer.Option([], "--rules", help="Extra rule files."),
                 domain: Optional[str] = typer.Option(None, "--domain", help="Only common and this built-in domain.")) -> None:
    """List the rules: id, kind, category, priority, action and the file (with its line) that defines each."""
    from rich.console import Console
    from rich.table import Table

    loaded = _load([], domain) + (_load(paths, None) if paths else [])
    table = Table("id", "kind", "category", "priority", "action", "file", box=None, pad_edge=False)
    for item in loaded:
        for rule in item.ruleset.rules:
            table.add_row(rule.id, rule.kind, rule.category, str(rule.priority), rule.action,
                          f"{item.path}:{item.lines.get(rule.id, 0)}")
    Console(width=200, soft_wrap=True).print(table)


@rules_app.command("explain")
def explain_command(rule_id: str = typer.Argument(..., help="A rule id, e.g. date.zh"),
                    paths: list[Path] = typer.Option([], "--rules", help="Extra rule files."),
                    as_json: bool = typer.Option(False, "--json", help="The rule as JSON instead.")) -> None:
    """Show where a rule is defined and what it does: its fields, pattern and examples."""
    from catp.errors import CatpError

    loaded = _load([], None) + (_load(paths, None) if paths else [])
    _compile(loaded)
    for item in loaded:
        for rule in item.ruleset.rules:
            if rule.id == rule_id:
                where = f"{item.path}:{item.lines[rule.id]}"
                if as_json:
                    typer.echo(where)
                    typer.echo(json.dumps(rule.model_dump(), ensure_ascii=False, indent=2))
                else:
                    _print_rule(rule, where)
                return
    raise CatpError(f"no rule with id {rule_id!r}")


def _print_rule(rule, where: str) -> None:
    """One rule as a readable table: the fields it sets (defaults and empty ones left out), then its examples."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    data = rule.model_dump(exclude_defaults=True)
    examples = data.pop("examples", {}) or {}
    table = Table(box=None, show_header=False, pad_edge=False)
    table.add_column(style="bold")
    table.add_column(overflow="fold")
    table.add_row("rule", escape(rule.id))
    table.add_row("defined in", escape(where))
    for name in ("kind", "category", "priority", "action", "lang"):
        value = getattr(rule, name, None)
        table.add_row(name, escape(", ".join(value) if isinstance(value, list) else str(value)))
        data.pop(name, None)
    data.pop("id", None)
    for name, value in data.items():
        if value in (None, "", [], {}):
            continue
        if isinstance(value, list) and len(value) > 12:
            value = [*value[:12], f"... {len(value) - 12} more"]
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        table.add_row(name, escape(text))
    for name in ("match", "no_match"):
        for text in examples.get(name, []):
            table.add_row(f"example ({name.replace('_', ' ')})", escape(text))
    Console(width=120, soft_wrap=False).print(table)


@rules_app.command("policy")
def policy_command(domain: str = typer.Option(..., "--domain", help="legal, finance, medical, general, or a --rules file's name."),
                   paths: list[Path] = typer.Option([], "--rules", help="Extra rule files (they override).")) -> None:
    """Show the selection policy in force for a domain, per language, after merging the rule sets."""
    from catp.rules.catalog import CATALOG
    from catp.rules.schema import merged_policy

    loaded = CATALOG.compose(domain, [str(p) for p in paths])
    _compile(loaded)
    rulesets = [item.ruleset for item in loaded]
    policies = {lang: merged_policy(rulesets, lang).model_dump() for lang in ("en", "zh")}
    typer.echo(json.dumps(policies, indent=2))


@rules_app.command("schema")
def schema_command(output: Optional[Path] = typer.Option(None, "-o", help="Write the JSON Schema here.")) -> None:
    """Print the rule-file JSON Schema (for editor validation)."""
    from catp.rules.schema import json_schema

    text = json.dumps(json_schema(), indent=2)
    if output:
        from catp.commands.output import write_output

        write_output(output, text + "\n")
    else:
        typer.echo(text)


def register(app: typer.Typer) -> None:
    app.add_typer(rules_app, name="rules")
