"""The package's layout rules (issue 21, move 5): no import cycles in catp/, and no test reaches a private member of a
catp module. Both read the source only (grimp and ast): fast, no network."""

from __future__ import annotations

import ast
from pathlib import Path

import grimp

import catp

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "catp"
TESTS = ROOT / "tests"


# ---------------------------------------------------------------------------------------------------------------------
# No import cycles
#
# grimp puts every import statement into the graph, the ones inside functions too, so an import moved into a function
# only to dodge a cycle still counts as one. Imports under `if TYPE_CHECKING:` are left out: they never run. Lazy
# imports of optional or heavy third-party packages (torch, transformers, ray, pyarrow, spacy, pypdf, docx, ...) are
# outside catp, so they can never close a cycle and need no list here.

def _import_graph() -> grimp.ImportGraph:
    assert Path(catp.__file__).resolve().parent == PACKAGE, "run from the repository root (python -m pytest)"
    return grimp.build_graph("catp", exclude_type_checking_imports=True, cache_dir=None)


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, targets = work[-1]
            for target in targets:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph.find_modules_directly_imported_by(target)))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def _describe(graph: grimp.ImportGraph, component: list[str]) -> str:
    lines = [" <-> ".join(component)]
    for importer in component:
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            if imported in component:
                for detail in graph.get_import_details(importer=importer, imported=imported):
                    lines.append(f"    {importer}:{detail['line_number']}: {detail['line_contents']}")
    return "\n".join(lines)


def _function_level_catp_imports() -> set[tuple[str, tuple[str, ...]]]:
    """(importer, the modules it may name) for every import of catp written inside a function of a catp module:
    `from catp import tokens` names catp.tokens, or catp when `tokens` is not a module."""
    found = set()
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        package = module if parts[-1] == "__init__" else module.rpartition(".")[0]
        for function in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(function):
                if isinstance(node, ast.Import):
                    found |= {(module, (a.name,)) for a in node.names if a.name.split(".")[0] == "catp"}
                elif isinstance(node, ast.ImportFrom):
                    base = node.module or ""
                    if node.level:
                        base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + [base]).strip(".")
                    if base.split(".")[0] == "catp":
                        found |= {(module, (f"{base}.{a.name}", base)) for a in node.names}
    return found


def test_the_cycle_check_sees_imports_written_inside_functions():
    graph = _import_graph()
    lazy = _function_level_catp_imports()
    assert lazy, "catp has no function-level imports of its own modules: this check has nothing to look at"
    missing = {(importer, names[-1]) for importer, names in lazy
               if not any(graph.direct_import_exists(importer=importer, imported=name)
                          for name in names if name in graph.modules and name != importer)}
    assert not missing, f"grimp does not see these function-level imports: {sorted(missing)}"


def test_no_import_cycles_in_catp():
    graph = _import_graph()
    cycles = _cycles(graph)
    assert not cycles, f"{len(cycles)} import cycle(s) in catp/ (function-level imports count):\n" + "\n".join(
        _describe(graph, c) for c in cycles)


# ---------------------------------------------------------------------------------------------------------------------
# No test reaches a private member of a catp module
#
# Flagged: `from catp.x import _name`; importing a private module (`catp.scoring._fastlm`, `from catp.scoring import
# _fastlm`); `thing._name`, and `setattr/getattr/monkeypatch.setattr(thing, "_name")`, where `_name` is a private name
# that catp defines. `self._x` and `cls._x` are a test's own objects, and a private name catp never defines (a test
# helper's, the standard library's) is not flagged. Dunder names are public protocol.

def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _defined_private_names(paths) -> set[str]:
    names = set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                    names.add(node.attr)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
    return {n for n in names if _private(n)}


CATP_PRIVATE_NAMES = _defined_private_names(PACKAGE.rglob("*.py")) | {
    p.stem for p in PACKAGE.rglob("_*.py") if _private(p.stem)} | {
    p.name for p in PACKAGE.rglob("_*") if p.is_dir() and _private(p.name)}
ATTRIBUTE_FUNCTIONS = {"getattr", "setattr", "delattr", "hasattr", "setitem"}


def _private_uses(path: Path, root: Path = ROOT, catp_private: set[str] = CATP_PRIVATE_NAMES) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    where = path.relative_to(root)
    hits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "catp" and not node.level:
            if any(_private(part) for part in node.module.split(".")):
                hits.append(f"{where}:{node.lineno}: imports from the private module {node.module}")
            hits += [f"{where}:{node.lineno}: from {node.module} import {a.name}" for a in node.names if _private(a.name)]
        elif isinstance(node, ast.Import):
            hits += [f"{where}:{node.lineno}: import {a.name}" for a in node.names
                     if a.name.split(".")[0] == "catp" and any(_private(p) for p in a.name.split("."))]
        elif isinstance(node, ast.Attribute) and _private(node.attr) and node.attr in catp_private:
            receiver = node.value
            if not (isinstance(receiver, ast.Name) and receiver.id in ("self", "cls")):
                hits.append(f"{where}:{node.lineno}: {ast.unparse(node)[:80]}")
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in ATTRIBUTE_FUNCTIONS:
                for arg in node.args[:2]:
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                        last = arg.value.rsplit(".", 1)[-1]
                        dotted_catp = arg.value.startswith("catp.")
                        if _private(last) and (last in catp_private or dotted_catp):
                            hits.append(f"{where}:{node.lineno}: {name}(..., {arg.value!r})")
    return hits


def private_uses_in_tests() -> list[str]:
    return [hit for path in sorted(TESTS.rglob("*.py")) for hit in _private_uses(path)]


def test_the_private_member_scan_finds_each_kind_of_use(tmp_path):
    sample = tmp_path / "test_sample.py"
    sample.write_text("from catp.tokens import _nope\nfrom catp.scoring._fastlm import x\nimport catp.scoring._logprobs\n"
                      "from catp import tokens\ntokens._hidden\nmonkeypatch.setattr(tokens, '_hidden', 1)\n"
                      "class T:\n    def f(self):\n        self._hidden = 1\n        return self._hidden, os._exit\n")
    hits = _private_uses(sample, root=tmp_path, catp_private={"_hidden"})
    assert [h.split(": ", 1)[1] for h in hits] == [
        "from catp.tokens import _nope", "imports from the private module catp.scoring._fastlm",
        "import catp.scoring._logprobs", "tokens._hidden", "setattr(..., '_hidden')"], hits


def test_no_test_reaches_a_private_member_of_a_catp_module():
    hits = private_uses_in_tests()
    assert not hits, f"{len(hits)} use(s) of catp private members in tests/:\n" + "\n".join(hits)
