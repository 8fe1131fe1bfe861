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
    assert text.speaker_of("Ravi: I baked bread.") == "ravi"
    assert text.speaker_of("Anne Marie: bonjour à tous") == "anne marie"
    assert text.speaker_of("Éloïse : salut") == "eloise"
    assert text.speaker_of("note: buy milk") is None
    assert text.speaker_of("At 10:30 we met") is None
    assert text.speaker_of("User: what is a good name for a cat?") == "user"
    assert text.speaker_of("A" * 100_000 + ": hi") is None
    assert text.speaker_of("\ud800: hi") is None


def test_it_says_the_named_speaker_in_the_first_person_for_the_vector_side():
    assert search.unnamed("What did Odile bake?", "odile", "I") == "what did I bake?"
    assert search.unnamed("Where is Odile's oven?", "odile", "I") == "where is my oven?"
    assert search.unnamed("Où Éloïse a-t-elle mangé ?", "eloise", "I") == "ou I a-t-elle mange ?"
    assert search.unnamed("What did Anne  Marie say?", "anne marie", "they") == "what did they say?"
    # A longer name holding the speaker's is left alone.
    assert search.unnamed("Did Odileta call?", "odile", "I") == "did odileta call?"


def test_it_keeps_the_first_ranking_when_the_second_vector_search_fails(
    memory, caplog, monkeypatch
):
    """The second search happens alone when the namespace's speakers did not show the name
    in advance (a turn edited since, say): here the speakers read say nobody."""
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
    calls: list[str] = []

    def unreadable(*args, **kwargs):
        calls.append("query")
        raise RuntimeError("vector index unreadable")

    # The first ranking comes with the query's own lookup (query_many), the second alone.
    monkeypatch.setattr(memory.vectors, "query", unreadable)
    monkeypatch.setattr(memory.store, "speakers", lambda namespace: frozenset())
    found = search.search(memory, "flaky", "Did Odile bake bread?", 4, search.Filters(), "hybrid")
    assert calls == ["query"]
    assert found["mode_used"] == "hybrid"
    # The other speaker is still put after Odile, on the first vector ranking.
    assert {r["id"] for r in found["results"][:2]} == {ids[1], ids[3]}
    assert "second vector search failed" in caplog.text


TABLE_TALK = [
    "Ravi: Sourdough bread again this weekend, I baked three loaves of bread and rolls.",
    "Odile: Nice! I made a lemon tart for my neighbours.",
    "Ravi: The bread rose so well, the oven was full of bread.",
    "Odile: I went hiking in the hills on Sunday.",
    "Ravi: Did you see Odile's photos of the lake? I painted it last year.",
    "Odile: Ravi, your painting of the lake hangs in my kitchen now.",
    "Ravi: My sister visits next week, we will bake pizza together.",
    "Odile: I adopted a grey cat from the shelter, she sleeps on the oven.",
]
SPEAKER_QUESTIONS = [
    "Did Odile bake bread?",
    "What did Ravi paint last year?",
    "Where does Odile's cat sleep?",
    "Did Odile tell Ravi about the lake?",
    "Did Odile and Ravi bake together?",
    "Who adopted a cat?",
]


def test_it_ranks_questions_naming_a_speaker_as_the_search_in_two_passes_did(memory, monkeypatch):
    """Embedding the question and its first-person forms together (one forward pass, one
    Chroma query) gives the results of embedding the first-person form only once the
    ranking named the speaker, as searches did before: same order, same scores."""
    context = {"kind": "conversation", "date": "2024-03-02T10:00:00"}
    memory.add("table", [validate.new_memory(t, context) for t in TABLE_TALK])
    _indexed(memory)
    assert memory.store.speakers("table") == {"ravi", "odile"}
    passes: list[list[str]] = []
    encode_queries = memory.embedder.encode_queries

    def counted(texts, **options):
        if list(texts) != ["warm up"]:  # a server's warm-up thread may share the embedder
            passes.append(list(texts))
        return encode_queries(texts, **options)

    monkeypatch.setattr(memory.embedder, "encode_queries", counted)
    memory.embedder._query_cache.clear()  # the embedder is shared: earlier tests asked these
    together = [
        search.search(memory, "table", q, 8, search.Filters(), "hybrid") for q in SPEAKER_QUESTIONS
    ]
    assert passes[0] == ["Did Odile bake bread?", "did I bake bread?"]
    # One forward pass per search; the last question names nobody: its own text only.
    assert len(passes) == len(SPEAKER_QUESTIONS) and passes[-1] == ["Who adopted a cat?"]
    memory.embedder._query_cache.clear()
    # Nobody guessed in advance: the first-person form embedded and looked up on its own.
    monkeypatch.setattr(memory.store, "speakers", lambda namespace: frozenset())
    apart = [
        search.search(memory, "table", q, 8, search.Filters(), "hybrid") for q in SPEAKER_QUESTIONS
    ]
    # Then one text per pass: the question, and for the four naming one speaker, its form.
    assert [len(texts) for texts in passes[len(SPEAKER_QUESTIONS) :]] == [1] * 10
    for question, one, two in zip(SPEAKER_QUESTIONS, together, apart, strict=True):
        assert [r["id"] for r in one["results"]] == [r["id"] for r in two["results"]], question
        for a, b in zip(one["results"], two["results"], strict=True):
            assert a["relevance_score"] == b["relevance_score"], question
            assert abs(a["distance"] - b["distance"]) <= 1e-4, question
    # And Odile's turns first for the question about her, as before.
    odile = {r["id"] for r in together[0]["results"][:4]}
    assert all(r["content"].startswith("Odile:") for r in together[0]["results"][:4]), odile


def test_it_knows_the_speakers_of_a_namespace_and_those_added_since(memory):
    context = {"kind": "conversation", "date": "2024-03-02T10:00:00"}
    memory.add("club", [validate.new_memory(t, context) for t in TABLE_TALK[:2]])
    memory.add("other", [validate.new_memory("Zoé: bonjour", context)])
    memory.add("club", [validate.new_memory("note: not a turn", {"kind": "note"})])
    assert memory.store.speakers("club") == {"ravi", "odile"}
    memory.add("club", [validate.new_memory("Anne Marie : I joined the club.", context)])
    assert memory.store.speakers("club") == {"ravi", "odile", "anne marie"}
    assert memory.store.speakers("other") == {"zoe"}
    assert memory.store.speakers("nobody") == frozenset()


def test_it_reads_the_speakers_of_every_namespace_when_it_starts(memory):
    """At start (the repair that verifies the vectors), so that no user's first search
    reads them."""
    context = {"kind": "conversation", "date": "2024-03-02T10:00:00"}
    memory.add("club", [validate.new_memory(t, context) for t in TABLE_TALK[:2]])
    memory.store._speakers.clear()  # as in a server that has just started
    memory.repair(verify=True)
    assert memory.store._speakers["club"][1] == {"ravi", "odile"}
