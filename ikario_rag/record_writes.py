"""Writing records: insert (an add, a restore), edit in place, delete. Each call is one
transaction on the writer connection, the records' full text written in it (FullText).

A deleted record leaves a row in `vector_deletions` until its vector is gone
(ikario_rag/vector_bookkeeping.py), so start-up can repair a crash between the two.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from ikario_rag.full_text import FullText
from ikario_rag.records import LIST_FIELDS, READ_LABELS, reading_of


class RecordWrites(FullText):
    """Inserts, edits and deletions of records, their full text in the same transaction."""

    def insert(
        self,
        rows: Sequence[dict[str, Any]],
        replaced: Iterable[tuple[str, str]] = (),
        following: Iterable[tuple[str, str]] = (),
    ):
        """Insert records, delete the ones they replace and give stored turns the text of
        their following turn ((id, new search_text): its vector is then stale, indexed = 0),
        all in one transaction: one commit per add call."""
        with self._transaction():
            for namespace, old_id in replaced:
                self._delete(namespace, old_id)
            for memory_id, search_text in following:
                self._set_search_text(memory_id, search_text)
            for row in rows:
                rowid = self.db.execute(
                    """INSERT INTO memories (id, namespace, content, search_text, category,
                    kind, tags, concepts, emotions, subjects, date, date_ts, created_at,
                    created_ts, expires_at, expires_ts, source, content_hash, history, has_next,
                    reading)
                    VALUES (:id, :namespace, :content, :search_text, :category, :kind, :tags,
                    :concepts, :emotions, :subjects, :date, :date_ts, :created_at, :created_ts,
                    :expires_at, :expires_ts, :source, :content_hash, :history, :has_next,
                    :reading)""",
                    row,
                ).lastrowid
                self._index_text(row["namespace"], rowid, row["search_text"], +1)

    def _delete(self, namespace: str, memory_id: str) -> bool:
        found = self.db.execute(
            "SELECT rowid, search_text FROM memories WHERE +namespace = ? AND id = ?",
            (namespace, memory_id),
        ).fetchone()
        if found is None:
            return False
        self.db.execute("DELETE FROM memories WHERE rowid = ?", (found["rowid"],))
        self._index_text(namespace, found["rowid"], found["search_text"], -1)
        self.db.execute(
            "INSERT OR IGNORE INTO vector_deletions (namespace, id) VALUES (?, ?)",
            (namespace, memory_id),
        )
        return True

    def delete(self, namespace: str, ids: Sequence[str]) -> list[str]:
        """Delete records; returns the ids that existed."""
        with self._transaction():
            return [memory_id for memory_id in ids if self._delete(namespace, memory_id)]

    def _set_search_text(self, memory_id: str, search_text: str) -> None:
        """New indexed text (full text at once); the vector is stale until re-indexed."""
        old = self.db.execute(
            "SELECT rowid, namespace, search_text FROM memories WHERE id = ?", (memory_id,)
        ).fetchone()
        if old is not None:
            self.db.execute(
                "UPDATE memories SET search_text = ?, has_next = 1, indexed = 0 WHERE rowid = ?",
                (search_text, old["rowid"]),
            )
            self._index_text(old["namespace"], old["rowid"], old["search_text"], -1)
            self._index_text(old["namespace"], old["rowid"], search_text, +1)

    def update_record(self, namespace: str, memory_id: str, changes: dict[str, Any]) -> bool:
        """Edit a record in place (same id and rowid), its full text re-indexed in the same
        transaction; its vector is stale (indexed = 0) until the caller writes it."""
        with self._transaction():
            old = self.db.execute(
                "SELECT rowid, search_text, content, subjects, concepts, tags FROM memories"
                " WHERE +namespace = ? AND id = ?",
                (namespace, memory_id),
            ).fetchone()
            if old is None:
                return False
            fields = dict(changes)
            if {"content", *READ_LABELS} & fields.keys():
                edited = {name: json.loads(old[name]) for name in READ_LABELS}
                edited.update({k: v for k, v in fields.items() if k in READ_LABELS})
                fields["reading"] = reading_of(fields.get("content", old["content"]), **edited)
            for name in (*LIST_FIELDS, "history"):
                if name in fields:
                    fields[name] = json.dumps(fields[name], ensure_ascii=False)
            assignments = ", ".join(f"{name} = :{name}" for name in fields)
            self.db.execute(
                f"UPDATE memories SET {assignments}, indexed = 0 WHERE rowid = :rowid",  # noqa: S608
                {**fields, "rowid": old["rowid"]},
            )
            if "search_text" in fields:
                self._index_text(namespace, old["rowid"], old["search_text"], -1)
                self._index_text(namespace, old["rowid"], fields["search_text"], +1)
            return True
