"""Writes sent over the server's Unix socket run on a thread at a lower CPU priority.

The web app talks to the memory server it spawns over stdio; its background worker (a
child process) and the management commands beside it reach the same server over its Unix
socket (ikario_rag/transport.py). An auto-save batch under way when a reply starts used to
run in this server at the app's priority and share the two cores with the reply and its
recall search (docs/BENCHMARKS.md). So the writes that come over the socket run on one
thread of their own at nice IKARIO_BATCH_NICE (10, like the batch embedding): the kernel
gives the cores to the reply first, and idle cores to the writes at once. And while a
client writes a reply (ikario_rag/foreground.py), a write that comes over the socket waits
for it to end, at most SOCKET_PATIENCE seconds: a nice value leaves a background write a
tenth of a core the reply wants, the CPU caches it fills and the store's write lock, which a
model's own save_memory during the reply would wait for.

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
from ikario_rag.foreground import FOREGROUND

log = logging.getLogger("ikario_rag.socket_writes")

SOCKET_WRITER = "ikario-sockwr"  # at most 15 characters: the kernel's limit for a name
# The longest a socket write waits for a reply to end: well inside the app's call timeout
# (MCP_CALL_TIMEOUT, 10 s), so that a long reply delays a save, never fails it.
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


def over_unix_socket(request: Any) -> bool:
    """Whether an MCP request came over a Unix socket: uvicorn gives such a connection's
    scope a `server` with no port (a TCP one has a port; stdio has no request at all)."""
    server = (getattr(request, "scope", None) or {}).get("server")
    return isinstance(server, tuple | list) and len(server) == 2 and server[1] is None


def write(request: Any, fn: Callable[..., T], *args: Any) -> T:
    """`fn(*args)`: on the socket writer thread when `request` came over the Unix socket,
    else here (stdio: the app's own calls, a model's save_memory during its reply)."""
    if not over_unix_socket(request):
        return fn(*args)
    return _WRITER.submit(_after_the_reply, fn, *args).result()


def _after_the_reply(fn: Callable[..., T], *args: Any) -> T:
    FOREGROUND.wait_quiet(most=SOCKET_PATIENCE)
    return fn(*args)
