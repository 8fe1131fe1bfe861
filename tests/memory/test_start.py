"""A process's memory client connecting to a server still loading: the header indicator
says "starting" until it answers, then live; the first turn waits for the connection in
progress (up to the retrieval budget) instead of going on without memory.

The server is the real ikario_rag behind a gate (tests/memory/gated_server.py): listening at
once, it starts for real only when the test opens the gate, so "starting" lasts exactly as
long as the test needs to look at it.
"""

import asyncio
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async

from memory.client import mcp, services
from memory.recall.prompts import BLOCK_TAG
from tests.fixtures.builders import make_conversation, send
from tests.fixtures.memory_server import ScriptServer
from tests.ikario_rag.stdio import StdioServer

GATED_SERVER = Path(__file__).with_name("gated_server.py")
# Bounds on waiting for a real server to start on a busy machine; never a speed expectation.
START_WAIT = 180.0


class Gated:
    """The gated server of a test: its gate directory and index."""

    def __init__(self, tmp_path: Path):
        self.gate = tmp_path / "gate"
        self.gate.mkdir()
        self.index_dir = tmp_path / "index"
        self.token = "gated-server-token"
        self.server: ScriptServer | None = None

    def start(self) -> str:
        """The gated server, listening (not serving until opened); returns its URL."""
        env = {"GATED_SERVER_DIR": str(self.gate), "IKARIO_TOKEN": self.token}
        self.server = ScriptServer(GATED_SERVER, "--index-dir", str(self.index_dir), env=env)
        return self.server.url

    def open(self) -> None:
        (self.gate / "open").touch()

    def stop(self) -> None:
        self.open()
        if self.server is not None:
            self.server.stop()


@pytest.fixture
def gated(settings, tmp_path):
    """A gated server on a fresh index, with its token in the settings: the test seeds the
    index if it likes, then starts it and points the app at it."""
    gated = Gated(tmp_path)
    settings.IKARIO_TOKEN = gated.token
    yield gated
    mcp.get_client().close()
    gated.stop()


def seed(index_dir: Path, namespace: str, content: str) -> None:
    """A memory stored by a server of its own, closed again before the app starts."""
    server = StdioServer(index_dir)
    server.initialize()
    server.tool("add_thought", content=content, namespace=namespace)
    assert server.close() == 0


def test_it_shows_starting_then_live_as_soon_as_the_server_answers(
    gated, settings, alice, alice_client
):
    settings.MCP_IKARIO_SERVER_URL = gated.start()
    mcp.get_client().start()  # the process's first call starts its client

    html = alice_client.get("/memory/indicator").content.decode()

    assert "status-starting" in html
    assert 'title="Memory starting…"' in html
    assert '<dd class="memory-connection">starting…</dd>' in html
    assert 'hx-trigger="every 1s"' in html  # asks again every second while starting
    assert alice_client.get("/api/memory/stats").json()["status"] == "starting"

    gated.open()
    assert services.wait_until_ready(START_WAIT) == "connected"

    html = alice_client.get("/memory/indicator").content.decode()
    assert "status-connected" in html
    assert 'title="Memory active - 0 memories"' in html
    assert 'hx-trigger="every 30s"' in html


@pytest.mark.django_db(transaction=True)
async def test_it_gives_the_first_turn_its_memories_while_the_server_is_still_starting(
    gated, settings, alice, fake_anthropic, monkeypatch
):
    remembered = "Alice keeps three beehives on the roof of her building in Lyon"
    await asyncio.to_thread(seed, gated.index_dir, f"user-{alice.pk}", remembered)
    settings.MCP_IKARIO_SERVER_URL = await sync_to_async(gated.start)()
    # The budget the turn may spend waiting for a connection in progress, then searching.
    settings.MEMORY_RETRIEVAL_TIMEOUT = START_WAIT
    mcp.get_client().start()
    assert await sync_to_async(services.memory_status)() == "starting"

    # The gate opens only once the turn is inside its search: the turn cannot have found a
    # running server, it waited for the one starting.
    searching = asyncio.Event()
    search = services.asearch_memories

    async def search_then_open(**arguments):
        searching.set()
        gated.open()
        return await search(**arguments)

    monkeypatch.setattr(services, "asearch_memories", search_then_open)
    chat = await sync_to_async(make_conversation)(alice, "First chat after the start")
    fake_anthropic.reply("Your bees are doing well, I hope.")

    events = await send(chat, "What do I keep on my roof?")

    assert searching.is_set()
    system = fake_anthropic.requests[0]["system"]
    text = system if isinstance(system, str) else "".join(b["text"] for b in system)
    assert f"<{BLOCK_TAG}>" in text and remembered in text
    assert not [e for e in events if e.kind == "notice"]  # no "memory unavailable"
