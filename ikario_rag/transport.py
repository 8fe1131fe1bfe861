"""Serving: stdio with repaired input lines (wire.py), or MCP streamable HTTP on a TCP port
(`serve_http`).

`serve_stdio` is the SDK's stdio transport fed with lines read here: each line goes through
`wire.repair` first, so a line the SDK would drop unanswered is either repaired or answered
with a JSON-RPC error, and the connection lives on.

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
import stat
from collections.abc import AsyncIterator
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectSendStream
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.message import SessionMessage

from ikario_rag import access, config, wire

log = logging.getLogger("ikario_rag.transport")


# The HTTP server's session manager (serve_http), for health's count of open sessions.
_sessions = None


def open_sessions() -> int | None:
    """HTTP sessions open now (health); None when not serving HTTP. The SDK's session
    manager has no public count: its table of sessions is read."""
    if _sessions is None:
        return None
    return len(_sessions._server_instances)


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

    # A client that goes away without ending its session (a killed worker, a job's process)
    # leaves it open: closed after IKARIO_SESSION_IDLE silent seconds, never piling up. The
    # app's long-lived clients ping every 15 s, so theirs stay.
    app = server.streamable_http_app(
        transport_security=http_security(host, extra_hosts),
        session_idle_timeout=config.settings().session_idle,
    )
    global _sessions
    _sessions = server.session_manager
    if host in WILDCARDS:
        log.warning(
            "listening on every address: clients must name this server by one of %s "
            "(IKARIO_ALLOWED_HOSTS adds names)",
            ", ".join([*LOOPBACK_HOSTS, *extra_hosts]),
        )
    served = uvicorn.Config(
        access.LogRefusals(app), host=host, port=port, log_level="warning", access_log=False
    )
    uvicorn.Server(served).run()
