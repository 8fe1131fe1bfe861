"""forget, concept evolution timeline and the consistency check."""

from __future__ import annotations

from tests.ikario_rag.conftest import call


async def _facts(client, *items):
    ids = []
    for content, date in items:
        _, added = await call(
            client, "add_thought", content=content, context={"kind": "note", "date": date}
        )
        ids.append(added["id"])
    return ids


async def test_it_forgets_a_topic_and_nothing_else(client):
    await _facts(
        client,
        ("Mickael part en Grèce en février", "2026-01-10"),
        ("Les vacances en Grèce seront à Naxos", "2026-01-12"),
        ("David est mon frère", "2026-01-13"),
        ("Le budget du projet Ikario est validé", "2026-01-14"),
    )
    _, preview = await call(client, "forget", topic="vacances en Grèce", dry_run=True)
    removed = {r["content"] for r in preview["removed"]}
    assert "Les vacances en Grèce seront à Naxos" in removed
    assert removed.isdisjoint({"David est mon frère", "Le budget du projet Ikario est validé"})
    _, stats = await call(client, "memory_stats")
    assert stats["total_memories"] == 4  # dry run: nothing gone
    _, done = await call(client, "forget", topic="vacances en Grèce")
    assert {r["content"] for r in done["removed"]} == removed
    _, recent = await call(client, "get_recent_memories")
    assert {m["content"] for m in recent["memories"]} == {
        "David est mon frère",
        "Le budget du projet Ikario est validé",
    }


async def test_it_traces_a_concept_as_a_dated_timeline(client):
    await _facts(
        client,
        ("Mickael veut apprendre le piano", "2026-03-01"),
        ("Mickael apprend le piano avec un professeur", "2026-01-05"),
        ("Mickael a arrêté le piano", "2026-06-20"),
        ("La voiture est au garage", "2026-02-01"),
    )
    error, out = await call(client, "trace_concept_evolution", concept="piano")
    assert not error
    timeline = out["timeline"]
    assert [e["date"][:10] for e in timeline] == ["2026-01-05", "2026-03-01", "2026-06-20"]
    assert timeline[0]["evolution"] == "first mention"
    assert "55 days later" in timeline[1]["evolution"]
    assert "new: veut" in timeline[1]["evolution"]
    assert "arrete" in timeline[2]["evolution"]
    _, short = await call(client, "trace_concept_evolution", concept="piano", limit=2)
    assert len(short["timeline"]) == 2


async def test_it_flags_a_changed_value_as_a_contradiction(client):
    await _facts(
        client,
        ("Mickael habite à Paris", "2026-01-01"),
        ("Mickael a un fils", "2026-01-02"),
    )
    _, out = await call(client, "check_consistency", statement="Mickael habite à Lyon")
    assert [c["content"] for c in out["contradictions"]] == ["Mickael habite à Paris"]
    assert "paris" in out["contradictions"][0]["reason"]
    assert out["consistency_score"] < 0.5


async def test_it_flags_negation_antonyms_and_numbers(client):
    await _facts(
        client,
        ("Alice aime le jazz", "2026-01-01"),
        ("Bob has 2 cats at home", "2026-01-02"),
        ("Claire boit du café le matin", "2026-01-03"),
    )
    _, hate = await call(client, "check_consistency", statement="Alice déteste le jazz")
    assert "antonyms" in hate["contradictions"][0]["reason"]
    _, cats = await call(client, "check_consistency", statement="Bob has 3 cats at home")
    assert cats["contradictions"][0]["reason"] == "numbers differ: 3 vs 2"
    _, same = await call(client, "check_consistency", statement="Bob has 2 cats at home")
    assert same["contradictions"] == []
    _, neg = await call(
        client, "check_consistency", statement="Claire ne boit jamais de café le matin"
    )
    assert "polarity" in neg["contradictions"][0]["reason"]


async def test_it_reports_support_and_full_consistency_for_an_agreeing_statement(client):
    await _facts(client, ("Mickael part en Grèce en février", "2026-01-10"))
    _, out = await call(
        client, "check_consistency", statement="Mickael part en Grèce en février 2026"
    )
    assert out["contradictions"] == []
    assert out["consistency_score"] == 1.0
    assert out["supporting"][0]["content"] == "Mickael part en Grèce en février"
