"""A damaged database: the server starts, says "memory unavailable" in one short line to
every caller, and gives the details to the log and to operators only (memory_stats without
a namespace). No tool result ever carries a path, a PID or a traceback."""

from __future__ import annotations

import os
import re

from ikario_rag.app import build_server
from tests.ikario_rag.conftest import InMemoryClient, call
from tests.ikario_rag.test_hostile_input import TOOLS, arguments_with

DAMAGED = "memory unavailable: the memory database is damaged"
# A path, a PID or a traceback in a result: what a user must never see.
LEAK = re.compile(r"/\w|pid|Traceback|File \"", re.IGNORECASE)


async def test_it_starts_on_a_garbage_database_and_answers_memory_unavailable(make_host, spawn):
    seeded = make_host()
    index_dir = seeded.settings.index_dir
    await call(InMemoryClient(build_server(seeded)), "add_thought", content="Un souvenir")
    seeded.release()
    database = index_dir / "memories.sqlite3"
    for leftover in index_dir.glob("memories.sqlite3-*"):
        leftover.unlink()
    database.write_bytes(os.urandom(database.stat().st_size))

    server = spawn(index_dir=index_dir)
    server.initialize()
    for tool in TOOLS:
        arguments = arguments_with(tool, "namespace", "default")
        assert server.call(tool, **arguments) == (True, DAMAGED), tool

    error, stats = server.call("memory_stats")
    assert not error
    assert stats["total_memories"] is None
    assert stats["health"]["status"] == "unavailable"
    assert stats["health"]["reason"] == "the memory database is damaged"
    assert "not a database" in stats["health"]["detail"]
    assert not LEAK.search(str(stats["health"]))
    logged = server.wait_for_log("cannot open the memory database")
    assert str(database) in logged and "not a database" in logged
    assert server.process.poll() is None  # still serving
    assert server.close() == 0


async def test_it_turns_an_unexpected_failure_into_internal_error_with_details_in_the_log(
    client, memory, caplog
):
    import sqlite3

    _, added = await call(client, "add_thought", content="Un souvenir")
    # Another process breaks the schema under the server: a failure no tool expects.
    other = sqlite3.connect(memory.store.path)
    other.execute("DROP TABLE memories")
    other.close()

    for tool in ("get_memories", "get_recent_memories", "add_thought"):
        arguments = arguments_with(tool, "namespace", "default")
        if tool == "get_memories":
            arguments["ids"] = [added["id"]]
        error, message = await call(client, tool, **arguments)
        assert (error, message) == (True, "memory unavailable: internal error"), tool
    assert "no such table: memories" in caplog.text
