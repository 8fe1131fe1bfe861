"""The ONNX embedder against sentence-transformers on torch (what built every index so far)."""

from __future__ import annotations

import os
import sqlite3
import threading

import numpy as np
import pytest

from ikario_rag import embed, model
from tests.ikario_rag.conftest import QUANTISED_COSINE, READY_WAIT

# Generous: one query takes milliseconds; this only bounds a test that would otherwise hang.
QUERY_WAIT = 120.0

TEXTS = [
    "dev = Mickael",
    "Mickael s'est cassé l'épaule le 10 janvier 2026",
    "When did Caroline go to the LGBTQ support group?",
    "Melanie: Yes, last Friday! We painted a sunrise by the lake. " * 40,  # > 256 tokens
    "",
    "Caroline: I went to a LGBTQ support group yesterday and it was so powerful.\n"
    "Melanie: Wow, that's cool, Caroline! What happened that was so awesome?",
    "日本語のテキストも埋め込まれる 🎿",
    "x",
]


class TorchEmbedder:
    """The embedder before ONNX: sentence-transformers' encode() on torch (what built every
    index so far), with the interface Memory uses."""

    state = "loaded"
    ready = True

    def __init__(self) -> None:
        from sentence_transformers import SentenceTransformer

        self.model = SentenceTransformer(str(model.weights_dir()), device="cpu")

    def start(self) -> TorchEmbedder:
        return self

    def wait(self, timeout: float = 0) -> None:
        return None

    def wait_loaded(self, timeout: float) -> bool:
        return True

    def encode(self, texts: list[str], *, quantised: bool = False) -> np.ndarray:
        if not texts:
            return np.zeros((0, embed.DIMENSIONS), dtype=np.float32)
        vectors = self.model.encode(
            texts, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        )
        return np.asarray(vectors, dtype=np.float32)

    def encode_batch(
        self, texts: list[str], *, quantised: bool = False, background: bool = False
    ) -> np.ndarray:
        return self.encode(texts)  # the reference: fp32, whatever the index asks for


@pytest.fixture(scope="module")
def torch_embedder():
    return TorchEmbedder()


@pytest.fixture(scope="module")
def reference(torch_embedder):
    """The vectors stored before ONNX, for TEXTS."""
    return torch_embedder.encode(TEXTS)


def test_it_gives_the_vectors_sentence_transformers_gave(embedder, reference):
    batch = embedder.encode(TEXTS)
    assert batch.shape == (len(TEXTS), 384) and batch.dtype == np.float32
    cosines = (batch * reference).sum(axis=1)
    assert cosines.min() >= 0.999, cosines
    assert np.abs(batch - reference).max() < 1e-5
    assert np.allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-5)


def test_it_gives_quantised_batch_vectors_near_the_reference_and_leaves_fp32_exact(
    embedder, reference
):
    quantised = embedder.encode_batch(TEXTS, quantised=True)
    assert quantised.shape == (len(TEXTS), 384) and quantised.dtype == np.float32
    cosines = (quantised * reference).sum(axis=1)
    assert cosines.min() >= QUANTISED_COSINE, cosines
    assert np.abs(quantised - reference).max() > 1e-4  # the int8 model did run
    assert np.allclose(np.linalg.norm(quantised, axis=1), 1.0, atol=1e-5)
    # A text's vector does not depend on the texts embedded beside it (another user's).
    alone = embedder.encode_batch([TEXTS[5], TEXTS[2]], quantised=True)
    assert np.abs(alone - quantised[[5, 2]]).max() < 1e-6
    # The fp32 batch session and the query session are untouched by it.
    assert np.abs(embedder.encode_batch(TEXTS) - reference).max() < 1e-5
    assert np.abs(embedder.encode([TEXTS[2]])[0] - reference[2]).max() < 1e-5


def test_it_gives_a_query_the_vector_it_gives_the_same_text_in_a_batch(embedder, reference):
    for text, want in zip(TEXTS, reference, strict=True):
        one = embedder.encode([text])
        assert one.shape == (1, 384)
        assert float(one[0] @ want) >= 0.999, text[:40]
        assert np.abs(one[0] - want).max() < 1e-5, text[:40]


def test_it_gives_a_query_asked_again_the_vector_a_fresh_encode_gives(embedder, monkeypatch):
    forward_passes: list[str] = []
    encode_queries = embedder.encode_queries

    def counted(texts, **options) -> np.ndarray:
        forward_passes.extend(texts)
        return encode_queries(texts, **options)

    monkeypatch.setattr(embedder, "encode_queries", counted)
    query = "When did Melanie paint a sunrise by the lake? (asked twice)"
    first = embedder.query_vector(query)
    again = embedder.query_vector(query)
    fresh = embedder.encode([query])[0]
    assert forward_passes == [query, query]  # query_vector once, encode() once: no more
    assert np.array_equal(first, again) and np.abs(again - fresh).max() < 1e-6
    assert first.shape == (384,) and first.dtype == np.float32
    with pytest.raises(ValueError):
        again[0] = 0.0  # shared by every caller of the same query: nobody may change it
    other = embedder.query_vector("Who adopted a puppy from the shelter?")
    assert float(other @ first) < 0.99 and len(forward_passes) == 3


def test_it_embeds_a_searchs_query_texts_in_one_pass_with_the_vectors_of_each_alone(
    embedder, monkeypatch
):
    passes: list[list[str]] = []
    encode_queries = embedder.encode_queries

    def counted(texts, **options):
        passes.append(list(texts))
        return encode_queries(texts, **options)

    monkeypatch.setattr(embedder, "encode_queries", counted)
    cached = embedder.query_vector("What did Odile paint? (cached)")
    texts = ["What did Odile paint? (cached)", "What did Odile bake?", "what did I bake?"]
    vectors = embedder.query_vectors(texts)
    assert passes == [
        ["What did Odile paint? (cached)"],
        ["What did Odile bake?", "what did I bake?"],  # together; the cached one not again
    ]
    assert vectors[0] is cached
    assert embedder.query_vectors(texts[1:])[1] is vectors[2]  # now cached: no more passes
    assert len(passes) == 2
    for text, vector in zip(texts, vectors, strict=True):
        assert vector.shape == (384,) and not vector.flags.writeable
        assert np.abs(vector - embedder.encode([text])[0]).max() < 1e-5, text


def test_it_embeds_fixed_texts_once_and_reads_them_back_from_beside_the_model(
    embedder, tmp_path, monkeypatch
):
    monkeypatch.setattr(embedder, "_model_path", tmp_path / "model.onnx")
    texts = ("The soup needed more salt.", "Le plombier vient lundi matin.", "x")
    embedded: list[list[str]] = []
    encode = embedder.encode

    def counted(batch: list[str]) -> np.ndarray:
        embedded.append(batch)
        return encode(batch)

    monkeypatch.setattr(embedder, "encode", counted)
    first = embedder.fixed_vectors(texts)
    assert np.array_equal(first, encode(list(texts))) and first.shape == (3, 384)
    stored = [p.name for p in tmp_path.iterdir()]
    assert len(stored) == 1 and stored[0].startswith("model.fixed-")  # no .tmp left
    assert np.array_equal(embedder.fixed_vectors(texts), first)  # read back, not embedded
    assert embedded == [list(texts)]
    other = embedder.fixed_vectors(texts[:2])  # other texts: another file
    assert np.abs(other - first[:2]).max() < 1e-5 and len(embedded) == 2
    (tmp_path / stored[0]).write_bytes(b"not a numpy file")  # damaged: embedded again
    assert np.array_equal(embedder.fixed_vectors(texts), first) and len(embedded) == 3
    assert np.array_equal(np.load(tmp_path / stored[0]), first)


def test_it_returns_batch_vectors_in_the_callers_order_whatever_the_slices(
    embedder, reference, monkeypatch
):
    # Slices of a few tokens: every text lands in its own padded group, sorted by length.
    monkeypatch.setattr(embed, "SLICE_TOKENS", 8)
    batch = embedder.encode(TEXTS)
    assert np.abs(batch - reference).max() < 1e-5


def test_it_groups_texts_shortest_first_within_the_token_budget():
    groups = embed.slices([50, 3, 300, 10, 10, 60], budget=120)
    assert groups == [[1, 3, 4], [0, 5], [2]]
    assert sorted(p for g in groups for p in g) == list(range(6))


def wait_for_cancel(run_options) -> None:
    """Hold a slice's run until a query has cancelled it (RunOptions.terminate)."""
    for _ in range(int(READY_WAIT / 0.01)):
        if run_options.terminate:
            return
        threading.Event().wait(0.01)


def quantised_sessions(embedder) -> tuple:
    embedder.encode_batch(TEXTS[:1], quantised=True)  # opens them
    sessions = embedder._quantised_session
    assert isinstance(sessions, tuple)
    return sessions


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core: one quantised session")
def test_it_shares_a_quantised_slice_among_sessions_running_side_by_side(embedder, monkeypatch):
    # Each text still runs alone (its vector does not depend on the others), but the texts of
    # a slice are shared among one-thread sessions that run at the same time: each share's
    # first run waits for the other's at a barrier, which a one-after-the-other run never meets.
    sessions = quantised_sessions(embedder)
    assert len(sessions) == 2
    alone = np.concatenate([embedder.encode_batch([t], quantised=True) for t in TEXTS])
    run = embedder._run
    met = threading.Barrier(2, timeout=QUERY_WAIT)
    ran: dict[int, set[str]] = {}

    def side_by_side(session, rows, *options):
        if session in sessions:
            k = sessions.index(session)
            if k not in ran:
                ran[k] = set()
                met.wait()
            ran[k].add(threading.current_thread().name)
        return run(session, rows, *options)

    monkeypatch.setattr(embedder, "_run", side_by_side)
    together = embedder.encode_batch(TEXTS, quantised=True)
    assert set(ran) == {0, 1} and not met.broken
    assert all(len(names) == 1 for names in ran.values()) and ran[0] != ran[1]
    assert np.abs(together - alone).max() < 1e-6


def test_it_cancels_every_share_of_a_quantised_slice_for_a_query_and_runs_it_again(
    embedder, monkeypatch
):
    sessions = quantised_sessions(embedder)
    alone = np.concatenate([embedder.encode_batch([t], quantised=True) for t in TEXTS])
    run = embedder._run
    held = threading.Event()

    def slice_run(session, rows, *options):
        if session in sessions and options and options[0] is not None and not held.is_set():
            held.set()  # the first share waits for the query that cancels the slice
            wait_for_cancel(options[0])
        return run(session, rows, *options)

    monkeypatch.setattr(embedder, "_run", slice_run)
    before = embedder.cancelled_slices
    batch: list[np.ndarray] = []
    ingest = threading.Thread(
        target=lambda: batch.append(embedder.encode_batch(TEXTS, quantised=True))
    )
    ingest.start()
    try:
        assert held.wait(READY_WAIT)
        embedder.encode([TEXTS[1]])
    finally:
        ingest.join(READY_WAIT)
    assert embedder.cancelled_slices == before + 1
    assert np.abs(batch[0] - alone).max() < 1e-6


def test_it_answers_a_query_while_a_batch_is_being_embedded(embedder, reference, monkeypatch):
    # The batch is held after its first slice until the query is back: a query that waited
    # for the batch (one lock for both, as with torch) would never come back.
    sliced, release = threading.Event(), threading.Event()
    run = embedder._run

    def held_run(session, rows, *options):
        out = run(session, rows, *options)
        if session is embedder._batch_session:
            sliced.set()
            release.wait(READY_WAIT)
        return out

    monkeypatch.setattr(embedder, "_run", held_run)
    batch: list[np.ndarray] = []
    ingest = threading.Thread(target=lambda: batch.append(embedder.encode(TEXTS * 20)))
    ingest.start()
    try:
        assert sliced.wait(READY_WAIT)
        query: list[np.ndarray] = []
        asker = threading.Thread(target=lambda: query.append(embedder.encode([TEXTS[2]])))
        asker.start()
        asker.join(QUERY_WAIT)
        assert query, "the query waited behind the batch"
        assert not batch  # the batch was indeed still being embedded
        assert np.abs(query[0][0] - reference[2]).max() < 1e-5
    finally:
        release.set()
        ingest.join(READY_WAIT)
    assert np.abs(batch[0][: len(TEXTS)] - reference).max() < 1e-5


def test_it_cancels_a_running_batch_slice_for_a_query_and_runs_it_again(
    embedder, reference, monkeypatch
):
    # The first batch slice is held before it runs until a query has arrived and cancelled
    # it (RunOptions.terminate set): it then fails at once, and must be run again.
    run = embedder._run
    held = threading.Event()

    def slice_run(session, rows, *options):
        if session is embedder._batch_session and not held.is_set():
            held.set()
            wait_for_cancel(options[0])
        return run(session, rows, *options)

    monkeypatch.setattr(embedder, "_run", slice_run)
    before = embedder.cancelled_slices
    batch: list[np.ndarray] = []
    ingest = threading.Thread(target=lambda: batch.append(embedder.encode(TEXTS * 3)))
    ingest.start()
    try:
        assert held.wait(READY_WAIT)
        query = embedder.encode([TEXTS[1]])
    finally:
        ingest.join(READY_WAIT)
    assert np.abs(query[0] - reference[1]).max() < 1e-5
    assert embedder.cancelled_slices == before + 1
    assert np.abs(batch[0] - np.tile(reference, (3, 1))).max() < 1e-5


def test_it_runs_a_slice_to_its_end_after_max_cancels(embedder, reference, monkeypatch):
    # Every attempt that can be cancelled is (as by a steady stream of searches): the last
    # one cannot, so the batch ends.
    run = embedder._run

    def always_cancelled(session, rows, *options):
        if embedder._slice_run is not None:  # what a query arriving now would do
            embedder._slice_run.terminate = True
        return run(session, rows, *options)

    monkeypatch.setattr(embedder, "_run", always_cancelled)
    before = embedder.cancelled_slices
    vectors = embedder.encode(TEXTS[:2])
    assert np.abs(vectors - reference[:2]).max() < 1e-5
    assert embedder.cancelled_slices == before + embed.MAX_CANCELS


def test_it_exports_the_model_once_into_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("IKARIO_MODEL_CACHE", str(tmp_path / "cache"))
    path = model.model_file()
    assert path.parent == tmp_path / "cache" and not path.exists()
    assert model.ensure_model() == path and path.is_file()
    stamp = path.stat().st_mtime_ns
    assert model.ensure_model() == path and path.stat().st_mtime_ns == stamp
    exported = stamp
    quantised = model.quantised_file()
    # The export command the server runs makes the quantised copy too (a new index needs it).
    assert quantised.is_file()
    assert model.ensure_quantised() == quantised
    assert quantised.parent == path.parent and quantised.stat().st_size < path.stat().st_size
    stamp = quantised.stat().st_mtime_ns
    assert model.ensure_quantised() == quantised and quantised.stat().st_mtime_ns == stamp
    assert path.stat().st_mtime_ns == exported  # made from the export, not exported again
    assert [p.name for p in path.parent.iterdir() if p.suffix == ".tmp"] == []


OLD_MEMORIES = [
    "Caroline adopted a puppy from the animal shelter last weekend",
    "Melanie ran a charity marathon in Boston in April",
    "Jon lost his job at the bank and opened a dance studio",
]


def test_it_still_finds_the_memories_of_an_index_built_before_onnx(tmp_path, torch_embedder):
    from ikario_rag.runtime import MemoryHost, Settings
    from ikario_rag.validate import new_memory
    from tests.ikario_rag.stdio import StdioServer

    index_dir = tmp_path / "index"
    # Records and vectors written by the code before the change (torch), then closed.
    before = MemoryHost(Settings(index_dir=index_dir, embedder=torch_embedder))
    old = before.acquire().memory()
    old.wait_ready(READY_WAIT)
    ids = [r["id"] for r in old.add("user-7", [new_memory(m, None) for m in OLD_MEMORIES])]
    old.flush()  # the vectors written behind the add, by the old model, before it closes
    before.release()
    with sqlite3.connect(index_dir / "memories.sqlite3") as db:  # no record of a model then
        db.execute("DROP TABLE index_settings")

    server = StdioServer(index_dir)  # today's server, ONNX
    try:
        server.initialize()
        # No word in common with the memory: only the vectors can find it.
        found = server.tool(
            "search_memories", query="Who got a new dog?", mode="semantic", namespace="user-7"
        )
        assert found["results"][0]["id"] == ids[0]
        scores = [r["relevance_score"] for r in found["results"]]
        assert scores == sorted(scores, reverse=True) and scores[0] > 0
        found = server.tool(
            "search_memories", query="a long race for a good cause", namespace="user-7"
        )
        assert found["results"][0]["id"] == ids[1]
        # The old vectors were kept, not rebuilt: nothing was left to index or repair.
        health = server.tool("memory_stats")["health"]
        assert (health["unindexed"], health["vectors_suspect"]) == (0, False)
    finally:
        assert server.close() == 0
    assert "rebuilding vectors" not in server.stderr()
    with sqlite3.connect(index_dir / "memories.sqlite3") as db:  # its bulk vectors stay fp32
        assert db.execute("SELECT value FROM index_settings WHERE name = 'vectors'").fetchall() == [
            ("fp32",)
        ]


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core: the query texts run in turn")
def test_it_runs_a_searchs_quantised_query_texts_side_by_side(embedder, monkeypatch):
    # The question and its form with a speaker said as "I": one run each (int8 vectors depend
    # on what shares a run), on two threads at once. Each run waits for the other at a
    # barrier, which runs one after the other never meet.
    texts = ["What did Ana paint last week?", "What did I paint last week?"]
    alone = np.concatenate([embedder.encode_queries([t], quantised=True) for t in texts])
    session = embedder._quantised_query()
    run = embedder._run
    met = threading.Barrier(2, timeout=QUERY_WAIT)
    threads: set[str] = set()

    def side_by_side(given, rows, *options):
        if given is session:
            threads.add(threading.current_thread().name)
            met.wait()
        return run(given, rows, *options)

    monkeypatch.setattr(embedder, "_run", side_by_side)
    together = embedder.encode_queries(texts, quantised=True)
    assert len(threads) == 2 and not met.broken
    assert np.abs(together - alone).max() < 1e-6
