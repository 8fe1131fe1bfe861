"""Serving: stdio with repaired input lines (wire.py).

`serve_stdio` is the SDK's stdio transport fed with lines read here: each line goes through
`wire.repair` first, so a line the SDK would drop unanswered is either repaired or answered
with a JSON-RPC error, and the connection lives on.
"""

from __future__ import annotations

import io
import os
from collections.abc import AsyncIterator
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectSendStream
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

from ikario_rag import wire


class RepairedLines:
    """stdin as the SDK's stdio transport reads it (`async for line in ...`), repaired."""

    def __init__(self, errors: MemoryObjectSendStream[Any]) -> None:
        # A duplicate of fd 0: the SDK's own text wrapper is not used, and closing ours at
        # exit must not close the process's stdin.
        raw = os.fdopen(os.dup(0), "rb")
        self._file = anyio.wrap_file(io.TextIOWrapper(raw, encoding="utf-8", errors="replace"))
        self._errors = errors

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        try:
            async for line in self._file:
                fixed, error = wire.repair(line)
                if error is not None:
                    await self._errors.send(SessionMessage(error))
                if fixed is not None:
                    yield fixed
        finally:
            await self._errors.aclose()
            await self._file.aclose()


async def serve_stdio(server: MCPServer) -> None:
    """Serve `server` over stdin/stdout until stdin closes."""
    errors_in, errors_out = anyio.create_memory_object_stream[SessionMessage](16)
    lines = RepairedLines(errors_in)
    async with stdio_server(stdin=lines) as (read_stream, write_stream):  # type: ignore[arg-type]

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
