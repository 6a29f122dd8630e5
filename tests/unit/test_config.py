"""catp.config.DEFAULTS is every pruning default, written once: the commands' options, BatchOptions, the gateway's
settings, the integrations and the Pruner take theirs from it, so they agree."""

from __future__ import annotations

import dataclasses
import inspect
import tokenize
from pathlib import Path

import pytest
from typer.models import OptionInfo

from catp.config import DEFAULTS, PruneSettings

ROOT = Path(__file__).resolve().parents[2]

# a command's parameter name -> the PruneSettings field it takes its default from
CLI_NAMES = {"cue_window": "cue_window_tokens"}


def option_defaults(command, only: set | None = None) -> dict:
    """A Typer command's option defaults, by the PruneSettings field they stand for."""
    out = {}
    for name, param in inspect.signature(command).parameters.items():
        field = CLI_NAMES.get(name, name)
        if field in PruneSettings.model_fields and isinstance(param.default, OptionInfo) and field in (only or {field}):
            out[field] = param.default.default
    return out


def agree(defaults: dict, expected: int) -> None:
    assert len(defaults) == expected, sorted(defaults)
    for field, value in defaults.items():
        want = getattr(DEFAULTS, field)
        if field == "rules":  # a list here, a tuple there: both empty
            value, want = list(value or ()), list(want)
        assert value == want, (field, value, want)


def test_the_config_holds_the_values_catp_always_had():
    """The values themselves: moving them here changed none (outputs stay byte-identical)."""
    assert DEFAULTS.gap_marker == " … " and DEFAULTS.domain == "auto" and DEFAULTS.scorer == "lexical"
    assert DEFAULTS.max_bytes == 200 * 1024 * 1024 and DEFAULTS.max_tokens == 512 and DEFAULTS.concurrency == 1
    assert DEFAULTS.regex_timeout == 2.0 and DEFAULTS.question_share == 0.8
    with pytest.raises(Exception):
        DEFAULTS.gap_marker = "|"  # frozen: one process-wide set of defaults


def test_the_commands_options_default_to_the_config():
    from catp.commands.ask import ask_command
    from catp.commands.batch import batch_command
    from catp.commands.budget import budget_command
    from catp.commands.decode import decode_command
    from catp.commands.prune import prune_command
    from catp.commands.serve import serve_command

    pruning = {"domain", "budget", "ratio", "question", "rules", "tokenizer", "gap_marker", "cue_window_tokens",
               "encoding", "max_bytes", "scorer"}
    for command in (prune_command, batch_command):
        defaults = option_defaults(command)
        assert set(defaults) == pruning, (command.__name__, sorted(defaults))
        agree(defaults, len(pruning))
    agree(option_defaults(serve_command), 5)  # domain, rules, tokenizer, concurrency, max_tokens
    agree(option_defaults(ask_command), 7)  # domain, budget, rules, tokenizer, encoding, concurrency, max_tokens
    # (its --question is the question's text counted in the prompt, "" for none: not a pruning setting)
    agree(option_defaults(budget_command, {"concurrency", "max_tokens"}), 2)
    agree(option_defaults(decode_command), 2)  # encoding, max_bytes


def test_batch_options_and_the_gateway_default_to_the_config():
    from catp.batch import BatchOptions
    from catp.decode import DEFAULT_MAX_BYTES
    from catp.serve.app import ServeSettings

    options = dataclasses.asdict(BatchOptions())
    options["scorer_options"] = options["scorer_options"] or None  # {}: the Pruner is given None
    agree({k: v for k, v in options.items() if k in PruneSettings.model_fields}, 12)
    serve = {f.name: (f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default)
             for f in dataclasses.fields(ServeSettings)}
    agree({k: serve[k] for k in ("rules", "tokenizer", "concurrency", "max_tokens")}, 4)
    assert serve["domain"] is None  # None is the gateway's "auto": its command maps one to the other
    assert DEFAULT_MAX_BYTES == DEFAULTS.max_bytes


def test_the_integrations_default_to_the_config():
    from catp.integrations.core import DocumentsPruner, PrunerSettings
    from catp.integrations.haystack import CatpDocumentPruner

    fields = {"domain", "rules", "tokenizer", "scorer", "max_tokens", "concurrency"}
    agree({k: v.default for k, v in PrunerSettings.model_fields.items() if k in fields}, 6)
    for component in (DocumentsPruner, CatpDocumentPruner):
        params = inspect.signature(component.__init__).parameters  # Haystack's @component wraps the class
        agree({k: params[k].default for k in fields - {"rules"}}, 5)
    assert list(inspect.signature(DocumentsPruner).parameters["rules"].default) == []


def test_the_pruner_defaults_come_from_the_config():
    """Pruner.__init__'s defaults are DEFAULTS' own objects, and the gap marker is written in catp/config.py only."""
    from catp.pipeline import Pruner

    params = inspect.signature(Pruner).parameters
    for name in ("domain", "rules", "tokenizer", "scorer", "gap_marker", "cue_window_tokens", "regex_timeout",
                 "question_share", "scorer_options"):
        assert params[name].default == getattr(DEFAULTS, name), name
    for name in ("gap_marker", "regex_timeout", "question_share"):  # equal values written twice are two objects
        assert params[name].default is getattr(DEFAULTS, name), name
    written = [str(p.relative_to(ROOT)) for p in sorted((ROOT / "catp").rglob("*.py")) if writes_gap_marker(p)]
    assert written == ["catp/config.py"], written


def writes_gap_marker(path: Path) -> bool:
    """Whether a string literal in `path` is the default gap marker itself (a docstring quoting it is not)."""
    with open(path, "rb") as fh:
        return any(tok.type == tokenize.STRING and tok.string.strip("'\"") == DEFAULTS.gap_marker
                   for tok in tokenize.tokenize(fh.readline))
