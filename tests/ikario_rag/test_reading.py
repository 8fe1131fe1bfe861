"""A memory's reading (relevance.reading): what a search's relevance needs of its text,
worked out when it is written and stored with it, so that a search of memories the server
has not read since it started parses it instead of reading the text again.

What it must never change is a score: a stored reading gives the features the text gives;
one that no longer matches its text (edited, or made by other rules) is not used; an index
made before readings were stored gets the column and still scores its old records.
"""

from __future__ import annotations

import json
import sqlite3

from hypothesis import given
from hypothesis import strategies as st

from ikario_rag import relevance
from ikario_rag.app import build_server
from tests.fixtures.properties import stable_examples
from tests.ikario_rag.conftest import InMemoryClient, call, sql

WORDS = st.sampled_from(
    [
        "Ana", "Ben", "painted", "sister", "soeur", "allergic", "peanuts", "arachides",
        "Grenoble", "hike", "randonnée", "13", "October", "mardi", "grand-mère", "e-mail",
        "doesn't", "l'épaule", "violin", "Inès", "the", "et", "my", "wife", "vegan",
    ]
)  # fmt: skip
TEXTS = st.lists(st.one_of(WORDS, st.text(min_size=1, max_size=12)), max_size=30).map(" ".join)
LABELS = st.lists(st.one_of(WORDS, st.text(min_size=1, max_size=12)), max_size=4).map(tuple)
QUERIES = ["What did Ana paint?", "Que sait-on d'Inès ?", "a meal for my sister", "violin"]


def _text_features(query: str, content: str, labels: tuple[str, ...]) -> list[dict]:
    relevance._read_memory.cache_clear()  # read from the text, not remembered
    return relevance.features(relevance.read_query(query), content, "fact", 0.1, labels)


@stable_examples(150)
@given(content=TEXTS, labels=LABELS)
def test_it_gives_the_features_the_text_gives(content, labels):
    stored = relevance.reading(content, labels)
    for query in QUERIES:
        relevance._read_memory.cache_clear()
        asked = relevance.read_query(query)
        from_stored = relevance.features(asked, content, "fact", 0.1, labels, stored)
        assert from_stored == _text_features(query, content, labels)


def test_it_ignores_a_reading_of_another_text_or_other_rules():
    content = "My sister Ana is allergic to peanuts"
    other = relevance.reading("The quarterly tax return is due", ())
    version, checksum, *parts = json.loads(relevance.reading(content, ()))
    older = json.dumps([version - 1, checksum, ["tax"], [], []])
    for stored in (other, older, "not json", "[1, 2]"):
        relevance._read_memory.cache_clear()
        asked = relevance.read_query("a meal for my sister")
        got = relevance.features(asked, content, "fact", 0.1, (), stored)
        assert got == _text_features("a meal for my sister", content, ())


async def test_it_stores_each_memorys_reading_and_writes_it_again_on_an_edit(client, memory):
    _, added = await call(
        client,
        "add_thought",
        content="Ana paints harbours in Brest",
        context={"kind": "fact", "subjects": ["Ana"], "tags": ["art"]},
    )
    (first,) = sql(memory, "SELECT reading FROM memories WHERE id = ?", added["id"])
    error, _ = await call(
        client, "update_memory", id=added["id"], content="Ana paints lighthouses in Brest"
    )
    (edited,) = sql(memory, "SELECT reading FROM memories WHERE id = ?", added["id"])
    assert not error
    assert first["reading"] == relevance.reading("Ana paints harbours in Brest", ("Ana", "art"))
    assert edited["reading"] == relevance.reading("Ana paints lighthouses in Brest", ("Ana", "art"))


async def test_it_scores_the_records_of_an_index_made_before_readings_alike(make_host, tmp_path):
    index = tmp_path / "old-index"
    contents = ["Noah restores antique clocks in his workshop", "Ma voisine Odile a des abeilles"]
    host = make_host(index)
    before = await _search_both(InMemoryClient(build_server(host)), contents)
    host.release()
    # As an index of the previous release: no reading column.
    with sqlite3.connect(index / "memories.sqlite3") as db:
        db.execute("ALTER TABLE memories DROP COLUMN reading")
    relevance._read_memory.cache_clear()
    host = make_host(index)
    memory = host.runtime.memory()
    after = await _search_both(InMemoryClient(build_server(host)), [])
    readings = [r["reading"] for r in sql(memory, "SELECT reading FROM memories")]
    assert readings == [None, None] and len(before) == 4 and after == before


async def _search_both(client, contents: list[str]) -> dict[str, float]:
    for content in contents:
        await call(client, "add_thought", content=content, context={"kind": "fact"})
    found = {}
    for query in ("clocks", "Odile"):
        _, result = await call(client, "search_memories", query=query, mode="hybrid")
        found |= {f"{query}: {r['content']}": r["relevance_score"] for r in result["results"]}
    return found


async def test_it_scores_a_search_from_the_stored_readings_without_reading_the_texts(
    client, monkeypatch
):
    for content in ("Noah restores antique clocks", "Odile keeps bees on her roof"):
        await call(client, "add_thought", content=content, context={"kind": "fact"})
    relevance._read_memory.cache_clear()  # as after a restart
    read_text = relevance._read_text
    texts_read: list[str] = []

    def counted(memory_text):
        texts_read.append(memory_text)
        return read_text(memory_text)

    monkeypatch.setattr(relevance, "_read_text", counted)
    _, found = await call(client, "search_memories", query="who restores clocks?", n_results=5)
    assert found["results"][0]["content"] == "Noah restores antique clocks"
    assert texts_read == []
