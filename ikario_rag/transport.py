"""Serving: stdio with repaired input lines (wire.py), the same tools on a Unix socket, or
MCP streamable HTTP on a TCP port (`serve_http`).

`serve_stdio` is the SDK's stdio transport fed with lines read here: each line goes through
`wire.repair` first, so a line the SDK would drop unanswered is either repaired or answered
with a JSON-RPC error, and the connection lives on.

`serve_stdio_and_socket` also serves MCP streamable HTTP on a Unix domain socket in the
index directory (0600: only this user's processes), so that another process on the machine
(`manage.py memory_search` while the web app runs) reaches the server holding the index lock
with no set-up (ikario_rag.client.open_session). Both transports share one lifespan, so one
Memory (runtime.MemoryHost counts its users). The socket file is removed at exit, and a
stale one (a killed server) at start: whoever holds the lock owns that path.

`serve_http` is for a shared server (MCP_IKARIO_SERVER_URL): every request needs a bearer
token (ikario_rag/access.py) and a Host header naming this server (the SDK's DNS rebinding
protection, on whatever address it binds: loopback names, the bound address, and
IKARIO_ALLOWED_HOSTS); a refused request is logged.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
import os
import signal
import socket
import stat
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectSendStream
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.message import SessionMessage

from ikario_rag import access, wire
from ikario_rag.client import reachable
from ikario_rag.socket_writes import AfterTheReply

log = logging.getLogger("ikario_rag.transport")


class RepairedLines:
    """stdin as the SDK's stdio transport reads it (`async for line in ...`), repaired."""

    def __init__(self, errors: MemoryObjectSendStream[Any]) -> None:
        self._errors = errors

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        try:
            async for line in _stdin_lines():
                fixed, error = wire.repair(line)
                if error is not None:
                    await self._errors.send(SessionMessage(error))
                if fixed is not None:
                    yield fixed
        finally:
            await self._errors.aclose()


def _is_pipe(fd: int) -> bool:
    """Whether `fd` is a pipe or a socket (what an MCP client gives), which the event loop
    can read and write itself; a file or a terminal cannot be."""
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


async def _stdin_lines() -> AsyncIterator[str]:
    """stdin's lines, read by the event loop itself when stdin is a pipe or a socket (what
    an MCP client gives): no thread to wake per line, as the SDK's own reader has. A
    regular file or a terminal is read the SDK's way, one worker thread per line."""
    # A duplicate of fd 0: closing ours at exit must not close the process's stdin.
    raw = os.fdopen(os.dup(0), "rb")
    if not _is_pipe(raw.fileno()):
        async with anyio.wrap_file(io.TextIOWrapper(raw, encoding="utf-8", errors="replace")) as f:
            async for line in f:
                yield line
        return
    loop = asyncio.get_running_loop()
    # No limit on a line, as the threaded reader had none (a restore can be megabytes).
    reader = asyncio.StreamReader(limit=2**62)
    pipe, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), raw)
    try:
        while line := await reader.readline():
            yield line.decode("utf-8", errors="replace")
    finally:
        pipe.close()


class PipeWriter:
    """stdout as the SDK's stdio transport writes it (`write`, `flush`), on the event loop:
    a reply is handed to the pipe at once instead of through two worker threads (one per
    `write`, one per `flush`). Stray prints to fd 1 go to stderr meanwhile, as the SDK
    arranges when it owns stdout."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer

    @classmethod
    @contextlib.asynccontextmanager
    async def of_stdout(cls) -> AsyncIterator[PipeWriter | None]:
        if not _is_pipe(1):
            yield None  # a file or a terminal: the SDK's own writer
            return
        saved, ours = os.dup(1), os.dup(1)
        os.dup2(2, 1)
        loop = asyncio.get_running_loop()
        pipe, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, os.fdopen(ours, "wb")
        )
        try:
            yield cls(asyncio.StreamWriter(pipe, protocol, None, loop))
        finally:
            pipe.close()
            os.set_blocking(saved, True)  # the loop made the pipe non-blocking
            os.dup2(saved, 1)
            os.close(saved)

    async def write(self, text: str) -> None:
        self._writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self._writer.drain()


async def serve_stdio(server: MCPServer) -> None:
    """Serve `server` over stdin/stdout until stdin closes."""
    errors_in, errors_out = anyio.create_memory_object_stream[SessionMessage](16)
    lines = RepairedLines(errors_in)
    async with (
        PipeWriter.of_stdout() as stdout,
        stdio_server(stdin=lines, stdout=stdout) as (read_stream, write_stream),  # type: ignore[arg-type]
    ):

        async def answer_errors() -> None:
            async with errors_out:
                async for message in errors_out:
                    await write_stream.send(message)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(answer_errors)
            # The low-level server is what MCPServer.run_stdio_async drives with its own streams.
            lowlevel = server._lowlevel_server
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
            tasks.cancel_scope.cancel()


def bind_socket(path: Path) -> socket.socket:
    """A listening Unix socket at `path`, readable and writable by this user only."""
    with contextlib.suppress(FileNotFoundError):
        if stat.S_ISSOCK(os.lstat(path).st_mode):
            path.unlink()  # left by a server that was killed: we hold the index lock now
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with reachable(path) as address:
        sock.bind(address)
    os.chmod(path, 0o600)
    sock.listen(64)
    return sock


def _remove(path: Path, identity: tuple[int, int]) -> None:
    with contextlib.suppress(OSError):
        found = os.lstat(path)
        if (found.st_dev, found.st_ino) == identity:
            path.unlink()


class _SocketServer:
    """uvicorn serving the tools' HTTP app on an already bound socket, signals left alone
    (the process decides what SIGTERM does, not the HTTP server)."""

    def __init__(self, server: MCPServer, sock: socket.socket) -> None:
        import uvicorn

        app = server.streamable_http_app(
            # No browser can reach a Unix socket: DNS rebinding protection has nothing to guard.
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        # A background call (the worker's) waits, unread, for a reply to end (socket_writes.py).
        app = AfterTheReply(app)

        class Quiet(uvicorn.Server):
            @contextlib.contextmanager
            def capture_signals(self):
                yield

        config = uvicorn.Config(
            app, log_level="warning", access_log=False, timeout_graceful_shutdown=5
        )
        self.web = Quiet(config)
        self.sock = sock

    async def serve(self) -> None:
        await self.web.serve(sockets=[self.sock])

    def stop(self) -> None:
        self.web.should_exit = True


async def serve_stdio_and_socket(server: MCPServer, socket_path: Path) -> None:
    """stdio until stdin closes, and the same tools on `socket_path` meanwhile."""
    sock = bind_socket(socket_path)
    found = os.lstat(socket_path)
    identity = (found.st_dev, found.st_ino)
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}

    def on_signal(number: int, _frame: Any) -> None:
        # A stdin that is a file or a terminal is read by a blocked worker thread, which
        # cannot be cancelled: remove the socket, then die of the signal as before (for any
        # stdin). The records are safe: every write is committed.
        _remove(socket_path, identity)
        log.info("stopping on signal %d", number)
        signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)

    for number in previous:
        signal.signal(number, on_signal)
    log.info("also serving on the Unix socket %s", socket_path)
    web = _SocketServer(server, sock)
    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(web.serve)
            try:
                await serve_stdio(server)
            finally:
                web.stop()
    finally:
        _remove(socket_path, identity)
        sock.close()
        for number, handler in previous.items():
            signal.signal(number, handler)


# Host header values any server accepts: it is always reachable on its loopback names.
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
WILDCARDS = ("0.0.0.0", "::", "")  # noqa: S104 -- what "every address" is spelt as


def http_security(host: str, extra_hosts: list[str]) -> TransportSecuritySettings:
    """The Host and Origin values a server bound to `host` accepts: its loopback names, the
    address it is bound to (unless that is every address), and `extra_hosts` (the names
    clients reach it by, IKARIO_ALLOWED_HOSTS), each on any port."""
    names = list(LOOPBACK_HOSTS)
    if host not in WILDCARDS:
        names.append(f"[{host}]" if ":" in host and not host.startswith("[") else host)
    names.extend(extra_hosts)
    hosts, origins = [], []
    for name in dict.fromkeys(names):
        hosts += [name, f"{name}:*"]
        origins += [f"{s}://{name}{p}" for s in ("http", "https") for p in ("", ":*")]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


def serve_http(server: MCPServer, host: str, port: int, extra_hosts: list[str]) -> None:
    """MCP streamable HTTP on host:port until a signal; `server` carries its token verifier
    (app.build_server with credentials): the SDK refuses a request without a valid token."""
    import uvicorn

    app = server.streamable_http_app(transport_security=http_security(host, extra_hosts))
    if host in WILDCARDS:
        log.warning(
            "listening on every address: clients must name this server by one of %s "
            "(IKARIO_ALLOWED_HOSTS adds names)",
            ", ".join([*LOOPBACK_HOSTS, *extra_hosts]),
        )
    config = uvicorn.Config(
        access.LogRefusals(app), host=host, port=port, log_level="warning", access_log=False
    )
    uvicorn.Server(config).run()
