"""The house's plan, checked against its imports: no circles (function-level imports counted too), `parsers/`
imports nothing of logmine's engine, and the CLI speaks to the library only through `logmine.api`."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Where each installed package's files lie in the checkout (pyproject.toml's package-dir).
FOLDERS = {"logmine": ROOT / "logmine", "logmine.parsers": ROOT / "parsers"}


def modules() -> dict[str, Path]:
    found = {}
    for package, folder in FOLDERS.items():
        for path in folder.rglob("*.py"):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([package, *parts])] = path
    return found


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The modules of the tree that `name` imports, wherever in the file the import stands."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    named = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            named.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            for alias in node.names:
                named.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base)
    return {m for m in named if m in known and m != name}


def graph() -> dict[str, set[str]]:
    found = modules()
    return {name: imports(name, path, set(found)) for name, path in found.items()}


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, result = {}, {}, [], set(), []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in edges[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                result.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return result


def test_no_import_circles():
    assert circles(graph()) == []


def test_the_circle_finder_finds_one():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_parsers_import_nothing_of_the_engine():
    leaks = {name: sorted(m for m in targets if not m.startswith("logmine.parsers"))
             for name, targets in graph().items() if name.startswith("logmine.parsers")}
    assert {name: targets for name, targets in leaks.items() if targets} == {}


def test_the_cli_talks_to_the_api():
    """The command line is a thin layer: the library's face and the terminal's rendering, nothing else (and
    `logmine mcp`'s server, another front over the library's face)."""
    allowed = ("logmine.api", "logmine.terminal", "logmine.mcp")
    assert sorted(m for m in graph()["logmine.cli"] if not m.startswith(allowed)) == []


def test_ls_logmine_reads_as_the_flow():
    """Each folder of logmine/ is a stage of the flow; at the top only the face, the command and storage."""
    entries = {p.name for p in (ROOT / "logmine").iterdir() if not p.name.startswith(("_", "."))}
    assert entries == {"inputs", "ingest", "store.py", "derive", "knowledge", "query", "report", "terminal", "fleet",
                       "lab", "mcp", "live", "api.py", "cli.py", "scripts.py"}
