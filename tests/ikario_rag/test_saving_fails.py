"""Whenever a save would fail, the server says so: the failing write answers
"memory unavailable: <why>" (never "internal error"), and memory_stats and health carry
"saving": "fails: <why>" until a write works again (the app's indicator shows it).

A full disk is SQLite's own SQLITE_FULL, reached with `PRAGMA max_page_count` (the database
may not grow); a disk with no room left is what os.statvfs says (the OS's answer, faked).
"""

from __future__ import annotations

import shutil
from types import SimpleNamespace

from ikario_rag import runtime
from tests.ikario_rag.conftest import call

FULL = "memory unavailable: the disk is full"


async def test_a_full_disk_is_said_by_the_write_and_by_the_stats_until_a_write_works(
    client, memory
):
    _, before = await call(client, "memory_stats", namespace="n")
    assert before["saving"] == "ok"
    pages = memory.store.db.execute("PRAGMA page_count").fetchone()[0]
    memory.store.db.execute(f"PRAGMA max_page_count = {pages}")

    failed, said = await call(client, "add_thought", content="Nora " * 3000, namespace="n")
    assert (failed, said) == (True, FULL)
    _, stats = await call(client, "memory_stats", namespace="n")
    assert stats["saving"] == "fails: the disk is full"
    _, everything = await call(client, "memory_stats")
    assert everything["health"]["saving"] == "fails: the disk is full"

    memory.store.db.execute(f"PRAGMA max_page_count = {pages * 100}")
    failed, added = await call(client, "add_thought", content="Nora keeps bees", namespace="n")
    assert not failed, added
    _, stats = await call(client, "memory_stats", namespace="n")
    assert stats["saving"] == "ok"


async def test_a_disk_with_no_room_left_is_said_before_any_write_fails(client, monkeypatch):
    real = runtime.os.statvfs

    def no_room(path):
        found = real(path)
        return SimpleNamespace(f_bavail=10, f_frsize=found.f_frsize)

    monkeypatch.setattr(runtime.os, "statvfs", no_room)
    _, stats = await call(client, "memory_stats", namespace="n")
    assert stats["saving"] == "fails: the disk is full"


async def test_a_removed_index_is_said_by_the_stats(client, host):
    shutil.rmtree(host.settings.index_dir)
    failed, stats = await call(client, "memory_stats", namespace="n")
    assert not failed, stats
    assert stats["saving"] == ("fails: the index directory was removed; restart the memory server")
