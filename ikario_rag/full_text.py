"""Full-text search: one contentless FTS5 table per namespace (`fts_<hash>`), written in
the same transaction as the records, and BM25 over it.

BM25 takes its statistics (number of documents, their lengths, how many contain a word)
from the table it runs on, so one table per namespace is what makes a user's scores depend
on that user's memories only: with one shared table, a search told whether a word appeared
in other users' memories. `namespaces.records` counts each one's records: a namespace listed
there has its table.

The caches shared by all threads stay true to what readers see: a namespace's generation
(the word counts' key) is bumped after its transaction commits or rolls back, never before,
and a full-text table is known to exist (`_tables`) once the transaction that created it
has committed.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Sequence
from pathlib import Path

from ikario_rag.database import Database

log = logging.getLogger("ikario_rag.store")

_FTS_WORD = re.compile(r"^[0-9a-z]+$")
MAX_TEXT_MATCHES = 5000
# Matches ranked beyond the limit, so that a few expired records do not cost the slow query.
TEXT_PAGE_SLACK = 20
FTS_OPTIONS = "content='', tokenize='porter unicode61 remove_diacritics 2'"
_COUNT_CACHE = 20_000


def fts_table(namespace: str) -> str:
    """The namespace's full-text table: a hash keeps any namespace string a safe SQL name."""
    return "fts_" + hashlib.sha256(namespace.encode("utf-8")).hexdigest()[:32]


class FullText(Database):
    """The namespaces' full-text tables, kept in step with the records by every write."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        # The full-text tables the open write transaction created and the namespaces it
        # wrote (the caches learn of them once it has ended).
        self._created: set[str] = set()
        self._touched: set[str] = set()
        # (namespace, word) -> (records matching, namespace generation); a write to a
        # namespace bumps its generation, so counts never go stale and never cross namespaces.
        # Plain dict reads and writes (atomic under the GIL); only the writer bumps.
        self._counts: dict[tuple[str, str], tuple[int, int]] = {}
        self._generation: dict[str, int] = {}
        # Committed full-text tables (never dropped once committed: a reset empties them).
        self._tables: set[str] = set()
        self._move_shared_full_text()

    def _committed(self) -> None:
        self._tables |= self._created

    def _transaction_ended(self) -> None:
        # After the commit: a reader that read the old generation counted in a snapshot at
        # least as new as it, so no count is cached under a generation newer than what it
        # counted (bumped before, a reader could cache a count of the uncommitted state's
        # predecessor under the new generation).
        for namespace in self._touched:
            self._generation[namespace] = self._generation.get(namespace, 0) + 1
        self._created.clear()
        self._touched.clear()

    def _index_text(self, namespace: str, rowid: int, search_text: str, change: int) -> None:
        """Add (+1) or remove (-1) a record's text in its namespace's full-text table.

        A contentless table is told the exact text to forget; `search_text` is what was
        indexed, kept in the record."""
        table = self._table(namespace)
        if change > 0:
            self.db.execute(
                f'INSERT INTO "{table}" (rowid, search_text) VALUES (?, ?)',  # noqa: S608
                (rowid, search_text),
            )
        else:
            self.db.execute(
                f'INSERT INTO "{table}" ("{table}", rowid, search_text)'  # noqa: S608
                " VALUES ('delete', ?, ?)",
                (rowid, search_text),
            )
        self.db.execute(
            "INSERT INTO namespaces (name, records) VALUES (?, ?)"
            " ON CONFLICT(name) DO UPDATE SET records = records + excluded.records",
            (namespace, change),
        )
        self._touched.add(namespace)

    def _table(self, namespace: str) -> str:
        """The namespace's full-text table, created in the open write transaction if need be."""
        table = fts_table(namespace)
        if table not in self._tables and table not in self._created:
            self.db.execute(
                f'CREATE VIRTUAL TABLE IF NOT EXISTS "{table}"'
                f" USING fts5(search_text, {FTS_OPTIONS})"
            )
            self._created.add(table)
        return table

    def _move_shared_full_text(self) -> None:
        """Indexes written before per-namespace tables had one shared table: split it."""
        shared = self.db.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'memories_fts'"
        ).fetchone()
        if shared is None:
            return
        log.info("moving the full-text index to one table per namespace")
        with self._transaction():
            for name in ("memories_ai", "memories_au", "memories_ad"):
                self.db.execute(f"DROP TRIGGER IF EXISTS {name}")
            self.db.execute("DROP TABLE memories_fts")
            self._fill_full_text()

    def _fill_full_text(self) -> None:
        """(Re)build every namespace's full-text table and count from the records."""
        self.db.execute("DELETE FROM namespaces")
        names = [r[0] for r in self.db.execute("SELECT DISTINCT namespace FROM memories")]
        for namespace in names:
            table = self._table(namespace)
            self.db.execute(f'INSERT INTO "{table}" ("{table}") VALUES (\'delete-all\')')  # noqa: S608
            self.db.execute(
                f'INSERT INTO "{table}" (rowid, search_text)'  # noqa: S608
                " SELECT rowid, search_text FROM memories WHERE namespace = ?",
                (namespace,),
            )
            self.db.execute(
                "INSERT INTO namespaces (name, records)"
                " SELECT ?, COUNT(*) FROM memories WHERE namespace = ?",
                (namespace, namespace),
            )
            self._touched.add(namespace)

    def rebuild_full_text(self) -> None:
        with self._transaction():
            self._fill_full_text()

    def text_search(
        self, namespace: str, words: Sequence[str], limit: int, now_ts: float
    ) -> list[tuple[str, float]]:
        """BM25 over the namespace's full-text table: (id, bm25) best first; bm25 is negative,
        lower is better, and computed from this namespace's records only.

        Scoring every match costs ~0.8 us each (18 ms for 23k matches at 100k records), so the
        OR query takes the query's words rarest first while their matches add up to at most
        MAX_TEXT_MATCHES (the rarest word always). The words left out are the most common
        ones, whose IDF weight is the lowest anyway. When even the rarest word is that common,
        the two rarest words are required together (the records BM25 would rank first).
        """
        match = self.text_match(namespace, words)
        if match is None:
            return []
        table = fts_table(namespace)
        # Ranked inside the full-text table, then only the best page looked up in `memories`:
        # joining every match (up to 5,000) to its wide record first costs twice as much, for
        # the same results.
        page = limit + TEXT_PAGE_SLACK
        ranked = self._rows(
            f'SELECT rowid, bm25("{table}") AS rank FROM "{table}" WHERE "{table}" MATCH ?'  # noqa: S608
            " ORDER BY rank LIMIT ?",
            (match, page),
        )
        if not ranked:
            return []
        marks = ",".join("?" * len(ranked))
        alive = {
            r["rowid"]: r["id"]
            for r in self._rows(
                f"SELECT rowid, id FROM memories WHERE rowid IN ({marks}) AND +namespace = ?"  # noqa: S608
                " AND (expires_ts IS NULL OR expires_ts > ?)",
                [*(r["rowid"] for r in ranked), namespace, now_ts],
            )
        }
        hits = [(alive[r["rowid"]], float(r["rank"])) for r in ranked if r["rowid"] in alive]
        if len(hits) >= limit or len(ranked) < page:
            return hits[:limit]
        # Expired records filled the page: rank the live ones alone (the join, slower).
        return self.live_ranked(namespace, match, limit, now_ts)

    def text_match(self, namespace: str, words: Sequence[str]) -> str | None:
        """The FTS5 MATCH expression for the query's words (None: no word matches)."""
        counts = self.word_counts(namespace, words)
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
            return None
        rare = sorted((w for w in counts if counts[w]), key=counts.get)
        if total > MAX_TEXT_MATCHES and len(rare) > 1:
            return f'"{rare[0]}" AND "{rare[1]}"'
        return " OR ".join(f'"{w}"' for w in chosen)

    def live_ranked(
        self, namespace: str, match: str, limit: int, now_ts: float
    ) -> list[tuple[str, float]]:
        """Every match joined to its record, the expired left out, then ranked."""
        table = fts_table(namespace)
        rows = self._rows(
            f"""SELECT m.id, bm25("{table}") AS rank FROM "{table}"
            JOIN memories m ON m.rowid = "{table}".rowid
            WHERE "{table}" MATCH ? AND +m.namespace = ?
            AND (m.expires_ts IS NULL OR m.expires_ts > ?)
            ORDER BY rank LIMIT ?""",  # noqa: S608
            (match, namespace, now_ts, limit),
        )
        return [(r["id"], float(r["rank"])) for r in rows]

    def word_counts(self, namespace: str, words: Sequence[str]) -> dict[str, int]:
        """Records of the namespace matching each word, as FTS5 tokenizes it (cached until
        the namespace's next write)."""
        out: dict[str, int] = {}
        if not self._has_text(namespace):
            return dict.fromkeys((w for w in words if _FTS_WORD.match(w)), 0)
        table = fts_table(namespace)
        generation = self._generation.get(namespace, 0)
        # Counted inside a snapshot this thread already holds, a count may be older than
        # `generation` (the snapshot can predate it): used, not kept.
        keep = getattr(self._held, "db", None) is None
        for word in dict.fromkeys(words):
            if not _FTS_WORD.match(word):
                continue
            cached = self._counts.get((namespace, word))
            if cached is None or cached[1] != generation:
                found = self._rows(
                    f'SELECT COUNT(*) FROM "{table}" WHERE "{table}" MATCH ?',  # noqa: S608
                    (f'"{word}"',),
                )[0][0]
                cached = (found, generation)
                if len(self._counts) > _COUNT_CACHE:
                    self._counts.clear()
                if keep:
                    self._counts[(namespace, word)] = cached
            out[word] = cached[0]
        return out

    def _has_text(self, namespace: str) -> bool:
        if fts_table(namespace) in self._tables:
            return True
        found = self._rows("SELECT 1 FROM namespaces WHERE name = ?", (namespace,))
        if found:  # committed with its table, in the same transaction
            self._tables.add(fts_table(namespace))
        return bool(found)
