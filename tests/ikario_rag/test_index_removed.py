"""The index directory removed (or replaced) under a running server: writes are refused with
a clear tool error instead of being accepted and lost at the next start, and the log says so."""

from __future__ import annotations

import logging
import shutil

import pytest

from ikario_rag.app import build_server
from tests.ikario_rag.conftest import READY_WAIT, InMemoryClient, call

REFUSED = "memory unavailable: the index directory was removed; restart the memory server"


@pytest.mark.parametrize("recreated", [False, True], ids=["removed", "replaced"])
async def test_it_refuses_writes_once_the_index_directory_is_gone(make_host, caplog, recreated):
    host = make_host(maintenance_interval=0.05)
    client = InMemoryClient(build_server(host))
    _, kept = await call(client, "add_thought", content="Le vélo de Nora est rouge")
    index_dir = host.settings.index_dir
    shutil.rmtree(index_dir)
    if recreated:  # e.g. a second server started on the same path
        index_dir.mkdir()
    caplog.set_level(logging.INFO, logger="ikario_rag")

    for tool, arguments in (
        ("add_thought", {"content": "La clé est sous le pot de fleurs"}),
        ("add_thoughts", {"items": [{"content": "Mickael apprend le piano"}]}),
        ("delete_memory", {"id": kept["id"]}),
        ("forget", {"topic": "vélo"}),
    ):
        assert await call(client, tool, **arguments) == (True, REFUSED), tool

    # No refused write landed anywhere, not even through maintenance, and the log says why,
    # loudly. (Chroma's own flush thread may still recreate its folder for data it accepted
    # before the removal: that is not a write of ours, so the test looks for what we refused.)
    assert host.runtime.wait_for_cycle(host.runtime.cycles + 2, timeout=READY_WAIT)
    written = [p for p in index_dir.rglob("*") if p.is_file()]
    assert not any(p.name.startswith("memories") for p in written), written
    refused = ("La clé est sous le pot de fleurs", "Mickael apprend le piano")
    for path in written:
        data = path.read_bytes()
        assert not any(text.encode() in data for text in refused), path
    alarms = [r for r in caplog.records if r.levelno == logging.CRITICAL]
    assert any("index directory was removed" in r.getMessage() for r in alarms)
    # What the server still holds can be read until it is restarted.
    error, got = await call(client, "get_memories", ids=[kept["id"]])
    assert not error and got["memories"][0]["content"] == "Le vélo de Nora est rouge"
