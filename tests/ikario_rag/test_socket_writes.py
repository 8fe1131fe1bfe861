"""Writes sent over the server's Unix socket (the app's worker, the commands beside it) run
on a thread at a lower CPU priority; the stdio client's (the app's own) do not
(ikario_rag/socket_writes.py). Seen from outside, as an operator would: the kernel's name
and nice value of the server's threads in /proc."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

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


async def test_it_runs_the_sockets_writes_at_a_lower_priority_and_stdios_as_they_are(
    spawn, tmp_path
):
    server = spawn(index_dir=tmp_path / "index")
    server.initialize()
    server.tool("add_thought", content="Léa plays the cello on Sundays", namespace="app")
    after_stdio = _writer_nice(server.process.pid)
    with anyio.fail_after(ANSWER_WAIT):
        async with open_session(server.index_dir) as session:
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
    # nice 10 (IKARIO_BATCH_NICE's default), or the server's own when it already runs lower
    assert after_socket == [max(10, server_nice)]
    assert found["results"][0]["id"] == added.structured_content["ids"][0]


async def test_a_socket_write_waits_while_a_reply_is_written_and_runs_after_it(spawn, tmp_path):
    index_dir = tmp_path / "index"
    # Held for longer than any test: the write waits until the test releases it.
    server = spawn(index_dir=index_dir, env={**HELD, "IKARIO_SOCKET_PATIENCE": "3600"})
    server.initialize()
    assert _told(server, index_dir, busy=True)
    added = {}
    with anyio.fail_after(ANSWER_WAIT):
        async with open_session(server.index_dir) as session, anyio.create_task_group() as tasks:

            async def save() -> None:
                added["result"] = await session.call_tool(
                    "add_thoughts",
                    {"items": [{"content": "Léa tunes her cello in Annecy"}], "namespace": "app"},
                )

            tasks.start_soon(save)
            # The write has reached the socket's writer thread (it exists from its first write).
            while not _writer_nice(server.process.pid):
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
            still_waiting = "result" not in added
            assert await anyio.to_thread.run_sync(lambda: _told(server, index_dir, busy=False))
    after = server.tool("search_memories", query="tunes", mode="text", namespace="app")
    assert server.close() == 0

    assert by_stdio["id"]
    assert during["results"] == []
    assert still_waiting
    assert added["result"].structured_content["created"] == 1
    assert [r["id"] for r in after["results"]] == added["result"].structured_content["ids"]
