"""Fixtures for the ikario_rag tests.

- `embedder`: the real all-MiniLM-L6-v2, loaded once per test process (seconds on 2 cores);
  every in-process Memory of the session shares it.
- `host`: the server's lifespan (runtime.MemoryHost) on a fresh temporary index directory,
  held open for the test, its maintenance thread running; `memory` is its Memory.
- `client`: an MCP client connected in memory to the real server object (app.build_server)
  over `host` (each call opens its own in-memory session: pytest-asyncio finalises fixtures
  in another task, which an open MCP session's task group does not allow).
- `shared_server`: one real `python ikario_rag/server.py` over stdio (tests/ikario_rag/stdio.py)
  for every test of this package that does not need a process of its own; tests use their
  own namespaces on it; `spawn(...)` starts one of a test's own (killed at teardown).
- `call(client, tool, **args)`: calls a tool and returns (is_error, payload or message).
- `sql(memory, query, *params)`: reads the records directly, to check what was stored.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from mcp import Client  # noqa: E402

from ikario_rag.app import build_server  # noqa: E402
from ikario_rag.embed import Embedder  # noqa: E402
from ikario_rag.runtime import MemoryHost, Settings  # noqa: E402
from tests.fixtures.properties import stable_examples  # noqa: E402, F401 -- its tests import it here

# Generous bound on any wait for the server's own work (model load on a busy machine).
READY_WAIT = 600.0
# The least cosine of a vector of the quantised model (a new index's bulk vectors) to the
# fp32 one of the same text (LoCoMo turns: 0.986 at worst, 0.9935 mean; "" and "x": 0.972).
QUANTISED_COSINE = 0.97


@pytest.fixture(scope="package")
def shared_server(tmp_path_factory):
    from tests.ikario_rag.stdio import StdioServer

    server = StdioServer(tmp_path_factory.mktemp("shared") / "index")
    server.initialize()
    yield server
    server.close()


@pytest.fixture
def spawn(tmp_path):
    from tests.ikario_rag.stdio import StdioServer

    started: list[StdioServer] = []

    def start(*args: str, module: bool = False, index_dir: Path | None = None, env=None):
        server = StdioServer(index_dir or tmp_path / "index", *args, module=module, env=env)
        started.append(server)
        return server

    yield start
    for server in started:
        server.kill()


@pytest.fixture(scope="session")
def embedder():
    model = Embedder().start()
    model.wait(READY_WAIT)
    return model


@pytest.fixture
def make_host(tmp_path, embedder):
    """Open a MemoryHost on an index directory (default: tmp_path / "index")."""
    opened: list[MemoryHost] = []

    def make(index_dir=None, **settings) -> MemoryHost:
        host = MemoryHost(
            Settings(index_dir=index_dir or tmp_path / "index", embedder=embedder, **settings)
        )
        host.acquire().memory().wait_ready(READY_WAIT)
        opened.append(host)
        return host

    yield make
    for host in opened:
        while host.runtime is not None:
            host.release()


@pytest.fixture
def host(make_host):
    return make_host()


@pytest.fixture
def memory(host):
    return host.runtime.memory()


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
def client(host):
    return InMemoryClient(build_server(host))


async def call(client, tool: str, **arguments):
    """(is_error, structured payload) or (True, error message)."""
    result = await client.call_tool(tool, arguments)
    text = result.content[0].text if result.content else ""
    if result.is_error:
        return True, text
    # The same JSON is given twice: as structured content and as text.
    assert json.loads(text) == result.structured_content
    return False, result.structured_content


def sql(memory, query: str, *params):
    """Rows of a query on the records, read directly (what was really stored)."""
    return memory.store.db.execute(query, params).fetchall()
