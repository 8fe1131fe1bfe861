"""Background calls over the server's Unix socket wait while a reply is written; their
writes run on a thread at a lower CPU priority.

The web app talks to the memory server it spawns over stdio; its background worker (a
child process, or `manage.py db_worker`) and a bulk `manage.py memory_backfill` reach the
same server over its Unix socket (ikario_rag/transport.py), and say that their calls are
background work with an HTTP header (BACKGROUND_HEADER; memory/mcp_client.py's
run_in_background). An auto-save batch under way when a reply starts used to run in this
server at the app's priority and share the two cores with the reply and its recall search
(docs/BENCHMARKS.md). So, for those calls:

- While a client writes a reply (ikario_rag/foreground.py), a background call waits before
  it is read (`AfterTheReply`): reading an auto-save batch (its JSON, the tool's argument
  checks) cost the server ~3 ms of CPU in the middle of a reply (docs/BENCHMARKS.md). Its
  reads wait as well. The event loop serves stdio meanwhile, and the server's health counts
  the calls waiting (`socket_calls_waiting`).
- Their writes run on one thread of their own at nice IKARIO_BATCH_NICE (10, like the
  batch embedding): the kernel gives the cores to the reply first, and idle cores to the
  writes at once. A write also waits for a reply that began while it was read: a nice value
  leaves a background write a tenth of a core the reply wants, the CPU caches it fills and
  the store's write lock, which a model's own save_memory during the reply would wait for.
- Every such wait ends SOCKET_PATIENCE seconds after the hold began, not after the call
  arrived: a session's handshake, its call and the call's write each wait, and together
  they never wait longer than that (a site that never stops chatting still saves).

A client of the socket that does not send the header (the app itself when another process
holds the index, MCP_SPAWN_SERVER off; `manage.py memory_search`) is served as stdio is:
its recall search must not wait for its own reply.

Reads never wait for that thread (the store's readers, ikario_rag/store.py); another write
waits behind it for the store's lock, as before. A server reached over TCP (streamable
HTTP, a shared server) serves every client alike: nothing there says which is background.
The thread is named `SOCKET_WRITER` for the kernel (its `comm`), so its priority can be
seen from outside (ps, top, /proc).
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from ikario_rag.embed import lower_thread_priority
from ikario_rag.foreground import BACKGROUND_HEADER, FOREGROUND

log = logging.getLogger("ikario_rag.socket_writes")

SOCKET_WRITER = "ikario-sockwr"  # at most 15 characters: the kernel's limit for a name
# The longest a socket call waits for replies, counted from the start of the hold: its
# session's handshake, the call and its write each wait, and all their waits end by then,
# well inside the app's call timeout (MCP_CALL_TIMEOUT, 10 s), so that a long reply delays a
# save, never fails it.
SOCKET_PATIENCE = float(os.environ.get("IKARIO_SOCKET_PATIENCE") or 3.0)
T = TypeVar("T")


def _start_thread() -> None:
    lower_thread_priority()
    if sys.platform == "linux":
        try:
            Path(f"/proc/self/task/{threading.get_native_id()}/comm").write_text(SOCKET_WRITER)
        except OSError:  # a name is for people looking at the process: nothing depends on it
            log.debug("could not name the socket writer thread", exc_info=True)


_WRITER = ThreadPoolExecutor(
    max_workers=1, thread_name_prefix="socket-writer", initializer=_start_thread
)


_BACKGROUND = (BACKGROUND_HEADER.encode("latin-1"), b"1")


class AfterTheReply:
    """ASGI middleware of the socket's HTTP app: a background call (a POST sending
    BACKGROUND_HEADER) waits, unread, while a reply is written; anything else (the app's
    lifespan, a session's GET or DELETE, a foreground client's call) passes."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if (
            scope["type"] == "http"
            and scope.get("method") == "POST"
            and _BACKGROUND in scope.get("headers", ())
        ):
            await FOREGROUND.await_quiet(most=patience_left())
        await self.app(scope, receive, send)


def background(request: Any) -> bool:
    """Whether an MCP request came over the Unix socket from a client saying its calls are
    background work (BACKGROUND_HEADER). uvicorn gives a Unix socket connection's scope a
    `server` with no port (a TCP one has a port; stdio has no request at all): over TCP the
    header is not trusted, a shared server serves every client alike."""
    scope = getattr(request, "scope", None) or {}
    server = scope.get("server")
    over_socket = isinstance(server, tuple | list) and len(server) == 2 and server[1] is None
    return over_socket and _BACKGROUND in scope.get("headers", ())


def write(request: Any, fn: Callable[..., T], *args: Any) -> T:
    """`fn(*args)`: on the socket writer thread when `request` is a background call, else
    here (stdio: the app's own calls, a model's save_memory during its reply)."""
    if not background(request):
        return fn(*args)
    return _WRITER.submit(_after_the_reply, fn, *args).result()


def patience_left() -> float:
    """What is left of SOCKET_PATIENCE since the hold began (0 once spent)."""
    return max(0.0, SOCKET_PATIENCE - FOREGROUND.held_for())


def _after_the_reply(fn: Callable[..., T], *args: Any) -> T:
    FOREGROUND.wait_quiet(most=patience_left())
    return fn(*args)
