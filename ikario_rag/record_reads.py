"""Reading records: by id, by content hash, a session's last turn and a result's
neighbours, the newest, the expired, and the speakers of a namespace's conversation turns.

Every read runs in a snapshot on a reader connection (ikario_rag/database.py). In the
queries, "+namespace" keeps SQLite from choosing a namespace index (a scan of the whole
namespace) over the id/rowid lookup.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ikario_rag import text
from ikario_rag.database import Database
from ikario_rag.records import OPENING


class RecordReads(Database):
    """Lookups of records, each in one snapshot."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        # namespace -> (the last rowid read, the speakers of its conversation turns)
        self._speakers: dict[str, tuple[int, frozenset[str]]] = {}
        self._speakers_lock = threading.Lock()

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

    def last_turn(self, namespace: str, date_ts: float) -> sqlite3.Row | None:
        """The conversation turn stored last in a session (same namespace and `date`)."""
        rows = self._rows(
            "SELECT * FROM memories WHERE namespace = ? AND date_ts = ?"
            " AND kind = 'conversation' ORDER BY rowid DESC LIMIT 1",
            (namespace, date_ts),
        )
        return rows[0] if rows else None

    def neighbours(
        self, namespace: str, rows: Sequence[sqlite3.Row], now_ts: float, columns: str
    ) -> list[tuple[int, sqlite3.Row]]:
        """(rowid of one of `rows`, the record stored just before or just after it in its
        session: same namespace, kind and `date`), whatever other namespaces stored between.

        Two statements whatever the number of rows (one per row and side cost ~0.5 ms for 30
        candidates at 10k records)."""
        if not rows:
            return []
        values = ",".join("(?, ?, ?)" for _ in rows)
        params: list[Any] = [v for r in rows for v in (r["rowid"], r["date_ts"], r["kind"])]
        pairs = self._rows(
            f"""WITH c(rowid, date_ts, kind) AS (VALUES {values})
            SELECT c.rowid AS source,
                (SELECT m.rowid FROM memories m WHERE m.namespace = ? AND m.date_ts = c.date_ts
                 AND m.kind = c.kind AND m.rowid < c.rowid ORDER BY m.rowid DESC LIMIT 1) AS before,
                (SELECT m.rowid FROM memories m WHERE m.namespace = ? AND m.date_ts = c.date_ts
                 AND m.kind = c.kind AND m.rowid > c.rowid ORDER BY m.rowid ASC LIMIT 1) AS after
            FROM c""",  # noqa: S608
            [*params, namespace, namespace],
        )
        wanted = {n for p in pairs for n in (p["before"], p["after"]) if n is not None}
        if not wanted:
            return []
        marks = ",".join("?" * len(wanted))
        near = {
            r["rowid"]: r
            for r in self._rows(
                f"SELECT {columns} FROM memories WHERE rowid IN ({marks})"  # noqa: S608
                " AND (expires_ts IS NULL OR expires_ts > ?)",
                [*wanted, now_ts],
            )
        }
        return [
            (p["source"], near[n])
            for p in pairs
            for n in (p["before"], p["after"])
            if n is not None and n in near
        ]

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

    def expired(self, now_ts: float) -> list[tuple[str, str]]:
        rows = self._rows(
            "SELECT namespace, id FROM memories WHERE expires_ts IS NOT NULL AND expires_ts <= ?",
            (now_ts,),
        )
        return [(r["namespace"], r["id"]) for r in rows]

    def namespaces(self) -> list[str]:
        return [r[0] for r in self._rows("SELECT name FROM namespaces WHERE records > 0")]

    def speakers(self, namespace: str) -> frozenset[str]:
        """The folded speakers of the namespace's conversation turns ("Ana: ..."): read whole
        once (10k LoCoMo turns: ~40 ms, 100k: ~0.3 s), then only from the rows stored since
        (the rowids above the last one read). A guess, not a fact: the speaker of a turn
        deleted or edited since stays, and a turn stored under a rowid freed by a deletion
        is not read."""
        seen, known = self._speakers.get(namespace, (0, frozenset()))
        with self.snapshot() as db:  # the last rowid and the rows up to it: one snapshot
            last = db.execute("SELECT max(rowid) FROM memories").fetchone()[0] or 0
            if last <= seen:
                return known
            openings = db.execute(
                f"SELECT DISTINCT {OPENING}"  # noqa: S608
                " FROM memories WHERE rowid > ? AND rowid <= ? AND +namespace = ?"
                " AND +kind = 'conversation'",
                (seen, last, namespace),
            ).fetchall()
        found = {text.speaker_of(row[0]) for row in openings}
        with self._speakers_lock:  # two threads reading at once: the entry only grows
            seen, known = self._speakers.get(namespace, (0, frozenset()))
            known = known | {who for who in found if who}
            if last > seen:
                self._speakers[namespace] = (last, known)
        return known

    def taken_ids(self, ids: Sequence[str]) -> set[str]:
        """Which of these ids a record of any namespace already has (ids are global)."""
        return {r["id"] for r in self._with_ids("id", ids)}

    def _with_ids(self, columns: str, ids: Sequence[str]) -> list[sqlite3.Row]:
        """`columns` of the records of any namespace with these ids, 500 ids a query (under
        SQLite's bound-parameter limit)."""
        found: list[sqlite3.Row] = []
        for start in range(0, len(ids), 500):
            chunk = list(ids[start : start + 500])
            marks = ",".join("?" * len(chunk))
            found += self._rows(f"SELECT {columns} FROM memories WHERE id IN ({marks})", chunk)  # noqa: S608
        return found
