"""A memory with a huge history (issue 33): every reply stays small enough to read, a reply
too large for the client fails that call only, and nobody else loses their memory."""

import pytest

from memory.client import mcp, services, transfer
from memory.client.errors import MemoryUnavailable

EDITS = 50
SIZE = 20_000  # the longest memory there is


def _long_history() -> list[dict]:
    return [
        {"content": f"version {n}: " + "long " * (SIZE // 5), "change": "edited"}
        for n in range(EDITS)
    ]


@pytest.fixture
def huge(memory_server, alice):
    """Alice's memory whose history is ~1 MB (an import brings one in a single call)."""
    services.restore_memories(
        user=alice,
        memories=[{"content": "Alice edits her long diary", "history": _long_history()}],
    )
    return services.list_memories(user=alice)["memories"][0]["id"]


def test_it_lists_exports_and_undoes_a_memory_with_a_huge_history(huge, memory_server, alice, bob):
    services.add_thought(user=bob, content="Bob brews green tea")
    connected = (memory_server.client.connections, memory_server.client.failures)
    for _ in range(3):
        services.add_thought(user=alice, content="Alice adds a small one")
        page = services.list_memories(user=alice)
        assert huge in [m["id"] for m in page["memories"]]
        # Bob's memory works all along, on the same connection.
        assert services.search_memories(user=bob, query="green tea")["results"]

    listed = next(m for m in page["memories"] if m["id"] == huge)
    assert 0 < len(listed["history"]) < EDITS  # its newest versions
    assert listed["history"][-1]["content"].startswith(f"version {EDITS - 1}:")
    exported = transfer.export_memories(user=alice)
    (whole,) = [m for m in exported["memories"] if m["id"] == huge]
    versions = [h["content"].split(":")[0] for h in whole["history"]]
    assert versions == [f"version {n}" for n in range(EDITS)]
    found = services.get_memories(user=alice, ids=[huge], with_history=True)["memories"]
    assert len(found[0]["history"]) == EDITS  # what an undo puts back
    assert (memory_server.client.connections, memory_server.client.failures) == connected


async def test_the_memory_pages_socket_reads_the_whole_history(huge, alice):
    # What a live card of the memory page is drawn from (memory/web/consumers.py): every
    # version, as the page itself reads it, not only the first reply's newest ones.
    found = await services.aget_memories(user=alice, ids=[huge], with_history=True)

    versions = [h["content"].split(":")[0] for h in found["memories"][0]["history"]]
    assert versions == [f"version {n}" for n in range(EDITS)]


def test_a_page_the_server_cuts_short_is_completed(huge, alice):
    for n in range(30):
        services.restore_memories(
            user=alice, memories=[{"content": f"Alice's note {n} " + "word " * 3000}]
        )

    page = services.list_memories(user=alice, limit=25)

    assert len(page["memories"]) == 25
    assert page["total"] == 31
    second = services.list_memories(user=alice, offset=25, limit=25)
    ids = [m["id"] for m in page["memories"] + second["memories"]]
    assert len(set(ids)) == 31


def test_a_reply_too_large_for_the_client_fails_that_call_only(huge, memory_server, alice, bob):
    services.add_thought(user=bob, content="Bob brews green tea")
    small = mcp.MemoryClient(memory_server.target, max_reply_bytes=64 * 1024)
    try:
        assert small.wait_connected(60), small.last_error
        with pytest.raises(MemoryUnavailable, match="too large to read"):
            small.call_tool("list_memories", {"namespace": f"user-{alice.pk}"})
        found = small.call_tool(
            "search_memories", {"query": "green tea", "namespace": f"user-{bob.pk}"}
        )
        assert found["results"][0]["content"] == "Bob brews green tea"
        assert (small.connections, small.failures, small.status()) == (1, 0, "connected")
    finally:
        small.close()


def test_forgetting_many_long_memories_names_them_all(memory_server, alice):
    long = "Alice's beekeeping journal, hive number {n}: " + "bees honey wax " * 1300
    for n in range(0, 40, 20):
        services.restore_memories(
            user=alice, memories=[{"content": long.format(n=k)} for k in range(n, n + 20)]
        )

    forgotten = services.forget(user=alice, topic="beekeeping journal hive bees honey")

    assert len(forgotten["removed"]) == 40  # ~1.6 MB of text named, in previews
    assert all(r["content"].startswith("Alice's beekeeping journal") for r in forgotten["removed"])
    assert services.list_memories(user=alice)["total"] == 0
