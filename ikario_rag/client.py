"""For MCP clients of ikario_rag (the web app, its worker, management commands): no Django,
no model.

- `http_streams(url, token=...)`: the SDK's streamable HTTP transport to a running server,
  sending its bearer token.
- `MemorySession`: the SDK's ClientSession whose `call_tool` first makes the arguments
  sendable (`wire_safe`). The SDK client serialises each request with pydantic-core, which
  raises on a lone surrogate ("\\ud800") inside the client's transport task: the whole
  connection dies before a byte is sent. `wire_safe` replaces lone surrogates with U+FFFD
  and containers nested deeper than wire.MAX_DEPTH with None, as the server does with
  what it receives; the server then answers like for any other argument.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

# The most one reply may hold (the SDK's default, named here): the server keeps its replies
# well under it (ikario_rag/replies.py), so only a reply of an older or foreign server is
# refused, and then only that one call fails (memory/client/mcp.py).
MAX_REPLY_BYTES = 1024 * 1024
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


async def _refused(response: httpx2.Response) -> None:
    """A wrong token: the HTTP error itself, not the SDK's "Server returned an error
    response", so that the caller can say which setting to fix."""
    if response.status_code == 401:
        response.raise_for_status()


@asynccontextmanager
async def http_streams(
    url: str, *, token: str = "", max_reply_bytes: int = MAX_REPLY_BYTES
) -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's streamable HTTP client transport to a shared server at `url`, sending
    `token` as the bearer token every request needs there (ikario_rag/access.py); a refused
    token raises httpx2.HTTPStatusError (401). A reply larger than `max_reply_bytes` fails
    its own call with "SSE stream failed: ... byte limit"; the session lives on."""
    headers = {"Authorization": f"Bearer {token}"} if token else None
    timeout = httpx2.Timeout(30.0, read=300.0)  # the SDK's own defaults for MCP over HTTP
    async with (
        httpx2.AsyncClient(
            headers=headers, timeout=timeout, event_hooks={"response": [_refused]}
        ) as http,
        streamable_http_client(url, http_client=http, max_sse_event_size=max_reply_bytes) as (
            read,
            write,
        ),
    ):
        yield read, write
