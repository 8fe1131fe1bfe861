"""The production files in deploy/ name what exists: every program a unit starts, every
manage.py command and ikario_rag option it uses, every variable of the environment file."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
UNITS = sorted((DEPLOY / "systemd").glob("*.service"))
CHECKOUT = "/srv/ikario/"


def exec_start(unit: Path) -> list[str]:
    line = re.search(r"^ExecStart=(.+)$", unit.read_text(), flags=re.MULTILINE).group(1)
    return [word.replace("%i", "8765") for word in shlex.split(line)]


def test_there_are_units_for_the_web_app_the_worker_and_the_memory_server():
    assert {unit.name for unit in UNITS} >= {
        "ikario-web@.service",
        "ikario-worker@.service",
        "ikario-memory@.service",
    }
    for unit in UNITS:
        text = unit.read_text()
        assert "Restart=always" in text and "EnvironmentFile=/etc/ikario/ikario.env" in text


@pytest.mark.parametrize("unit", UNITS, ids=lambda unit: unit.name)
def test_each_unit_starts_a_program_of_the_checkout_that_accepts_its_arguments(unit):
    command = exec_start(unit)
    assert command[0].startswith(CHECKOUT + ".venv/bin/")
    program = ROOT / command[0].removeprefix(CHECKOUT)
    assert program.exists(), program
    if command[1] == "manage.py":
        done = subprocess.run(
            [sys.executable, "manage.py", "help", command[2]],
            cwd=ROOT,
            capture_output=True,
            text=True,
            env={"DEBUG": "true", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
    elif command[1:3] == ["-m", "ikario_rag"]:
        from ikario_rag import cli

        args = cli.parse(command[3:])
        assert args.transport == "streamable-http" and args.port == 8765
    elif command[1:3] == ["-m", "ikario_clone.web"]:
        from ikario_clone.web import WebCommand

        args = WebCommand().parser.parse_args(command[3:])
        assert args.application == "ikario_clone.asgi:application" and args.proxy_headers
    else:
        assert Path(command[0]).name == "daphne" and command[-1] == "ikario_clone.asgi:application"


def test_every_variable_of_the_environment_file_is_read_by_the_code():
    names = re.findall(
        r"^#? ?([A-Z][A-Z0-9_]+)=", (DEPLOY / "ikario.env.example").read_text(), re.MULTILINE
    )
    code = "\n".join(
        path.read_text()
        for folder in ("core", "ikario_clone", "memory", "chat", "ikario_rag")
        for path in (ROOT / folder).rglob("*.py")
    )
    # Read as a quoted name: env.str("NAME"), os.environ.get("NAME"), not a mention in a comment.
    unread = [name for name in names if f'"{name}"' not in code and name != "HF_HUB_OFFLINE"]
    assert names and not unread, unread
