"""Fair shares of the server: one namespace's load never holds up another's recall.

Every tool runs on a thread of anyio's pool (40 threads, first come first served). One user
sending 50 calls at once (searches, adds, imports) used to take every thread, and the next
user's recall search waited behind them past its deadline (2 s, the app's
MEMORY_RETRIEVAL_TIMEOUT). So before it takes a thread, a call takes a turn at one of two
gates, on the event loop (a waiting call holds no thread):

- reads (the searches, gets, lists, stats): READ_SLOTS at once (IKARIO_READ_SLOTS, 8), at
  most PER_NAMESPACE of them one namespace's (IKARIO_READS_PER_NAMESPACE, 2): another
  namespace's search always finds a slot free, whatever is queued;
- writes (adds, imports, edits, deletes, resets): WRITE_SLOTS at once
  (IKARIO_WRITE_SLOTS, 1; they take the store's one write lock anyway). A search never
  waits for a write's turn: the reads' gate is its own, so bulk work comes after recall.

Calls waiting at a gate are served one namespace at a time, in turn (round robin), each
namespace's in the order they came: a namespace with 50 calls queued delays another's next
call by at most one call per slot.
"""

from __future__ import annotations

import collections
import contextlib
from collections.abc import AsyncIterator

import anyio

from ikario_rag import config

_ENVIRONMENT = config.settings()
READ_SLOTS = _ENVIRONMENT.read_slots
PER_NAMESPACE = _ENVIRONMENT.reads_per_namespace
WRITE_SLOTS = _ENVIRONMENT.write_slots

READS = frozenset(
    (
        "search_memories",
        "get_memories",
        "get_recent_memories",
        "memory_stats",
        "list_memories",
        "trace_concept_evolution",
        "check_consistency",
    )
)
WRITES = frozenset(
    (
        "add_thought",
        "add_thoughts",
        "restore_memories",
        "update_memory",
        "delete_memory",
        "forget",
        "forget_all",
    )
)


class FairGate:
    """At most `slots` holders at once, at most `per_namespace` of one namespace; waiting
    ones are let in namespace by namespace in turn. Event-loop only (no lock)."""

    def __init__(self, slots: int, per_namespace: int | None = None) -> None:
        self.slots = slots
        self.per_namespace = per_namespace or slots
        self.running: collections.Counter[str] = collections.Counter()
        self.total = 0
        # Namespaces in their turn's order, each with its waiting calls in arrival order.
        self.waiting: collections.OrderedDict[str, collections.deque[anyio.Event]] = (
            collections.OrderedDict()
        )

    def queued(self) -> int:
        return sum(len(q) for q in self.waiting.values())

    def _may_run(self, namespace: str) -> bool:
        return self.total < self.slots and self.running[namespace] < self.per_namespace

    @contextlib.asynccontextmanager
    async def turn(self, namespace: str) -> AsyncIterator[None]:
        # After every release the gate lets in whoever may run, so a caller finding a free
        # slot and nobody of its namespace waiting goes ahead of no one it should not.
        if self._may_run(namespace) and namespace not in self.waiting:
            self._enter(namespace)
        else:
            admitted = anyio.Event()
            self.waiting.setdefault(namespace, collections.deque()).append(admitted)
            try:
                await admitted.wait()
            except BaseException:
                if admitted.is_set():  # let in, then cancelled: its slot goes to the next
                    self._leave(namespace)
                else:
                    self._forget(namespace, admitted)
                raise
        try:
            yield
        finally:
            self._leave(namespace)

    def _enter(self, namespace: str) -> None:
        self.running[namespace] += 1
        self.total += 1

    def _leave(self, namespace: str) -> None:
        self.running[namespace] -= 1
        if self.running[namespace] <= 0:
            del self.running[namespace]
        self.total -= 1
        self._admit()

    def _forget(self, namespace: str, admitted: anyio.Event) -> None:
        queue = self.waiting.get(namespace)
        if queue is not None:
            with contextlib.suppress(ValueError):
                queue.remove(admitted)
            if not queue:
                del self.waiting[namespace]

    def _admit(self) -> None:
        while self.total < self.slots:
            chosen = next((ns for ns in self.waiting if self._may_run(ns)), None)
            if chosen is None:
                return
            queue = self.waiting[chosen]
            admitted = queue.popleft()
            if queue:
                self.waiting.move_to_end(chosen)  # its next call waits for the others' turn
            else:
                del self.waiting[chosen]
            self._enter(chosen)
            admitted.set()


class Shares:
    """The server's two gates; `turn(tool, arguments)` is where a call waits for its own."""

    def __init__(self) -> None:
        self.reads = FairGate(READ_SLOTS, PER_NAMESPACE)
        self.writes = FairGate(WRITE_SLOTS)

    def turn(self, tool: str, arguments: dict | None) -> contextlib.AbstractAsyncContextManager:
        namespace = (arguments or {}).get("namespace")
        namespace = namespace if isinstance(namespace, str) else ""
        if tool in READS:
            return self.reads.turn(namespace)
        if tool in WRITES:
            return self.writes.turn(namespace)
        return contextlib.nullcontext()
