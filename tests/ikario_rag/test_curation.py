"""The memory page's tools through an in-memory MCP session: list_memories (browse, filter,
page), update_memory (edit in place, history), restore_memories (undo, import) and
forget_all (reset), each inside its namespace only."""

from __future__ import annotations

from tests.ikario_rag.conftest import call, sql


async def _add(client, content, namespace="default", **context):
    error, added = await call(
        client, "add_thought", content=content, context=context, namespace=namespace
    )
    assert not error, added
    return added["id"]


async def _contents(client, **arguments):
    error, page = await call(client, "list_memories", **arguments)
    assert not error, page
    return [m["content"] for m in page["memories"]], page["total"]


# -- list_memories -----------------------------------------------------------------------


async def test_it_lists_memories_newest_first_a_page_at_a_time(client):
    for n in range(5):
        await _add(client, f"Note number {n} about the garden")
    await _add(client, "Someone else's note", namespace="user-2")

    assert await _contents(client, limit=2) == (
        ["Note number 4 about the garden", "Note number 3 about the garden"],
        5,
    )
    assert await _contents(client, offset=4, limit=2) == (["Note number 0 about the garden"], 5)
    assert await _contents(client, offset=10) == ([], 5)
    assert await _contents(client, namespace="user-2") == (["Someone else's note"], 1)


async def test_it_filters_the_list_by_kind_category_tags_dates_and_source(client):
    await _add(
        client,
        "Ski à Chamonix",
        kind="fact",
        category="fondatrice",
        tags=["Montagne"],
        date="2025-01-10",
        source="conversation:1:2",
    )
    await _add(
        client,
        "Réunion budget",
        kind="note",
        category="contextuelle",
        tags=["travail"],
        date="2026-03-01",
        source="import:notes",
    )

    assert await _contents(client, kinds=["fact"]) == (["Ski à Chamonix"], 1)
    assert await _contents(client, category="contextuelle") == (["Réunion budget"], 1)
    # Tags compare case and accents aside, as search's tag filter does.
    assert await _contents(client, tags=["montagne"]) == (["Ski à Chamonix"], 1)
    assert await _contents(client, tags=["montagne", "TRAVAIL"]) == (
        ["Réunion budget", "Ski à Chamonix"],
        2,
    )
    assert await _contents(client, date_from="2026-01-01") == (["Réunion budget"], 1)
    assert await _contents(client, date_to="2025-12-31T23:59:59Z") == (["Ski à Chamonix"], 1)
    assert await _contents(client, source_prefix="conversation:") == (["Ski à Chamonix"], 1)
    # A prefix is text, not a pattern.
    assert await _contents(client, source_prefix="%") == ([], 0)


async def test_it_returns_full_records_with_their_history(client):
    memory_id = await _add(client, "Lives in Paris", kind="fact")
    _, page = await call(client, "list_memories")
    record = page["memories"][0]
    assert record["id"] == memory_id and record["history"] == []
    assert record["metadata"]["kind"] == "fact"


async def test_it_refuses_a_bad_list_request_naming_the_argument(client):
    error, message = await call(client, "list_memories", offset=-1)
    assert error and message.startswith("offset")
    error, message = await call(client, "list_memories", limit=1000)
    assert error and message.startswith("limit")
    error, message = await call(
        client, "list_memories", date_from="2026-02-01", date_to="2026-01-01"
    )
    assert error and message == "date_from is after date_to"
    error, message = await call(client, "list_memories", category="joyeuse")
    assert error and message.startswith("category")


# -- update_memory -----------------------------------------------------------------------


async def test_it_edits_a_memory_in_place_and_keeps_the_previous_version(client, memory):
    memory_id = await _add(client, "Alice lives in Paris", tags=["city"], category="contextuelle")

    error, result = await call(
        client,
        "update_memory",
        id=memory_id,
        content="Alice lives in Lyon now",
        category="fondatrice",
        tags=["city", "move"],
    )

    assert not error and result == {"id": memory_id, "status": "updated", "indexed": True}
    _, got = await call(client, "get_memories", ids=[memory_id])
    record = got["memories"][0]
    assert record["content"] == "Alice lives in Lyon now"
    assert record["metadata"]["category"] == "fondatrice"
    assert record["metadata"]["tags"] == ["city", "move"]
    _, page = await call(client, "list_memories")
    [previous] = page["memories"][0]["history"]
    assert previous["content"] == "Alice lives in Paris"
    assert previous["category"] == "contextuelle" and previous["tags"] == ["city"]
    assert previous["change"] == "edited"
    # Re-indexed: the new words are found in every mode, the old ones no more in text.
    for mode in ("text", "semantic", "hybrid"):
        _, found = await call(client, "search_memories", query="Lyon", mode=mode)
        assert found["results"][0]["id"] == memory_id, mode
    _, found = await call(client, "search_memories", query="Paris", mode="text")
    assert found["results"] == []
    assert sql(memory, "SELECT indexed FROM memories WHERE id = ?", memory_id)[0][0] == 1


async def test_it_keeps_what_an_edit_does_not_name(client):
    memory_id = await _add(client, "Bob plays the cello", tags=["music"], kind="fact")
    error, result = await call(client, "update_memory", id=memory_id, category="thematique")
    assert not error and result["status"] == "updated"
    _, got = await call(client, "get_memories", ids=[memory_id])
    meta = got["memories"][0]["metadata"]
    assert got["memories"][0]["content"] == "Bob plays the cello"
    assert (meta["category"], meta["tags"], meta["kind"]) == ("thematique", ["music"], "fact")

    error, result = await call(client, "update_memory", id=memory_id, category="thematique")
    assert not error and result == {"id": memory_id, "status": "unchanged"}


async def test_it_refuses_an_edit_of_an_unknown_or_foreign_memory(client):
    foreign = await _add(client, "Carol's secret", namespace="user-9")
    error, message = await call(client, "update_memory", id=foreign, content="Hijacked")
    assert error and message.startswith("unknown memory id")
    _, got = await call(client, "get_memories", ids=[foreign], namespace="user-9")
    assert got["memories"][0]["content"] == "Carol's secret"


async def test_it_strips_private_spans_from_an_edit(client):
    memory_id = await _add(client, "Dentist on Tuesday")
    error, message = await call(
        client, "update_memory", id=memory_id, content="<private>my PIN is 1234</private>"
    )
    assert error and "empty once <private> spans are removed" in message
    await call(
        client,
        "update_memory",
        id=memory_id,
        content="Dentist on Friday <private>PIN 1234</private>",
    )
    _, got = await call(client, "get_memories", ids=[memory_id])
    assert got["memories"][0]["content"] == "Dentist on Friday"


# -- restore_memories --------------------------------------------------------------------


async def test_it_restores_a_deleted_memory_with_its_id_dates_and_history(client):
    memory_id = await _add(
        client, "Paul runs marathons", kind="fact", tags=["sport"], date="2024-05-01"
    )
    await call(client, "update_memory", id=memory_id, content="Paul runs ultra marathons")
    _, page = await call(client, "list_memories")
    record = page["memories"][0]
    await call(client, "delete_memory", id=memory_id)

    error, out = await call(client, "restore_memories", memories=[record])

    assert not error and out["restored"] == 1 and out["ids"] == [memory_id]
    _, page = await call(client, "list_memories")
    assert page["memories"] == [record]
    _, found = await call(client, "search_memories", query="ultra marathons", mode="semantic")
    assert found["results"][0]["id"] == memory_id


async def test_it_restores_twice_without_adding_anything(client):
    records = []
    for text in ("Likes green tea", "Has a cat named Miso"):
        await _add(client, text, source="conversation:4:5")
    _, page = await call(client, "list_memories")
    records = page["memories"]

    # The same export into another namespace: new ids (ids are global), same everything else.
    error, first = await call(client, "restore_memories", memories=records, namespace="user-7")
    assert not error and (first["restored"], first["duplicates"]) == (2, 0)
    assert all(r["previous_id"] for r in first["results"])
    error, second = await call(client, "restore_memories", memories=records, namespace="user-7")
    assert not error and (second["restored"], second["duplicates"]) == (0, 2)
    assert second["ids"] == first["ids"]
    _, copy = await call(client, "list_memories", namespace="user-7")
    assert [m["content"] for m in copy["memories"]] == [m["content"] for m in records]
    assert [m["metadata"]["created_at"] for m in copy["memories"]] == [
        m["metadata"]["created_at"] for m in records
    ]
    assert {m["metadata"]["source"] for m in copy["memories"]} == {"conversation:4:5"}


async def test_it_skips_expired_records_on_restore(client):
    error, out = await call(
        client,
        "restore_memories",
        memories=[
            {"content": "Old reminder", "metadata": {"expires_at": "2020-01-01T00:00:00Z"}},
            {"content": "Fresh reminder"},
        ],
    )
    assert not error and (out["restored"], out["expired"]) == (1, 1)
    assert await _contents(client) == (["Fresh reminder"], 1)


async def test_it_names_the_bad_field_of_a_restored_record(client):
    error, message = await call(
        client,
        "restore_memories",
        memories=[{"content": "ok"}, {"content": "bad", "metadata": {"kind": "dream"}}],
    )
    assert error and message.startswith("memories[1].metadata.kind")
    error, message = await call(
        client, "restore_memories", memories=[{"content": "x", "metadata": {"colour": "red"}}]
    )
    assert error and "colour" in message
    assert await _contents(client) == ([], 0)


# -- forget_all --------------------------------------------------------------------------


async def test_it_resets_one_namespace_only_when_confirmed(client):
    await _add(client, "Mine 1", namespace="user-1")
    await _add(client, "Mine 2", namespace="user-1")
    await _add(client, "Theirs", namespace="user-2")

    error, message = await call(client, "forget_all", confirm="yes", namespace="user-1")
    assert error and message == "confirm must repeat the namespace's name"
    assert (await _contents(client, namespace="user-1"))[1] == 2

    error, out = await call(client, "forget_all", confirm="user-1", namespace="user-1")
    assert not error and out == {"deleted": 2}
    assert await _contents(client, namespace="user-1") == ([], 0)
    assert await _contents(client, namespace="user-2") == (["Theirs"], 1)
    _, found = await call(client, "search_memories", query="Mine", namespace="user-1")
    assert found["results"] == []


async def test_it_gives_a_records_history_only_when_asked(client):
    memory_id = await _add(client, "Works at Acme")
    await call(client, "update_memory", id=memory_id, content="Works at Globex")
    _, plain = await call(client, "get_memories", ids=[memory_id])
    _, full = await call(client, "get_memories", ids=[memory_id], with_history=True)
    assert "history" not in plain["memories"][0]
    assert [h["content"] for h in full["memories"][0]["history"]] == ["Works at Acme"]
