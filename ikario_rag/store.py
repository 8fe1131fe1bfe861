"""The records: SQLite (WAL + FTS5) is the source of truth; vectors are derived from it.
The only module that speaks SQL.

A row's `indexed` flag is set once its vector is in Chroma, and deletions leave a row in
`vector_deletions` until the vector is gone, so start-up can repair a crash between the two.

Full text: one contentless FTS5 table per namespace (`fts_<hash>`), written in the same
transaction as the records. BM25 takes its statistics (number of documents, their lengths,
how many contain a word) from the table it runs on, so one table per namespace is what makes
a user's scores depend on that user's memories only: with one shared table, a search told
whether a word appeared in other users' memories. `namespaces.records` counts each one's
records for the IDF of the text relevance.

Connections: one writer and a small pool of readers. Every write runs on the writer
connection under the store's lock (`Store.lock`), one transaction per call. Reads run on a
reader connection of their own, without that lock: in WAL mode a reader sees the last commit
and neither waits for the writer's transaction nor holds it up, so a reply's recall search
no longer waits for the background auto-save's `add_thoughts` transactions, nor they for it
(adds into one namespace beside searches: 1.3-1.5x more calls through, the searches' median
unchanged: what they still meet is the adds' CPU; docs/BENCHMARKS.md). A read made inside a
write transaction, on the writer's thread, stays on the writer connection: it must see that
transaction's own changes. The price: after a schema change (a namespace's first record
creates its full-text table) each reader parses the whole schema again, a cost that grows
with the number of namespaces, which the one connection never paid (adds each into a new
namespace, hundreds of them: searches beside them slower than with one connection).

Each read runs in a read transaction opened by a statement that touches no full-text table
(`Store.snapshot`). Without it, a reader's statement on an FTS5 table failed now and then
with "vtable constructor failed" while the writer created other namespaces' tables (and
never when the writer only inserted into existing ones; a busy timeout changed nothing).
Every schema change makes a reader reconnect its full-text tables, and FTS5's constructor
(xConnect) reads the table's config and structure records: with no read transaction open,
the statement was prepared against one schema and the constructor read a database whose
schema had moved on, an error SQLite does not retry. With the read transaction opened
first, the statement, the schema and the constructor's reads come from one snapshot (a
repro with 3 readers beside a writer creating a table per commit: ~160 failures in 8 s
without, none with).

The caches shared by all threads stay true to what readers see: a namespace's generation
(the word counts' key) is bumped after its transaction commits or rolls back, never before,
and a full-text table is known to exist (`_tables`) once the transaction that created it
has committed.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from ikario_rag import relevance, text

log = logging.getLogger("ikario_rag.store")

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
    has_next INTEGER NOT NULL DEFAULT 0,
    reading TEXT
);
CREATE INDEX IF NOT EXISTS memories_session ON memories(namespace, date_ts);
CREATE INDEX IF NOT EXISTS memories_ns_hash ON memories(namespace, content_hash);
CREATE INDEX IF NOT EXISTS memories_ns_created ON memories(namespace, created_ts);
-- memory_stats counts from this index alone, not the records (at 100k turns the records cost
-- it ~60 ms a call, while a client polls it to see the vectors written): docs/BENCHMARKS.md.
CREATE INDEX IF NOT EXISTS memories_ns_counts
    ON memories(namespace, category, kind, expires_ts, created_at);
CREATE INDEX IF NOT EXISTS memories_expires ON memories(expires_ts) WHERE expires_ts IS NOT NULL;
CREATE INDEX IF NOT EXISTS memories_unindexed ON memories(indexed) WHERE indexed = 0;
CREATE TABLE IF NOT EXISTS namespaces (
    name TEXT PRIMARY KEY,
    records INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS index_settings (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS vector_deletions (
    namespace TEXT NOT NULL,
    id TEXT NOT NULL,
    PRIMARY KEY (namespace, id)
);
"""

_LIST_FIELDS = ("tags", "concepts", "emotions", "subjects")
# The labels a search reads with a memory's content (relevance.features), in its order.
_READ_LABELS = ("subjects", "concepts", "tags")
# The columns a record's vector and its metadata in Chroma are made of.
INDEX_STATE = ("search_text", "kind", "category", "date_ts")
# What ranking and filtering need of a candidate; full rows are read for the final results.
# The opening of a record up to the colon after a speaker's name and the character after
# it: all that text.speaker_of reads (a name is at most 81 characters).
OPENING = "substr(content, 1, instr(substr(content, 1, 100), ':') + 1)"
# What a search ranks and filters candidates by, the speaker rules' openings included (read
# with the candidates: two lookups of the best turns' content fewer per search).
CANDIDATE_COLUMNS = (
    f"id, rowid, namespace, category, kind, tags, date_ts, expires_ts, {OPENING} AS opening"
)
_FTS_WORD = re.compile(r"^[0-9a-z]+$")
MAX_TEXT_MATCHES = 5000
# Matches ranked beyond the limit, so that a few expired records do not cost the slow query.
TEXT_PAGE_SLACK = 20
FTS_OPTIONS = "content='', tokenize='porter unicode61 remove_diacritics 2'"
_COUNT_CACHE = 20_000
# Idle reader connections kept open for the next reads. More are opened while more threads
# read at once (the MCP SDK runs tools on anyio worker threads, a search its text side on a
# thread of its own) and closed as they come back: open connections never outnumber the
# reads under way, and none is tied to a thread that may come and go.
READERS_KEPT = 4
# Bytes of the database file each reader maps (address space, not memory: the pages are the
# operating system's file cache, shared by every reader).
READER_MMAP = 256 * 1024 * 1024


def fts_table(namespace: str) -> str:
    """The namespace's full-text table: a hash keeps any namespace string a safe SQL name."""
    return "fts_" + hashlib.sha256(namespace.encode("utf-8")).hexdigest()[:32]


# In the queries below, "+namespace" keeps SQLite from choosing a namespace index (a scan of
# the whole namespace: 30 ms at 100k) over the id/rowid/FTS lookup (microseconds).


def index_state(row: sqlite3.Row) -> tuple[Any, ...]:
    return tuple(row[name] for name in INDEX_STATE)


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


def full_record(row: sqlite3.Row) -> dict[str, Any]:
    """A record with its `history` (earlier versions, oldest first), as list_memories
    returns it and restore_memories takes it back."""
    return {**record_of(row), "history": json.loads(row["history"])}


@dataclass
class Browse:
    """What list_memories filters on (all optional; tags match any, folded)."""

    kinds: Sequence[str] = ()
    category: str | None = None
    tags: Sequence[str] = ()
    date_from_ts: float | None = None
    date_to_ts: float | None = None
    source_prefix: str | None = None


class Store:
    """Thread-safe access to the records: writes on one connection under one lock, reads
    on pooled reader connections of their own (the module's docstring says why)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock = threading.RLock()
        # Created readable by this user only; SQLite gives its -wal and -shm files that mode.
        # (An existing file is left as it is: it may be read-only, which SQLite then opens so.)
        with suppress(FileExistsError):
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        self.db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self.db.row_factory = sqlite3.Row
        self.db.execute("PRAGMA journal_mode=WAL")
        # NORMAL in WAL mode still survives a process kill; only an OS crash could lose the tail.
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute("PRAGMA busy_timeout=5000")
        self.db.executescript(SCHEMA)
        self._add_reading_column()
        # The thread inside a write transaction (its reads stay on the writer), the full-text
        # tables that transaction created and the namespaces it wrote (the caches learn of
        # them once it has ended).
        self._writing: int | None = None
        self._created: set[str] = set()
        self._touched: set[str] = set()
        self._pool_lock = threading.Lock()
        self._idle: list[sqlite3.Connection] = []
        self._held = threading.local()  # the snapshot this thread is inside, if any
        self._closed = False
        # (namespace, word) -> (records matching, namespace generation); a write to a
        # namespace bumps its generation, so counts never go stale and never cross namespaces.
        # Plain dict reads and writes (atomic under the GIL); only the writer bumps.
        self._counts: dict[tuple[str, str], tuple[int, int]] = {}
        self._generation: dict[str, int] = {}
        # Committed full-text tables (never dropped once committed: a reset empties them).
        self._tables: set[str] = set()
        # namespace -> (the last rowid read, the speakers of its conversation turns)
        self._speakers: dict[str, tuple[int, frozenset[str]]] = {}
        self._speakers_lock = threading.Lock()
        self._move_shared_full_text()

    def close(self) -> None:
        """Close the writer and every reader; a reader lent to a read under way is closed
        when that read gives it back, and reads started after this fail."""
        with self._pool_lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for db in idle:
            db.close()
        with self.lock:
            self.db.close()

    def _add_reading_column(self) -> None:
        """An index made before records kept their `reading` (relevance.reading) gets the
        column; its records have none, and searches read their text as before."""
        columns = {r["name"] for r in self.db.execute("PRAGMA table_info(memories)")}
        if "reading" in columns:
            return
        try:
            self.db.execute("ALTER TABLE memories ADD COLUMN reading TEXT")
        except sqlite3.OperationalError:  # a read-only index: searches read the text
            log.warning("could not add the reading column to %s", self.path, exc_info=True)

    # -- connections ----------------------------------------------------------------------

    def _open_reader(self) -> sqlite3.Connection:
        # mode=rw: a reader opened after the file was deleted fails instead of creating an
        # empty database in its place (the writer keeps the deleted one open).
        uri = Path(self.path).resolve().as_uri() + "?mode=rw"
        db = sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None)
        db.row_factory = sqlite3.Row
        # A WAL reader waits only while another connection recovers the WAL after a crash.
        db.execute("PRAGMA busy_timeout=5000")
        db.execute("PRAGMA query_only=1")
        # Pages read through a memory map: a search's record lookups land on pages all over
        # the table, which each reader's own page cache (2 MB) mostly misses; a read() per
        # page made looking up 120 candidates ~2x slower (0.85 against 0.42-0.59 ms).
        db.execute(f"PRAGMA mmap_size={READER_MMAP}")
        return db

    def _lend(self) -> sqlite3.Connection:
        with self._pool_lock:
            if self._closed:
                raise sqlite3.ProgrammingError("Cannot operate on a closed database.")
            if self._idle:
                return self._idle.pop()
        return self._open_reader()

    def _give_back(self, db: sqlite3.Connection) -> None:
        with self._pool_lock:
            if not self._closed and len(self._idle) < READERS_KEPT:
                self._idle.append(db)
                return
        db.close()

    @contextmanager
    def snapshot(self) -> Iterator[sqlite3.Connection]:
        """A reader connection inside one read transaction: every statement run on it sees
        the same snapshot, the last commit before the transaction opened. Opened by reading
        the schema's cookie, which touches no full-text table: a full-text table's
        constructor then reads in the snapshot its statement was prepared in (the module's
        docstring).

        Inside a snapshot, the same thread's reads (snapshots) are that snapshot's: the
        steps of one search see one state of the records, and do not each pay for a
        transaction of their own."""
        held = getattr(self._held, "db", None)
        if held is not None:
            yield held
            return
        db = self._lend()
        kept = False
        try:
            db.execute("BEGIN")
            db.execute("PRAGMA schema_version").fetchone()
            self._held.db = db
            try:
                yield db
            finally:
                self._held.db = None
            db.execute("COMMIT")
            kept = True
        finally:
            if kept:
                self._give_back(db)
            else:  # a read failed half-way (its transaction may be open): not lent again
                db.close()

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        """One write transaction under the store's lock; rolled back on any error."""
        with self.lock:
            self.db.execute("BEGIN IMMEDIATE")
            self._writing = threading.get_ident()
            try:
                yield
                self.db.execute("COMMIT")
                self._tables |= self._created
            except BaseException:
                # SQLite has rolled back itself after some errors (SQLITE_FULL): a ROLLBACK
                # then would fail and hide the error that says why.
                if self.db.in_transaction:
                    self.db.execute("ROLLBACK")
                raise
            finally:
                self._writing = None
                # After the commit: a reader that read the old generation counted in a
                # snapshot at least as new as it, so no count is cached under a generation
                # newer than what it counted (bumped before, a reader could cache a count of
                # the uncommitted state's predecessor under the new generation).
                for namespace in self._touched:
                    self._generation[namespace] = self._generation.get(namespace, 0) + 1
                self._created.clear()
                self._touched.clear()

    # -- writes ---------------------------------------------------------------------------

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

    def expired(self, now_ts: float) -> list[tuple[str, str]]:
        rows = self._rows(
            "SELECT namespace, id FROM memories WHERE expires_ts IS NOT NULL AND expires_ts <= ?",
            (now_ts,),
        )
        return [(r["namespace"], r["id"]) for r in rows]

    # -- reads ----------------------------------------------------------------------------

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        if self._writing == threading.get_ident():
            # Inside this thread's write transaction (it holds the lock): its own changes.
            return self.db.execute(sql, params).fetchall()
        with self.snapshot() as db:
            return db.execute(sql, params).fetchall()

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

    def last_turn(self, namespace: str, date_ts: float) -> sqlite3.Row | None:
        """The conversation turn stored last in a session (same namespace and `date`)."""
        rows = self._rows(
            "SELECT * FROM memories WHERE namespace = ? AND date_ts = ?"
            " AND kind = 'conversation' ORDER BY rowid DESC LIMIT 1",
            (namespace, date_ts),
        )
        return rows[0] if rows else None

    def vector_model(self, *, fresh: str) -> str:
        """Which model writes this index's bulk vectors (memory.VECTOR_MODELS), recorded the
        first time it is asked: an index that already has records was built before the
        choice existed, by the fp32 model; a new one gets `fresh`."""
        with self._transaction():
            found = self.db.execute(
                "SELECT value FROM index_settings WHERE name = 'vectors'"
            ).fetchone()
            if found is not None:
                return found[0]
            built = self.db.execute("SELECT 1 FROM memories LIMIT 1").fetchone() is not None
            value = "fp32" if built else fresh
            self.db.execute("INSERT INTO index_settings VALUES ('vectors', ?)", (value,))
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
        # joining every match (up to 5,000) to its wide record first cost twice as much (10k
        # LoCoMo turns: 4.7 -> 2.1 ms median, same results; docs/BENCHMARKS.md).
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

    def document_frequencies(
        self, namespace: str, words: Sequence[str]
    ) -> tuple[int, dict[str, int]]:
        """(records in the namespace, {word: how many of them contain it})."""
        found = self._rows("SELECT records FROM namespaces WHERE name = ?", (namespace,))
        return (found[0][0] if found else 0), self.word_counts(namespace, words)

    def _has_text(self, namespace: str) -> bool:
        if fts_table(namespace) in self._tables:
            return True
        found = self._rows("SELECT 1 FROM namespaces WHERE name = ?", (namespace,))
        if found:  # committed with its table, in the same transaction
            self._tables.add(fts_table(namespace))
        return bool(found)

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

    def stats(
        self,
        namespace: str | None,
        now_ts: float,
        within: tuple[Sequence[str], Sequence[str]] | None = None,
    ) -> dict[str, Any]:
        """Counts of `namespace`, or of every namespace; `within` (names, prefixes) keeps
        only the namespaces named or starting with a prefix."""
        where = "WHERE (expires_ts IS NULL OR expires_ts > ?)"
        params: list[Any] = [now_ts]
        if namespace is not None:
            where += " AND namespace = ?"
            params.append(namespace)
        if within is not None:
            names, prefixes = within
            tests = ["namespace = ?"] * len(names)
            tests += ["substr(namespace, 1, ?) = ?"] * len(prefixes)
            params.extend(names)
            for prefix in prefixes:
                params.extend((len(prefix), prefix))
            where += f" AND ({' OR '.join(tests) or '0'})"
        groups = self._rows(
            "SELECT category, kind, COUNT(*), MAX(created_at)"  # noqa: S608
            f" FROM memories {where} GROUP BY category, kind",
            params,
        )
        by_category: dict[str, int] = {}
        by_kind: dict[str, int] = {}
        for category, kind, count, _ in groups:
            by_category[category] = by_category.get(category, 0) + count
            by_kind[kind] = by_kind.get(kind, 0) + count
        return {
            "total_memories": sum(g[2] for g in groups),
            "last_save": max((g[3] for g in groups), default=None),
            "by_category": by_category,
            "by_kind": by_kind,
        }

    # -- the web app's memory page: browse, edit, restore, reset (ikario_rag/curation.py) --

    def browse(
        self,
        namespace: str,
        filters: Browse,
        offset: int,
        limit: int,
        now_ts: float,
    ) -> tuple[list[sqlite3.Row], int]:
        """One page of the namespace's records, newest stored first, and how many match.

        Tags compare folded (case and accents aside), as search's tag filter does, so they
        are matched here rather than in SQL; every other filter is a WHERE clause."""
        where = ["namespace = ?", "(expires_ts IS NULL OR expires_ts > ?)"]
        params: list[Any] = [namespace, now_ts]
        if filters.kinds:
            where.append(f"kind IN ({','.join('?' * len(filters.kinds))})")
            params.extend(filters.kinds)
        if filters.category:
            where.append("category = ?")
            params.append(filters.category)
        if filters.date_from_ts is not None:
            where.append("date_ts >= ?")
            params.append(filters.date_from_ts)
        if filters.date_to_ts is not None:
            where.append("date_ts <= ?")
            params.append(filters.date_to_ts)
        if filters.source_prefix:
            # substr, not LIKE: a prefix holding % or _ means those characters.
            where.append("substr(source, 1, ?) = ?")
            params.extend([len(filters.source_prefix), filters.source_prefix])
        clause = " AND ".join(where)
        order = "ORDER BY created_ts DESC, rowid DESC"
        if not filters.tags:
            total = self._rows(f"SELECT COUNT(*) FROM memories WHERE {clause}", params)[0][0]  # noqa: S608
            rows = self._rows(
                f"SELECT * FROM memories WHERE {clause} {order} LIMIT ? OFFSET ?",  # noqa: S608
                [*params, limit, offset],
            )
            return rows, total
        wanted = {text.fold(t) for t in filters.tags}
        labelled = self._rows(f"SELECT id, tags FROM memories WHERE {clause} {order}", params)  # noqa: S608
        matching = [
            r["id"] for r in labelled if wanted & {text.fold(t) for t in json.loads(r["tags"])}
        ]
        page = matching[offset : offset + limit]
        found = self.by_ids(namespace, page, now_ts)
        return [found[i] for i in page if i in found], len(matching)

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
            if {"content", *_READ_LABELS} & fields.keys():
                edited = {name: json.loads(old[name]) for name in _READ_LABELS}
                edited.update({k: v for k, v in fields.items() if k in _READ_LABELS})
                fields["reading"] = reading_of(fields.get("content", old["content"]), **edited)
            for name in (*_LIST_FIELDS, "history"):
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


def memory_row(
    item: Any,
    *,
    id: str,
    namespace: str,
    search_text: str,
    date: datetime,
    created: datetime,
    created_ts: float,
    expires: datetime | None,
    content_hash: str,
    history: list[dict[str, Any]],
    has_next: bool,
) -> dict[str, Any]:
    """The row of a memory whose content and labels are `item`'s (a validated new memory
    or a restored record): one place for what add_thought and restore both write."""
    return new_row(
        id=id,
        namespace=namespace,
        content=item.content,
        search_text=search_text,
        category=item.category,
        kind=item.kind,
        tags=item.tags,
        concepts=item.concepts,
        emotions=item.emotions,
        subjects=item.subjects,
        date=text.iso(date),
        date_ts=date.timestamp(),
        created_at=text.iso(created),
        created_ts=created_ts,
        expires_at=text.iso(expires) if expires else None,
        expires_ts=expires.timestamp() if expires else None,
        source=item.source,
        content_hash=content_hash,
        history=history,
        has_next=has_next,
    )


def reading_of(content: str, *, subjects=(), concepts=(), tags=()) -> str:
    """The record's `reading` (relevance.reading), of its text as a search reads it."""
    return relevance.reading(content, (*subjects, *concepts, *tags))


def stored_reading(row: sqlite3.Row) -> str | None:
    """A row's reading; None when it has none, or its index has no such column."""
    try:
        return row["reading"]
    except IndexError:
        return None


def new_row(**fields: Any) -> dict[str, Any]:
    """A row dict for `Store.insert`, list fields JSON-encoded, its reading worked out."""
    row = dict(fields)
    if row.get("reading") is None:
        labels = {name: row.get(name) or () for name in _READ_LABELS}
        row["reading"] = reading_of(row["content"], **labels)
    for name in (*_LIST_FIELDS, "history"):
        row[name] = json.dumps(row.get(name) or [], ensure_ascii=False)
    row.setdefault("content_hash", text.content_hash(row["content"]))
    row["has_next"] = int(bool(row.get("has_next")))
    return row
