"""Fixtures for the ikario_rag tests.

- `embedder`: the real all-MiniLM-L6-v2, loaded once per test session (seconds on 2 cores).
- `memory`: a Memory on a fresh temporary index directory, sharing that embedder.
- `client`: an MCP client connected in memory to a server over `memory` (each call opens its
  own in-memory session: pytest-asyncio finalises fixtures in another task, which an open
  MCP session's task group does not allow).
- `call(client, tool, **args)`: calls a tool and returns (is_error, payload or message).
"""

from __future__ import annotations

import json
import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from mcp import Client  # noqa: E402

from ikario_rag.embed import Embedder  # noqa: E402
from ikario_rag.memory import Memory  # noqa: E402
from ikario_rag.server import build_server  # noqa: E402


@pytest.fixture(scope="session")
def embedder():
    model = Embedder().start()
    model.wait()
    return model


@pytest.fixture
def memory(tmp_path, embedder):
    mem = Memory(tmp_path / "index", embedder=embedder)
    mem.repair()
    yield mem
    mem.close()


class InMemoryClient:
    def __init__(self, server) -> None:
        self.server = server

    async def call_tool(self, name: str, arguments: dict):
        async with Client(self.server) as session:
            return await session.call_tool(name, arguments)

    async def list_tools(self):
        async with Client(self.server) as session:
            return await session.list_tools()


@pytest.fixture
def client(memory):
    return InMemoryClient(build_server(memory))


async def call(client, tool: str, **arguments):
    """(is_error, structured payload) or (True, error message)."""
    result = await client.call_tool(tool, arguments)
    text = result.content[0].text if result.content else ""
    if result.is_error:
        return True, text
    # The same JSON is given twice: as structured content and as text.
    assert json.loads(text) == result.structured_content
    return False, result.structured_content
