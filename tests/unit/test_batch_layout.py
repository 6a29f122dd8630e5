"""catp/batch/ is a package of modules with one job each (catp/batch/__init__.py lists them): no import cycle
among them, no import of catp inside a function (the way a cycle used to be dodged), no private name used
across modules; the names users import from `catp.batch` are there."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "catp" / "batch"


def imports(path: Path):
    """(module imported, names imported, at module level?) for each import of `path`."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top = {id(node) for node in tree.body}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [a.name for a in node.names]
            if node.module == "catp.batch" and all((PACKAGE / f"{n}.py").exists() for n in names):
                for name in names:  # `from catp.batch import ray`: the submodule
                    yield f"catp.batch.{name}", [], id(node) in top
            else:
                yield node.module, names, id(node) in top
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, [], id(node) in top


def test_no_cycle_no_function_level_catp_import_no_private_name_across_modules():
    graph: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.glob("*.py")):
        name = "catp.batch" if path.stem == "__init__" else f"catp.batch.{path.stem}"
        graph[name] = set()
        for module, names, at_top in imports(path):
            if module.startswith("catp"):
                assert at_top, f"{path.name}: imports {module} inside a function"
                assert not [n for n in names if n.startswith("_")], f"{path.name}: private {names} of {module}"
            if module.startswith("catp.batch.") and name != "catp.batch":
                graph[name].add(module)
    assert len(graph) >= 9, sorted(graph)
    order: list[str] = []  # a topological order exists only without a cycle
    while len(order) < len(graph):
        ready = [m for m in graph if m not in order and graph[m] <= set(order) | {"catp.batch"}]
        assert ready, f"an import cycle among {sorted(set(graph) - set(order))}"
        order.extend(sorted(ready))


def test_the_public_names_are_importable_from_the_package():
    import catp.batch as batch

    for name in batch.__all__:
        assert getattr(batch, name) is not None, name
    assert batch.Worker.__module__ == "catp.batch.worker" and batch.run_batch.__module__ == "catp.batch.run"
