"""The records: SQLite (WAL + FTS5) is the source of truth; vectors are derived from it.
The store's modules are the only ones that speak SQL, each a layer of the one `Store`:

- database.py: the file, its schema, one writer connection and pooled readers, snapshots
  and write transactions;
- full_text.py: each namespace's FTS5 table and BM25 search over it;
- record_writes.py: inserts, edits and deletions (one transaction per call);
- record_reads.py: lookups by id, hash, session and recency; a namespace's speakers;
- vector_bookkeeping.py: which records wait for a vector, which vectors wait to go;
- browsing.py: the memory page's pages of records and memory_stats' counts.

records.py holds a record's row shapes (what is stored, what the tools return).
"""

from __future__ import annotations

from ikario_rag.browsing import Browsing
from ikario_rag.record_writes import RecordWrites
from ikario_rag.vector_bookkeeping import VectorBookkeeping


class Store(RecordWrites, Browsing, VectorBookkeeping):
    """Thread-safe access to the records: writes on one connection under one lock, reads
    on pooled reader connections of their own (ikario_rag/database.py says why)."""
