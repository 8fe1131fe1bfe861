"""Sessions a client left open on the memory server (a killed worker, a forked job) are closed
once idle past IKARIO_SESSION_IDLE, and health counts the open ones; the app's own
long-lived client carries on."""

import time

import httpx
import pytest

from memory.client import mcp, services
from tests.fixtures.memory_server import HttpServer, MemoryServer
from tests.ikario_rag.test_access import INITIALIZE, MCP_HEADERS


@pytest.fixture
def short_idle_server(memory_server, tmp_path, monkeypatch, settings):
    monkeypatch.setenv("IKARIO_SESSION_IDLE", "3")
    server = MemoryServer(HttpServer(tmp_path / "index-idle", token=memory_server.token))
    settings.MCP_IKARIO_SERVER_URL = server.url
    server.wait_connected()
    yield server
    mcp.close_client()
    server.server.stop()


def abandoned_session(server) -> str:
    """A session opened and then left, as a process killed mid-job leaves it."""
    response = httpx.post(
        server.url,
        json=INITIALIZE,
        headers={**MCP_HEADERS, "Authorization": f"Bearer {server.token}"},
        timeout=30,
    )
    assert response.status_code == 200, response.text
    return response.headers["mcp-session-id"]


def open_sessions() -> int:
    return services.server_stats()["health"]["http_sessions"]


def test_idle_sessions_are_closed_and_counted(short_idle_server):
    before = open_sessions()
    abandoned_session(short_idle_server)
    abandoned_session(short_idle_server)
    assert open_sessions() == before + 2

    deadline = time.monotonic() + 60
    while open_sessions() > before:  # the app's own sessions stay: its calls keep them alive
        assert time.monotonic() < deadline, "idle sessions were never closed"
        time.sleep(0.5)
    assert open_sessions() == before >= 1
