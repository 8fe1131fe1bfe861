"""The memory database: its SQLite file and schema, one writer connection and a pool of
readers, read snapshots and write transactions. The base of the Store (ikario_rag/store.py).

Connections: one writer and a small pool of readers. Every write runs on the writer
connection under the store's lock (`Database.lock`), one transaction per call. Reads run on a
reader connection of their own, without that lock: in WAL mode a reader sees the last commit
and neither waits for the writer's transaction nor holds it up, so a reply's recall search
does not wait for the background auto-save's transactions, nor they for it (more adds go
through beside searches; what the searches still meet is the adds' CPU). A read made inside a
write transaction, on the writer's thread, stays on the writer connection: it must see that
transaction's own changes. The price: after a schema change (a namespace's first record
creates its full-text table) each reader parses the whole schema again, a cost that grows
with the number of namespaces.

Each read runs in a read transaction opened by a statement that touches no full-text table
(`Database.snapshot`). Without it, a reader's statement on an FTS5 table fails now and then
with "vtable constructor failed" while the writer creates other namespaces' tables: every
schema change makes a reader reconnect its full-text tables, and FTS5's constructor
(xConnect) reads the table's config and structure records; with no read transaction open,
the statement is prepared against one schema and the constructor reads a database whose
schema has moved on, an error SQLite does not retry. With the read transaction opened
first, the statement, the schema and the constructor's reads come from one snapshot
(tests/ikario_rag/test_readers.py).
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

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

# Idle reader connections kept open for the next reads. More are opened while more threads
# read at once (the MCP SDK runs tools on anyio worker threads, a search its text side on a
# thread of its own) and closed as they come back: open connections never outnumber the
# reads under way, and none is tied to a thread that may come and go.
READERS_KEPT = 4
# Bytes of the database file each reader maps (address space, not memory: the pages are the
# operating system's file cache, shared by every reader).
READER_MMAP = 256 * 1024 * 1024


class Database:
    """Thread-safe access to the database: writes on one connection under one lock, reads
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
        # The thread inside a write transaction (its reads stay on the writer).
        self._writing: int | None = None
        self._pool_lock = threading.Lock()
        self._idle: list[sqlite3.Connection] = []
        self._held = threading.local()  # the snapshot this thread is inside, if any
        self._closed = False

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
        column; its records have none, and searches read their text instead."""
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
        # page makes looking up a search's candidates about twice as slow.
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
                self._committed()
            except BaseException:
                # SQLite has rolled back itself after some errors (SQLITE_FULL): a ROLLBACK
                # then would fail and hide the error that says why.
                if self.db.in_transaction:
                    self.db.execute("ROLLBACK")
                raise
            finally:
                self._writing = None
                self._transaction_ended()

    def _committed(self) -> None:
        """Called once a write transaction has committed (FullText learns of its tables)."""

    def _transaction_ended(self) -> None:
        """Called after every write transaction, committed or rolled back."""

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        if self._writing == threading.get_ident():
            # Inside this thread's write transaction (it holds the lock): its own changes.
            return self.db.execute(sql, params).fetchall()
        with self.snapshot() as db:
            return db.execute(sql, params).fetchall()
