"""The MCP server object: the tools of tools.py over a MemoryHost lifespan.

Every tool returns its result as structured content and as the same JSON in a text block.
Whatever goes wrong comes back as a tool error (isError) with one line of text: the argument
a caller got wrong, "memory unavailable: <why>" (the disk is full, the database is damaged,
the index directory was removed...), or "memory unavailable: internal error" for a bug
(details in the log only: no path, traceback or PID ever reaches a caller). A write tool's
outcome is kept: health and memory_stats say "saving": "fails: <why>" until a write works.
"""

import inspect
import logging
from typing import Any

from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent
from pydantic import ValidationError

from ikario_rag import access, tools, validate
from ikario_rag.errors import InputError, MemoryUnavailable
from ikario_rag.runtime import MemoryHost
from ikario_rag.shares import WRITES, Shares

log = logging.getLogger("ikario_rag.server")

INTERNAL = "memory unavailable: internal error"


class IkarioServer(MCPServer):
    """MCPServer whose tool failures all read as one line, safe to show to a user."""

    host: MemoryHost
    shares: Shares

    async def call_tool(self, name, arguments, context=None):
        try:
            # Its turn first (ikario_rag/shares.py): one namespace's load never holds up
            # another's recall, and bulk writes never hold up a search.
            async with self.shares.turn(name, arguments):
                result = await super().call_tool(name, arguments, context)
        except ToolError as exc:
            message = self._message(name, exc.__cause__ or exc)
            if message.startswith("memory unavailable"):
                self._record(name, message)
            return _error(message)
        self._record(name, None)
        return result

    def _record(self, tool: str, failure: str | None) -> None:
        """Tell the runtime how a write (shares.WRITES) went: health says "saving fails"
        until one works."""
        runtime = self.host.runtime
        if tool in WRITES and runtime is not None:
            runtime.record_write(failure)

    def _message(self, tool: str, cause: BaseException) -> str:
        if isinstance(cause, ValidationError):
            return argument_error(cause)
        if isinstance(cause, InputError | MemoryUnavailable):
            return str(cause)
        if isinstance(cause, ToolError):  # the only ToolError without a cause: an unknown tool
            return f"unknown tool: {validate.shown(tool)}"
        log.error("tool %s failed", tool, exc_info=cause)
        runtime = self.host.runtime
        known = runtime.diagnose(cause) if runtime is not None else None
        return str(known) if known is not None else INTERNAL


def argument_error(exc: ValidationError) -> str:
    """The first rejected argument, as `where: what` ("context.kind: Input should be ...")."""
    first = exc.errors()[0]
    parts = [_part(p) for p in first["loc"]]
    where = "".join(p if p.startswith("[") or not i else f".{p}" for i, p in enumerate(parts))
    if first["type"] == "extra_forbidden":
        parent = where.rsplit(".", 1)[0] if "." in where else "arguments"
        return f"{parent} has unknown field(s): {parts[-1]}"
    return f"{where or 'arguments'}: {first['msg']}"


def _part(part: Any) -> str:
    if isinstance(part, int):
        return f"[{part}]"
    name = str(part)
    return name if name.isidentifier() and len(name) <= 40 else validate.shown(name)


def _error(message: str) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=" ".join(message.split()))], is_error=True
    )


def build_server(host: MemoryHost, credentials: access.Credentials | None = None) -> IkarioServer:
    """The server; with `credentials`, its HTTP app requires one of their bearer tokens."""
    auth = {}
    if credentials is not None:
        auth = {
            "token_verifier": access.Verifier(credentials),
            # Static tokens, no OAuth server: the SDK wants an issuer, never shown or used.
            "auth": AuthSettings(issuer_url="http://ikario-rag", resource_server_url=None),
        }
    server = IkarioServer(
        name="ikario_rag",
        instructions="Long-term memory: search, add and manage memories in a namespace.",
        log_level="WARNING",
        lifespan=host.lifespan,
        **auth,
    )
    server.host = host
    server.shares = Shares()
    for fn in tools.TOOLS:
        server.add_tool(fn, description=inspect.cleandoc(fn.__doc__ or ""))
    return server
