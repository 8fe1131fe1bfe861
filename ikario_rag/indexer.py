"""Write-behind vector indexing: the thread that embeds what add_thought(s) committed.

An add commits its records to SQLite + FTS5 (durable, found by text search at once, deduped
by hash) with `indexed = 0` and returns; this thread then embeds the pending records in
length-sorted batches (Embedder.encode_batch: the lower-priority batch session) and writes
their vectors to Chroma, one upsert per namespace and batch (Memory.index_pending). Why: the
embedding is the add's cost (~20 ms a LoCoMo turn with its context, two per single turn since
the turn before it is re-embedded), and a turn whose following turn arrives while it waits is
embedded once, with its final text. Nothing is lost if the process dies first: the pending
rows are the `indexed = 0` records, indexed by the start-up repair.

The thread leaves the work to the maintenance repair while the vectors are suspect (a failed
vector operation, the vector directory removed) or the index files are not the ones opened.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from ikario_rag.embed import lower_thread_priority

log = logging.getLogger("ikario_rag.indexer")

# Records embedded and written per step: one Chroma upsert per namespace and step (a write
# costs ~20-35 ms whatever its size), and ~1-3 s of embedding on two shared cores, the
# longest a server's exit waits for the step under way (the rows not done stay pending).
INDEX_BATCH = 64
# Seconds between an add's wake-up call and the indexing it starts.
DEBOUNCE = 0.02


class Indexer:
    """One thread per Memory, started on the first write-behind add, woken by each one."""

    def __init__(self, memory: Any) -> None:  # an ikario_rag.memory.Memory (which imports this)
        self._memory = memory
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()

    def wake(self) -> None:
        with self._start_lock:
            if self._stop.is_set():
                return
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="ikario-indexer", daemon=True
                )
                self._thread.start()
        self._wake.set()

    def stop(self) -> None:
        """Stop after the current step (the rows not done stay pending: indexed at start)."""
        with self._start_lock:
            self._stop.set()
            thread = self._thread
        self._wake.set()
        if thread is not None:
            thread.join()

    def _run(self) -> None:
        # All of this thread's work, its Chroma upserts and SQLite writes as well as the
        # embedding, is background work: at nice 10 it takes the cores only while a search or
        # the web app does not want them (bench/background_work.py).
        lower_thread_priority()
        memory = self._memory
        while True:
            self._wake.wait()
            if self._stop.is_set():
                return
            # A pause after the wake: the add's answer goes out before this thread competes
            # with it for the interpreter, and the adds of a burst make one batch.
            if self._stop.wait(DEBOUNCE):
                return
            self._wake.clear()
            if self._stop.is_set():
                # stop() came between the pause and the clear: its wake-up was just cleared,
                # and waiting for another would hang its join.
                return
            # The start-up repair verifies vectors against records first (Memory.repair).
            while not memory.repaired.wait(0.5):
                if self._stop.is_set():
                    return
            if memory.vectors_suspect or memory.file_problem() is not None:
                continue  # the maintenance repair's work; it indexes what is pending too
            try:
                memory.index_pending(self._stop, INDEX_BATCH)
            except Exception:
                memory.vectors.suspect = True
                log.exception("write-behind indexing failed; maintenance will index the rest")
