"""A person is waiting for an answer: the server's background work steps aside.

The write-behind indexer (ikario_rag/indexer.py) embeds on both cores at nice 10; nice
does not keep the cores' caches or the scheduler's slices for a reply. With this hold, a
reply beside an auto-save under way took 1.07-1.18x its idle time at the median with memory
on, against 1.29-1.43x without (bench/background_work.py, docs/BENCHMARKS.md). So a client
on this machine says when it starts and stops writing a reply, with two signals, and
background work waits in between:

- SIGUSR1: hold. The batch slice running now is cancelled (its rows stay pending) and no
  background step starts for HOLD_SECONDS, or until SIGUSR2.
- SIGUSR2: release.

Signals, not an MCP tool: the contract's tools are what a model sees (docs/MEMORY_TOOLS.md),
and a reply that does not use memory at all (memory off) must still be able to say it. A
client tells the server holding an index directory with
`ikario_rag.client.tell_foreground(index_dir, busy=...)`, which signals the PID in the
directory's lock file only if that process is an ikario_rag server.
A server reached over HTTP is not told (it may run on another machine).

Background work never waits more than the `most` it asks for (MOST_SECONDS for a step's
embedding, as long again for its vector write): a site that never stops chatting still gets
its memories indexed, later.
"""

from __future__ import annotations

import os
import signal
import threading
import time
import weakref
from collections.abc import Callable

import anyio

# A hold that nobody releases (the client died mid-reply) ends by itself.
HOLD_SECONDS = float(os.environ.get("IKARIO_FOREGROUND_HOLD") or 30.0)
# The longest one background step waits for a release before it runs anyway.
MOST_SECONDS = float(os.environ.get("IKARIO_FOREGROUND_MOST") or 10.0)
# Between two looks while waiting (a release is seen within this).
POLL_SECONDS = 0.01
# The HTTP header by which a client of the Unix socket says its calls are background work
# (the app's worker, a bulk import): they wait while a reply is written
# (ikario_rag/socket_writes.py). A client that does not send it is served as stdio is.
BACKGROUND_HEADER = "x-ikario-background"
# None where the platform has no user signals (Windows): nobody is told, nothing waits.
HOLD_SIGNAL = getattr(signal, "SIGUSR1", None)
RELEASE_SIGNAL = getattr(signal, "SIGUSR2", None)


class Foreground:
    """Whether a client is writing a reply now (a float: read and written without a lock)."""

    def __init__(self) -> None:
        self._until = 0.0
        self._since = 0.0
        # Requests waiting on the event loop for the reply to end (await_quiet): for health.
        self.waiting = 0
        # Weak: an embedder's cancel callback must not keep a closed server's model alive.
        self._on_hold: list[weakref.WeakMethod] = []

    def hold(self, seconds: float = HOLD_SECONDS) -> None:
        now = time.monotonic()
        if not self.busy():
            self._since = now  # a hold renewed by the next reply keeps its start
        self._until = now + seconds
        for ref in list(self._on_hold):
            callback = ref()
            if callback is not None:
                callback()

    def release(self) -> None:
        self._until = 0.0

    def busy(self) -> bool:
        return time.monotonic() < self._until

    def held_for(self) -> float:
        """Seconds since the hold began; 0 when none holds."""
        return time.monotonic() - self._since if self.busy() else 0.0

    def on_hold(self, method: Callable[[], None]) -> None:
        """Call the bound `method` (quick: the signals wait for it) at each hold, while its
        object lives."""
        self._on_hold = [r for r in self._on_hold if r() is not None]
        self._on_hold.append(weakref.WeakMethod(method))

    def wait_quiet(self, most: float = MOST_SECONDS) -> float:
        """Wait while a reply is being written, at most `most` seconds. Returns the seconds
        waited."""
        start = time.monotonic()
        while self.busy():
            waited = time.monotonic() - start
            if waited >= most:
                return waited
            time.sleep(POLL_SECONDS)
        return time.monotonic() - start

    async def await_quiet(self, most: float = MOST_SECONDS) -> float:
        """wait_quiet on the event loop, which serves other requests meanwhile; counted in
        `waiting` while it waits."""
        start = time.monotonic()
        if not self.busy():
            return 0.0
        self.waiting += 1
        try:
            while self.busy() and time.monotonic() - start < most:
                await anyio.sleep(POLL_SECONDS)
        finally:
            self.waiting -= 1
        return time.monotonic() - start


FOREGROUND = Foreground()


def listen() -> threading.Thread | None:
    """Take SIGUSR1/SIGUSR2 as hold/release, on a thread of their own. Call it before any
    other thread starts: the two signals are blocked here, so every later thread inherits
    the block and only `sigwait` receives them (a Python handler runs on the main thread
    only, which may sleep in the event loop while the kernel hands the signal to another
    thread)."""
    if HOLD_SIGNAL is None or RELEASE_SIGNAL is None:
        return None
    wanted = {HOLD_SIGNAL, RELEASE_SIGNAL}
    signal.pthread_sigmask(signal.SIG_BLOCK, wanted)

    def receive() -> None:
        while True:
            if signal.sigwait(wanted) == HOLD_SIGNAL:
                FOREGROUND.hold()
            else:
                FOREGROUND.release()

    thread = threading.Thread(target=receive, name="ikario-foreground", daemon=True)
    thread.start()
    return thread
