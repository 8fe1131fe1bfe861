"""memory/client/mcp.py: connecting, timing out, surviving a dead server, closing.

The slow server (tests/memory/slow_server.py) is a real MCP server over streamable HTTP that
starts in a fraction of a second; the real ikario_rag is used where its own behaviour matters.
"""

import asyncio
import re
import threading
import time
from pathlib import Path

import pytest

from memory.client import mcp, services
from memory.client.errors import MemoryToolError, MemoryUnavailable
from tests.fixtures.memory_server import ScriptServer
from tests.net import free_port

SLOW_SERVER = Path(__file__).with_name("slow_server.py")


@pytest.fixture
def slow_script(tmp_path):
    """The slow server, running (stopped after the test)."""
    env = {"SLOW_SERVER_SECONDS": "30", "SLOW_SERVER_STARTED": str(tmp_path / "search-started")}
    server = ScriptServer(SLOW_SERVER, env=env)
    yield server
    server.stop()


@pytest.fixture
def slow_server(slow_script, settings):
    """Point the app at the slow server (its own client, closed after the test)."""
    settings.MCP_IKARIO_SERVER_URL = slow_script.url
    settings.IKARIO_TOKEN = "a-token-it-does-not-check"
    settings.MCP_CALL_TIMEOUT = 1.0
    client = mcp.get_client()
    assert client.wait_connected(30), client.last_error  # calls have 1 s: connect first
    yield client
    client.close()


def test_it_logs_that_it_connected_and_each_call_with_its_duration(slow_server, caplog):
    result = slow_server.call_tool("memory_stats", {"namespace": "user-1"})

    assert result["total_memories"] == 0
    connected = [r.getMessage() for r in caplog.get_records("setup")]
    assert any(m.startswith("MCP Ikario client connected (slow-ikario") for m in connected)
    assert re.search(r"MCP call memory_stats ok in \d+\.\d ms", caplog.text)
    assert slow_server.status() == "connected"


def test_it_times_out_a_call_slower_than_the_timeout(slow_server, alice, caplog):
    slow_server.call_tool("memory_stats", {})  # connected first: time only the call

    with pytest.raises(MemoryUnavailable, match="memory unavailable: no answer within 1 s"):
        services.search_memories(user=alice, query="anything")

    assert "MCP call search_memories timed out after 1.0s" in caplog.text
    # A slow answer is not a dead server: same connection, next call fine.
    assert slow_server.call_tool("memory_stats", {})["total_memories"] == 0
    assert slow_server.connections == 1


def test_it_answers_503_when_the_server_is_too_slow(slow_server, alice_client):
    response = alice_client.get("/api/memory/search", {"q": "anything"})

    assert response.status_code == 503
    assert response.json()["error"]["reason"] == "memory unavailable: no answer within 1 s"
    assert response["Retry-After"]


def test_it_fails_fast_when_the_server_dies_mid_call_then_reconnects(
    slow_server, slow_script, tmp_path
):
    slow_server.call_tool("memory_stats", {})
    failure = {}
    inside = tmp_path / "search-started"

    def search():
        try:
            slow_server.call_tool("search_memories", {"query": "x"}, timeout=20)
        except MemoryUnavailable as exc:
            failure["error"] = exc

    caller = threading.Thread(target=search)
    caller.start()
    while not inside.exists():  # the search is now sleeping inside the server
        assert caller.is_alive(), failure
        time.sleep(0.01)
    slow_script.killed_and_restarted()
    caller.join(20 * 3)

    # What the caller got says the server died, not that its 20 s deadline passed
    # ("no answer within 20 s"): it did not wait for it.
    assert not caller.is_alive()
    assert "stopped during the call" in str(failure["error"])
    # The next call (with the default 10 s, not the fixture's 1 s) reconnects and succeeds.
    assert slow_server.call_tool("memory_stats", {}, timeout=10)["total_memories"] == 0
    assert slow_server.connections == 2


def test_it_says_how_to_start_a_server_when_none_is_configured(settings, alice):
    # The app never starts a memory server itself: with no URL, every call says how to.
    settings.MCP_IKARIO_SERVER_URL = ""
    client = mcp.get_client()
    try:
        assert services.wait_until_ready(timeout=30) == "disconnected"
        with pytest.raises(MemoryUnavailable) as down:
            services.search_memories(user=alice, query="bees", timeout=5)
    finally:
        client.close()

    assert down.value.message == "memory unavailable"  # what a user reads
    assert down.value.detail == mcp.NOT_CONFIGURED == client.last_error
    assert "`make run` does" in client.last_error
    assert "python -m ikario_rag --transport streamable-http" in client.last_error
    assert client.connections == 0 and client._thread is None  # nothing was started


def test_it_says_what_to_do_when_no_server_answers_at_its_url(settings, alice):
    url = f"http://127.0.0.1:{free_port()}/mcp"
    settings.MCP_IKARIO_SERVER_URL = url
    settings.IKARIO_TOKEN = "a-token"
    try:
        assert services.wait_until_ready(timeout=30) == "disconnected"
        with pytest.raises(MemoryUnavailable) as down:
            services.search_memories(user=alice, query="bees", timeout=5)
    finally:
        client = mcp.get_client()
        client.close()

    assert down.value.message.startswith("memory unavailable")
    assert f"no memory server answers at {url} (MCP_IKARIO_SERVER_URL): start it" in (
        client.last_error
    )
    assert "`make run` does" in client.last_error
    assert "Traceback" not in client.last_error


def test_it_tries_a_server_that_is_down_again_every_few_seconds(settings):
    # However long a server at a URL stays down, it is back in use soon after it restarts.
    settings.MCP_IKARIO_SERVER_URL = f"http://127.0.0.1:{free_port()}/mcp"
    settings.IKARIO_TOKEN = "a-token"
    client = mcp.get_client()
    client.start()
    try:
        deadline = time.monotonic() + 60
        while client.failures < 6:  # a doubling backoff would be at 16 s by now
            assert time.monotonic() < deadline, client.last_error
            time.sleep(0.1)
        assert client.state in ("down", "connecting")
        assert client.retry_after() <= 2.0
    finally:
        client.close()


def test_it_serves_a_call_at_once_after_the_server_is_killed_and_restarted(memory_server, alice):
    saved = services.add_thought(user=alice, content="Alice keeps bees in the Drôme")
    connections = memory_server.client.connections

    memory_server.server.killed_and_restarted()
    # The new server does not know the client's session ("Session not found", which
    # once read as a refused call, 404, and an add not stored): a new session, the call
    # sent again. A write first: what the user asked to save is saved.
    added = services.add_thought(user=alice, content="Alice sells honey at the market")
    found = services.search_memories(user=alice, query="bees Drôme", mode="text")

    assert added["status"] == "created"
    assert found["results"][0]["id"] == saved["id"]
    honey = services.search_memories(user=alice, query="honey market", mode="text")
    assert honey["results"][0]["id"] == added["id"]
    assert memory_server.client.connections == connections + 1
    # The next test on this shared server searches by meaning: its new process loads its model.
    memory_server.wait_model()


def test_a_write_on_a_session_the_restarted_server_lost_is_sent_again(
    memory_server, alice, monkeypatch
):
    # No ping notices the restart first: the call itself meets "Session not found" (which
    # once read as a refusal: 404, the memory not stored) and is sent on a new session.
    monkeypatch.setattr(mcp, "PING_INTERVAL", 3600.0)
    client = mcp.MemoryClient(memory_server.target)
    namespace = f"user-{alice.pk}"
    try:
        assert client.wait_connected(60), client.last_error
        memory_server.server.killed_and_restarted()
        added = client.call_tool(
            "add_thought", {"content": "Alice sells honey", "namespace": namespace}, timeout=60
        )
        found = client.call_tool(
            "search_memories", {"query": "honey", "mode": "text", "namespace": namespace}
        )
    finally:
        client.close()

    assert added["status"] == "created"
    assert found["results"][0]["id"] == added["id"]
    assert client.connections == 2  # the lost session replaced once
    memory_server.wait_model()  # the next test's searches by meaning need the new model


def test_it_reports_disconnected_and_logs_why_when_no_server_answers(
    no_memory_server, alice_client, caplog
):
    search = alice_client.get("/api/memory/search", {"q": "x"})
    stats = alice_client.get("/api/memory/stats")  # after the failed attempt: not "starting"

    assert stats.status_code == 200
    assert (stats.json()["connected"], stats.json()["status"]) == (False, "disconnected")
    # The user reads "memory unavailable"; where the server should be is for the log (and staff).
    assert stats.json()["error"] == "memory unavailable"
    assert no_memory_server not in stats.content.decode() + search.content.decode()
    assert search.status_code == 503
    assert f"no memory server answers at {no_memory_server}" in caplog.text
    # The rest of the app still serves pages.
    assert alice_client.get("/").status_code == 200
    assert alice_client.get("/memory/indicator").status_code == 200


def test_it_says_disabled_without_starting_anything(settings):
    settings.MCP_MEMORY_ENABLED = False

    assert mcp.get_client().status() == "disabled"
    assert services.memory_status() == "disabled"


async def test_it_serves_async_callers_without_blocking_their_loop(slow_server):
    ticks = 0

    async def tick():
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    ticker = asyncio.create_task(tick())
    with pytest.raises(MemoryUnavailable):
        await slow_server.acall_tool("search_memories", {"query": "x"}, timeout=0.5)
    ticker.cancel()

    assert ticks > 10  # the caller's loop kept running while the call waited
    assert (await slow_server.acall_tool("memory_stats", {}))["total_memories"] == 0


def test_it_shares_one_connection_between_threads(slow_server):
    results = []

    def stats():
        results.append(slow_server.call_tool("memory_stats", {}))

    threads = [threading.Thread(target=stats) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)

    assert len(results) == 8
    assert slow_server.connections == 1


def test_it_closes_its_connection_and_leaves_the_server_running(slow_server, slow_script):
    slow_server.call_tool("memory_stats", {})

    slow_server.close()

    assert slow_server.state == "closed"
    with pytest.raises(MemoryUnavailable):
        slow_server.call_tool("memory_stats", {})
    # The server is not the client's: others may still use it.
    assert slow_script.process.poll() is None
    again = mcp.MemoryClient(slow_server.target)
    try:
        assert again.call_tool("memory_stats", {}, timeout=10)["total_memories"] == 0
    finally:
        again.close()


def test_it_shares_one_running_server_over_streamable_http(memory_server, alice):
    saved = services.add_thought(user=alice, content="Alice shares one memory server")
    # Another process's client (a manage.py command, say) sees the same memory.
    second = mcp.MemoryClient(memory_server.target)
    try:
        assert second.wait_connected(120), second.last_error
        found = second.call_tool(
            "search_memories", {"query": "shared memory server", "namespace": f"user-{alice.pk}"}
        )
    finally:
        second.close()

    assert found["results"][0]["id"] == saved["id"]


def test_it_is_refused_by_the_server_without_its_token(memory_server, settings):
    wrong = mcp.MemoryClient(mcp.ServerTarget(server_url=memory_server.url, token="not-the-token"))
    try:
        assert not wrong.wait_connected(30)
    finally:
        wrong.close()

    assert "refused the token: IKARIO_TOKEN must be the one" in wrong.last_error


def test_it_sends_what_the_sdk_could_not_serialise_and_keeps_the_server(memory_server, alice):
    # Straight to the client, past every view and check: a lone surrogate and nesting no
    # JSON encoder should follow used to kill the SDK's writer task and the connection.
    namespace = f"user-{alice.pk}"
    saved = services.add_thought(user=alice, content="Alice rows on the Saône")
    (pid,) = memory_server.server_pids()
    connections = memory_server.client.connections
    deep: dict = {}
    for _ in range(200):
        deep = {"x": deep}

    found = memory_server.client.call_tool(
        "search_memories", {"query": "\ud800 rows Saône", "namespace": namespace}
    )
    with pytest.raises(MemoryToolError) as refused:
        memory_server.client.call_tool(
            "add_thought", {"content": "x\udfff", "context": deep, "namespace": namespace}
        )

    assert found["results"][0]["id"] == saved["id"]
    assert "context" in refused.value.message
    # The same server process, the same connection, and it still answers.
    assert memory_server.server_pids() == [pid]
    assert memory_server.client.connections == connections
    again = services.search_memories(user=alice, query="rows on the Saône")
    assert again["results"][0]["id"] == saved["id"]


def test_with_several_servers_it_names_the_setting_that_lists_them(settings, alice):
    url = f"http://127.0.0.1:{free_port()}/mcp"
    settings.MCP_IKARIO_SERVER_URLS = [url]
    settings.IKARIO_TOKEN = "a-token"
    try:
        with pytest.raises(MemoryUnavailable):
            services.search_memories(user=alice, query="bees", timeout=5)
    finally:
        client = mcp.get_client(f"user-{alice.pk}")
        client.close()

    assert f"no memory server answers at {url} (MCP_IKARIO_SERVER_URLS)" in client.last_error
