"""Every tool through an in-memory MCP client session: results, bad input, namespaces."""

from __future__ import annotations

import pytest

from tests.ikario_rag.conftest import call

TOOLS = {
    "add_thought",
    "add_thoughts",
    "search_memories",
    "trace_concept_evolution",
    "check_consistency",
    "get_memories",
    "get_recent_memories",
    "delete_memory",
    "forget",
    "memory_stats",
    # Added for the web app's memory page (docs/MEMORY_TOOLS.md).
    "list_memories",
    "update_memory",
    "restore_memories",
    "forget_all",
}


async def test_it_lists_exactly_the_contract_tools(client):
    listed = await client.list_tools()
    assert {tool.name for tool in listed.tools} == TOOLS


async def test_it_adds_a_thought_and_returns_the_full_record(client):
    error, added = await call(
        client,
        "add_thought",
        content="Mickael part en Grèce en février",
        context={
            "category": "thematique",
            "kind": "fact",
            "tags": ["voyage"],
            "concepts": ["vacances"],
            "emotions": ["joie"],
            "subjects": ["mickael"],
            "date": "2026-01-17T22:19:00Z",
            "source": "conversation:12",
        },
    )
    assert not error and added["status"] == "created"
    error, got = await call(client, "get_memories", ids=[added["id"]])
    assert not error
    record = got["memories"][0]
    assert record["content"] == "Mickael part en Grèce en février"
    assert record["namespace"] == "default"
    assert record["metadata"] == {
        "category": "thematique",
        "kind": "fact",
        "tags": ["voyage"],
        "concepts": ["vacances"],
        "emotions": ["joie"],
        "subjects": ["mickael"],
        "date": "2026-01-17T22:19:00Z",
        "created_at": record["metadata"]["created_at"],
        "expires_at": None,
        "source": "conversation:12",
    }


async def test_it_defaults_the_context(client):
    _, added = await call(client, "add_thought", content="Une pensée sans contexte")
    _, got = await call(client, "get_memories", ids=[added["id"]])
    meta = got["memories"][0]["metadata"]
    assert (meta["category"], meta["kind"], meta["source"]) == ("contextuelle", "thought", None)
    assert meta["date"] == meta["created_at"]


async def test_it_adds_a_batch_and_counts_outcomes(client):
    error, out = await call(
        client,
        "add_thoughts",
        items=[
            {"content": "Alice aime le thé", "context": {"kind": "note"}},
            {"content": "Bob joue du piano"},
            {"content": "Alice aime le thé", "context": {"kind": "note"}},
        ],
    )
    assert not error
    assert (out["created"], out["updated"], out["duplicates"]) == (2, 0, 1)
    assert out["ids"][0] == out["ids"][2]


async def test_it_finds_a_memory_in_every_search_mode(client):
    await call(client, "add_thought", content="David habite à Ordizan dans les Pyrénées")
    await call(client, "add_thought", content="The quarterly report is due on Friday")
    for mode in ("hybrid", "semantic", "text"):
        error, found = await call(client, "search_memories", query="Ordizan", mode=mode)
        assert not error
        assert found["mode_used"] == mode
        assert found["results"][0]["content"] == "David habite à Ordizan dans les Pyrénées"
        first = found["results"][0]
        assert 0.0 <= first["relevance_score"] <= 1.0 and "distance" in first


async def test_it_filters_search_by_category_kind_tags_and_dates(client):
    await call(
        client,
        "add_thought",
        content="Réunion projet Ikario en janvier",
        context={
            "category": "fondatrice",
            "kind": "note",
            "tags": ["ikario"],
            "date": "2026-01-10",
        },
    )
    await call(
        client,
        "add_thought",
        content="Réunion projet Ikario en mars",
        context={
            "category": "contextuelle",
            "kind": "summary",
            "tags": ["x"],
            "date": "2026-03-10",
        },
    )

    async def contents(**filters):
        _, found = await call(client, "search_memories", query="réunion projet Ikario", **filters)
        return [r["content"] for r in found["results"]]

    assert await contents(filter_category="fondatrice") == ["Réunion projet Ikario en janvier"]
    assert await contents(kinds=["summary"]) == ["Réunion projet Ikario en mars"]
    assert await contents(tags=["ikario"]) == ["Réunion projet Ikario en janvier"]
    assert await contents(date_from="2026-02-01") == ["Réunion projet Ikario en mars"]
    assert await contents(date_to="2026-02-01T00:00:00Z") == ["Réunion projet Ikario en janvier"]


async def test_it_keeps_clearly_relevant_memories_above_the_default_threshold(client):
    # "dev = Mickael" (a short fact) was lost at 0.38 with a plain cosine cut at 0.5.
    await call(client, "add_thought", content="dev = Mickael", context={"kind": "fact"})
    await call(
        client, "add_thought", content="La réunion budget est reportée", context={"kind": "fact"}
    )
    _, found = await call(client, "search_memories", query="dev", n_results=10)
    scores = {r["content"]: r["relevance_score"] for r in found["results"]}
    assert scores["dev = Mickael"] >= 0.5
    assert scores.get("La réunion budget est reportée", 0.0) < 0.5


async def test_it_lists_recent_memories_newest_first(client):
    for text in ("premier souvenir", "deuxième souvenir", "troisième souvenir"):
        await call(client, "add_thought", content=text, context={"kind": "note"})
    await call(client, "add_thought", content="un fait", context={"kind": "fact"})
    _, recent = await call(client, "get_recent_memories", limit=2, kinds=["note"])
    assert [m["content"] for m in recent["memories"]] == ["troisième souvenir", "deuxième souvenir"]


async def test_it_deletes_a_memory(client):
    _, added = await call(client, "add_thought", content="à supprimer")
    assert await call(client, "delete_memory", id=added["id"], reason="obsolète") == (
        False,
        {"deleted": True},
    )
    assert await call(client, "delete_memory", id=added["id"]) == (False, {"deleted": False})
    error, message = await call(client, "get_memories", ids=[added["id"]])
    assert error and "unknown memory id" in message


async def test_it_reports_stats_per_namespace_and_overall(client):
    await call(client, "add_thought", content="un", context={"kind": "fact"}, namespace="a")
    await call(client, "add_thought", content="deux", context={"kind": "note"}, namespace="b")
    _, stats_a = await call(client, "memory_stats", namespace="a")
    assert stats_a["total_memories"] == 1 and stats_a["by_kind"] == {"fact": 1}
    assert stats_a["by_category"] == {"contextuelle": 1}
    assert stats_a["embedding_model"] == "all-MiniLM-L6-v2" and stats_a["index_bytes"] > 0
    assert stats_a["last_save"]
    _, overall = await call(client, "memory_stats")
    assert overall["total_memories"] == 2


async def test_it_never_reads_or_writes_outside_the_namespace(client):
    _, mine = await call(
        client, "add_thought", content="Le coffre est rangé au grenier", namespace="alice"
    )
    await call(client, "add_thought", content="Bob aime la voile", namespace="bob")
    _, found = await call(client, "search_memories", query="coffre au grenier", namespace="bob")
    assert all("coffre" not in r["content"] for r in found["results"])
    error, _ = await call(client, "get_memories", ids=[mine["id"]], namespace="bob")
    assert error
    assert await call(client, "delete_memory", id=mine["id"], namespace="bob") == (
        False,
        {"deleted": False},
    )
    _, recent = await call(client, "get_recent_memories", namespace="bob")
    assert [m["content"] for m in recent["memories"]] == ["Bob aime la voile"]
    _, forgotten = await call(client, "forget", topic="coffre au grenier", namespace="bob")
    assert all("coffre" not in r["content"] for r in forgotten["removed"])
    _, still = await call(client, "get_memories", ids=[mine["id"]], namespace="alice")
    assert still["memories"][0]["content"] == "Le coffre est rangé au grenier"


BAD_CALLS = [
    ("add_thought", {}, "content"),
    ("add_thought", {"content": ""}, "content"),
    ("add_thought", {"content": "   <private>tout</private> "}, "content is empty"),
    ("add_thought", {"content": 42}, "content"),
    ("add_thought", {"content": "x", "context": {"category": "autre"}}, "context.category"),
    ("add_thought", {"content": "x", "context": {"kind": "dream"}}, "context.kind"),
    ("add_thought", {"content": "x", "context": {"tags": "solo"}}, "context.tags"),
    ("add_thought", {"content": "x", "context": {"date": "hier"}}, "context.date"),
    ("add_thought", {"content": "x", "context": {"ttl": "7 jours"}}, "ttl"),
    ("add_thought", {"content": "x", "context": {"ttl": "0d"}}, "ttl"),
    ("add_thought", {"content": "x", "context": {"dedup": "no"}}, "context.dedup"),
    ("add_thought", {"content": "x", "context": {"colour": "red"}}, "unknown field"),
    ("add_thought", {"content": "x", "namespace": ""}, "namespace"),
    ("add_thoughts", {"items": []}, "items"),
    ("add_thoughts", {"items": [{"context": {}}]}, "items[0]"),
    ("add_thoughts", {"items": [{"content": "ok"}, {"content": ""}]}, "items[1]"),
    ("search_memories", {}, "query"),
    ("search_memories", {"query": " "}, "query"),
    ("search_memories", {"query": "x", "n_results": 0}, "n_results"),
    ("search_memories", {"query": "x", "n_results": 101}, "n_results"),
    ("search_memories", {"query": "x", "n_results": "many"}, "n_results"),
    ("search_memories", {"query": "x", "mode": "fuzzy"}, "mode"),
    ("search_memories", {"query": "x", "filter_category": "autre"}, "filter_category"),
    ("search_memories", {"query": "x", "kinds": ["dream"]}, "kinds"),
    ("search_memories", {"query": "x", "date_from": "2026-13-45"}, "date_from"),
    (
        "search_memories",
        {"query": "x", "date_from": "2026-03-01", "date_to": "2026-01-01"},
        "date_from",
    ),
    ("trace_concept_evolution", {"concept": ""}, "concept"),
    ("trace_concept_evolution", {"concept": "x", "limit": 0}, "limit"),
    ("check_consistency", {"statement": ""}, "statement"),
    ("get_memories", {"ids": []}, "ids"),
    ("get_memories", {"ids": "abc"}, "ids"),
    ("get_memories", {"ids": ["nope"]}, "unknown memory id"),
    ("get_recent_memories", {"limit": 500}, "limit"),
    ("get_recent_memories", {"kinds": ["dream"]}, "kinds"),
    ("delete_memory", {"id": ""}, "id"),
    ("delete_memory", {}, "id"),
    ("forget", {"topic": ""}, "topic"),
    ("forget", {"topic": "x", "min_score": 1.5}, "min_score"),
    ("forget", {"topic": "x", "dry_run": "maybe"}, "dry_run"),
    ("memory_stats", {"namespace": ""}, "namespace"),
]


@pytest.mark.parametrize(("tool", "arguments", "says"), BAD_CALLS)
async def test_it_rejects_bad_arguments_with_a_one_line_tool_error(client, tool, arguments, says):
    error, message = await call(client, tool, **arguments)
    assert error, message
    assert says in message
    assert "\n" not in message.strip()
    # The server is still alive and what it stored is intact.
    ok, stats = await call(client, "memory_stats")
    assert not ok and stats["total_memories"] >= 0


async def test_it_drops_nul_bytes_and_control_characters_from_what_it_stores(client, memory):
    _, added = await call(
        client,
        "add_thought",
        content="Le code\x00 est\x07 ici",
        context={"tags": ["ta\x00g"], "source": "conv\x1b:12"},
    )
    _, got = await call(client, "get_memories", ids=[added["id"]])
    record = got["memories"][0]
    assert record["content"] == "Le code est ici"
    assert (record["metadata"]["tags"], record["metadata"]["source"]) == (["tag"], "conv:12")
    error, message = await call(client, "memory_stats", namespace="a\x00b")
    assert error and "namespace" in message
