"""ikario_rag's imports run one way: no cycle, nothing imports the script entry, no Django."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "ikario_rag"


def _imports() -> dict[str, set[str]]:
    """{module: ikario_rag modules it imports} and, under "*", every top-level name imported."""
    graph: dict[str, set[str]] = {}
    everything: set[str] = set()
    for path in PACKAGE.glob("*.py"):
        module = path.stem
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            for name in names:
                everything.add(name.split(".")[0])
                parts = name.split(".")
                inside = parts[0] == "ikario_rag" and len(parts) > 1
                if inside and (PACKAGE / f"{parts[1]}.py").exists():
                    found.add(parts[1])
        graph[module] = found - {module}
    graph["*"] = everything
    return graph


def test_it_has_no_import_cycle():
    graph = _imports()
    graph.pop("*")
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> None:
        if module in path:
            raise AssertionError("import cycle: " + " -> ".join([*path, module]))
        if module in done:
            return
        for other in sorted(graph.get(module, ())):
            visit(other, [*path, module])
        done.add(module)

    for module in sorted(graph):
        visit(module, [])


def test_it_keeps_the_script_entry_out_of_every_import():
    graph = _imports()
    graph.pop("*")
    assert not [m for m, deps in graph.items() if "server" in deps or "__main__" in deps]


def test_it_imports_nothing_from_the_web_app():
    assert not _imports()["*"] & {"django", "chat", "memory", "core", "ikario_clone"}


def test_it_takes_the_index_lock_before_importing_the_mcp_sdk(tmp_path):
    # What the command line does up to the lock: a second server must exit at once, not
    # after the SDK's seconds of imports.
    import subprocess
    import sys

    code = (
        "import sys; from pathlib import Path; from ikario_rag import cli, lock\n"
        "args = cli.parse([]); index = Path(sys.argv[1])\n"
        "held = lock.IndexLock(index).acquire()\n"
        "print(sorted(m for m in ('mcp', 'chromadb', 'onnxruntime') if m in sys.modules))\n"
        "import os; print(os.getpid())"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "index")],
        cwd=PACKAGE.parent,
        capture_output=True,
        text=True,
        check=True,
    )
    loaded, pid = out.stdout.split()
    assert loaded == "[]"
    assert (tmp_path / "index" / "server.lock").read_text().split() == [pid]
