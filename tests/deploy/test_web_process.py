"""The web process the Procfile starts connects to the memory server as soon as it serves,
before any page is loaded (issue 34: Daphne sends no lifespan events)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from tests.deploy.conftest import ROOT
from tests.net import serve_on_a_free_port, stop

DEADLINE = 120.0


def _web_command() -> str:
    (line,) = [
        line for line in (ROOT / "Procfile").read_text().splitlines() if line.startswith("web:")
    ]
    return line.removeprefix("web:").strip()


def _sessions(memory_server) -> int:
    return memory_server.client.call_tool("memory_stats", {})["health"]["http_sessions"]


def test_the_web_process_connects_to_memory_with_no_page_loaded(memory_server, tmp_path):
    before = _sessions(memory_server)
    env = {
        **os.environ,
        **memory_server.env(),
        "DJANGO_SETTINGS_MODULE": "ikario_clone.settings",
        "DEBUG": "true",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
    }
    log = tmp_path / "web.log"

    def start(port: int) -> subprocess.Popen:
        return subprocess.Popen(
            ["sh", "-c", f"exec {_web_command()}"],
            cwd=ROOT,
            env={**env, "WEB_PORT": str(port)},
            stdout=log.open("w"),
            stderr=subprocess.STDOUT,
        )

    web, _port = serve_on_a_free_port(start, timeout=DEADLINE)
    try:
        deadline = time.monotonic() + DEADLINE
        # No request reaches the web app: its memory client opened a session on its own.
        while _sessions(memory_server) <= before:
            assert web.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.2)
    finally:
        stop(web)
