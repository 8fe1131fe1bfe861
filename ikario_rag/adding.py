"""Adding memories: records committed first (SQLite + FTS5), exact duplicates caught by
content hash, fact-like kinds compared with their nearest stored neighbours (dedup) and
written with their vector in the add; every other vector is written behind it
(ikario_rag/indexer.py).

Conversation turns are indexed with the turn before and the turn after them: a stored turn
that gets its following turn has its indexed text rewritten in the same transaction.
"""

from __future__ import annotations

import json
import logging
import threading
import uuid
from collections.abc import Sequence
from typing import Any

import numpy as np

from ikario_rag import contract, documents, facts, text
from ikario_rag.embed import Embedder
from ikario_rag.index import VectorIndex
from ikario_rag.indexer import Indexer
from ikario_rag.records import history_entry, memory_row, vector_metadata
from ikario_rag.store import Store
from ikario_rag.validate import NewMemory

log = logging.getLogger("ikario_rag.memory")

DEDUP_KINDS = contract.DEDUP_KINDS
# Stored facts of its kind a new one is compared with: its nearest neighbours.
DEDUP_CANDIDATES = 5


def needs_vector(item: NewMemory) -> bool:
    """Whether an item's vector is written by its add (not behind it): a fact-like kind is
    compared with the stored ones by vector, and must be there for the next fact to compare
    with; a replacement removes the vector of what it replaces."""
    return item.kind in DEDUP_KINDS or bool(item.replaces)


def dedup_similarity(cosine: float, new: str, old: str) -> float:
    """How much a new fact restates an old one: its cosine when the rules of facts.restates
    say it is the same fact (perhaps with more detail), else 0.

    The cosine of all-MiniLM-L6-v2 (an English model) cannot decide alone: French facts
    about one person score 0.6-0.8 whatever they say, "My sister lives in Lyon" / "My
    sister's husband lives in Lyon" 0.94, while "Notre chien s'appelle Filou" / "Le nom de
    notre chien est Filou" scores 0.74. So what the two are about, their numbers, dates,
    places, names and polarity decide first (bench/quality/dedup_dev.json: 91 pairs, no
    distinct facts merged), and the cosine only confirms a restatement.
    """
    return max(0.0, cosine) if facts.restates(new, old, cosine) else 0.0


class Adding:
    """Memory's adds (a part of ikario_rag.memory.Memory, which sets these)."""

    store: Store
    vectors: VectorIndex
    embedder: Embedder
    indexer: Indexer
    write_lock: threading.RLock
    quantised: bool

    def add(self, namespace: str, items: Sequence[NewMemory]) -> list[dict[str, Any]]:
        """Store items in order; returns one {id, status, replaced_id?, indexed?} per item.

        Items go in batches, one transaction each: a run of items whose vectors are written
        behind (the indexer thread; "indexed": false until then), or one item that needs its
        vector now (`needs_vector`: embedded, compared and written in the call), so that a
        later fact can dedup against an earlier one.
        """
        self.check_writable()
        self.wait_ready()
        results: list[dict[str, Any]] = []
        with self.write_lock:
            batch: list[NewMemory] = []
            for item in items:
                if batch and (needs_vector(item) or needs_vector(batch[0])):
                    results.extend(self._add_batch(namespace, batch))
                    batch = []
                batch.append(item)
            if batch:
                results.extend(self._add_batch(namespace, batch))
        if not all(needs_vector(item) for item in items):  # some vectors are written behind
            self.indexer.wake()
        return results

    def _add_batch(self, namespace: str, items: Sequence[NewMemory]) -> list[dict[str, Any]]:
        """One transaction; the vectors written in it (one item that needs_vector) or behind."""
        at_once = needs_vector(items[0])
        moment = text.now()
        now_ts = moment.timestamp()
        previous, following, predecessors = self._session_context(namespace, items)
        index_texts = [
            documents.index_text(
                item.content,
                subjects=item.subjects,
                concepts=item.concepts,
                tags=item.tags,
                previous=previous[pos],
                following=following[pos],
            )
            for pos, item in enumerate(items)
        ]
        # The stored turns that now get a following turn are re-embedded in the same call:
        # one length-sorted batch instead of a second, separately padded one.
        following_texts = [
            (row, documents.with_following(row["search_text"], after))
            for row, after in predecessors.values()
        ]
        all_vectors = np.zeros((0, 0), dtype=np.float32)
        if at_once:
            all_vectors = self.embedder.encode(
                index_texts + [t for _, t in following_texts], quantised=self.quantised
            )
        vectors = all_vectors[: len(items)]
        results: list[dict[str, Any]] = []
        rows: list[dict[str, Any]] = []
        row_vectors: list[int] = []
        replaced: list[str] = []
        batch_hashes: dict[str, str] = {}
        for pos, item in enumerate(items):
            digest = text.content_hash(item.content)
            if item.dedup:
                seen = batch_hashes.get(digest)
                existing = seen or self._stored_hash(namespace, digest, now_ts)
                if existing:
                    results.append({"id": existing, "status": "duplicate"})
                    continue
            old = None
            if item.replaces:
                # A changed fact names what it supersedes: that one goes into its history.
                old = self.store.by_ids(namespace, [item.replaces], now_ts).get(item.replaces)
            if old is None and item.dedup and item.kind in DEDUP_KINDS:
                old = self._near_duplicate(namespace, item, vectors[pos])
            memory_id = uuid.uuid4().hex
            date = item.date or moment
            expires = moment + item.ttl if item.ttl else None
            history: list[dict[str, Any]] = []
            if old is not None:
                history = [*json.loads(old["history"]), history_entry(old, moment)]
                replaced.append(old["id"])
            rows.append(
                memory_row(
                    item,
                    id=memory_id,
                    namespace=namespace,
                    search_text=index_texts[pos],
                    date=date,
                    created=moment,
                    # Keeps "newest first" stable inside one batch.
                    created_ts=now_ts + pos * 1e-6,
                    expires=expires,
                    content_hash=digest,
                    history=history,
                    has_next=following[pos] is not None,
                )
            )
            row_vectors.append(pos)
            batch_hashes[digest] = memory_id
            result = {"id": memory_id, "status": "updated" if old is not None else "created"}
            if old is not None:
                result["replaced_id"] = old["id"]
            results.append(result)
        following_vectors = all_vectors[len(items) :]
        if replaced:  # a turn superseded in this batch gets no new text
            keep = [p for p, (r, _) in enumerate(following_texts) if r["id"] not in replaced]
            following_texts = [following_texts[p] for p in keep]
            following_vectors = following_vectors[keep]  # replacing implies at_once
        # The record is the truth: commit it first, then write its vector. The stored turns
        # that now get a following turn have their new text committed (and marked unindexed)
        # in the same transaction. A vector that cannot be written leaves the record saved
        # and unindexed; maintenance indexes it.
        self.store.insert(
            rows,
            [(namespace, old_id) for old_id in replaced],
            [(row["id"], search_text) for row, search_text in following_texts],
        )
        if not at_once:
            for result in results:
                if result["status"] != "duplicate":
                    result["indexed"] = False
            return results
        ids = [r["id"] for r in rows] + [r["id"] for r, _ in following_texts]
        indexed = True
        try:
            if replaced:
                self.vectors.delete(namespace, replaced)
                self.store.vector_deleted(namespace, replaced)
            if ids:
                # One upsert for both: each Chroma write costs a few ms (it syncs its log).
                self.vectors.upsert(
                    namespace,
                    ids,
                    np.concatenate([vectors[row_vectors], following_vectors]),
                    [vector_metadata(r) for r in rows]
                    + [vector_metadata(r) for r, _ in following_texts],
                )
                self.store.mark_indexed(ids)
        except Exception:
            indexed = False
            self.vectors.suspect = True
            log.exception("%d memories saved without vectors (indexed later)", len(ids))
        for result in results:
            if result["status"] != "duplicate":
                result["indexed"] = indexed
        return results

    def _stored_hash(self, namespace: str, digest: str, now_ts: float) -> str | None:
        row = self.store.find_hash(namespace, digest, now_ts)
        return row["id"] if row is not None else None

    def _session_context(
        self, namespace: str, items: Sequence[NewMemory]
    ) -> tuple[list[str | None], list[str | None], dict[str, Any]]:
        """Conversation turns are indexed with the turn before and the turn after them.

        A session is the turns of one namespace with the same `date`, in the order they were
        stored. Returns each item's previous and following turn (within the batch or, for the
        previous one, the last stored turn of its session) and the stored turns that now get
        a following turn: {id: (row, following content)}.
        """
        previous: list[str | None] = []
        following: list[str | None] = [None] * len(items)
        predecessors: dict[str, Any] = {}
        last_in_batch: dict[float, int] = {}
        for pos, item in enumerate(items):
            if item.kind != "conversation" or item.date is None:
                previous.append(None)
                continue
            key = item.date.timestamp()
            before_pos = last_in_batch.get(key)
            if before_pos is not None:
                previous.append(items[before_pos].content)
                following[before_pos] = item.content
            else:
                last = self.store.last_turn(namespace, key)
                previous.append(last["content"] if last is not None else None)
                if last is not None and not last["has_next"]:
                    predecessors[last["id"]] = (last, item.content)
            last_in_batch[key] = pos
        return previous, following, predecessors

    def _near_duplicate(self, namespace: str, item: NewMemory, vector: np.ndarray) -> Any:
        """The stored memory of the same kind this item restates, if any (dedup_similarity)."""
        try:
            hits = self.vectors.query(
                namespace, vector, DEDUP_CANDIDATES, where={"kind": item.kind}
            )
        except Exception:
            # No vectors to compare with: store it (exact duplicates are still caught).
            self.vectors.suspect = True
            log.exception("near-duplicate check skipped: the vector index failed")
            return None
        rows = self.store.by_ids(namespace, [i for i, _ in hits], text.now().timestamp())
        best: tuple[float, Any] | None = None
        for memory_id, distance in hits:
            row = rows.get(memory_id)
            if row is None:
                continue
            sim = dedup_similarity(1.0 - distance, item.content, row["content"])
            if sim > 0 and (best is None or sim > best[0]):
                best = (sim, row)
        return best[1] if best else None
