"""Writing the vectors the records are owed, and bringing them back in line after a crash.

Vectors are written behind the add (ikario_rag/indexer.py's thread calls `index_pending`).
A search first indexes the few newest pending records of its namespace that are not
conversation turns (`settle`): it finds a thought just added by meaning as well as by text;
turns written in bulk are found by text until the indexer reaches them. `repair` (at start,
and after a vector operation failed) deletes the vectors of deleted records and embeds the
records without one; `reindex` rebuilds the full text and every vector.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from ikario_rag import config
from ikario_rag.embed import Embedder
from ikario_rag.index import VectorIndex
from ikario_rag.records import index_state, vector_metadata
from ikario_rag.store import Store

log = logging.getLogger("ikario_rag.memory")

# Records embedded per step when (re)building vectors; the write lock is held for one step.
REBUILD_BATCH = 256
# Pending records of its namespace a search indexes before it runs (read-your-writes), the
# newest first, each on the query path: a thought or note added just before is found by
# meaning at once. Not conversation turns and exchanges (written in bulk: a conversation's
# auto-save, an import), found by text until the indexer reaches them: settling 32 saved
# exchanges held the chat's auto-recall search ~2 s, 4 of them ~0.4 s on the loaded
# 2-core machine (bench/background_work.py).
SETTLE_LIMIT = 8
SETTLE_SKIPS = "conversation"
# The models an index's bulk vectors (the indexer's, the repair's) are written with: "fp32",
# the vectors every index had before, or "int8", the quantised copy of the same model (~2x the
# indexing throughput; cosine ~0.99 to fp32, LoCoMo recall within 0.003: docs/BENCHMARKS.md).
# An index keeps the one it was built with, so its vectors never mix models: one built before
# this choice stays fp32 until `python -m ikario_rag reindex` rebuilds it with the default.
# A search embeds its query with the index's model (embed.py); the vectors an add writes
# itself (fact-like kinds, compared at once for dedup) are fp32 in both.
VECTOR_MODELS = ("int8", "fp32")


def default_vector_model() -> str:
    """The model a new (or rebuilt) index gets: IKARIO_VECTORS, else int8."""
    chosen = config.settings().vectors
    if chosen not in VECTOR_MODELS:
        log.warning("IKARIO_VECTORS=%r is none of %s: using int8", chosen, VECTOR_MODELS)
        return VECTOR_MODELS[0]
    return chosen


class Indexing:
    """Memory's vector upkeep (a part of ikario_rag.memory.Memory, which sets these)."""

    store: Store
    vectors: VectorIndex
    embedder: Embedder
    write_lock: threading.RLock
    # One indexing pass at a time (the indexer thread, the repair, reindex).
    _indexing: threading.RLock
    repaired: threading.Event
    # Whether the bulk vectors of this index are the quantised model's (VECTOR_MODELS).
    quantised: bool

    def open_vectors(self) -> None:
        self.vectors.client  # noqa: B018 -- opens Chroma

    @property
    def vectors_suspect(self) -> bool:
        return self.vectors.suspect or self.vectors.lost()

    def needs_repair(self) -> bool:
        return (
            self.vectors_suspect
            or self.store.unindexed_count() > 0
            or bool(self.store.pending_vector_deletions())
        )

    def repair(self, stop: threading.Event | None = None, verify: bool = False) -> dict[str, int]:
        """Bring the vectors back in line with the records (the records are the truth).

        Always: delete the vectors of deleted records, embed the records without a vector.
        With `verify` (at start, and after a vector operation failed): compare each
        namespace's vector count with its records and, where they differ, find the records
        with no vector and the vectors with no record; a vector directory removed under the
        running server is recreated and filled again. Writes may go on once the bookkeeping
        is done (`repaired`); the embedding then runs in steps of REBUILD_BATCH records.
        """
        removed = 0
        with self.write_lock:
            if verify or self.vectors_suspect:
                removed += self._verify_vectors()
            by_ns: dict[str, list[str]] = {}
            for namespace, memory_id in self.store.pending_vector_deletions():
                by_ns.setdefault(namespace, []).append(memory_id)
            for namespace, ids in by_ns.items():
                self.vectors.delete(namespace, ids)
                self.store.vector_deleted(namespace, ids)
                removed += len(ids)
        self.repaired.set()
        if verify:
            # Each namespace's speakers read now rather than by its first search (search.py
            # guesses from them; 100k LoCoMo turns: ~0.3 s).
            for namespace in self.store.namespaces():
                if stop is not None and stop.is_set():
                    break
                self.store.speakers(namespace)
        indexed = self.index_pending(stop, progress=True)
        if removed or indexed:
            log.info("repair: %d vectors removed, %d records indexed", removed, indexed)
        return {"vectors_removed": removed, "records_indexed": indexed}

    def _verify_vectors(self) -> int:
        """Mark records without a vector for indexing; delete vectors without a record."""
        if self.vectors.lost():
            log.warning("the vector directory was removed: every vector will be rebuilt")
            self.vectors.reset()
            self.store.mark_all_unindexed()
            return 0
        self.vectors.suspect = False
        removed = 0
        namespaces = self.store.namespaces()
        for namespace in namespaces:
            records = self.store.count_records(namespace)
            if self.vectors.count(namespace) == records:
                continue
            stored = self.store.record_ids(namespace)
            held = self.vectors.ids(namespace)
            missing = [i for i in stored if i not in held]
            extra = [i for i in held if i not in stored]
            log.warning(
                "namespace %s: %d records, %d vectors; %d to index, %d to remove",
                self.vectors.name(namespace),
                records,
                len(held),
                len(missing),
                len(extra),
            )
            self.store.mark_unindexed(missing)
            self.vectors.delete(namespace, extra)
            removed += len(extra)
        dropped = self.vectors.drop_others(namespaces)
        if dropped:
            log.warning("removed %d vector collections of namespaces without records", dropped)
        return removed

    def index_pending(
        self, stop: threading.Event | None, batch: int = REBUILD_BATCH, progress: bool = False
    ) -> int:
        """Embed and write the vectors of every pending record (`indexed = 0`), oldest first,
        `batch` at a time; returns how many were written. Used by the repair, the indexer
        thread and `flush`."""
        with self._indexing:
            total = self.store.unindexed_count() if progress else 0
            done = 0
            while not (stop is not None and stop.is_set()):
                rows = self.store.unindexed(batch)
                if not rows:
                    break
                done += self._index_step(rows, background=True)
                if progress:
                    log.info("rebuilding vectors: %d/%d", done, max(total, done))
            return done

    def flush(self) -> int:
        """Index every pending record now, on the caller's thread (benchmarks, tests and
        tools that need every vector written)."""
        return self.index_pending(None)

    def settle(self, namespace: str) -> int | None:
        """Before a vector search: write the vectors of the namespace's newest pending records
        (at most SETTLE_LIMIT), so that a search right after an add finds it by meaning too.
        Costs one indexed SQL lookup when nothing is pending; None while the model loads (call
        again after waiting for it); a failure leaves the rows to the indexer and maintenance
        (the text side of the search still finds them)."""
        rows = self.store.unindexed(SETTLE_LIMIT, namespace, except_kind=SETTLE_SKIPS)
        if not rows or self.vectors_suspect:
            return 0
        if not self.embedder.ready:
            return None  # still loading: the caller settles again once it has waited for it
        try:
            return self._index_step(rows, background=False)
        except Exception:
            self.vectors.suspect = True
            log.exception("indexing %d pending memories before a search failed", len(rows))
            return 0

    def _index_step(self, rows: Sequence[Any], *, background: bool) -> int:
        """Embed `rows` and write their vectors (one upsert per namespace), then mark indexed
        those whose record did not change meanwhile; the others (a turn that got its following
        turn, an edited record) are marked pending again: the vector just written may be
        stale. Only that last check holds the write lock: a Chroma upsert (~20-35 ms) under it
        would make every add that comes meanwhile wait. `background`: the batch session,
        which yields to queries; else the caller's."""
        texts = [r["search_text"] for r in rows]
        if background:
            vectors = self.embedder.encode_batch(texts, quantised=self.quantised)
        else:  # a search waits for these: the query session, at once, not behind a batch
            # With the index's model: the indexer may write the same rows meanwhile, and the
            # vector that stays must not depend on which of the two wrote last.
            vectors = np.concatenate(
                [self.embedder.encode_query(t, quantised=self.quantised) for t in texts]
            )
        # Not worth a vector: records deleted or changed since they were read.
        before = self.store.index_states([r["id"] for r in rows])
        by_ns: dict[str, list[int]] = {}
        for pos, row in enumerate(rows):
            if before.get(row["id"]) == index_state(row):
                by_ns.setdefault(row["namespace"], []).append(pos)
        for namespace, positions in by_ns.items():
            self.vectors.upsert(
                namespace,
                [rows[p]["id"] for p in positions],
                vectors[positions],
                [vector_metadata(rows[p]) for p in positions],
            )
        written = [rows[p] for positions in by_ns.values() for p in positions]
        with self.write_lock:  # every other vector writer holds it from its change to its mark
            after = self.store.index_states([r["id"] for r in written])
            done = [r["id"] for r in written if after.get(r["id"]) == index_state(r)]
            changed = [r["id"] for r in written if r["id"] in after and r["id"] not in done]
            gone: dict[str, list[str]] = {}
            for row in written:
                if row["id"] not in after:  # deleted while its vector was written
                    gone.setdefault(row["namespace"], []).append(row["id"])
            for namespace, ids in gone.items():
                self.vectors.delete(namespace, ids)
            self.store.mark_indexed(done, pending=changed)
        return len(done)

    def reindex(self) -> dict[str, int]:
        """Rebuild the full-text tables and every vector from the records
        (`python -m ikario_rag reindex`)."""
        self.check_writable()
        with self._indexing:  # the indexer thread waits: this pass indexes everything
            with self.write_lock:
                self.store.rebuild_full_text()
                for namespace in self.store.namespaces():
                    self.vectors.drop(namespace)
                self.store.mark_all_unindexed()
                # Every vector is rebuilt: the index may take the default model now.
                chosen = default_vector_model()
                self.store.set_vector_model(chosen)
                self.quantised = chosen == "int8"
            return self.repair()
