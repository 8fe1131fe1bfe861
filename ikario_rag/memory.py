"""The memory service behind the MCP tools: records, vectors, dedup, expiry and repair.

Every public method takes a namespace and never touches another one. Records are committed
to SQLite before vectors are written; `repair()` brings Chroma back in line after a crash.

Vectors are written behind the add (ikario_rag/indexer.py): add_thought(s) commit the
records and return, the indexer thread embeds them. The kinds that need a vector at write
time (the fact-like DEDUP_KINDS, compared with their nearest stored neighbours, and an item
that `replaces` another) are embedded and written in the add itself, as before. A search
first indexes the few newest pending records of its namespace that are not conversation
turns (`settle`): it finds a thought just added by meaning as well as by text; turns written
in bulk are found by text until the indexer reaches them.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ikario_rag import contract, documents, facts, text
from ikario_rag.embed import MODEL_NAME, Embedder
from ikario_rag.errors import MemoryUnavailable
from ikario_rag.index import VectorIndex, collection_name
from ikario_rag.indexer import Indexer
from ikario_rag.lock import make_private
from ikario_rag.store import Store, index_state, memory_row, record_of
from ikario_rag.validate import NewMemory

log = logging.getLogger("ikario_rag.memory")

# What callers are told when the files under a running server were removed or replaced.
REMOVED = "the index directory was removed; restart the memory server"
DAMAGED = "the memory database is damaged"

DEDUP_KINDS = contract.DEDUP_KINDS
# Records embedded per step when (re)building vectors; the write lock is held for one step.
REBUILD_BATCH = 256
# Stored facts of its kind a new one is compared with: its nearest neighbours.
DEDUP_CANDIDATES = 5
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
    chosen = os.environ.get("IKARIO_VECTORS") or VECTOR_MODELS[0]
    if chosen not in VECTOR_MODELS:
        log.warning("IKARIO_VECTORS=%r is none of %s: using int8", chosen, VECTOR_MODELS)
        return VECTOR_MODELS[0]
    return chosen


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


class Memory:
    def __init__(self, index_dir: Path, embedder: Embedder | None = None) -> None:
        self.index_dir = Path(index_dir)
        make_private(self.index_dir)
        self.store = Store(self.index_dir / "memories.sqlite3")
        self.vectors = VectorIndex(self.index_dir / "chroma")
        # Whether the bulk vectors of this index are the quantised model's (VECTOR_MODELS).
        self.quantised = self.store.vector_model(fresh=default_vector_model()) == "int8"
        self.embedder = embedder or Embedder()
        self.embedder.start()
        self.write_lock = threading.RLock()
        # One indexing pass at a time (the indexer thread, the repair, reindex): the same
        # pending rows are not embedded twice. Not the write lock: adds go on while a pass
        # embeds. Taken before the write lock, never after.
        self._indexing = threading.RLock()
        self.indexer = Indexer(self)
        self.repaired = threading.Event()
        # Identity (device, inode) of the files this server opened: a write into a removed
        # directory would be lost at the next start, so writes are refused once they change.
        self._watched: dict[Path, tuple[int, int]] = {}
        self.watch(self.index_dir)
        self.watch(self.store.path)

    def watch(self, path: Path) -> None:
        found = os.stat(path)
        self._watched[Path(path)] = (found.st_dev, found.st_ino)

    def file_problem(self) -> str | None:
        """REMOVED when a watched file (the directory, the database, the lock) is gone or
        is no longer the one this server opened; None when all is well."""
        for path, identity in self._watched.items():
            try:
                found = os.stat(path)
            except FileNotFoundError:
                return REMOVED
            if (found.st_dev, found.st_ino) != identity:
                return REMOVED
        return None

    def check_writable(self) -> None:
        problem = self.file_problem()
        if problem is not None:
            log.critical("write refused: %s (%s)", problem, self.index_dir)
            raise MemoryUnavailable(problem)

    def close(self) -> None:
        self.indexer.stop()
        self.vectors.close()
        self.store.close()

    # -- start-up and maintenance ---------------------------------------------------------

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
                collection_name(namespace),
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
        made every add that came meanwhile wait (add_thought p50 10.3 ms back to back, 4.7 ms
        alone). `background`: the batch session, which yields to queries; else the caller's."""
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
                [_vector_metadata(rows[p]) for p in positions],
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

    def wait_ready(self, timeout: float = 120.0) -> None:
        self.embedder.wait(timeout)
        self.repaired.wait(timeout)

    # -- writes -----------------------------------------------------------------------------

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
                history = [*json.loads(old["history"]), _history_entry(old, moment)]
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
                    [_vector_metadata(r) for r in rows]
                    + [_vector_metadata(r) for r, _ in following_texts],
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

    def delete_one(self, namespace: str, memory_id: str, reason: str) -> bool:
        gone = self.delete(namespace, [memory_id])
        if gone:
            log.info("deleted %s: %s", memory_id, reason[:200])
        return bool(gone)

    def delete(self, namespace: str, ids: Sequence[str]) -> list[str]:
        self.check_writable()
        with self.write_lock:
            gone = self.store.delete(namespace, ids)
            if gone:
                try:
                    self.vectors.delete(namespace, gone)
                    self.store.vector_deleted(namespace, gone)
                except Exception:  # the deletion is recorded: maintenance removes the vectors
                    self.vectors.suspect = True
                    log.exception("vectors of %d deleted memories left for maintenance", len(gone))
            return gone

    def purge_expired(self) -> int:
        """Delete every expired record and its vector (run periodically by the server)."""
        expired = self.store.expired(text.now().timestamp())
        by_ns: dict[str, list[str]] = {}
        for namespace, memory_id in expired:
            by_ns.setdefault(namespace, []).append(memory_id)
        total = 0
        for namespace, ids in by_ns.items():
            total += len(self.delete(namespace, ids))
        if total:
            log.info("purged %d expired memories", total)
        return total

    # -- reads ------------------------------------------------------------------------------

    def get(self, namespace: str, ids: Sequence[str]) -> list[dict[str, Any]]:
        rows = self.store.by_ids(namespace, ids, text.now().timestamp())
        return [record_of(rows[i]) for i in dict.fromkeys(ids) if i in rows]

    def recent(self, namespace: str, limit: int, kinds: Sequence[str]) -> list[dict[str, Any]]:
        rows = self.store.recent(namespace, limit, kinds, text.now().timestamp())
        return [record_of(r) for r in rows]

    def health(self) -> dict[str, Any]:
        """For operators: whether this index can serve, and what is pending."""
        problem = self.file_problem()
        if problem is not None:
            return {"status": "unavailable", "reason": problem}
        return {
            "status": "ok",
            "embedding_model": self.embedder.state,
            # Records whose vector is not written yet (behind an add, or to repair).
            "unindexed": self.store.unindexed_count(),
            "vectors_suspect": self.vectors_suspect,
        }

    def stats(
        self, namespace: str | None, within: tuple[Sequence[str], Sequence[str]] | None = None
    ) -> dict[str, Any]:
        """Counts of one namespace, or of all (`within`: only these names and prefixes)."""
        figures = self.store.stats(namespace, text.now().timestamp(), within)
        if namespace is not None:
            figures["unindexed"] = self.store.unindexed_count(namespace)
        figures["embedding_model"] = MODEL_NAME
        figures["index_bytes"] = index_bytes(self.index_dir)
        return figures


def _vector_metadata(row: Any) -> dict[str, Any]:
    return {"kind": row["kind"], "category": row["category"], "date_ts": float(row["date_ts"])}


def _history_entry(old: Any, moment: Any) -> dict[str, Any]:
    return {
        "id": old["id"],
        "content": old["content"],
        "date": old["date"],
        "created_at": old["created_at"],
        "replaced_at": text.iso(moment),
    }


def index_bytes(directory: Path) -> int:
    total = 0
    for path in directory.rglob("*"):
        try:
            total += path.stat().st_size if path.is_file() else 0
        except OSError:  # removed while we looked (Chroma's temporary files)
            continue
    return total
