"""The layers, as the imports say them: core at the bottom, chat above it, memory above chat
(its wings in one direction inside), ikario_rag on its own, and ikario_clone, which wires them
together, imported by none of them.

Every `import` statement counts, at module level and inside functions (a lazy import that
dodges a cycle is still a dependency). The walk reads the source (AST), so it sees what a
reader sees, whether or not the code path runs.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("core", "chat", "memory", "ikario_rag", "ikario_clone")
# What the web app may read of the memory server: the contract's vocabulary and limits, the
# private-span and secret rules and what the server keeps of a text (one definition each of
# what is never stored; pure modules), the rules of words (folding, language, stems and stop
# words) and of statements (the same fact, a correction), and the client helpers.
MEMORY_MAY_IMPORT = (
    "ikario_rag.contract",
    "ikario_rag.private",
    "ikario_rag.secrets",
    "ikario_rag.text",
    "ikario_rag.lexicon",
    "ikario_rag.facts",
    "ikario_rag.client",
)
# What chat may read of it: the one rule of what a private span is and the one folding (pure
# modules).
CHAT_MAY_IMPORT = ("ikario_rag.private", "ikario_rag.text")
# ikario_rag is a standalone MCP server: nothing of the web app's.
IKARIO_RAG_MUST_NOT_IMPORT = ("django", "channels", "core", "chat", "memory", "ikario_clone")
# The bottom app: runtime helpers every app may import; it imports no app of the project.
CORE_MUST_NOT_IMPORT = ("chat", "memory", "ikario_rag", "ikario_clone")
# memory's wings, each with the wings it may import. memory.models (the app's tables) is every
# wing's; memory's entry points (urls, routing, admin, apps, its commands, template tags and
# migrations) may import any wing, and no wing imports them.
MEMORY_WINGS = {
    "client": (),
    "learning": ("client",),
    "notes": ("client",),
    "display": ("client",),
    "api": ("client",),
    "recall": ("client", "learning", "notes"),
    "worker": ("client", "learning"),
    # Other assistants' exports: stored as past chats, then learnt from.
    "history": ("client", "learning"),
    "web": ("client", "learning", "notes", "display", "recall", "history"),
}
MEMORY_TOP_LEVEL = {"__init__", "admin", "apps", "models", "urls", "routing"}
MEMORY_FOLDERS = {*MEMORY_WINGS, "management", "migrations", "templatetags"}
# A folder is a wing with one job: past a dozen modules, it is several wings.
WING_MAX_MODULES = 12
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
                    # `from memory.client import services` imports memory/client/services.py.
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


def _wing(module: str) -> str | None:
    """`memory.web.page` -> "web"; None for memory's top level and for other packages."""
    parts = module.split(".")
    if len(parts) > 2 and parts[0] == "memory" and parts[1] in MEMORY_WINGS:
        return parts[1]
    return None


def _across_the_wings(module: str, target: str) -> bool:
    if not _within(target, ["memory"]) or target == "memory":
        return False
    wing, target_wing = _wing(module), _wing(target)
    if module == "memory.models":  # the tables: a wing's own models, nothing else
        return not (target_wing and target.endswith(".models"))
    if wing is None:  # an entry point
        return False
    if target_wing is None:
        return target != "memory.models"
    return target_wing != wing and target_wing not in MEMORY_WINGS[wing]


def _against_the_direction(module: str, target: str) -> bool:
    if _within(target, ["ikario_clone"]) and not _within(module, ["ikario_clone"]):
        return True  # the project package wires the apps: none of them imports it
    if _within(module, ["core"]):
        return _within(target, CORE_MUST_NOT_IMPORT)
    if _within(module, ["chat"]):
        return _within(target, ["memory"]) or (
            _within(target, ["ikario_rag"]) and not _within(target, CHAT_MAY_IMPORT)
        )
    if _within(module, ["ikario_rag"]):
        return _within(target, IKARIO_RAG_MUST_NOT_IMPORT)
    if _within(module, ["memory"]):
        if _within(target, ["ikario_rag"]):
            return not _within(target, MEMORY_MAY_IMPORT)
        return _across_the_wings(module, target)
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


def test_it_covers_every_package_of_the_project():
    found = {p.parent.name for p in ROOT.glob("*/__init__.py")} - {"tests", "bench"}
    assert found <= set(PACKAGES)


def test_it_keeps_every_memory_module_in_a_wing():
    """memory/ grew one module per feature once (59 in one folder): each has a wing now."""
    memory = ROOT / "memory"
    assert {p.stem for p in memory.glob("*.py")} <= MEMORY_TOP_LEVEL
    assert {p.name for p in memory.iterdir() if p.is_dir()} - {"__pycache__"} <= MEMORY_FOLDERS
    for wing in MEMORY_WINGS:
        modules = [p for p in (memory / wing).glob("*.py") if p.name != "__init__.py"]
        assert 0 < len(modules) <= WING_MAX_MODULES, (wing, len(modules))


def test_it_sees_lazy_imports_cycles_and_wrong_directions(tmp_path):
    """The checker itself: a tree with today's faults in it is caught."""
    files = {
        "core/__init__.py": "",
        "core/errors.py": "from chat.models import Conversation\n",
        "chat/__init__.py": "",
        "chat/models.py": "",
        "chat/turn.py": "def run():\n    from memory.recall import seam\n",
        "chat/consumers.py": "from ikario_clone.local_env import write\n",
        "memory/__init__.py": "",
        "memory/models.py": "from memory.notes.models import NoteFile\n",
        "memory/urls.py": "",
        "memory/client/__init__.py": "",
        "memory/client/mcp.py": "import ikario_rag.server\nfrom ikario_rag.contract import X\n",
        "memory/client/services.py": "from memory.models import MemorySettings\n"
        "from memory.recall.prompts import GUIDE\n",
        "memory/notes/__init__.py": "",
        "memory/notes/models.py": "",
        "memory/recall/__init__.py": "",
        "memory/recall/seam.py": "from memory.recall.hooks import make\n",
        "memory/recall/hooks.py": "def make():\n    from .seam import x\n",
        "memory/recall/prompts.py": "from memory.client import services\nfrom memory import urls\n",
        "memory/web/__init__.py": "",
        "memory/web/page.py": "from memory.recall import prompts\nfrom memory.client import mcp\n",
        "ikario_rag/__init__.py": "",
        "ikario_rag/contract.py": "",
        "ikario_rag/server.py": "from django.conf import settings\nfrom core import errors\n",
        "ikario_clone/__init__.py": "",
        "ikario_clone/local_env.py": "",
        "ikario_clone/asgi.py": "from memory import urls\nfrom ikario_clone import settings\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)

    graph = imports_of(tmp_path, PACKAGES)

    assert sorted(cycles(graph), key=sorted) == sorted(
        [
            frozenset({"memory.recall.seam", "memory.recall.hooks"}),
            frozenset({"memory.client.services", "memory.recall.prompts"}),
        ],
        key=sorted,
    )
    assert forbidden_imports(graph) == [
        "chat.consumers -> ikario_clone.local_env",
        "chat.turn -> memory.recall.seam",
        "core.errors -> chat.models",
        "ikario_rag.server -> core.errors",
        "ikario_rag.server -> django.conf",
        "memory.client.mcp -> ikario_rag.server",
        "memory.client.services -> memory.recall.prompts",
        "memory.recall.prompts -> memory.urls",
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
