"""Storing rules: private spans, dedup calibration, TTL expiry and purge, repair."""

from __future__ import annotations

from datetime import timedelta

from ikario_rag import text
from tests.ikario_rag.conftest import READY_WAIT, call, sql


async def test_it_never_stores_or_embeds_private_spans(client, memory):
    _, added = await call(
        client,
        "add_thought",
        content=(
            "Mon mot de passe <private>hunter2</private> est dans le coffre <PRIVATE>x9</PRIVATE>"
        ),
        context={"tags": ["<private>secret-tag</private>perso"]},
    )
    _, got = await call(client, "get_memories", ids=[added["id"]])
    record = got["memories"][0]
    assert record["content"] == "Mon mot de passe est dans le coffre"
    assert record["metadata"]["tags"] == ["perso"]
    raw = sql(memory, "SELECT content, search_text FROM memories")[0]
    assert "hunter2" not in raw["content"] and "hunter2" not in raw["search_text"]
    _, found = await call(client, "search_memories", query="hunter2", mode="text")
    assert found["results"] == []


async def test_it_updates_a_fact_that_is_restated_with_more_detail(client):
    _, first = await call(
        client, "add_thought", content="Mickael s'est cassé l'épaule", context={"kind": "fact"}
    )
    _, second = await call(
        client,
        "add_thought",
        content="Mickael s'est cassé l'épaule le 10 janvier 2026",
        context={"kind": "fact"},
    )
    assert second["status"] == "updated" and second["replaced_id"] == first["id"]
    _, recent = await call(client, "get_recent_memories")
    assert [m["content"] for m in recent["memories"]] == [
        "Mickael s'est cassé l'épaule le 10 janvier 2026"
    ]


async def test_it_keeps_different_facts_about_one_person_apart(client):
    _, paris = await call(
        client, "add_thought", content="Mickael habite à Paris", context={"kind": "fact"}
    )
    _, fils = await call(
        client, "add_thought", content="Mickael a un fils", context={"kind": "fact"}
    )
    assert (paris["status"], fils["status"]) == ("created", "created")
    _, stats = await call(client, "memory_stats")
    assert stats["total_memories"] == 2


async def test_it_keeps_the_replaced_text_in_the_history(client, memory):
    await call(
        client, "add_thought", content="Mickael s'est cassé l'épaule", context={"kind": "fact"}
    )
    _, second = await call(
        client,
        "add_thought",
        content="Mickael s'est cassé l'épaule le 10 janvier 2026",
        context={"kind": "fact"},
    )
    row = sql(memory, "SELECT history FROM memories WHERE id = ?", second["id"])[0]
    assert "Mickael s'est cassé l'épaule" in row["history"]


async def test_it_dedups_near_facts_only_within_the_same_kind_and_when_asked(client):
    await call(
        client, "add_thought", content="Mickael s'est cassé l'épaule", context={"kind": "fact"}
    )
    _, goal = await call(
        client,
        "add_thought",
        content="Mickael s'est cassé l'épaule le 10 janvier 2026",
        context={"kind": "goal"},
    )
    assert goal["status"] == "created"
    _, off = await call(
        client,
        "add_thought",
        content="Mickael s'est cassé l'épaule le 10 janvier 2026",
        context={"kind": "fact", "dedup": False},
    )
    assert off["status"] == "created"


async def test_it_treats_only_identical_text_as_duplicate_for_other_kinds(client):
    _, a = await call(client, "add_thought", content="Il pleut sur Lyon", context={"kind": "note"})
    _, b = await call(client, "add_thought", content="il pleut  sur Lyon", context={"kind": "note"})
    _, c = await call(
        client, "add_thought", content="Il pleut sur Lyon ce matin", context={"kind": "note"}
    )
    assert b == {"id": a["id"], "status": "duplicate"}
    assert c["status"] == "created"


async def test_it_hides_expired_memories_and_purges_them(client, memory):
    _, added = await call(
        client, "add_thought", content="Mickael est malade", context={"kind": "fact", "ttl": "1h"}
    )
    _, got = await call(client, "get_memories", ids=[added["id"]])
    expires = text.parse_date(got["memories"][0]["metadata"]["expires_at"])
    assert timedelta(minutes=59) < expires - text.now() <= timedelta(hours=1)
    # Let the hour pass: move the expiry into the past.
    memory.store.db.execute("UPDATE memories SET expires_ts = expires_ts - 7200")
    _, found = await call(client, "search_memories", query="Mickael malade")
    assert found["results"] == []
    _, recent = await call(client, "get_recent_memories")
    assert recent["memories"] == []
    assert memory.purge_expired() == 1
    assert sql(memory, "SELECT COUNT(*) FROM memories")[0][0] == 0
    assert memory.vectors.ids("default") == set()


async def test_it_finds_live_memories_ranked_below_a_page_of_expired_ones(client, memory):
    # 90 short (so best-ranked) matches expire: the text search's first page holds none alive.
    expired = [
        {"content": f"pluie Lyon {n}", "context": {"kind": "note", "ttl": "1h"}} for n in range(90)
    ]
    await call(client, "add_thoughts", items=expired)
    memory.store.db.execute("UPDATE memories SET expires_ts = expires_ts - 7200")
    live = [f"Il y a de la pluie sur Lyon ce matin de juin, jour {n}" for n in range(3)]
    await call(client, "add_thoughts", items=[{"content": c} for c in live])
    _, found = await call(client, "search_memories", query="pluie Lyon", mode="text", n_results=10)
    assert sorted(r["content"] for r in found["results"]) == sorted(live)


async def test_it_indexes_records_whose_vectors_were_lost_in_a_crash(client, memory):
    _, added = await call(client, "add_thought", content="Le chat s'appelle Pixel")
    memory.indexer.stop()  # no write-behind indexer either: only the repair indexes it
    # A crash between the record commit and the vector write leaves this state:
    memory.vectors.delete("default", [added["id"]])
    memory.store.db.execute("UPDATE memories SET indexed = 0")
    assert memory.repair()["records_indexed"] == 1
    _, found = await call(client, "search_memories", query="nom du chat", mode="semantic")
    assert found["results"][0]["id"] == added["id"]


async def test_it_rebuilds_all_vectors_on_reindex(client, memory):
    await call(client, "add_thought", content="Le vélo est rouge", namespace="n1")
    await call(client, "add_thought", content="La voiture est bleue", namespace="n2")
    assert memory.reindex()["records_indexed"] == 2
    _, found = await call(client, "search_memories", query="vélo", mode="semantic", namespace="n1")
    assert found["results"][0]["content"] == "Le vélo est rouge"


async def test_it_finds_a_conversation_turn_through_the_turns_around_it(client):
    session = {"kind": "conversation", "date": "2023-05-08T13:56:00"}
    question = "Melanie: Where did you spend your holiday in Greece?"
    answer = "Caroline: On a small island, it was wonderful."
    _, first = await call(client, "add_thought", content=question, context=session)
    _, second = await call(client, "add_thought", content=answer, context=session)
    _, third = await call(
        client,
        "add_thought",
        content="Melanie: Did you take the ferry to Naxos?",
        context=session,
    )
    await call(
        client,
        "add_thought",
        content="Melanie: Another day, another subject entirely.",
        context={"kind": "conversation", "date": "2023-06-01T10:00:00"},
    )
    # The answer never says "holiday" or "Greece": the question before it does.
    _, found = await call(client, "search_memories", query="holiday Greece", mode="text")
    assert second["id"] in [r["id"] for r in found["results"]]
    # The question never says "ferry": the turn after it (stored later) does.
    _, found = await call(client, "search_memories", query="ferry", mode="text")
    ids = [r["id"] for r in found["results"]]
    assert ids[:2] == [third["id"], second["id"]]
    # Another session is not context.
    _, found = await call(client, "search_memories", query="another subject", mode="text")
    assert [r["content"] for r in found["results"]] == [
        "Melanie: Another day, another subject entirely."
    ]


async def test_it_purges_expired_memories_periodically_in_the_background(make_host):
    from ikario_rag.app import build_server
    from tests.ikario_rag.conftest import InMemoryClient

    host = make_host(maintenance_interval=0.05)
    client = InMemoryClient(build_server(host))
    memory = host.runtime.memory()
    await call(client, "add_thought", content="Réunion à 15h", context={"ttl": "1h"})
    await call(client, "add_thought", content="Mickael a un fils")
    memory.store.db.execute("UPDATE memories SET expires_ts = expires_ts - 7200")
    # Two full cycles: one may have begun before the expiry moved.
    assert host.runtime.wait_for_cycle(host.runtime.cycles + 2, timeout=READY_WAIT)
    rows = sql(memory, "SELECT content FROM memories")
    assert [r["content"] for r in rows] == ["Mickael a un fils"]
