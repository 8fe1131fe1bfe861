"""What `manage.py memory_search` and `memory_stats` load and do before they answer, beside
a running app (reaching its memory server by URL): no Anthropic SDK (its import was most of
their start-up: the system checks load every view, and the apps' ready() loaded it for
nothing); and with no memory server to reach, what they say: how to start one."""

from __future__ import annotations

import socket
import subprocess
import sys

from tests.deploy.conftest import ROOT
from tests.memory.test_commands_beside_app import beside_the_app  # noqa: F401 -- a fixture

# manage.py as run from a shell, which then says on stderr which of the modules it loaded.
PROBE = """
import atexit, runpy, sys
HEAVY = ("anthropic",)
atexit.register(lambda: print("loaded:", [m for m in HEAVY if m in sys.modules], file=sys.stderr))
sys.argv = ["manage.py", *sys.argv[1:]]
runpy.run_path("manage.py", run_name="__main__")
"""


def _probe(env, *args, succeeds=True) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (done.returncode == 0) == succeeds, (done.stdout[-2000:], done.stderr[-3000:])
    return done


def test_the_memory_commands_start_without_the_sdk(
    memory_server,
    beside_the_app,  # noqa: F811 -- the fixture imported above
):
    namespace = f"user-{beside_the_app.user.pk}"
    memory_server.client.call_tool(
        "add_thought", {"content": "Dora paddles a red sea kayak", "namespace": namespace}
    )

    found = _probe(beside_the_app.env, "memory_search", "kayak", "--user", "dora")
    stats = _probe(beside_the_app.env, "memory_stats", "--json")

    assert "Dora paddles a red sea kayak" in found.stdout
    assert '"status": "connected"' in stats.stdout
    for done in (found, stats):
        assert "loaded: []" in done.stderr


def test_a_memory_command_with_no_server_says_how_to_start_one(
    beside_the_app,  # noqa: F811 -- the fixture imported above
):
    with socket.socket() as held:  # bound, never listening: nothing answers there
        held.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{held.getsockname()[1]}/mcp"
        nothing_there = {**beside_the_app.env, "MCP_IKARIO_SERVER_URL": url}
        searched = _probe(nothing_there, "memory_search", "kayak", "--user", "dora", succeeds=False)
    unset = _probe(
        {**beside_the_app.env, "MCP_IKARIO_SERVER_URL": ""}, "memory_stats", succeeds=False
    )

    assert f"no memory server answers at {url} (MCP_IKARIO_SERVER_URL)" in searched.stderr
    assert "no memory server configured (MCP_IKARIO_SERVER_URL is empty)" in unset.stderr
    for done in (searched, unset):
        assert "`make run` does" in done.stderr
        assert "python -m ikario_rag --transport streamable-http" in done.stderr
        assert "Traceback" not in done.stderr
