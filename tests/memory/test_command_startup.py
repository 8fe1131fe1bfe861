"""What `manage.py memory_search` and `memory_stats` load and do before they answer, beside
a running app (reaching its memory server by URL) and alone (spawning one over stdio): no
Anthropic SDK (its import was most of their start-up: the system checks load every view,
and the apps' ready() loaded it for nothing), no warm-up search of a server that is already
warm, and none for `memory_stats` on a server it starts (counts need no embedding model)."""

from __future__ import annotations

import subprocess
import sys
import tempfile

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


def _probe(env, *args) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-3000:])
    return done


def test_the_memory_commands_start_without_the_sdk_or_a_warm_up(
    memory_server,
    beside_the_app,  # noqa: F811 -- the fixture imported above
    tmp_path,
):
    namespace = f"user-{beside_the_app.user.pk}"
    memory_server.client.call_tool(
        "add_thought", {"content": "Dora paddles a red sea kayak", "namespace": namespace}
    )

    found = _probe(beside_the_app.env, "memory_search", "kayak", "--user", "dora")
    stats = _probe(beside_the_app.env, "memory_stats", "--json")
    # No server URL: the command starts one of its own over stdio (and stops it).
    alone = {
        **beside_the_app.env,
        "MCP_IKARIO_SERVER_URL": "",
        "IKARIO_INDEX_DIR": tempfile.mkdtemp(dir=tmp_path),
    }
    stats_alone = _probe(alone, "memory_stats", "--json")

    assert "Dora paddles a red sea kayak" in found.stdout
    assert '"status": "connected"' in stats.stdout
    assert '"status": "connected"' in stats_alone.stdout
    for done in (found, stats, stats_alone):
        assert "loaded: []" in done.stderr
        assert "warmed up" not in done.stderr
