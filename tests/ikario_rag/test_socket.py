"""The server the web app spawns over stdio also serves its tools on a Unix socket in the
index directory, so another process reaches it while it holds the index lock."""

from __future__ import annotations

import os
import stat

import anyio
import pytest

from ikario_rag.client import (
    ServerNotRunning,
    call_tool,
    open_session,
    running_server,
    socket_path,
)
from tests.ikario_rag.stdio import ANSWER_WAIT


async def test_a_second_process_adds_and_searches_over_the_socket_while_stdio_is_connected(
    shared_server,
):
    socket = socket_path(shared_server.index_dir)
    assert stat.S_ISSOCK(os.stat(socket).st_mode)
    assert stat.S_IMODE(os.stat(socket).st_mode) == 0o600

    with anyio.fail_after(ANSWER_WAIT):
        async with open_session(shared_server.index_dir) as session:
            added = await session.call_tool(
                "add_thought",
                {"content": "Nora range son vélo dans la cave", "namespace": "socket"},
            )
            found = await session.call_tool(
                "search_memories", {"query": "où est le vélo", "namespace": "socket"}
            )
    assert added.structured_content["status"] == "created"
    assert found.structured_content["results"][0]["id"] == added.structured_content["id"]

    # The stdio client (the web app) sees what the other process stored.
    seen = shared_server.tool("search_memories", query="vélo cave", namespace="socket")
    assert seen["results"][0]["id"] == added.structured_content["id"]


def test_it_says_whether_a_server_runs_on_an_index_directory(shared_server, tmp_path):
    assert running_server(shared_server.index_dir) == socket_path(shared_server.index_dir)
    assert running_server(tmp_path) is None


def test_it_answers_one_call_from_synchronous_code(shared_server):
    shared_server.tool("add_thought", content="Une note pour la commande", namespace="sync")
    result = call_tool("memory_stats", {"namespace": "sync"}, index_dir=shared_server.index_dir)
    assert result.structured_content["total_memories"] == 1


def test_a_second_server_on_the_index_exits_3_and_is_told_where_the_socket_is(shared_server, spawn):
    second = spawn(index_dir=shared_server.index_dir)
    assert second.wait() == 3
    message = second.stderr()
    assert "already in use" in message and str(shared_server.index_dir) in message
    assert str(socket_path(shared_server.index_dir)) in message
    assert second.stdout_lines == []
    # The first server is unaffected.
    assert shared_server.tool("memory_stats")["total_memories"] >= 0


async def test_it_replaces_the_socket_a_killed_server_left(spawn, tmp_path):
    killed = spawn()
    killed.initialize()
    killed.kill()
    socket = socket_path(killed.index_dir)
    assert socket.exists()  # kill -9: nothing could remove it
    with pytest.raises(ServerNotRunning):
        async with open_session(killed.index_dir):
            pass
    again = spawn()
    again.initialize()
    with anyio.fail_after(ANSWER_WAIT):
        async with open_session(again.index_dir) as session:
            stats = await session.call_tool("memory_stats", {})
    assert stats.structured_content["total_memories"] == 0
    assert again.close() == 0


async def test_it_reaches_a_socket_whose_path_is_too_long_and_removes_it_at_exit(spawn, tmp_path):
    deep = tmp_path / ("d" * 60) / ("e" * 60) / "index"
    server = spawn(index_dir=deep)
    server.initialize()
    socket = socket_path(deep)
    assert len(str(socket)) > 108  # more than a Unix socket address holds
    with anyio.fail_after(ANSWER_WAIT):
        async with open_session(deep) as session:
            stats = await session.call_tool("memory_stats", {})
    assert stats.structured_content["total_memories"] == 0
    assert server.close() == 0
    assert not socket.exists()
    with pytest.raises(ServerNotRunning):
        async with open_session(deep):
            pass
