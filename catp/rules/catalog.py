"""The rule catalog (like Presidio's recognizer registry and spaCy's registries): the one place that

- parses and validates each built-in rule set once per process (again only when its file changes on disk),
- composes a domain's rules: common, then the domain's built-in set, then the user's files, ids checked once,
- serves the detection keywords of `--domain auto`, read from each file's `detect` section alone, so that
  detecting a domain validates no rule set that is not used,
- and adds rule kinds: `register_kind(name, model, matcher)` extends the schema and the matchers together.

`CATALOG` is the process's catalog; `resolve` (below) and `catp.detect.detect_domain` are fronts over it.
"""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path
from typing import Literal, get_args, get_origin

from catp.errors import CatpError
from catp.rules import schema
from catp.rules.loader import (
    _SAFE_LOADER,
    BUILTIN_DOMAINS,
    LoadedRuleSet,
    builtin_rules_dir,
    check_unique_ids,
    load_file,
    load_rule_files,
)
from catp.rules.matchers import MATCHERS, Matcher

_KIND_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_DETECT_SECTION = re.compile(r"^detect:.*\n(?:(?:[ \t#].*)?\n)*", re.MULTILINE)  # the key and its indented lines


def _signature(path: Path) -> tuple:
    """What tells that a file changed on disk (an edited built-in file is read again)."""
    st = path.stat()
    return st.st_ino, st.st_mtime_ns, st.st_size


class RuleCatalog:
    def __init__(self, rules_dir: str | Path | None = None) -> None:
        self._rules_dir = Path(rules_dir) if rules_dir is not None else None
        self._lock = threading.RLock()
        self._builtin: dict[Path, tuple[tuple, LoadedRuleSet]] = {}
        self._keywords: dict[Path, tuple[tuple, list[str]]] = {}
        self._checked: dict[tuple, list] = {}  # built-in compositions whose ids were found unique (held, so
        # that their ids are not reused)

    # -- the built-in rule sets -------------------------------------------------------------------------------
    @property
    def rules_dir(self) -> Path:
        return self._rules_dir or builtin_rules_dir()

    def path(self, name: str) -> Path:
        return self.rules_dir / f"{name}.yaml"

    def builtin(self, name: str) -> LoadedRuleSet:
        """A built-in rule set ("common", "legal", ...), parsed and validated once while its file is unchanged."""
        path = self.path(name)
        with self._lock:
            try:
                signature = _signature(path)
            except OSError:
                return load_file(path)  # the loader's error, naming the file
            cached = self._builtin.get(path)
            if cached is None or cached[0] != signature:
                cached = self._builtin[path] = (signature, load_file(path))
            return cached[1]

    def builtins(self, names: list[str] | tuple | None = None) -> list[LoadedRuleSet]:
        """common and the built-in domains (or `names`), their ids checked against each other once."""
        loaded = [self.builtin(n) for n in (names or ("common", *BUILTIN_DOMAINS))]
        self._check_once(loaded)
        return loaded

    def is_builtin_file(self, path: str | Path) -> bool:
        """Is `path` one of the built-in files (given by its path, as in `catp rules test rules/legal.yaml`)?"""
        return any(_same_file(path, self.path(n)) for n in ("common", *BUILTIN_DOMAINS))

    # -- composition ------------------------------------------------------------------------------------------
    def compose(self, domain: str | None, user_rules=()) -> list[LoadedRuleSet]:
        """common.yaml, then the domain's built-in set, then the user's files (paths, or files already loaded,
        which are not read again); ids must be unique. A domain that is no built-in one may be the `name` of one
        of the user's files (a domain of their own: common.yaml and the user's files)."""
        builtin = domain if domain in BUILTIN_DOMAINS else None
        user = load_rule_files(user_rules)
        if domain and domain not in ("general", "auto") and builtin is None:
            names = sorted({item.ruleset.name for item in user} - {"general", "auto", *BUILTIN_DOMAINS})
            if domain not in names:
                own = f", or a --rules file's name ({', '.join(names)})" if names else ""
                raise CatpError(f"unknown domain {domain!r}; choose one of {', '.join(BUILTIN_DOMAINS)}, general "
                                f"or auto{own}")
        base = self.builtins(["common", *([builtin] if builtin else [])])
        if user:
            check_unique_ids([*base, *user])
        return [*base, *user]

    def check_user_files(self, user: list[LoadedRuleSet]) -> None:
        """The user's files against common and each built-in domain, as `--rules` loads them with any domain; a
        built-in file given by its path is that file, not a clash with itself."""
        def builtin(name: str) -> list[LoadedRuleSet]:
            return [] if any(_same_file(item.path, self.path(name)) for item in user) else [self.builtin(name)]

        common = builtin("common")
        for name in BUILTIN_DOMAINS:
            check_unique_ids([*common, *builtin(name), *user])

    def _check_once(self, loaded: list[LoadedRuleSet]) -> None:
        key = tuple(id(item) for item in loaded)
        with self._lock:
            if key not in self._checked:
                check_unique_ids(loaded)
                self._checked[key] = loaded

    # -- detection keywords -----------------------------------------------------------------------------------
    def detection_keywords(self) -> dict[str, list[str]]:
        """Each built-in domain's `detect.keywords`. Read from the file's top-level `detect` section alone (a
        few lines; the whole file is validated only when the domain is used); from the full parse when there is
        one already, or when the section is not a plain block at the top level."""
        return {name: self._keywords_of(name) for name in BUILTIN_DOMAINS}

    def _keywords_of(self, name: str) -> list[str]:
        path = self.path(name)
        with self._lock:
            try:
                signature = _signature(path)
            except OSError:
                return self.builtin(name).ruleset.detect.keywords  # raises the loader's error
            full = self._builtin.get(path)
            if full is not None and full[0] == signature:
                return full[1].ruleset.detect.keywords
            cached = self._keywords.get(path)
            if cached is None or cached[0] != signature:
                keywords = read_detect_keywords(path)
                if keywords is None:
                    keywords = self.builtin(name).ruleset.detect.keywords
                cached = self._keywords[path] = (signature, keywords)
            return cached[1]


def read_detect_keywords(path: Path) -> list[str] | None:
    """`detect.keywords` from the file's top-level `detect:` block alone, validated as the schema does; None when
    that cannot be read on its own (no such block, a flow-style file, anything odd): then load the whole file."""
    try:
        raw = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    found = list(_DETECT_SECTION.finditer(raw))
    if len(found) != 1:
        return None
    try:
        loader = _SAFE_LOADER(found[0].group())
        try:
            data = loader.get_single_data()
        finally:
            loader.dispose()
        return schema.Detection.model_validate(data["detect"]).keywords
    except Exception:  # noqa: BLE001 - the full load gives the error, with its line
        return None


def _same_file(a: str | Path, b: str | Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def register_kind(name: str, model: type[schema.RuleBase], matcher: type[Matcher]) -> None:
    """Add a rule kind: rule files may then say `kind: <name>`; `model` (a subclass of
    `catp.rules.schema.RuleBase` with `kind: Literal["<name>"]`) validates such a rule and `matcher` (a subclass of
    `catp.rules.matchers.Matcher`) finds its spans. Register before loading the files that use it."""
    if not isinstance(name, str) or not _KIND_NAME.match(name):
        raise CatpError(f"a rule kind's name is lower-case letters, digits and _, got {name!r}")
    if not (isinstance(model, type) and issubclass(model, schema.RuleBase)):
        raise CatpError(f"rule kind {name!r}: the model must subclass catp.rules.schema.RuleBase, got {model!r}")
    kind_field = model.model_fields.get("kind")
    annotation = kind_field.annotation if kind_field is not None else None
    if get_origin(annotation) is not Literal or get_args(annotation) != (name,):
        raise CatpError(f"rule kind {name!r}: the model needs the field `kind: Literal[{name!r}]`")
    if not (isinstance(matcher, type) and issubclass(matcher, Matcher)):
        raise CatpError(f"rule kind {name!r}: the matcher must subclass catp.rules.matchers.Matcher, got {matcher!r}")
    if schema.KINDS.get(name, model) is not model:
        raise CatpError(f"rule kind {name!r} is already registered with another model")
    if schema.KINDS.get(name) is not model:
        schema.add_kind(name, model)
    MATCHERS[name] = matcher


def unregister_kind(name: str) -> None:
    """Remove a kind that `register_kind` added (a plugin unloaded, a test cleaning up); rule files with it are
    refused again."""
    if name in BUILTIN_KINDS:
        raise CatpError(f"{name!r} is a built-in rule kind")
    schema.remove_kind(name)
    MATCHERS.pop(name, None)


BUILTIN_KINDS = frozenset(schema.KINDS)
CATALOG = RuleCatalog()

__all__ = ["BUILTIN_KINDS", "CATALOG", "RuleCatalog", "read_detect_keywords", "register_kind", "unregister_kind"]


def resolve(domain: str | None, extra: list | tuple = ()) -> list[LoadedRuleSet]:
    """common.yaml, then the domain's built-in set, then the user's files (`CATALOG.compose`)."""
    return CATALOG.compose(domain, extra)
