"""Vectors written behind the add (ikario_rag/indexer.py): what a client sees.

An add returns once its records are committed; the indexer thread embeds them. A search
right after still finds the new memory (by meaning too), a server killed before its indexer
ran loses nothing (the start-up repair indexes what was pending), the fact-like kinds still
dedup at write time, and every turn of a batch ends with the vector of its final text.
"""

from __future__ import annotations

import sqlite3
import time

import numpy as np

from ikario_rag import validate
from ikario_rag.index import VectorIndex
from tests.ikario_rag.conftest import QUANTISED_COSINE, READY_WAIT, call, sql

GREYHOUND = "Ingrid adopted a three-legged greyhound called Biscuit last spring"


def _turns(count: int, day: str) -> list[dict]:
    """`count` dated turns of one session, each a different sentence."""
    names = ["Ada", "Bilal", "Chloé", "Dario", "Esme", "Femi", "Greta", "Hugo"]
    things = ["kayak", "violin", "sourdough", "telescope", "garden", "novel", "bicycle"]
    return [
        {
            "content": f"{names[i % len(names)]}: turn {i}, I talked about my "
            f"{things[i % len(things)]} for the {i}th time.",
            "context": {"kind": "conversation", "date": day},
        }
        for i in range(count)
    ]


def _pending(server, namespace: str) -> int:
    return server.tool("memory_stats", namespace=namespace)["unindexed"]


def test_it_finds_a_memory_searched_right_after_it_was_added(shared_server):
    namespace = "write-behind-read"
    added = shared_server.tool("add_thought", content=GREYHOUND, namespace=namespace)

    # No word in common with the memory: only its vector can find it, right away.
    meaning = shared_server.tool(
        "search_memories", query="new pet dog", mode="semantic", namespace=namespace
    )
    hybrid = shared_server.tool(
        "search_memories", query="Biscuit the greyhound", namespace=namespace
    )

    assert added["status"] == "created"
    assert [r["id"] for r in meaning["results"]] == [added["id"]]
    assert [r["id"] for r in hybrid["results"]] == [added["id"]]
    assert _pending(shared_server, namespace) == 0


def test_it_finds_a_conversation_just_saved_by_text_without_waiting_for_its_vector(
    shared_server,
):
    # Conversation turns come in bulk (an auto-save, an import): a search does not embed
    # them first (the chat's auto-recall would wait), its text side finds them at once.
    namespace = "write-behind-conversation"
    shared_server.tool(
        "add_thoughts",
        items=[{"content": GREYHOUND, "context": {"kind": "conversation"}}],
        namespace=namespace,
    )

    hybrid = shared_server.tool(
        "search_memories", query="Biscuit the greyhound", namespace=namespace
    )

    assert [r["content"] for r in hybrid["results"]] == [GREYHOUND]


def test_it_indexes_after_a_restart_what_a_killed_server_had_not_indexed(spawn, tmp_path):
    index_dir = tmp_path / "index"
    server = spawn(index_dir=index_dir)
    server.initialize()
    namespace = "killed"
    # A backlog the indexer works through oldest first, then the memory the test follows.
    server.tool("add_thoughts", items=_turns(200, "2024-03-02T10:00:00"), namespace=namespace)
    last = server.tool("add_thought", content=GREYHOUND, namespace=namespace)
    server.kill()  # SIGKILL: no clean exit, no chance to index

    with sqlite3.connect(index_dir / "memories.sqlite3") as db:
        (was_pending,) = db.execute(
            "SELECT COUNT(*) FROM memories WHERE id = ? AND indexed = 0", (last["id"],)
        ).fetchone()
    assert was_pending == 1  # the state this test is about: committed, no vector yet

    again = spawn(index_dir=index_dir)
    again.initialize()
    deadline = time.monotonic() + READY_WAIT
    while _pending(again, namespace) and time.monotonic() < deadline:
        time.sleep(0.2)  # the start-up repair, not a search, indexes the pending rows
    retried = again.tool("add_thought", content=GREYHOUND, namespace=namespace)
    # Ten results: the neighbour boost can lift several adjacent synthetic turns (relevance
    # 0) above the memory, and which ones depends on how far the killed server had indexed.
    found = again.tool(
        "search_memories",
        query="Who adopted a greyhound?",
        mode="semantic",
        n_results=10,
        namespace=namespace,
    )
    stats = again.tool("memory_stats", namespace=namespace)
    assert again.close() == 0

    assert retried == {"id": last["id"], "status": "duplicate"}
    # Found by meaning: the only relevant result (not always the first, see above).
    relevant = [r["id"] for r in found["results"] if r["relevance_score"] > 0.5]
    assert relevant == [last["id"]]
    assert (stats["total_memories"], stats["unindexed"]) == (201, 0)
    with sqlite3.connect(index_dir / "memories.sqlite3") as db:
        records = {r[0] for r in db.execute("SELECT id FROM memories")}
    vectors = VectorIndex(index_dir / "chroma")
    try:
        assert vectors.ids(namespace) == records
    finally:
        vectors.close()


async def test_it_dedups_a_fact_that_follows_turns_written_behind(client):
    day = {"kind": "conversation", "date": "2024-05-01T09:00:00"}
    _, out = await call(
        client,
        "add_thoughts",
        items=[
            {"content": "Mickael s'est cassé l'épaule", "context": {"kind": "fact"}},
            {"content": "Léa: Comment va Mickael ?", "context": day},
            {"content": "Tom: Il s'est cassé l'épaule au ski.", "context": day},
            {
                "content": "Mickael s'est cassé l'épaule le 10 janvier 2026",
                "context": {"kind": "fact"},
            },
            {"content": "Mickael habite à Paris", "context": {"kind": "fact"}},
        ],
    )

    statuses = [r["status"] for r in out["results"]]
    assert statuses == ["created", "created", "created", "updated", "created"]
    assert out["results"][3]["replaced_id"] == out["ids"][0]
    # The fact-like kinds are indexed by the add itself; the turns behind it.
    assert [r.get("indexed") for r in out["results"]] == [True, False, False, True, True]
    _, facts = await call(client, "get_recent_memories", kinds=["fact"])
    assert [m["content"] for m in facts["memories"]] == [
        "Mickael habite à Paris",
        "Mickael s'est cassé l'épaule le 10 janvier 2026",
    ]


async def test_it_gives_every_turn_of_a_batch_the_vector_of_its_final_text(client, memory):
    day = "2024-06-01T18:00:00"
    memory.indexer.stop()  # nothing indexed until the flush below: every row still pending
    _, batch = await call(client, "add_thoughts", items=_turns(12, day), namespace="ctx")
    _, single = await call(
        client,
        "add_thought",
        content="Ada: and that was the last thing I said.",
        context={"kind": "conversation", "date": day},
        namespace="ctx",
    )
    _, stats = await call(client, "memory_stats", namespace="ctx")
    assert stats["unindexed"] == 13

    memory.flush()

    _, stats = await call(client, "memory_stats", namespace="ctx")
    assert stats["unindexed"] == 0
    ids = [*batch["ids"], single["id"]]
    rows = {r["id"]: r for r in sql(memory, "SELECT id, content, search_text FROM memories")}
    contents = [rows[i]["content"] for i in ids]
    for pos, memory_id in enumerate(ids):
        indexed = rows[memory_id]["search_text"]
        if pos:  # the turn before it, and (all but the last) the turn after it
            assert contents[pos - 1] in indexed
        if pos < len(ids) - 1:
            assert contents[pos + 1] in indexed
    held = memory.vectors.vectors("ctx", ids)
    assert set(held) == set(ids)
    expected = memory.embedder.encode([rows[i]["search_text"] for i in ids])
    cosines = [float(np.dot(held[i], expected[p])) for p, i in enumerate(ids)]
    # A new index's turns are embedded by the quantised model: ~0.99 to fp32 (a vector of
    # the turn without its context would be far lower).
    assert min(cosines) > QUANTISED_COSINE


async def test_it_writes_no_vector_for_a_memory_deleted_before_it_was_indexed(client, memory):
    memory.indexer.stop()
    _, kept = await call(client, "add_thought", content="La clé est sous le pot", namespace="d")
    _, gone = await call(client, "add_thought", content="Le vélo est rouge", namespace="d")
    _, deleted = await call(client, "delete_memory", id=gone["id"], reason="test", namespace="d")

    memory.flush()

    assert deleted["deleted"] is True
    assert memory.vectors.ids("d") == {kept["id"]}
    _, health = await call(client, "memory_stats")
    assert health["health"]["unindexed"] == 0


async def test_it_rewrites_a_vector_whose_turn_changed_while_it_was_written(client, memory):
    memory.indexer.stop()
    session = {"kind": "conversation", "date": "2024-07-01T08:00:00"}
    _, first = await call(client, "add_thought", content="Ada: I sold my kayak.", context=session)
    _, doomed = await call(client, "add_thought", content="Hugo: Typo, ignore.", namespace="x")
    upsert = memory.vectors.upsert
    meanwhile = []

    def upsert_while_others_write(*args):
        upsert(*args)
        if not meanwhile:  # as the first vectors go in: a following turn arrives, one is deleted
            follow = validate.new_memory("Bilal: Why did you sell it?", session)
            meanwhile.append(memory.add("default", [follow])[0])
            memory.delete("x", [doomed["id"]])

    memory.vectors.upsert = upsert_while_others_write
    try:
        memory.flush()
    finally:
        memory.vectors.upsert = upsert

    text = sql(memory, "SELECT search_text FROM memories WHERE id = ?", first["id"])[0][0]
    assert "Why did you sell it?" in text
    held = memory.vectors.vectors("default", [first["id"], meanwhile[0]["id"]])
    expected = memory.embedder.encode([text])[0]
    assert float(np.dot(held[first["id"]], expected)) > QUANTISED_COSINE
    assert memory.vectors.ids("x") == set()
    assert memory.store.unindexed_count() == 0
