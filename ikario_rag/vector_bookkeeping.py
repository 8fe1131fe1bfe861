"""The records' side of their vectors: which records wait for a vector (`indexed = 0`),
which deleted records' vectors wait to be removed (`vector_deletions`), and which model the
index's bulk vectors are written with (`index_settings`).

A row's `indexed` flag is set once its vector is in Chroma, and a deletion leaves a row in
`vector_deletions` until the vector is gone, so start-up can repair a crash between the two
(ikario_rag/indexing.py).
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Sequence
from typing import Any

from ikario_rag.record_reads import RecordReads
from ikario_rag.records import INDEX_STATE, index_state


class VectorBookkeeping(RecordReads):
    """What the vector writers (the indexer, the repair, an add) read and mark."""

    def unindexed(
        self, limit: int = 256, namespace: str | None = None, except_kind: str = ""
    ) -> list[sqlite3.Row]:
        """Records waiting for their vector: the oldest first, or with a namespace its newest
        not of `except_kind` (what a search of that namespace indexes before it runs)."""
        if namespace is None:
            return self._rows(
                "SELECT * FROM memories WHERE indexed = 0 ORDER BY rowid LIMIT ?", (limit,)
            )
        return self._rows(
            "SELECT * FROM memories WHERE indexed = 0 AND +namespace = ? AND +kind != ?"
            " ORDER BY rowid DESC LIMIT ?",
            (namespace, except_kind, limit),
        )

    def index_states(self, ids: Sequence[str]) -> dict[str, tuple[Any, ...]]:
        """What a record's vector is made of (INDEX_STATE), by id: the indexer writes a vector
        only if its record has not changed since it was read."""
        rows = self._with_ids(f"id, {', '.join(INDEX_STATE)}", ids)
        return {r["id"]: index_state(r) for r in rows}

    def unindexed_count(self, namespace: str | None = None) -> int:
        if namespace is None:
            return self._rows("SELECT COUNT(*) FROM memories WHERE indexed = 0")[0][0]
        return self._rows(
            "SELECT COUNT(*) FROM memories WHERE indexed = 0 AND +namespace = ?", (namespace,)
        )[0][0]

    def mark_indexed(self, ids: Sequence[str], pending: Sequence[str] = ()) -> None:
        """`ids` have their vector; `pending` need theirs written again. One transaction: in
        autocommit mode each UPDATE would be a commit of its own."""
        with self._transaction():
            self.db.executemany("UPDATE memories SET indexed = 1 WHERE id = ?", [(i,) for i in ids])
            self.db.executemany(
                "UPDATE memories SET indexed = 0 WHERE id = ?", [(i,) for i in pending]
            )

    def mark_unindexed(self, ids: Sequence[str]) -> None:
        with self.lock:
            self.db.executemany("UPDATE memories SET indexed = 0 WHERE id = ?", [(i,) for i in ids])

    def mark_all_unindexed(self) -> None:
        with self.lock:
            self.db.execute("UPDATE memories SET indexed = 0")

    def vector_deleted(self, namespace: str, ids: Sequence[str]) -> None:
        with self.lock:
            self.db.executemany(
                "DELETE FROM vector_deletions WHERE namespace = ? AND id = ?",
                [(namespace, i) for i in ids],
            )

    def vector_model(self, *, fresh: str) -> str:
        """Which model writes this index's bulk vectors (memory.VECTOR_MODELS), recorded the
        first time it is asked: an index that already has records was built before the
        choice existed, by the fp32 model; a new one gets `fresh`."""

        def first() -> str:
            built = self.db.execute("SELECT 1 FROM memories LIMIT 1").fetchone() is not None
            return "fp32" if built else fresh

        return self._setting("vectors", first)

    def index_id(self) -> str:
        """This index's own id, made the first time it is asked (names its collections on a
        Chroma server other indexes share)."""
        return self._setting("index_id", lambda: uuid.uuid4().hex)

    def _setting(self, name: str, first) -> str:
        """The index setting `name`, recorded as `first()` the first time it is asked."""
        with self._transaction():
            found = self.db.execute(
                "SELECT value FROM index_settings WHERE name = ?", (name,)
            ).fetchone()
            if found is not None:
                return found[0]
            value = first()
            self.db.execute("INSERT INTO index_settings VALUES (?, ?)", (name, value))
            return value

    def set_vector_model(self, value: str) -> None:
        with self._transaction():
            self.db.execute("INSERT OR REPLACE INTO index_settings VALUES ('vectors', ?)", (value,))

    def pending_vector_deletions(self) -> list[tuple[str, str]]:
        rows = self._rows("SELECT namespace, id FROM vector_deletions")
        return [(r["namespace"], r["id"]) for r in rows]

    def count_records(self, namespace: str) -> int:
        return self._rows("SELECT COUNT(*) FROM memories WHERE namespace = ?", (namespace,))[0][0]

    def record_ids(self, namespace: str) -> set[str]:
        rows = self._rows("SELECT id FROM memories WHERE namespace = ?", (namespace,))
        return {r[0] for r in rows}
