"""For MCP clients of ikario_rag (the web app, management commands): no Django, no model.

- `open_session(index_dir)`: an initialised MCP session with the server that holds
  `index_dir`, over the Unix socket it serves there (`<index_dir>/ikario_rag.sock`): how a
  second process (a management command) reaches the server the web app started, which
  holds the index lock. `call_tool(...)` does one call that way from synchronous code.
  `running_server(index_dir)` says whether one answers there (then connect with
  `socket_streams(path)` + `MemorySession` rather than spawning a second server).
- `http_streams(url, token=...)`: the same over TCP to a shared server, with its token.
- `MemorySession`: the SDK's ClientSession whose `call_tool` first makes the arguments
  sendable (`wire_safe`). The SDK client serialises each request with pydantic-core, which
  raises on a lone surrogate ("\\ud800") inside the client's transport task: the whole
  connection dies before a byte is sent. `wire_safe` replaces lone surrogates with U+FFFD
  and containers nested deeper than wire.MAX_DEPTH with None, as the server does with
  what it receives; the server then answers like for any other argument.
"""

from __future__ import annotations

import os
import re
import socket as socket_module
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from ikario_rag.foreground import BACKGROUND_HEADER, HOLD_SIGNAL, RELEASE_SIGNAL
from ikario_rag.lock import SOCKET_NAME, holder_pid, socket_path  # noqa: F401 -- exported

# Any host: the socket is the address; the server does not check Host on its socket.
SOCKET_URL = "http://ikario-rag/mcp"
# A Unix socket address holds at most 107 bytes on Linux.
_MAX_ADDRESS = 100


class ServerNotRunning(ConnectionError):
    """No ikario_rag server serves that socket (none runs, or it was started with --no-socket)."""


# Same depth as the server keeps (ikario_rag.wire.MAX_DEPTH; not imported: that module
# pulls in the server's parser).
MAX_DEPTH = 32
_SURROGATE = re.compile("[\ud800-\udfff]")


def wire_safe(value: Any) -> Any:
    """A copy of `value` that the MCP SDK can always serialise (no recursion: any depth)."""
    root: list[Any] = [None]
    # (container to fill, key or index, value, depth)
    stack: list[tuple[Any, Any, Any, int]] = [(root, 0, value, 0)]
    while stack:
        parent, key, item, depth = stack.pop()
        if isinstance(item, str):
            parent[key] = _SURROGATE.sub("\ufffd", item)
        elif isinstance(item, dict | list | tuple) and depth >= MAX_DEPTH:
            parent[key] = None
        elif isinstance(item, dict):
            copy: dict[Any, Any] = {}
            parent[key] = copy
            for k, v in item.items():
                name = _SURROGATE.sub("\ufffd", k) if isinstance(k, str) else k
                copy[name] = None
                stack.append((copy, name, v, depth + 1))
        elif isinstance(item, list | tuple):
            items: list[Any] = [None] * len(item)
            parent[key] = items
            stack.extend((items, i, v, depth + 1) for i, v in enumerate(item))
        else:
            parent[key] = item
    return root[0]


class MemorySession(ClientSession):
    """A ClientSession whose tool calls can carry any argument a user typed."""

    async def call_tool(self, name: str, arguments: dict[str, Any] | None = None, *args, **kwargs):
        return await super().call_tool(name, wire_safe(arguments), *args, **kwargs)


@contextmanager
def reachable(path: Path) -> Iterator[str]:
    """An address for `path` short enough for a Unix socket: the path itself, or the same
    file reached through an open descriptor of its directory (/proc/self/fd/N/name)."""
    if len(os.fsencode(path)) <= _MAX_ADDRESS:
        yield str(path)
        return
    directory = os.open(path.parent, os.O_PATH | os.O_DIRECTORY)
    try:
        yield f"/proc/self/fd/{directory}/{path.name}"
    finally:
        os.close(directory)


@asynccontextmanager
async def socket_streams(
    path: str | os.PathLike[str], *, background: bool = False
) -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's streamable HTTP client transport over the Unix socket at `path`; with
    `background`, every call says it is background work (BACKGROUND_HEADER): the server
    holds it while a reply is written, and runs its writes at a lower priority."""
    path = Path(path)
    if not path.exists():
        raise ServerNotRunning(f"no ikario_rag server serves {path}")
    with reachable(path) as address:
        transport = httpx2.AsyncHTTPTransport(uds=address)
        timeout = httpx2.Timeout(30.0, read=300.0)  # the SDK's own defaults for MCP over HTTP
        async with (
            httpx2.AsyncClient(
                transport=transport,
                timeout=timeout,
                headers={BACKGROUND_HEADER: "1"} if background else None,
            ) as http,
            streamable_http_client(SOCKET_URL, http_client=http) as (read, write),
        ):
            yield read, write


@asynccontextmanager
async def http_streams(url: str, *, token: str = "") -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's streamable HTTP client transport to a shared server at `url`, sending
    `token` as the bearer token every request needs there (ikario_rag/access.py)."""
    headers = {"Authorization": f"Bearer {token}"} if token else None
    timeout = httpx2.Timeout(30.0, read=300.0)  # the SDK's own defaults for MCP over HTTP
    async with (
        httpx2.AsyncClient(headers=headers, timeout=timeout) as http,
        streamable_http_client(url, http_client=http) as (read, write),
    ):
        yield read, write


@asynccontextmanager
async def open_session(
    index_dir: str | os.PathLike[str] | None = None,
    *,
    socket: str | os.PathLike[str] | None = None,
    background: bool = False,
) -> AsyncIterator[MemorySession]:
    """An initialised MemorySession with the running server of `index_dir` (or `socket`);
    `background`: see socket_streams.

    Raises ServerNotRunning when nothing serves that socket::

        async with open_session(settings.IKARIO_INDEX_DIR) as session:
            result = await session.call_tool("memory_stats", {})
    """
    if socket is None and index_dir is None:
        raise ValueError("give the index directory or the socket path")
    path = Path(socket) if socket is not None else socket_path(index_dir)
    _check_listening(path)
    try:
        async with (
            socket_streams(path, background=background) as (read, write),
            MemorySession(read, write) as session,
        ):
            await session.initialize()
            yield session
    except* httpx2.ConnectError as group:  # the server went away meanwhile
        raise ServerNotRunning(f"no ikario_rag server answers on {path}") from group


def _check_listening(path: Path) -> None:
    """ServerNotRunning unless something accepts connections on `path` (a socket file left
    by a server that was killed refuses them)."""
    if not path.exists():
        raise ServerNotRunning(f"no ikario_rag server serves {path}")
    probe = socket_module.socket(socket_module.AF_UNIX, socket_module.SOCK_STREAM)
    try:
        with reachable(path) as address:
            probe.connect(address)
    except OSError as exc:
        raise ServerNotRunning(f"no ikario_rag server answers on {path}") from exc
    finally:
        probe.close()


def running_server(index_dir: str | os.PathLike[str]) -> Path | None:
    """The socket of the server running on `index_dir`, or None when none answers there."""
    path = socket_path(index_dir)
    try:
        _check_listening(path)
    except ServerNotRunning:
        return None
    return path


def call_tool(
    name: str,
    arguments: dict[str, Any],
    *,
    index_dir: str | os.PathLike[str] | None = None,
    socket: str | os.PathLike[str] | None = None,
) -> mcp_types.CallToolResult:
    """One tool call over the socket, from synchronous code (a management command)."""

    async def run() -> mcp_types.CallToolResult:
        async with open_session(index_dir, socket=socket) as session:
            return await session.call_tool(name, arguments)

    return anyio.run(run)


def tell_foreground(index_dir: str | os.PathLike[str], *, busy: bool) -> bool:
    """Tell the server holding `index_dir` on this machine that a reply starts (busy) or
    ended: its background work waits in between (ikario_rag/foreground.py). False when no
    lock file names a process, or that process is not an ikario_rag server."""
    if HOLD_SIGNAL is None or RELEASE_SIGNAL is None:
        return False
    pid = holder_pid(Path(index_dir))
    if pid is None or pid == os.getpid() or not _is_ikario_rag(pid):
        return False
    try:
        os.kill(pid, HOLD_SIGNAL if busy else RELEASE_SIGNAL)
    except OSError:  # gone meanwhile, or another user's process
        return False
    return True


def _is_ikario_rag(pid: int) -> bool:
    """A PID read from a lock file may have been reused: SIGUSR1 kills most programs.
    Without /proc (macOS) nothing can be checked, so nobody is told."""
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return b"ikario_rag" in command or b"ikario-rag" in command
