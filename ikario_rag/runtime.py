"""What the server's lifespan owns: the Memory, its maintenance thread and its health.

A Memory that cannot open (a damaged database) does not stop the server: every tool then
answers "memory unavailable: the memory database is damaged", the details (path, SQLite
error) go to the log and to `health()` (memory_stats without a namespace, for operators).

`MemoryHost` is the lifespan. It may be entered more than once in one process (in-process
test clients): the first entry opens the Memory and starts the maintenance thread, the last
exit stops and joins the thread and closes the Memory.
"""

from __future__ import annotations

import errno
import logging
import os
import sqlite3
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from ikario_rag import config
from ikario_rag.embed import Embedder
from ikario_rag.errors import MemoryUnavailable
from ikario_rag.memory import DAMAGED, Memory

log = logging.getLogger("ikario_rag.runtime")


# Seconds between maintenance cycles: purge expired memories, index what is not yet indexed.
MAINTENANCE_INTERVAL = config.settings().maintenance_interval
# A removed index directory is logged at once, then again at most this often (seconds).
ALARM_REPEAT = 600.0
# How long the start-up repair waits for the embedding model (torch + MiniLM on a busy machine).
MODEL_WAIT = config.settings().model_wait
# Free space under which the index's disk counts as full: a save needs room for its WAL.
MIN_FREE_BYTES = 8 * 2**20
DISK_FULL = "the disk is full"
# What SQLite's errors mean for a caller, besides damage (DAMAGED); by prefix of their
# name (SQLITE_IOERR_WRITE, SQLITE_READONLY_DBMOVED...).
WRITE_ERRORS = {
    "SQLITE_FULL": DISK_FULL,
    "SQLITE_READONLY": "the memory database is read-only",
    "SQLITE_IOERR": "the memory database cannot be written (a disk error)",
}


@dataclass
class Settings:
    index_dir: Path
    maintenance_interval: float = MAINTENANCE_INTERVAL
    embedder: Embedder | None = None  # in-process callers (tests) share one loaded model
    watched: tuple[Path, ...] = ()  # more files whose removal means the index is gone (lock)


class Runtime:
    """One open index: the Memory (or why there is none), its maintenance thread, its health."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._memory: Memory | None = None
        # Set once the database is found damaged: every tool is refused until a restart.
        self.damage: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._cycle = threading.Condition()
        self.cycles = 0
        self._last_alarm = 0.0
        # Why the last write failed, until one succeeds (record_write).
        self.write_failure: str | None = None

    def open(self) -> Runtime:
        path = Path(self.settings.index_dir)
        try:
            self._memory = Memory(path, embedder=self.settings.embedder)
        except sqlite3.DatabaseError as exc:
            # Garbage in memories.sqlite3 must not crash-loop the server.
            self.damaged(f"memories.sqlite3: {exc}")
            log.error("cannot open the memory database %s: %s", path / "memories.sqlite3", exc)
            return self
        for watched in self.settings.watched:
            self._memory.watch(watched)
        self._thread = threading.Thread(
            target=self._maintain, name="ikario-maintenance", daemon=True
        )
        self._thread.start()
        return self

    def memory(self) -> Memory:
        """The open Memory, or MemoryUnavailable saying (safely) why there is none."""
        if self.damage is not None or self._memory is None:
            raise MemoryUnavailable(DAMAGED)
        return self._memory

    def damaged(self, detail: str) -> None:
        self.damage = detail

    def diagnose(self, exc: BaseException) -> MemoryUnavailable | None:
        """What to tell a caller about an unexpected failure, if it says something general."""
        if isinstance(exc, sqlite3.DatabaseError):
            name = getattr(exc, "sqlite_errorname", "")
            if name in ("SQLITE_CORRUPT", "SQLITE_NOTADB"):
                log.error("the memory database is damaged: %s", exc)
                self.damaged(f"memories.sqlite3: {exc}")
                return MemoryUnavailable(DAMAGED)
            problem = self._memory.file_problem() if self._memory is not None else None
            if problem is not None:
                return MemoryUnavailable(problem)
            known = next((w for code, w in WRITE_ERRORS.items() if name.startswith(code)), None)
            if known is not None:
                log.error("a write failed: %s (%s)", known, exc)
                return MemoryUnavailable(known)
        if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
            return MemoryUnavailable(DISK_FULL)
        return None

    def record_write(self, failure: str | None) -> None:
        """A write tool's outcome: why it could not write ("memory unavailable: ..."), or None
        when it wrote; saving_problem() says the last failure until a write succeeds."""
        self.write_failure = failure

    def saving_problem(self) -> str | None:
        """Why a save would fail now, or None: the database damaged, the index directory
        removed, the embedding model not loaded, the disk full, or the last write's failure."""
        if self.damage is not None or self._memory is None:
            return DAMAGED
        memory = self._memory
        problem = memory.file_problem()
        if problem is not None:
            return problem
        if memory.embedder.state == "failed":
            return "the embedding model failed to load"
        try:
            found = os.statvfs(memory.index_dir)
            if found.f_bavail * found.f_frsize < MIN_FREE_BYTES:
                return DISK_FULL
        except OSError:
            pass  # file_problem() says when the directory is gone
        if self.write_failure is not None:
            return self.write_failure.removeprefix("memory unavailable: ")
        return None

    def saving(self) -> str:
        """'ok', or 'fails: <why>' (health and memory_stats: the app's indicator says it)."""
        problem = self.saving_problem()
        return "ok" if problem is None else f"fails: {problem}"

    def health(self) -> dict[str, object]:
        """For operators (memory_stats without a namespace): what is wrong, with details."""
        if self.damage is not None or self._memory is None:
            return {
                "status": "unavailable",
                "reason": DAMAGED,
                "detail": self.damage or "",
                "saving": self.saving(),
            }
        from ikario_rag import transport

        return {
            **self._memory.health(),
            "saving": self.saving(),
            "http_sessions": transport.open_sessions(),
        }

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._memory is not None:
            # An exit while onnxruntime is still opening its sessions aborts the process
            # (SIGABRT from its C++ side): let the loading thread finish first (< 1 s).
            self._memory.embedder.wait_loaded(MODEL_WAIT)
            self._memory.close()

    def wait_for_cycle(self, number: int, timeout: float) -> bool:
        """Block until maintenance cycle `number` has run; cycle 1 is the start-up repair."""
        with self._cycle:
            return self._cycle.wait_for(lambda: self.cycles >= number, timeout)

    # -- maintenance thread -----------------------------------------------------------------

    def _maintain(self) -> None:
        memory = self._memory
        assert memory is not None
        try:
            memory.open_vectors()  # importing chromadb takes ~0.7 s: off the request path
            deadline = time.monotonic() + MODEL_WAIT
            while not memory.embedder.wait_loaded(0.5):
                if self._stop.is_set():
                    return
                if time.monotonic() > deadline:
                    raise TimeoutError(f"the embedding model did not load in {MODEL_WAIT:.0f} s")
            memory.repair(stop=self._stop, verify=True)
        except Exception:
            log.exception("start-up repair failed; maintenance will retry")
        finally:
            memory.repaired.set()
        if memory.quantised and memory.embedder.ready:  # its searches embed with that model
            _warm_quantised(memory)
        self._count_cycle()
        while not self._stop.wait(self.settings.maintenance_interval):
            try:
                self.maintain_once()
            except Exception:
                log.exception("maintenance failed")
            self._count_cycle()

    def maintain_once(self) -> None:
        memory = self._memory
        assert memory is not None
        problem = memory.file_problem()
        if problem is not None:
            # Nothing is written (a purge or a rebuild would recreate files in a dead place).
            now = time.monotonic()
            if not self._last_alarm or now - self._last_alarm >= ALARM_REPEAT:
                log.critical("%s (%s): writes are refused", problem, memory.index_dir)
                self._last_alarm = now
            return
        memory.purge_expired()
        if memory.needs_repair():
            memory.repair(stop=self._stop)

    def _count_cycle(self) -> None:
        with self._cycle:
            self.cycles += 1
            self._cycle.notify_all()


class MemoryHost:
    """The server's lifespan: one Runtime shared by every transport of the process."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.runtime: Runtime | None = None
        self._users = 0
        self._lock = threading.Lock()  # release runs on a worker thread, acquire on the loop

    def acquire(self) -> Runtime:
        with self._lock:
            if self._users == 0:
                self.runtime = Runtime(self.settings).open()
            self._users += 1
            assert self.runtime is not None
            return self.runtime

    def release(self) -> None:
        with self._lock:
            self._users -= 1
            if self._users == 0 and self.runtime is not None:
                runtime, self.runtime = self.runtime, None
                runtime.close()

    @asynccontextmanager
    async def lifespan(self, _server: Any) -> AsyncIterator[Runtime]:
        runtime = self.acquire()
        try:
            yield runtime
        finally:
            # Joining the maintenance thread may wait for one cycle: not on the event loop.
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(self.release)


def _warm_quantised(memory: Memory) -> None:
    """Open the quantised query session (~0.1 s) and run it once, after the start-up repair
    (searches wait for that, not for this): a search of an index this model wrote embeds its
    query with it, and opens it itself if it comes first."""
    try:
        memory.embedder.encode_query("warm up", quantised=True)
    except Exception:  # the first search opens them instead, and reports a failure
        log.warning("warming up the quantised embedding model failed", exc_info=True)
