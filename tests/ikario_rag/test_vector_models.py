"""Which model writes an index's bulk vectors: a new index the quantised one (~2x the
indexing throughput), an index built before that choice the fp32 one it was built with, so
that its vectors never mix models; `reindex` rebuilds an old index with the default."""

from __future__ import annotations

import numpy as np
import pytest

from ikario_rag import curation, search
from ikario_rag.memory import Memory
from ikario_rag.validate import new_memory
from tests.ikario_rag.conftest import QUANTISED_COSINE, sql

SESSION = {"kind": "conversation", "date": "2023-05-08T13:56:00"}
TURNS = [
    "Caroline: I went to a LGBTQ support group yesterday and it was so powerful.",
    "Melanie: Wow, that's cool, Caroline! What happened that was so awesome?",
    "Caroline: The transgender stories were so inspiring! I was so happy and thankful.",
    "Melanie: I'm off to go swimming with the kids. Talk to you soon!",
]
LATER = {"kind": "conversation", "date": "2023-06-09T10:00:00"}
LATER_TURNS = [
    "Caroline: I adopted a puppy from the animal shelter last weekend.",
    "Melanie: Oh how lovely! What breed is it?",
]


def open_memory(index_dir, embedder) -> Memory:
    memory = Memory(index_dir, embedder=embedder)
    memory.indexer.stop()  # every vector written by the test's own flush
    memory.repair()
    return memory


def store_turns(memory: Memory, turns: list[str], session: dict) -> dict[str, str]:
    """{id: indexed text} of the turns, their vectors written."""
    ids = [r["id"] for r in memory.add("user-1", [new_memory(t, session) for t in turns])]
    memory.flush()
    rows = sql(memory, "SELECT id, search_text FROM memories")
    return {r["id"]: r["search_text"] for r in rows if r["id"] in ids}


def cosines_to_fp32(memory: Memory, embedder, texts: dict[str, str]) -> np.ndarray:
    held = memory.vectors.vectors("user-1", list(texts))
    fp32 = embedder.encode_batch(list(texts.values()))
    return np.array([float(held[i] @ fp32[p]) for p, i in enumerate(texts)])


def build_before_the_choice(index_dir, embedder, monkeypatch) -> None:
    """An index as the code before this choice left it: fp32 vectors, no record of a model."""
    monkeypatch.setenv("IKARIO_VECTORS", "fp32")
    memory = open_memory(index_dir, embedder)
    store_turns(memory, TURNS, SESSION)
    memory.store.db.execute("DROP TABLE index_settings")
    memory.close()
    monkeypatch.delenv("IKARIO_VECTORS")


def test_it_writes_a_new_index_s_turns_with_the_quantised_model_and_finds_them(tmp_path, embedder):
    memory = open_memory(tmp_path / "index", embedder)
    try:
        assert memory.quantised
        texts = store_turns(memory, TURNS, SESSION)
        cosines = cosines_to_fp32(memory, embedder, texts)
        assert cosines.min() >= QUANTISED_COSINE, cosines
        assert cosines.max() < 0.9999  # the quantised model's, not fp32's
        query = embedder.query_vector("Who went swimming with the children?")
        nearest = memory.vectors.query("user-1", query, 1)
        said = sql(memory, "SELECT content FROM memories WHERE id = ?", nearest[0][0])
        assert said[0][0] == TURNS[3]
    finally:
        memory.close()
    again = open_memory(tmp_path / "index", embedder)  # the choice is kept by the index
    try:
        assert again.quantised
    finally:
        again.close()


def test_it_keeps_writing_fp32_vectors_into_an_index_built_before_the_choice(
    tmp_path, embedder, monkeypatch
):
    build_before_the_choice(tmp_path / "index", embedder, monkeypatch)
    memory = open_memory(tmp_path / "index", embedder)
    try:
        assert not memory.quantised
        texts = store_turns(memory, LATER_TURNS, LATER)
        assert len(texts) == len(LATER_TURNS)
        assert cosines_to_fp32(memory, embedder, texts).min() >= 0.9999
        stored = sql(memory, "SELECT value FROM index_settings WHERE name = 'vectors'")
        assert stored[0][0] == "fp32"
    finally:
        memory.close()


def test_it_rebuilds_an_old_index_with_the_quantised_model_on_reindex(
    tmp_path, embedder, monkeypatch
):
    build_before_the_choice(tmp_path / "index", embedder, monkeypatch)
    memory = Memory(tmp_path / "index", embedder=embedder)
    try:
        memory.indexer.stop()
        assert memory.reindex()["records_indexed"] == len(TURNS)
        assert memory.quantised
        rows = sql(memory, "SELECT id, search_text FROM memories")
        cosines = cosines_to_fp32(memory, embedder, {r["id"]: r["search_text"] for r in rows})
        assert cosines.min() >= QUANTISED_COSINE and cosines.max() < 0.9999
    finally:
        memory.close()


@pytest.mark.parametrize("chosen", ["fp32", "bf16"])
def test_it_builds_a_new_index_with_the_model_ikario_vectors_names(
    tmp_path, embedder, monkeypatch, chosen
):
    monkeypatch.setenv("IKARIO_VECTORS", chosen)
    memory = open_memory(tmp_path / "index", embedder)
    try:
        # fp32 when asked; an unknown name is logged and the default (int8) used.
        assert memory.quantised is (chosen != "fp32")
    finally:
        memory.close()


@pytest.fixture(params=["new", "before the choice"])
def built(request, tmp_path, embedder, monkeypatch):
    """(an index opened new or as built before the choice, which of the two)."""
    if request.param != "new":
        build_before_the_choice(tmp_path / "index", embedder, monkeypatch)
    memory = open_memory(tmp_path / "index", embedder)
    try:
        yield memory, request.param
    finally:
        memory.close()


def test_it_searches_an_index_with_the_model_that_wrote_its_vectors(built):
    # A turn's own indexed text, asked as the query, is at distance ~0 only when the query
    # is embedded by the model that wrote the index's vectors (the other model: ~0.01).
    memory, how = built
    assert memory.quantised is (how == "new")
    texts = store_turns(memory, LATER_TURNS, LATER)
    for memory_id, indexed in texts.items():
        found = search.search(memory, "user-1", indexed, 1, search.Filters(), "semantic")
        best = found["results"][0]
        assert best["id"] == memory_id
        assert best["distance"] < 1e-4, (how, best["distance"])


def test_it_writes_a_facts_vector_and_an_edits_with_the_model_of_the_index(built, embedder):
    # A fact is embedded in its add (to be compared with the facts before it) and an edit in
    # its call: with the model of the index's other vectors, never a mix of the two.
    memory, how = built
    (fact,) = memory.add("user-1", [new_memory("Ana is allergic to peanuts", {"kind": "fact"})])
    (turn,) = memory.add("user-1", [new_memory(LATER_TURNS[0], LATER)])
    curation.update(memory, "user-1", turn["id"], content=LATER_TURNS[1], category=None, tags=None)
    texts = {
        r["id"]: r["search_text"]
        for r in sql(memory, "SELECT id, search_text FROM memories")
        if r["id"] in (fact["id"], turn["id"])
    }
    cosines = cosines_to_fp32(memory, embedder, texts)
    assert fact["indexed"] and len(texts) == 2
    if how == "new":
        assert cosines.min() >= QUANTISED_COSINE and cosines.max() < 0.9999
    else:
        assert cosines.min() >= 0.9999
