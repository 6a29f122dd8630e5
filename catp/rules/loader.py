"""Load rule files (YAML, pyyaml's safe loader only) into validated `RuleSet`s with file:line errors."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import yaml
from pydantic import ValidationError

from catp.surrogates import has_lone_surrogates
from catp.errors import RuleError
from catp.rules.schema import RuleSet, validate_ruleset

BUILTIN_DOMAINS = ("legal", "finance", "medical")


@dataclass(frozen=True)
class LoadedRuleSet:
    """A rule set plus where each rule came from (for error messages and `rules explain`)."""

    ruleset: RuleSet
    path: str
    lines: dict[str, int]  # rule id -> line number in the file


def builtin_rules_dir() -> Path:
    """The copy a wheel carries as catp/_rules (package data, mapped from rules/ by pyproject.toml); in a source
    checkout, which has none, the top-level rules/ beside the package. The packaged copy first: an installed
    catp never reads a rules/ folder that happens to lie beside site-packages."""
    packaged = Path(str(resources.files("catp") / "_rules"))
    if (packaged / "common.yaml").is_file():
        return packaged
    return Path(__file__).resolve().parents[2] / "rules"


def builtin_path(name: str) -> Path:
    return builtin_rules_dir() / f"{name}.yaml"


def load_file(path: str | Path) -> LoadedRuleSet:
    path = Path(path)
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise RuleError("no such rule file", path=str(path)) from exc
    except (OSError, UnicodeDecodeError, ValueError) as exc:  # ValueError: a NUL in the path
        raise RuleError(f"cannot read rule file: {exc}", path=str(path)) from exc
    return load_text(raw, str(path))


def load_text(raw: str, path: str = "<rules>") -> LoadedRuleSet:
    try:
        root, data = parse_yaml(raw)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        problem = exc.problem or str(exc)
        if "Unicode character escape" in problem:  # libyaml's words for a \ud800-\udfff escape, among others
            problem += " (a \\u escape must name a character; lone surrogates \\ud800-\\udfff are not one)"
        raise RuleError(f"invalid YAML: {problem}", path=path, line=line) from exc
    except yaml.reader.ReaderError as exc:  # a character YAML does not allow: the reader gives its position
        line = raw.count("\n", 0, exc.position) + 1 if isinstance(exc.position, int) else None
        code = ord(exc.character) if isinstance(exc.character, str) else exc.character  # libyaml: the code
        raise RuleError(f"invalid YAML: {exc.reason} (U+{code:04X})", path=path, line=line) from exc
    except yaml.YAMLError as exc:
        raise RuleError(f"invalid YAML: {exc}", path=path) from exc
    if not isinstance(data, dict):
        raise RuleError("a rule file must be a mapping with 'name' and 'rules'", path=path, line=1)
    bad_line = _surrogate_line(root)
    if bad_line is not None:
        raise RuleError("a string holds a lone surrogate escape (\\ud800-\\udfff): not valid Unicode",
                        path=path, line=bad_line)
    rule_lines = _rule_lines(root)
    try:
        ruleset = validate_ruleset(data)
    except ValidationError as exc:
        raise _explain(exc, data, rule_lines, path, root) from None
    lines: dict[str, int] = {}
    for index, rule in enumerate(ruleset.rules):
        line = rule_lines[index] if index < len(rule_lines) else None
        if rule.id in lines:
            raise RuleError(f"duplicate rule id (first defined on line {lines[rule.id]})", path=path,
                            line=line, rule_id=rule.id)
        lines[rule.id] = line or 0
    return LoadedRuleSet(ruleset, path, lines)


# pyyaml's safe loader on libyaml's C parser when pyyaml was built with it (2-3x faster on the big phrase
# lists); the same SafeConstructor, so the same objects as yaml.safe_load.
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def parse_yaml(raw: str):
    """The document's node tree (for line numbers) and its data, from one parse."""
    loader = _SAFE_LOADER(raw)
    try:
        root = loader.get_single_node()
        return root, (loader.construct_document(root) if root is not None else None)
    finally:
        loader.dispose()


def _surrogate_line(root) -> int | None:
    """Line of the first scalar holding a lone surrogate: YAML's "\\ud800" escapes make them, and
    nothing downstream (tokenizers, JSON output) can take them. Shared (aliased) nodes are seen once."""
    stack, seen = [root], set()
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.ScalarNode):
            if has_lone_surrogates(node.value):
                return node.start_mark.line + 1
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(reversed(node.value))
        elif isinstance(node, yaml.MappingNode):
            for key, value in reversed(node.value):
                stack.extend((value, key))
    return None


def _rule_lines(root) -> list[int]:
    """Line number of each item of the top-level `rules:` sequence."""
    if not isinstance(root, yaml.MappingNode):
        return []
    for key, value in root.value:
        if getattr(key, "value", None) == "rules" and isinstance(value, yaml.SequenceNode):
            return [item.start_mark.line + 1 for item in value.value]
    return []


def _node_line(root, loc: tuple) -> int | None:
    """Line of the deepest node along `loc` (mapping keys, sequence indexes) that the file has: the bad key
    itself for an unknown field, its parent for a missing one."""
    node, line = root, None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            found = next(((k, v) for k, v in node.value if getattr(k, "value", None) == str(part)), None)
            if found is None:
                break
            line, node = found[0].start_mark.line + 1, found[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            break
    return line


def _explain(exc: ValidationError, data: dict, rule_lines: list[int], path: str, root=None) -> RuleError:
    err = exc.errors()[0]
    loc = err["loc"]
    rule_id = line = None
    if len(loc) >= 2 and loc[0] == "rules" and isinstance(loc[1], int):
        index = loc[1]
        line = rule_lines[index] if index < len(rule_lines) else None
        item = (data.get("rules") or [None])[index] if index < len(data.get("rules") or []) else None
        if isinstance(item, dict):
            rule_id = item.get("id") or f"#{index + 1} (no id)"
        field = ".".join(str(p) for p in loc[2:] if not isinstance(p, int) or p != loc[1])
    else:
        field = ".".join(str(p) for p in loc)
        line = _node_line(root, loc)
    where = f"field '{field}': " if field else ""
    return RuleError(f"{where}{err['msg']}", path=path, line=line, rule_id=rule_id)


def rule_files(rules) -> list:
    """Rule files as a list: a single path (or loaded file) is one file, not a sequence of characters."""
    if rules is None:
        return []
    return [rules] if isinstance(rules, (str, Path, LoadedRuleSet)) else list(rules)


def load_rule_files(rules) -> list[LoadedRuleSet]:
    """The rule files loaded (parsed and validated); files already loaded stay as they are, not read again."""
    return [f if isinstance(f, LoadedRuleSet) else load_file(f) for f in rule_files(rules)]


def check_unique_ids(loaded: list[LoadedRuleSet]) -> None:
    seen: dict[str, str] = {}
    for item in loaded:
        for rule in item.ruleset.rules:
            if rule.id in seen:
                raise RuleError(f"duplicate rule id, also defined in {seen[rule.id]}", path=item.path,
                                line=item.lines.get(rule.id), rule_id=rule.id)
            seen[rule.id] = item.path
