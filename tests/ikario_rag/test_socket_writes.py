"""Calls sent over the server's Unix socket (the app's worker, the commands beside it) wait,
unread, while a reply is written, and their writes run on a thread at a lower CPU priority;
the stdio client's (the app's own) do neither (ikario_rag/socket_writes.py). Seen from
outside, as an operator would: the kernel's name and nice value of the server's threads in
/proc, the calls waiting in the server's health."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from types import SimpleNamespace

import anyio
import pytest

from ikario_rag import foreground, socket_writes
from ikario_rag.client import open_session
from ikario_rag.socket_writes import SOCKET_WRITER
from tests.ikario_rag.stdio import ANSWER_WAIT
from tests.ikario_rag.test_foreground import HELD, _told

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="thread priorities are Linux's")


def _nice(stat: Path) -> int:
    """A task's nice value: /proc's stat field 19 (fields 3.. follow the name in brackets)."""
    return int(stat.read_text().rsplit(")", 1)[1].split()[16])


def _writer_nice(pid: int) -> list[int]:
    """The nice value of each thread of `pid` named SOCKET_WRITER."""
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            if (task / "comm").read_text().strip() == SOCKET_WRITER:
                found.append(_nice(task / "stat"))
        except OSError:  # the thread ended meanwhile
            continue
    return found


async def test_it_runs_background_writes_at_a_lower_priority_and_the_others_as_they_are(
    spawn, tmp_path
):
    server = spawn(index_dir=tmp_path / "index")
    server.initialize()
    server.tool("add_thought", content="Léa plays the cello on Sundays", namespace="app")
    after_stdio = _writer_nice(server.process.pid)
    with anyio.fail_after(ANSWER_WAIT):
        # Over the socket, but not saying it is background (the app itself, when another
        # process holds the index): served as stdio is.
        async with open_session(server.index_dir) as session:
            await session.call_tool(
                "add_thought", {"content": "Léa's bow is new", "namespace": "app"}
            )
    after_foreground_socket = _writer_nice(server.process.pid)
    with anyio.fail_after(ANSWER_WAIT):
        async with open_session(server.index_dir, background=True) as session:
            added = await session.call_tool(
                "add_thoughts",
                {
                    "items": [{"content": "Léa's cello teacher lives in Annecy"}],
                    "namespace": "app",
                },
            )
    after_socket = _writer_nice(server.process.pid)
    server_nice = _nice(Path(f"/proc/{server.process.pid}/stat"))
    found = server.tool("search_memories", query="cello teacher", mode="text", namespace="app")
    assert server.close() == 0

    assert added.structured_content["created"] == 1
    assert after_stdio == []
    assert after_foreground_socket == []
    # nice 10 (IKARIO_BATCH_NICE's default), or the server's own when it already runs lower
    assert after_socket == [max(10, server_nice)]
    assert found["results"][0]["id"] == added.structured_content["ids"][0]


def _waiting(server) -> int:
    """How many socket calls the server holds, unread, until the reply ends (its health)."""
    return server.tool("memory_stats")["health"]["socket_calls_waiting"]


async def test_socket_calls_wait_unread_while_a_reply_is_written_and_run_after_it(spawn, tmp_path):
    index_dir = tmp_path / "index"
    # Held for longer than any test: the calls wait until the test releases them.
    server = spawn(index_dir=index_dir, env={**HELD, "IKARIO_SOCKET_PATIENCE": "3600"})
    server.initialize()
    server.tool("add_thought", content="Léa tunes her violin in Lyon", namespace="app")
    answered = {}
    with anyio.fail_after(ANSWER_WAIT):
        async with (
            open_session(server.index_dir, background=True) as writer,
            open_session(server.index_dir, background=True) as reader,
            open_session(server.index_dir) as app,
            anyio.create_task_group() as tasks,
        ):
            # The sessions are open (their handshakes are calls too, held like any other).
            assert await anyio.to_thread.run_sync(lambda: _told(server, index_dir, busy=True))

            async def save() -> None:
                answered["add"] = await writer.call_tool(
                    "add_thoughts",
                    {"items": [{"content": "Léa tunes her cello in Annecy"}], "namespace": "app"},
                )

            async def look() -> None:
                answered["search"] = await reader.call_tool(
                    "search_memories", {"query": "violin", "mode": "text", "namespace": "app"}
                )

            tasks.start_soon(save)
            tasks.start_soon(look)
            # Both calls have reached the server, which holds them before reading them.
            while await anyio.to_thread.run_sync(lambda: _waiting(server)) < 2:
                await anyio.sleep(0.02)
            # stdio (the app's own calls, a model's save_memory in its reply) is not held.
            by_stdio = await anyio.to_thread.run_sync(
                lambda: server.tool(
                    "add_thought", content="Léa's cello is a Mirecourt", namespace="app"
                )
            )
            during = await anyio.to_thread.run_sync(
                lambda: server.tool("search_memories", query="tunes", mode="text", namespace="app")
            )
            # A socket client that does not say it is background (the app itself talking
            # over the socket) is served at once: its recall must not wait for its reply.
            by_app = await app.call_tool(
                "search_memories", {"query": "violin", "mode": "text", "namespace": "app"}
            )
            app_added = await app.call_tool(
                "add_thought", {"content": "Léa's bow is new", "namespace": "app"}
            )
            unanswered = sorted({"add", "search"} - answered.keys())
            # Never read: the write has not reached the writer thread (made at its first write).
            no_writer = _writer_nice(server.process.pid) == []
            assert await anyio.to_thread.run_sync(lambda: _told(server, index_dir, busy=False))
    after = server.tool("search_memories", query="tunes", mode="text", namespace="app")
    left = _waiting(server)
    assert server.close() == 0

    assert by_stdio["id"]
    assert [r["content"] for r in during["results"]] == ["Léa tunes her violin in Lyon"]
    assert [r["content"] for r in by_app.structured_content["results"]] == [
        "Léa tunes her violin in Lyon"
    ]
    assert app_added.structured_content["id"]
    assert unanswered == ["add", "search"]
    assert no_writer
    assert answered["add"].structured_content["created"] == 1
    assert [r["content"] for r in answered["search"].structured_content["results"]] == [
        "Léa tunes her violin in Lyon"
    ]
    assert answered["add"].structured_content["ids"][0] in [r["id"] for r in after["results"]]
    assert left == 0


async def test_a_socket_call_held_longer_than_its_patience_runs_anyway(spawn, tmp_path):
    index_dir = tmp_path / "index"
    # A reply that never ends (a client died mid-reply and its hold lasts): a background
    # call waits SOCKET_PATIENCE, then runs (a site that never stops chatting still saves).
    server = spawn(index_dir=index_dir, env={**HELD, "IKARIO_SOCKET_PATIENCE": "0.5"})
    server.initialize()
    assert _told(server, index_dir, busy=True)
    with anyio.fail_after(ANSWER_WAIT):
        async with open_session(server.index_dir, background=True) as session:
            added = await session.call_tool(
                "add_thoughts",
                {"items": [{"content": "Léa tunes her cello in Annecy"}], "namespace": "app"},
            )
    still_held = server.tool("memory_stats")["health"]["background_paused"]
    found = server.tool("search_memories", query="tunes", mode="text", namespace="app")
    # Released before closing: the server's own indexer waits out a hold as long as HELD's.
    assert _told(server, index_dir, busy=False)
    assert server.close() == 0

    assert still_held
    assert added.structured_content["created"] == 1
    assert [r["id"] for r in found["results"]] == added.structured_content["ids"]


def test_socket_calls_patience_counts_from_the_start_of_the_hold(monkeypatch):
    """A session's handshake, its call and the call's write each wait; replies back to back
    renew the hold. Counted from each wait's own start, a save could wait several times
    SOCKET_PATIENCE and pass the app's call timeout; counted from the hold's start, never."""
    clock = [1000.0]
    monkeypatch.setattr(
        foreground, "time", SimpleNamespace(monotonic=lambda: clock[0], sleep=time.sleep)
    )
    monkeypatch.setattr(socket_writes, "SOCKET_PATIENCE", 3.0)
    held = foreground.Foreground()
    monkeypatch.setattr(socket_writes, "FOREGROUND", held)

    assert socket_writes.patience_left() == 3.0
    held.hold(60)
    clock[0] += 1.0
    assert socket_writes.patience_left() == 2.0
    held.hold(60)  # the next reply began: the hold goes on, from its first start
    clock[0] += 1.5
    assert socket_writes.patience_left() == 0.5
    clock[0] += 10.0
    assert held.busy() and socket_writes.patience_left() == 0.0
    held.release()
    assert held.held_for() == 0.0 and socket_writes.patience_left() == 3.0
    held.hold(60)  # a new hold after a release starts afresh
    assert socket_writes.patience_left() == 3.0
