"""Users never see the memory's internals; staff do.

A user reads "memory unavailable" (with the server's own one-line reason when it gives
one) in the memory API, the header indicator, the sidebar search and the tool results
Claude gets. Paths, PIDs, exception names, stderr and SQLite errors go to the log, to the
admin's memory health page (staff only) and to `manage.py memory_stats`.
"""

import json
import os
import re
import shutil
from io import StringIO
from pathlib import Path

import pytest
from asgiref.sync import async_to_sync
from django.core.management import call_command

from memory.client import services
from tests.fixtures.builders import make_conversation, send
from tests.fixtures.memory_server import wait_indexed

# What a user must never read: a path, a PID, an exception or its traceback, the SDK's names.
LEAK = re.compile(
    r"/(tmp|home|root|usr|srv|work)\b|\bpid\b|Traceback|Exception|Error:|stderr|MCP_|sqlite",
    re.IGNORECASE,
)
DAMAGED = "memory unavailable: the memory database is damaged"
INDEX_REMOVED = "memory unavailable: the index directory was removed; restart the memory server"
CONNECT_WAIT = 180.0  # seconds: a server of its own loads torch and the model


@pytest.fixture
def own_index(tmp_path, monkeypatch):
    """An index directory of this test's, for a memory server of its own."""
    index = tmp_path / "index"
    index.mkdir()
    # No maintenance cycle during the test: what the test damages stays damaged.
    monkeypatch.setenv("IKARIO_MAINTENANCE_INTERVAL", "3600")
    return index


@pytest.fixture
def own_server(own_index, own_memory_server):
    """The real ikario_rag on an index of this test's (stopped after)."""
    own_memory_server(own_index)
    return own_index


@pytest.fixture
def damaged(own_index, own_memory_server):
    """A memory database that is not one: the server starts and answers DAMAGED."""
    (own_index / "memories.sqlite3").write_bytes(os.urandom(64 * 1024))
    own_memory_server(own_index)
    assert services.wait_until_ready(CONNECT_WAIT) == "connected"
    return own_index


def _tool_result_text(request) -> str:
    (block,) = [b for b in request["messages"][-1]["content"] if b["type"] == "tool_result"]
    content = block["content"]
    return content if isinstance(content, str) else "".join(p["text"] for p in content)


@pytest.mark.django_db(transaction=True)
def test_it_tells_users_memory_is_unavailable_and_nothing_more(
    damaged, alice, alice_client, fake_anthropic
):
    stats = alice_client.get("/api/memory/stats")
    search = alice_client.get("/api/memory/search", {"q": "bees"})
    indicator = alice_client.get("/memory/indicator").content.decode()
    panel = alice_client.get("/memory/search", {"q": "bees"}).content.decode()
    fake_anthropic.tool_use("search_memories", {"query": "bees"})
    fake_anthropic.reply("My memory is down.")
    chat = make_conversation(alice, "Bees")
    async_to_sync(send)(chat, "What about my bees?")
    tool_result = _tool_result_text(fake_anthropic.last_request)

    assert stats.status_code == 200 and stats.json()["error"] == DAMAGED
    assert stats.json()["connected"] is False
    assert search.status_code == 503 and search.json()["error"]["reason"] == DAMAGED
    assert "status-disconnected" in indicator and "status-connected" not in indicator
    assert "Memory unavailable: the memory database is damaged." in indicator
    assert "Memory unavailable: the memory database is damaged." in panel
    assert tool_result == "Memory unavailable: the memory database is damaged."
    for seen in (stats.content.decode(), search.content.decode(), indicator, panel, tool_result):
        assert not LEAK.search(seen), seen


@pytest.mark.django_db
def test_it_shows_staff_what_is_wrong(damaged, admin_client, alice_client):
    page = admin_client.get("/admin/memory/memorysettings/health/").content.decode()
    out = StringIO()
    call_command("memory_stats", stdout=out)
    printed = out.getvalue()
    as_json = StringIO()
    call_command("memory_stats", "--json", stdout=as_json)

    assert "Memory health" in page
    assert '<td class="memory-health-status">unavailable</td>' in page
    assert "the memory database is damaged" in page and "not a database" in page
    assert "health.status: unavailable" in printed
    assert "health.detail:" in printed and "not a database" in printed
    assert json.loads(as_json.getvalue())["health"]["reason"] == "the memory database is damaged"
    # The same page is not for users.
    refused = alice_client.get("/admin/memory/memorysettings/health/")
    assert refused.status_code == 302 and "/admin/login/" in refused["Location"]
    listing = admin_client.get("/admin/memory/memorysettings/").content.decode()
    assert 'href="/admin/memory/memorysettings/health/"' in listing


@pytest.mark.django_db
def test_it_shows_staff_why_the_server_cannot_start(no_memory_server, admin_client, alice_client):
    said = alice_client.get("/api/memory/search", {"q": "x"}).json()
    indicator = alice_client.get("/memory/indicator").content.decode()

    page = admin_client.get("/admin/memory/memorysettings/health/").content.decode()

    assert said["error"]["reason"] == "memory unavailable" and not LEAK.search(json.dumps(said))
    assert not LEAK.search(indicator)
    assert f"no memory server answers at {no_memory_server} (MCP_IKARIO_SERVER_URL)" in page
    assert "make run" in page  # and how to start one


def _save_from_the_api_and_from_claude(alice, alice_client, fake_anthropic, reply: str):
    """One memory saved through /api/memory/add, one by Claude's save_memory in a turn:
    (the API's response, the turn's events)."""
    added = alice_client.post(
        "/api/memory/add",
        json.dumps({"content": "Alice sells her honey at the Saturday market"}),
        content_type="application/json",
    )
    fake_anthropic.tool_use(
        "save_memory", {"content": "Alice's hives are on the roof", "category": "contextuelle"}
    )
    fake_anthropic.reply(reply)
    events = async_to_sync(send)(make_conversation(alice, "Honey"), "Remember my hives")
    return added, events


@pytest.mark.django_db(transaction=True)
def test_it_reports_a_memory_saved_but_not_yet_indexed_as_saved(
    own_server, alice, alice_client, fake_anthropic
):
    assert services.wait_until_ready(CONNECT_WAIT) == "connected"
    services.add_thought(user=alice, content="Alice keeps bees on her roof")
    wait_indexed()  # its vector is written behind the add: before the files go
    shutil.rmtree(Path(own_server) / "chroma")  # the vector files, gone under the server

    added, events = _save_from_the_api_and_from_claude(
        alice, alice_client, fake_anthropic, "Saved."
    )

    assert added.status_code == 201
    assert added.json()["message"] == "Memory saved" and added.json()["status"] == "created"
    assert "indexed" not in added.json()
    (finished,) = [e for e in events if e.kind == "tool_finished"]
    assert (finished.summary, finished.is_error) == ("Saved to memory", False)
    result = json.loads(_tool_result_text(fake_anthropic.last_request))
    assert result["saved"] is True and result["status"] == "created"
    # Both really were saved without their vector, and text search finds them already.
    assert services.server_stats()["health"]["unindexed"] == 2
    found = services.search_memories(user=alice, query="honey market", mode="text")
    assert found["results"][0]["id"] == added.json()["id"]


@pytest.mark.django_db(transaction=True)
def test_it_refuses_to_save_once_the_index_directory_is_gone(
    own_server, alice, alice_client, fake_anthropic
):
    assert services.wait_until_ready(CONNECT_WAIT) == "connected"
    kept = services.add_thought(user=alice, content="Alice keeps bees on her roof")
    shutil.rmtree(own_server)  # what a clean-up script or a second checkout may do

    added, events = _save_from_the_api_and_from_claude(
        alice, alice_client, fake_anthropic, "I could not save that."
    )

    # Refused, saying why as a user may read it, rather than accepted and lost at restart.
    assert added.status_code == 503 and added.json()["error"]["reason"] == INDEX_REMOVED
    (finished,) = [e for e in events if e.kind == "tool_finished"]
    assert finished.is_error is True
    tool_result = _tool_result_text(fake_anthropic.last_request)
    assert tool_result == "Memory unavailable: " + INDEX_REMOVED.split(": ", 1)[1] + "."
    for seen in (added.content.decode(), tool_result):
        assert not LEAK.search(seen), seen
    # What the server holds can still be read until it is restarted.
    assert services.get_memory(user=alice, memory_id=kept["id"])["content"] == (
        "Alice keeps bees on her roof"
    )
