"""ikario_rag's environment is read in one module, ikario_rag/config.py, which lists it."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ikario_rag import config

PACKAGE = Path(__file__).resolve().parents[2] / "ikario_rag"


def _reads_environment(path: Path) -> list[int]:
    """Lines of `path` that touch os.environ or call os.getenv."""
    names = {"environ", "getenv", "putenv"}
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute) and node.attr in names:
            found.append(node.lineno)
        if (
            isinstance(node, ast.ImportFrom)
            and node.module == "os"
            and not names.isdisjoint(a.name for a in node.names)
        ):
            found.append(node.lineno)
    return found


def test_no_other_module_reads_the_environment():
    readers = {
        f"{path.name}:{line}"
        for path in PACKAGE.glob("*.py")
        if path.name != "config.py"
        for line in _reads_environment(path)
    }
    assert not readers


def test_the_docstring_table_lists_every_variable_and_nothing_else():
    listed = re.findall(r"^\| `([A-Z_]+)` \|", config.__doc__, re.M)
    assert sorted(listed) == sorted(config.variables())
    assert len(listed) == len(set(listed))


def test_an_unset_or_empty_variable_gives_its_default():
    assert config.settings({}).port == 8765
    assert config.settings({"IKARIO_PORT": " "}).port == 8765
    assert config.settings({"IKARIO_PORT": " 9000"}).port == 9000
    assert config.settings({"IKARIO_ALLOWED_HOSTS": "a.internal, ,b"}).allowed_hosts == (
        "a.internal",
        "b",
    )
    assert config.settings({"XDG_CACHE_HOME": "/c"}).model_cache == Path("/c/ikario_rag")
    assert config.settings({"IKARIO_MODEL_CACHE": "/m"}).model_cache == Path("/m")


def test_counts_are_at_least_one():
    assert config.settings({"IKARIO_READ_SLOTS": "0"}).read_slots == 1
    assert config.settings({}).write_slots == 1


def test_the_maintenance_interval_falls_back_to_its_older_name():
    assert config.settings({}).maintenance_interval == 60.0
    assert config.settings({"IKARIO_PURGE_INTERVAL": "5"}).maintenance_interval == 5.0
    both = {"IKARIO_PURGE_INTERVAL": "5", "IKARIO_MAINTENANCE_INTERVAL": "7"}
    assert config.settings(both).maintenance_interval == 7.0


def test_a_value_that_cannot_be_read_names_its_variable():
    with pytest.raises(config.Misconfigured, match="IKARIO_READ_SLOTS='many'"):
        config.settings({"IKARIO_READ_SLOTS": "many"})
    with pytest.raises(config.Misconfigured, match="IKARIO_SESSION_IDLE='soon'"):
        config.settings({"IKARIO_SESSION_IDLE": "soon"})


def test_the_settings_read_the_process_environment(monkeypatch):
    monkeypatch.setenv("IKARIO_WRITE_SLOTS", "3")
    monkeypatch.setenv("IKARIO_VECTORS", "")
    assert config.settings().write_slots == 3
    assert config.settings().vectors == "int8"


def test_the_command_line_exits_misconfigured_on_an_unreadable_port(tmp_path):
    environment = {**os.environ, "IKARIO_PORT": "eighty", "IKARIO_INDEX_DIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "ikario_rag"],
        cwd=PACKAGE.parent,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.strip() == "ikario_rag: IKARIO_PORT='eighty' is not a valid value"
