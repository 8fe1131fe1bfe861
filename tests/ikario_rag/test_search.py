"""Search ranking rules that need no model knowledge: a date the query names."""

from __future__ import annotations

from datetime import UTC, datetime

from ikario_rag import search, text, validate
from tests.ikario_rag.conftest import call


async def _diary(client) -> dict[str, str]:
    entries = {
        "2023-07-14T18:00:00": "The pottery class happened today and the pottery class was great",
        "2023-10-13T18:00:00": "Workshop cancelled by the rain, clay left to dry",
        "2023-12-02T18:00:00": "Bought a new kettle",
    }
    ids = {}
    for date, content in entries.items():
        _, added = await call(
            client, "add_thought", content=content, context={"kind": "note", "date": date}
        )
        ids[date[:10]] = added["id"]
    return ids


async def test_it_puts_memories_dated_on_the_day_the_query_names_first(client):
    ids = await _diary(client)
    _, plain = await call(client, "search_memories", query="What happened at the pottery class?")
    assert plain["results"][0]["id"] == ids["2023-07-14"]
    for query in (
        "What happened at the pottery class on 13 October, 2023?",
        "What happened at the pottery class on October 13, 2023?",
        "What happened at the pottery class in October 2023?",
    ):
        _, dated = await call(client, "search_memories", query=query)
        assert dated["results"][0]["id"] == ids["2023-10-13"], query
        # Ranking only: the relevance a client thresholds on is not inflated by the date.
        assert dated["results"][0]["relevance_score"] < 0.5


def test_it_reads_the_days_and_months_a_query_names():
    def day(y, m, d):
        return datetime(y, m, d, tzinfo=UTC)

    assert text.named_dates("on 13 October, 2023") == [(day(2023, 10, 13), day(2023, 10, 14))]
    assert text.named_dates("October 13th, 2023") == [(day(2023, 10, 13), day(2023, 10, 14))]
    assert text.named_dates("le 10 janvier 2026") == [(day(2026, 1, 10), day(2026, 1, 11))]
    assert text.named_dates("since 2023-05-08") == [(day(2023, 5, 8), day(2023, 5, 9))]
    assert text.named_dates("in December 2023") == [(day(2023, 12, 1), day(2024, 1, 1))]
    assert text.named_dates("What did Maria do in July?") == []
    assert text.named_dates("What happened in 2023?") == []
    assert text.named_dates("on 31 February, 2023") == []


def _indexed(memory) -> None:
    """Vectors are written behind the add: have every one written before searching (the
    vector side is part of what is tested)."""
    memory.flush()


async def _chat(client, namespace: str, turns: list[str]) -> list[str]:
    _, added = await call(
        client,
        "add_thoughts",
        namespace=namespace,
        items=[
            {"content": turn, "context": {"kind": "conversation", "date": "2024-03-02T10:00:00"}}
            for turn in turns
        ],
    )
    return [r["id"] for r in added["results"]]


async def test_it_puts_the_turns_of_the_speaker_the_query_names_first(client, memory):
    ids = await _chat(
        client,
        "speakers",
        [
            "Ravi: Sourdough bread again this weekend, I baked three loaves of bread and rolls.",
            "Odile: Nice! I made a lemon tart for my neighbours.",
            "Ravi: The bread rose so well, the oven was full of bread.",
            "Odile: I went hiking in the hills on Sunday.",
        ],
    )
    _indexed(memory)
    _, unnamed = await call(
        client, "search_memories", namespace="speakers", query="Did anyone bake bread?"
    )
    assert unnamed["results"][0]["id"] in (ids[0], ids[2])
    _, named = await call(
        client,
        "search_memories",
        namespace="speakers",
        query="Did Odile bake bread?",
    )
    # Odile's turns come before Ravi's, though Ravi's say "bread" and hers do not.
    assert {r["id"] for r in named["results"][:2]} == {ids[1], ids[3]}
    # Named first, then the other ("tell Ravi"): the question is about the first one's words.
    _, told = await call(
        client, "search_memories", namespace="speakers", query="Did Odile tell Ravi about bread?"
    )
    assert {r["id"] for r in told["results"][:2]} == {ids[1], ids[3]}
    # Both speakers named: neither is preferred, Ravi's bread is among the first two again.
    _, both = await call(
        client,
        "search_memories",
        namespace="speakers",
        query="Did Odile and Ravi bake bread?",
    )
    assert {ids[0], ids[2]} & {r["id"] for r in both["results"][:2]}


def test_it_reads_the_speaker_of_a_turn():
    assert search.speaker_of("Ravi: I baked bread.") == "ravi"
    assert search.speaker_of("Anne Marie: bonjour à tous") == "anne marie"
    assert search.speaker_of("Éloïse : salut") == "eloise"
    assert search.speaker_of("note: buy milk") is None
    assert search.speaker_of("At 10:30 we met") is None
    assert search.speaker_of("User: what is a good name for a cat?") == "user"
    assert search.speaker_of("A" * 100_000 + ": hi") is None
    assert search.speaker_of("\ud800: hi") is None


def test_it_says_the_named_speaker_in_the_first_person_for_the_vector_side():
    assert search.unnamed("What did Odile bake?", "odile", "I") == "what did I bake?"
    assert search.unnamed("Where is Odile's oven?", "odile", "I") == "where is my oven?"
    assert search.unnamed("Où Éloïse a-t-elle mangé ?", "eloise", "I") == "ou I a-t-elle mange ?"
    assert search.unnamed("What did Anne  Marie say?", "anne marie", "they") == "what did they say?"
    # A longer name holding the speaker's is left alone.
    assert search.unnamed("Did Odileta call?", "odile", "I") == "did odileta call?"


def test_it_keeps_the_first_ranking_when_the_second_vector_search_fails(memory, caplog):
    turns = [
        "Ravi: Sourdough bread again this weekend, I baked three loaves of bread and rolls.",
        "Odile: Nice! I made a lemon tart for my neighbours.",
        "Ravi: The bread rose so well, the oven was full of bread.",
        "Odile: I went hiking in the hills on Sunday.",
    ]
    context = {"kind": "conversation", "date": "2024-03-02T10:00:00"}
    added = memory.add("flaky", [validate.new_memory(t, context) for t in turns])
    _indexed(memory)
    ids = [r["id"] for r in added]
    first_query = memory.vectors.query
    calls: list[str] = []

    def query_once(*args, **kwargs):
        calls.append("query")
        if len(calls) > 1:
            raise RuntimeError("vector index unreadable")
        return first_query(*args, **kwargs)

    memory.vectors.query = query_once
    try:
        found = search.search(
            memory, "flaky", "Did Odile bake bread?", 4, search.Filters(), "hybrid"
        )
    finally:
        memory.vectors.query = first_query
    assert len(calls) == 2
    assert found["mode_used"] == "hybrid"
    # The other speaker is still put after Odile, on the first vector ranking.
    assert {r["id"] for r in found["results"][:2]} == {ids[1], ids[3]}
    assert "second vector search failed" in caplog.text
