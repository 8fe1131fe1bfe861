"""The layers, as the imports say them: memory → chat, never back; ikario_rag on its own.

Every `import` statement counts, at module level and inside functions (a lazy import that
dodges a cycle is still a dependency). The walk reads the source (AST), so it sees what a
reader sees, whether or not the code path runs.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("chat", "memory", "ikario_rag")
# What the web app may read of the memory server: the contract's vocabulary and limits, the
# private-span and secret rules and what the server keeps of a text (one definition each of
# what is never stored; pure modules), and the client helpers.
MEMORY_MAY_IMPORT = (
    "ikario_rag.contract",
    "ikario_rag.private",
    "ikario_rag.secrets",
    "ikario_rag.text",
    "ikario_rag.client",
)
# What chat may read of it: the one rule of what a private span is (a pure module).
CHAT_MAY_IMPORT = ("ikario_rag.private",)
# ikario_rag is a standalone MCP server: nothing of the web app's.
IKARIO_RAG_MUST_NOT_IMPORT = ("django", "channels", "chat", "memory", "ikario_clone")
KNOWN_CYCLES: set[frozenset[str]] = set()


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(name: str, known: set[str]) -> str:
    """The longest known module that `name` names or lies in (`a.b.c` -> `a.b` if `c` is a
    function of `a/b.py`)."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name


def imports_of(root: Path = ROOT, packages=PACKAGES) -> dict[str, set[str]]:
    """{module: every module it imports (dotted names, outside ones included)}."""
    files = [p for package in packages for p in sorted((root / package).rglob("*.py"))]
    known = {_module_name(p, root) for p in files}
    graph: dict[str, set[str]] = {}
    for path in files:
        module = _module_name(path, root)
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                for alias in node.names:
                    # `from memory import services` imports memory/services.py.
                    targets.add(_resolve(f"{base}.{alias.name}", known) or base)
        graph[module] = {_resolve(t, known) or t for t in targets if t != module}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """Groups of modules that import each other, directly or around a loop (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[frozenset[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in graph.get(module, ()):
            if target not in graph:
                continue
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                found.append(frozenset(group))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def _within(name: str, prefixes) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _against_the_direction(module: str, target: str) -> bool:
    if _within(module, ["chat"]):
        return _within(target, ["memory"]) or (
            _within(target, ["ikario_rag"]) and not _within(target, CHAT_MAY_IMPORT)
        )
    if _within(module, ["ikario_rag"]):
        return _within(target, IKARIO_RAG_MUST_NOT_IMPORT)
    if _within(module, ["memory"]):
        return _within(target, ["ikario_rag"]) and not _within(target, MEMORY_MAY_IMPORT)
    return False


def forbidden_imports(graph: dict[str, set[str]]) -> list[str]:
    """`a -> b` for each import against the one direction."""
    return [
        f"{module} -> {target}"
        for module, targets in sorted(graph.items())
        for target in sorted(targets)
        if _against_the_direction(module, target)
    ]


def test_it_finds_no_import_cycle():
    assert set(cycles(imports_of())) - KNOWN_CYCLES == set()


def test_it_finds_no_import_against_the_one_direction():
    assert forbidden_imports(imports_of()) == []


def test_it_sees_lazy_imports_cycles_and_wrong_directions(tmp_path):
    """The checker itself: a tree with today's faults in it is caught."""
    files = {
        "chat/__init__.py": "",
        "chat/turn.py": "def run():\n    from memory import seam\n",
        "memory/__init__.py": "",
        "memory/seam.py": "from memory.tools import make\n",
        "memory/tools.py": "def make():\n    from .seam import x\n",
        "memory/client.py": "import ikario_rag.server\nfrom ikario_rag.contract import X\n",
        "ikario_rag/__init__.py": "",
        "ikario_rag/contract.py": "",
        "ikario_rag/server.py": "from django.conf import settings\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)

    graph = imports_of(tmp_path)

    assert cycles(graph) == [frozenset({"memory.seam", "memory.tools"})]
    assert forbidden_imports(graph) == [
        "chat.turn -> memory.seam",
        "ikario_rag.server -> django.conf",
        "memory.client -> ikario_rag.server",
    ]


def test_it_keeps_memory_out_of_the_chat_templates():
    """The chat pages show memory widgets through their slots, never by naming them."""
    for template in (ROOT / "templates" / "chat").rglob("*.html"):
        text = template.read_text()
        assert "memory/" not in text and "'memory" not in text, template


def test_it_keeps_scripts_and_styles_out_of_the_templates():
    """A Content-Security-Policy of 'self' must hold: no inline script, style or handler."""
    inline = re.compile(r"<script(?![^>]*\bsrc=)[^>]*>|<style\b|\sstyle=|\son[a-z]+=", re.I)
    for template in (ROOT / "templates").rglob("*.html"):
        found = inline.findall(template.read_text())
        assert found == [], f"{template.relative_to(ROOT)}: {found}"
