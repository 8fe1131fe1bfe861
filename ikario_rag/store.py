"""The records: SQLite (WAL + FTS5) is the source of truth; vectors are derived from it.

A row's `indexed` flag is set once its vector is in Chroma, and deletions leave a row in
`vector_deletions` until the vector is gone, so start-up can repair a crash between the two.
"""

from __future__ import annotations

import json
import re
import sqlite3
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from ikario_rag import text

SCHEMA = """
CREATE TABLE IF NOT EXISTS memories (
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    namespace TEXT NOT NULL,
    content TEXT NOT NULL,
    search_text TEXT NOT NULL,
    category TEXT NOT NULL,
    kind TEXT NOT NULL,
    tags TEXT NOT NULL DEFAULT '[]',
    concepts TEXT NOT NULL DEFAULT '[]',
    emotions TEXT NOT NULL DEFAULT '[]',
    subjects TEXT NOT NULL DEFAULT '[]',
    date TEXT NOT NULL,
    date_ts REAL NOT NULL,
    created_at TEXT NOT NULL,
    created_ts REAL NOT NULL,
    expires_at TEXT,
    expires_ts REAL,
    source TEXT,
    content_hash TEXT NOT NULL,
    history TEXT NOT NULL DEFAULT '[]',
    indexed INTEGER NOT NULL DEFAULT 0,
    has_next INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS memories_session ON memories(namespace, date_ts);
CREATE INDEX IF NOT EXISTS memories_ns_hash ON memories(namespace, content_hash);
CREATE INDEX IF NOT EXISTS memories_ns_created ON memories(namespace, created_ts);
CREATE INDEX IF NOT EXISTS memories_expires ON memories(expires_ts) WHERE expires_ts IS NOT NULL;
CREATE INDEX IF NOT EXISTS memories_unindexed ON memories(indexed) WHERE indexed = 0;
CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5(
    search_text, content='memories', content_rowid='rowid',
    tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER IF NOT EXISTS memories_ai AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts(rowid, search_text) VALUES (new.rowid, new.search_text);
END;
CREATE TRIGGER IF NOT EXISTS memories_au AFTER UPDATE OF search_text ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, search_text)
    VALUES ('delete', old.rowid, old.search_text);
    INSERT INTO memories_fts(rowid, search_text) VALUES (new.rowid, new.search_text);
END;
CREATE TRIGGER IF NOT EXISTS memories_ad AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, search_text)
    VALUES ('delete', old.rowid, old.search_text);
END;
CREATE TABLE IF NOT EXISTS vector_deletions (
    namespace TEXT NOT NULL,
    id TEXT NOT NULL,
    PRIMARY KEY (namespace, id)
);
"""

_LIST_FIELDS = ("tags", "concepts", "emotions", "subjects")
# What ranking and filtering need of a candidate; full rows are read for the final results.
CANDIDATE_COLUMNS = "id, rowid, namespace, category, kind, tags, date_ts"
_FTS_WORD = re.compile(r"^[0-9a-z]+$")
MAX_TEXT_MATCHES = 5000
# In the queries below, "+namespace" keeps SQLite from choosing a namespace index (a scan of
# the whole namespace: 30 ms at 100k) over the id/rowid/FTS lookup (microseconds).


def record_of(row: sqlite3.Row) -> dict[str, Any]:
    """A row as the tools return it (MEMORY_TOOLS.md, "A memory record")."""
    return {
        "id": row["id"],
        "content": row["content"],
        "namespace": row["namespace"],
        "metadata": {
            "category": row["category"],
            "kind": row["kind"],
            **{name: json.loads(row[name]) for name in _LIST_FIELDS},
            "date": row["date"],
            "created_at": row["created_at"],
            "expires_at": row["expires_at"],
            "source": row["source"],
        },
    }


class Store:
    """Thread-safe access to the records; one connection guarded by one lock."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock = threading.RLock()
        self.db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self.db.row_factory = sqlite3.Row
        self.db.execute("PRAGMA journal_mode=WAL")
        # NORMAL in WAL mode still survives a process kill; only an OS crash could lose the tail.
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute("PRAGMA busy_timeout=5000")
        self.db.executescript(SCHEMA)
        self._counts: dict[str, tuple[int, float]] = {}

    def close(self) -> None:
        with self.lock:
            self.db.close()

    # -- writes ---------------------------------------------------------------------------

    def insert(self, rows: Sequence[dict[str, Any]], replaced: Iterable[tuple[str, str]] = ()):
        """Insert records (and delete the ones they replace) in one transaction."""
        with self.lock:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                for namespace, old_id in replaced:
                    self._delete(namespace, old_id)
                self.db.executemany(
                    """INSERT INTO memories (id, namespace, content, search_text, category, kind,
                    tags, concepts, emotions, subjects, date, date_ts, created_at, created_ts,
                    expires_at, expires_ts, source, content_hash, history, has_next)
                    VALUES (:id, :namespace, :content, :search_text, :category, :kind, :tags,
                    :concepts, :emotions, :subjects, :date, :date_ts, :created_at, :created_ts,
                    :expires_at, :expires_ts, :source, :content_hash, :history, :has_next)""",
                    rows,
                )
                self.db.execute("COMMIT")
            except BaseException:
                self.db.execute("ROLLBACK")
                raise

    def _delete(self, namespace: str, memory_id: str) -> bool:
        cur = self.db.execute(
            "DELETE FROM memories WHERE +namespace = ? AND id = ?", (namespace, memory_id)
        )
        if cur.rowcount:
            self.db.execute(
                "INSERT OR IGNORE INTO vector_deletions (namespace, id) VALUES (?, ?)",
                (namespace, memory_id),
            )
        return bool(cur.rowcount)

    def delete(self, namespace: str, ids: Sequence[str]) -> list[str]:
        """Delete records; returns the ids that existed."""
        with self.lock:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                gone = [memory_id for memory_id in ids if self._delete(namespace, memory_id)]
                self.db.execute("COMMIT")
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
            return gone

    def set_search_text(self, memory_id: str, search_text: str) -> None:
        """New indexed text (FTS follows by trigger); the vector is stale until re-indexed."""
        with self.lock:
            self.db.execute(
                "UPDATE memories SET search_text = ?, has_next = 1, indexed = 0 WHERE id = ?",
                (search_text, memory_id),
            )

    def mark_indexed(self, ids: Sequence[str]) -> None:
        with self.lock:
            self.db.executemany("UPDATE memories SET indexed = 1 WHERE id = ?", [(i,) for i in ids])

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

    def expired(self, now_ts: float) -> list[tuple[str, str]]:
        with self.lock:
            rows = self.db.execute(
                "SELECT namespace, id FROM memories"
                " WHERE expires_ts IS NOT NULL AND expires_ts <= ?",
                (now_ts,),
            ).fetchall()
        return [(r["namespace"], r["id"]) for r in rows]

    # -- reads ----------------------------------------------------------------------------

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        with self.lock:
            return self.db.execute(sql, params).fetchall()

    def by_ids(
        self, namespace: str, ids: Sequence[str], now_ts: float, columns: str = "*"
    ) -> dict[str, sqlite3.Row]:
        if not ids:
            return {}
        out: dict[str, sqlite3.Row] = {}
        for start in range(0, len(ids), 500):
            chunk = list(ids[start : start + 500])
            marks = ",".join("?" * len(chunk))
            rows = self._rows(
                f"SELECT {columns} FROM memories WHERE +namespace = ? AND id IN ({marks})"  # noqa: S608
                " AND (expires_ts IS NULL OR expires_ts > ?)",
                [namespace, *chunk, now_ts],
            )
            out.update((row["id"], row) for row in rows)
        return out

    def find_hash(self, namespace: str, digest: str, now_ts: float) -> sqlite3.Row | None:
        rows = self._rows(
            "SELECT * FROM memories WHERE namespace = ? AND content_hash = ?"
            " AND (expires_ts IS NULL OR expires_ts > ?) LIMIT 1",
            (namespace, digest, now_ts),
        )
        return rows[0] if rows else None

    def unindexed(self, limit: int = 256) -> list[sqlite3.Row]:
        return self._rows("SELECT * FROM memories WHERE indexed = 0 LIMIT ?", (limit,))

    def unindexed_count(self) -> int:
        return self._rows("SELECT COUNT(*) FROM memories WHERE indexed = 0")[0][0]

    def last_turn(self, namespace: str, date_ts: float) -> sqlite3.Row | None:
        """The conversation turn stored last in a session (same namespace and `date`)."""
        rows = self._rows(
            "SELECT * FROM memories WHERE namespace = ? AND date_ts = ?"
            " AND kind = 'conversation' ORDER BY rowid DESC LIMIT 1",
            (namespace, date_ts),
        )
        return rows[0] if rows else None

    def by_rowids(
        self, namespace: str, rowids: Iterable[int], now_ts: float, columns: str = "*"
    ) -> list[sqlite3.Row]:
        wanted = list(rowids)
        if not wanted:
            return []
        marks = ",".join("?" * len(wanted))
        return self._rows(
            f"SELECT {columns} FROM memories"  # noqa: S608
            f" WHERE +namespace = ? AND rowid IN ({marks})"
            " AND (expires_ts IS NULL OR expires_ts > ?)",
            [namespace, *wanted, now_ts],
        )

    def pending_vector_deletions(self) -> list[tuple[str, str]]:
        rows = self._rows("SELECT namespace, id FROM vector_deletions")
        return [(r["namespace"], r["id"]) for r in rows]

    def count_records(self, namespace: str) -> int:
        return self._rows("SELECT COUNT(*) FROM memories WHERE namespace = ?", (namespace,))[0][0]

    def record_ids(self, namespace: str) -> set[str]:
        rows = self._rows("SELECT id FROM memories WHERE namespace = ?", (namespace,))
        return {r[0] for r in rows}

    def namespaces(self) -> list[str]:
        return [r[0] for r in self._rows("SELECT DISTINCT namespace FROM memories")]

    def text_search(
        self, namespace: str, words: Sequence[str], limit: int, now_ts: float
    ) -> list[tuple[str, float]]:
        """BM25 over the FTS5 index: (id, bm25) best first; bm25 is negative, lower is better.

        Scoring every match costs ~0.8 us each (18 ms for 23k matches at 100k records), so the
        OR query takes the query's words rarest first while their matches add up to at most
        MAX_TEXT_MATCHES (the rarest word always). The words left out are the most common
        ones, whose IDF weight is the lowest anyway. When even the rarest word is that common,
        the two rarest words are required together (the records BM25 would rank first).
        """
        counts = self.word_counts(words)
        chosen: list[str] = []
        total = 0
        for word in sorted(counts, key=counts.get):
            if counts[word] == 0:
                continue
            if chosen and total + counts[word] > MAX_TEXT_MATCHES:
                break
            chosen.append(word)
            total += counts[word]
        if not chosen:
            return []
        match = " OR ".join(f'"{w}"' for w in chosen)
        rare = sorted((w for w in counts if counts[w]), key=counts.get)
        if total > MAX_TEXT_MATCHES and len(rare) > 1:
            match = f'"{rare[0]}" AND "{rare[1]}"'
        rows = self._rows(
            """SELECT m.id, bm25(memories_fts) AS rank FROM memories_fts
            JOIN memories m ON m.rowid = memories_fts.rowid
            WHERE memories_fts MATCH ? AND +m.namespace = ?
            AND (m.expires_ts IS NULL OR m.expires_ts > ?)
            ORDER BY rank LIMIT ?""",
            (match, namespace, now_ts, limit),
        )
        return [(r["id"], float(r["rank"])) for r in rows]

    def word_counts(self, words: Sequence[str]) -> dict[str, int]:
        """Records (all namespaces) matching each word, as FTS5 tokenizes it; cached briefly."""
        out: dict[str, int] = {}
        now = time.monotonic()
        for word in dict.fromkeys(words):
            if not _FTS_WORD.match(word):
                continue
            cached = self._counts.get(word)
            if cached is None or now - cached[1] > 30.0:
                found = self._rows(
                    "SELECT COUNT(*) FROM memories_fts WHERE memories_fts MATCH ?", (f'"{word}"',)
                )[0][0]
                cached = (found, now)
                if len(self._counts) > 10_000:
                    self._counts.clear()
                self._counts[word] = cached
            out[word] = cached[0]
        return out

    def document_frequencies(self, words: Sequence[str]) -> tuple[int, dict[str, int]]:
        """(number of records, {word: records containing it}) over all namespaces."""
        total = self._rows("SELECT MAX(rowid) FROM memories")[0][0] or 0
        return total, self.word_counts(words)

    def recent(
        self, namespace: str, limit: int, kinds: Sequence[str], now_ts: float
    ) -> list[sqlite3.Row]:
        sql = (
            "SELECT * FROM memories WHERE namespace = ? AND (expires_ts IS NULL OR expires_ts > ?)"
        )
        params: list[Any] = [namespace, now_ts]
        if kinds:
            sql += f" AND kind IN ({','.join('?' * len(kinds))})"
            params.extend(kinds)
        sql += " ORDER BY created_ts DESC, rowid DESC LIMIT ?"
        params.append(limit)
        return self._rows(sql, params)

    def stats(self, namespace: str | None, now_ts: float) -> dict[str, Any]:
        where = "WHERE (expires_ts IS NULL OR expires_ts > ?)"
        params: list[Any] = [now_ts]
        if namespace is not None:
            where += " AND namespace = ?"
            params.append(namespace)
        total = self._rows(f"SELECT COUNT(*), MAX(created_at) FROM memories {where}", params)[0]  # noqa: S608
        by_category = self._rows(
            f"SELECT category, COUNT(*) FROM memories {where} GROUP BY category",  # noqa: S608
            params,
        )
        by_kind = self._rows(
            f"SELECT kind, COUNT(*) FROM memories {where} GROUP BY kind",  # noqa: S608
            params,
        )
        return {
            "total_memories": total[0],
            "last_save": total[1],
            "by_category": {r[0]: r[1] for r in by_category},
            "by_kind": {r[0]: r[1] for r in by_kind},
        }


def new_row(**fields: Any) -> dict[str, Any]:
    """A row dict for `Store.insert`, list fields JSON-encoded."""
    row = dict(fields)
    for name in (*_LIST_FIELDS, "history"):
        row[name] = json.dumps(row.get(name) or [], ensure_ascii=False)
    row.setdefault("content_hash", text.content_hash(row["content"]))
    row["has_next"] = int(bool(row.get("has_next")))
    return row
