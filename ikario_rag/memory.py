"""The memory service behind the MCP tools: one index directory's records and vectors.

Every public method takes a namespace and never touches another one. Records are committed
to SQLite before vectors are written (ikario_rag/store.py); the vectors' upkeep is
ikario_rag/indexing.py's, adds with their dedup ikario_rag/adding.py's. This module opens
the index, refuses writes once its files were removed under the running server, deletes,
reads and counts.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ikario_rag import text
from ikario_rag.adding import Adding
from ikario_rag.embed import MODEL_NAME, Embedder
from ikario_rag.errors import MemoryUnavailable
from ikario_rag.index import VectorIndex
from ikario_rag.indexer import Indexer
from ikario_rag.indexing import Indexing, default_vector_model
from ikario_rag.lock import make_private
from ikario_rag.records import record_of
from ikario_rag.store import Store

log = logging.getLogger("ikario_rag.memory")

# What callers are told when the files under a running server were removed or replaced.
REMOVED = "the index directory was removed; restart the memory server"
DAMAGED = "the memory database is damaged"


class Memory(Adding, Indexing):
    """An index directory's memories: the records (Store), their vectors (VectorIndex), the
    model that embeds them (Embedder) and the thread that writes vectors behind adds."""

    def __init__(self, index_dir: Path, embedder: Embedder | None = None) -> None:
        self.index_dir = Path(index_dir)
        make_private(self.index_dir)
        self.store = Store(self.index_dir / "memories.sqlite3")
        self.vectors = VectorIndex(self.index_dir / "chroma", owner=self.store.index_id())
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

    def wait_ready(self, timeout: float = 120.0) -> None:
        self.embedder.wait(timeout)
        self.repaired.wait(timeout)

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


def index_bytes(directory: Path) -> int:
    total = 0
    for path in directory.rglob("*"):
        try:
            total += path.stat().st_size if path.is_file() else 0
        except OSError:  # removed while we looked (Chroma's temporary files)
            continue
    return total
